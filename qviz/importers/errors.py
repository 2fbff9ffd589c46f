"""The one error every loader raises."""

from .._text import first_line

__all__ = ["LoadError", "first_line"]


class LoadError(Exception):
    """A model could not be loaded. The message is one line: ``<source>: <cause>``."""

    def __init__(self, source: str, cause: str):
        self.source = source
        self.cause = cause
        super().__init__(f"{source}: {cause}")

    def __reduce__(self):  # picklable: loads run in worker processes
        return type(self), (self.source, self.cause)
