"""What a row-level correction (`zipper correct`) does, as one type: the CLI, the Airflow correct
DAG, the job and the commit record all name it. A `str` enum, so it still equals its text."""

from __future__ import annotations

from enum import StrEnum


class CorrectionKind(StrEnum):
    """erase: remove every version of the given keys (recorded only as salted hashes). set: change
    columns of the versions a predicate matches. delete: remove the versions a predicate matches."""

    ERASE = "erase"
    SET = "set"
    DELETE = "delete"
