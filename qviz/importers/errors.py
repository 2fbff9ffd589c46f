"""The one error every loader raises."""

from ..errors import QvizError
from .._text import first_line, one_line, quote_name

__all__ = ["LoadError", "first_line", "MAX_CAUSE"]

#: The longest cause a LoadError carries, in characters (before escaping).
MAX_CAUSE = 500


class LoadError(QvizError):
    """A model could not be loaded. The message is one line: ``<source>: <cause>``.

    A source name with a newline or other control character is quoted, so the
    message stays one line whatever the file is called:

    >>> str(LoadError("two\\nlines.pb", "the file is empty"))
    "'two\\\\nlines.pb': the file is empty"

    The cause is cut after :data:`MAX_CAUSE` characters: a parser that quotes the
    offending line, or an archive member named by 60,000 characters, must not
    turn one line into a megabyte.
    """

    def __init__(self, source: str, cause: str):
        self.source = source
        self.cause = _cut(str(cause))
        super().__init__(f"{quote_name(source, 300)}: {_cut(one_line(self.cause))}")

    def __reduce__(self):  # picklable: loads run in worker processes
        return type(self), (self.source, self.cause)


def _cut(text: str) -> str:
    return text if len(text) <= MAX_CAUSE else text[:MAX_CAUSE] + "…"
