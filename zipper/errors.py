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


def java_messages(exc: BaseException) -> list[str]:
    """Messages along the cause chain of a Java exception that reached Python, outermost first
    (py4j keeps the throwable as `java_exception`, PySpark's captured errors as `_origin`)."""
    java = getattr(exc, "java_exception", None)
    if java is None:
        java = getattr(exc, "_origin", None)
    messages = []
    try:
        while java is not None and len(messages) < 20:
            messages.append(f"{java.getClass().getName()}: {java.getMessage()}")
            java = java.getCause()
    except Exception:
        pass
    return messages
