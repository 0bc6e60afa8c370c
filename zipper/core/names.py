"""Names zipper reserves or accepts, shared by the spec, the SQL templates and the input checks."""

from __future__ import annotations

import re

# A Hive database, table or column name a spec may give (and the SQL templates quote).
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# The input fingerprint `zipper init` records for a table it created without a base (no file
# read): its first increment types it. The init, a rerun's dates and the first merge name it.
NO_BASE_FINGERPRINT = "empty"
