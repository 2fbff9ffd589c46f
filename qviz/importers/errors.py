"""The one error every loader raises."""

from .._text import first_line, one_line, quote_name

__all__ = ["LoadError", "first_line"]


class LoadError(Exception):
    """A model could not be loaded. The message is one line: ``<source>: <cause>``.

    A source name with a newline or other control character is quoted, so the
    message stays one line whatever the file is called:

    >>> str(LoadError("two\\nlines.pb", "the file is empty"))
    "'two\\\\nlines.pb': the file is empty"
    """

    def __init__(self, source: str, cause: str):
        self.source = source
        self.cause = cause
        super().__init__(f"{quote_name(source, 300)}: {one_line(cause)}")

    def __reduce__(self):  # picklable: loads run in worker processes
        return type(self), (self.source, self.cause)
