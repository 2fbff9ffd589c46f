r"""Writing Python source that holds the user's names safely.

Layer names come from the model file, so they are data: they enter generated
code only as Python literals (``repr``), and prose about them is escaped so
no name can end a docstring and run as code.

>>> print(python_dict({"conv1": (4, None), "it's": 8}))
{
    'conv1': (4, None),
    "it's": 8,
}
>>> print(docstring_safe('a name with "quotes" and a \\ backslash'))
a name with \"quotes\" and a \\ backslash
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GeneratedCode", "python_dict", "docstring_safe", "comment_lines"]


@dataclass(frozen=True)
class GeneratedCode:
    """Source text written for another tool, and what it does differently from the recipe."""

    text: str
    notes: tuple[str, ...] = ()


def python_dict(d: dict) -> str:
    """``d`` as a Python literal, one item per line (keys and values are ``repr``'d)."""
    if not d:
        return "{}"
    return "{\n" + "".join(f"    {k!r}: {v!r},\n" for k, v in d.items()) + "}"


def docstring_safe(text: str) -> str:
    """``text`` escaped for a triple-double-quoted string: backslashes doubled, quotes escaped,
    and what is not UTF-8 (a file name's undecodable bytes) written as an escape."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text.replace("\\", "\\\\").replace('"', '\\"')


def comment_lines(lines, bullet: str = "") -> str:
    """Lines of prose for a docstring, each escaped and on its own line."""
    return "\n".join(f"{bullet}{docstring_safe(' '.join(str(line).split()))}" for line in lines)
