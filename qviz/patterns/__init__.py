"""Patterns as text (:func:`parse`, :func:`to_text`) and the built-in library (:data:`BUILTIN`)."""

from .builtin import BUILTIN, builtin_doc
from .language import PatternSyntaxError, parse, to_text

__all__ = ["parse", "to_text", "PatternSyntaxError", "BUILTIN", "builtin_doc"]
