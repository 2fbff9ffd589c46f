"""The one error every loader raises."""

__all__ = ["LoadError"]


class LoadError(Exception):
    """A model could not be loaded. The message is one line: ``<source>: <cause>``."""

    def __init__(self, source: str, cause: str):
        self.source = source
        self.cause = cause
        super().__init__(f"{source}: {cause}")
