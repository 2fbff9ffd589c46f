"""What the page shows, in its URL: a link or a reload restores it, and the
browser's back and forward step through the edits.

The model is the query (``?m=…``: a bundled sample, or ``served:`` for the model
the server was started with; an uploaded model is not in the link, its file
stays on the server that had it). The server reads it when it builds the page,
so a link opens its model straight away. The rest is the fragment (``#…``),
which changing loads nothing: ``v``/``s``/``d`` the view (layer or op,
rewritten or original, → or ↓; left out when default), ``sel`` the selected
node, ``x`` the layers expanded into their ops (comma-separated), ``g`` the
blocks closed (``1``) or not (``0``; left out when as the model opens, by its
size), ``o`` the ids of the blocks opened, ``c`` what the nodes are coloured by
(one of the built-in metrics; op kind is left out, and a file the user painted
stays with the page that had it), and ``r`` the recipe — its JSON,
deflated and base64url-encoded (a MobileNetV2 recipe of every layer is ~1 KB).

>>> from qviz.passes import LayerBits, Recipe
>>> r = Recipe(fold_default=True, quantize_default=None).with_bits("conv2", LayerBits(4, 8))
>>> query, fragment = page_location(PageState("lenet_digits", mode="op", selected="layer:conv2", recipe=r,
...                                           expanded=("conv1", "bn1")))
>>> query, fragment[:40]
('?m=lenet_digits', '#v=op&sel=layer%3Aconv2&x=bn1%2Cconv1&r=')
>>> back = parse_page_hash(fragment, query)
>>> back.model, back.mode, back.show, back.selected, back.expanded, back.recipe == r
('lenet_digits', 'op', 'rewritten', 'layer:conv2', ('bn1', 'conv1'), True)
>>> grouped = parse_page_hash(page_location(PageState("m", blocks=True, opened=("3", "1"), color="fold status"))[1])
>>> grouped.blocks, grouped.opened, grouped.color
(True, ('1', '3'), 'fold status')

A fragment that is not qviz's says why, in one line:

>>> parse_page_hash("#r=AAAA")
Traceback (most recent call last):
...
qviz.app.url_state.PageStateError: the link's recipe (r=) is not a deflated qviz recipe: ...
"""

from __future__ import annotations

import base64
import binascii
import zlib
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode

from .._text import one_line
from ..errors import QvizError
from ..passes import Recipe, RecipeError
from .colour_by import MENU as COLOR_MENU
from .services import current, push, redo, undo

__all__ = ["PageState", "PageStateError", "page_location", "parse_page_hash", "linked_model", "history_following",
           "MAX_HASH_CHARS", "MAX_RECIPE_BYTES"]

#: Longer fragments are refused before anything is decoded.
MAX_HASH_CHARS = 64 * 1024
#: A recipe inflates to at most this (a link is not a zip bomb).
MAX_RECIPE_BYTES = 2 * 2**20
#: The most expanded layers a link carries.
MAX_EXPANDED = 1000

_DEFAULTS = {"v": "layer", "s": "rewritten", "d": "LR"}
_CHOICES = {"v": ("layer", "op"), "s": ("rewritten", "original"), "d": ("LR", "TB"), "g": ("0", "1"),
            "c": COLOR_MENU}


class PageStateError(QvizError, ValueError):
    """A URL fragment that does not describe a qviz page; the message says which part."""


@dataclass(frozen=True)
class PageState:
    model: str | None                 # a sample's name, "served:", or None (an upload)
    mode: str = "layer"
    show: str = "rewritten"
    direction: str = "LR"
    selected: str | None = None       # a view key ("layer:conv1")
    recipe: Recipe | None = None
    expanded: tuple[str, ...] = ()    # layers drawn as their ops (names with a comma are not kept)
    blocks: bool | None = None        # blocks drawn closed (None: as the model opens, by its size)
    opened: tuple[str, ...] = ()      # ids of the blocks opened
    color: str | None = None          # a built-in "colour by" metric (None: op kind)


def _encode(recipe: Recipe) -> str:
    packed = zlib.compress(recipe.to_json(indent=None).encode("utf-8"), 9)
    return base64.urlsafe_b64encode(packed).decode("ascii").rstrip("=")


def _decode(text: str) -> Recipe:
    try:
        packed = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        inflate = zlib.decompressobj()
        raw = inflate.decompress(packed, MAX_RECIPE_BYTES)
        if inflate.unconsumed_tail:
            raise PageStateError(f"the link's recipe (r=) inflates past {MAX_RECIPE_BYTES // 2**20} MB")
        if not inflate.eof:
            raise zlib.error("the data ends early")
    except (binascii.Error, ValueError, zlib.error) as exc:
        if isinstance(exc, PageStateError):
            raise
        raise PageStateError(one_line(f"the link's recipe (r=) is not a deflated qviz recipe: {exc}")) from None
    try:
        return Recipe.from_json(raw)
    except RecipeError as exc:
        raise PageStateError(one_line(f"the link's recipe (r=): {exc}")) from None


def page_location(state: PageState) -> tuple[str, str]:
    """``(query, fragment)`` of the URL for ``state``, each with its ``?`` / ``#`` (or empty)."""
    fields = {"v": state.mode, "s": state.show, "d": state.direction, "sel": state.selected}
    parts = {k: v for k, v in fields.items() if v and v != _DEFAULTS.get(k)}
    expanded = sorted(name for name in state.expanded if name and "," not in name)[:MAX_EXPANDED]
    if expanded:
        parts["x"] = ",".join(expanded)
    if state.blocks is not None:
        parts["g"] = "1" if state.blocks else "0"
    opened = sorted(b for b in state.opened if b and "," not in b)[:MAX_EXPANDED]
    if opened and state.blocks is not False:
        parts["o"] = ",".join(opened)
    if state.color in COLOR_MENU:
        parts["c"] = state.color
    if state.recipe is not None:
        parts["r"] = _encode(state.recipe)
    query = "?" + urlencode({"m": state.model}) if state.model else ""
    return query, ("#" + urlencode(parts)) if parts else ""


def linked_model(query: str | None) -> str | None:
    """The model a URL's query (``?m=…``) names, unchecked; None when it names none
    or is not one qviz writes.

    >>> linked_model("?m=mobilenet_block"), linked_model(""), linked_model("?m=a&m=b")
    ('mobilenet_block', None, None)
    """
    try:
        values = parse_qs((query or "").lstrip("?"), max_num_fields=8).get("m", [])
    except ValueError:
        return None
    return values[0][:200] if len(values) == 1 else None


def parse_page_hash(fragment: str | None, query: str | None = None) -> PageState | None:
    """The state a URL fragment (``#…``, as ``location.hash`` gives it) describes,
    with the model its query names; None for an empty fragment.

    Raises:
        PageStateError: too long, a field given twice or not one of its choices, or a
            recipe that does not decode.
    """
    text = (fragment or "").lstrip("#")
    if not text:
        return None
    if len(text) > MAX_HASH_CHARS:
        raise PageStateError(f"the link's state is {len(text)} characters; qviz reads at most {MAX_HASH_CHARS}")
    try:
        fields = parse_qs(text, strict_parsing=True, max_num_fields=16)
    except ValueError as exc:
        raise PageStateError(one_line(f"the link's state (after #) is not qviz's: {exc}")) from None
    unknown = set(fields) - {"v", "s", "d", "sel", "x", "r", "g", "o", "c"}
    if unknown:
        raise PageStateError(f"the link's state has fields qviz does not know: {', '.join(sorted(unknown))}")
    one = {}
    for key, values in fields.items():
        if len(values) > 1:
            raise PageStateError(f"the link's state gives {key}= {len(values)} times")
        one[key] = values[0]
    for key, allowed in _CHOICES.items():
        if key in one and one[key] not in allowed:
            raise PageStateError(one_line(f"the link's {key}= must be one of {', '.join(allowed)}, "
                                          f"not {one[key][:40]!r}"))
    expanded = tuple(name for name in one.get("x", "").split(",") if name)
    opened = tuple(name for name in one.get("o", "").split(",") if name)
    if max(len(expanded), len(opened)) > MAX_EXPANDED:
        raise PageStateError(f"the link expands {max(len(expanded), len(opened))} layers or blocks; "
                             f"qviz reads at most {MAX_EXPANDED}")
    return PageState(linked_model(query), one.get("v", "layer"), one.get("s", "rewritten"), one.get("d", "LR"),
                     one.get("sel"), _decode(one["r"]) if "r" in one else None, expanded,
                     None if "g" not in one else one["g"] == "1", opened, one.get("c"))


def history_following(history: dict, recipe: Recipe) -> dict:
    """The page's recipe history with ``recipe`` current: one step back or forward
    when it is the previous or next edit (the browser's back and forward), else
    a new step.

    >>> from qviz.app.services import new_history
    >>> a, b = Recipe(fold_default=False), Recipe(fold_default=True)
    >>> h = push(new_history(a), b)
    >>> history_following(h, a)["pos"], history_following(undo(h), b)["pos"], history_following(h, b) is h
    (0, 1, True)
    """
    pos, steps = history["pos"], history["history"]
    if current(history) == recipe:
        return history
    if pos > 0 and Recipe.from_dict(steps[pos - 1]) == recipe:
        return undo(history)
    if pos + 1 < len(steps) and Recipe.from_dict(steps[pos + 1]) == recipe:
        return redo(history)
    return push(history, recipe)
