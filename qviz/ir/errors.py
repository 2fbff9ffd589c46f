"""Errors raised by the IR."""

from ..errors import QvizError

__all__ = ["GraphError"]


class GraphError(QvizError, ValueError):
    """A graph is malformed: a dangling input, a duplicate name, a cycle."""
