"""Errors raised by the IR."""

__all__ = ["GraphError"]


class GraphError(ValueError):
    """A graph is malformed: a dangling input, a duplicate name, a cycle."""
