"""One exception type for every problem a user can fix; the CLI prints it as one line."""


class ZipperError(Exception):
    """A user-facing failure: bad spec, bad input, wrong table state."""

    def __init__(self, message: str, *, table: str | None = None, ds: str | None = None):
        self.table = table
        self.ds = ds
        self.detail = message
        super().__init__(self.render())

    def render(self) -> str:
        where = " ".join(part for part in (self.table, self.ds) if part)
        return f"{where}: {self.detail}" if where else self.detail


class SpecError(ZipperError):
    """A spec file that does not validate."""


class InputError(ZipperError):
    """An increment or base that violates the rules (null or duplicate keys, bad columns)."""


class StateError(ZipperError):
    """The table is not in a state that allows the requested operation."""


class AuditError(ZipperError):
    """Written data does not reconcile; nothing was published."""
