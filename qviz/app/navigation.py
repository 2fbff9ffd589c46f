"""Where the user looks in the graph: search and its next hit, what a selection is
drawn as, expanding a layer and opening or closing a block, the frame an opened
block is drawn in, and the block panel's rows.

Like :mod:`qviz.app.services`, plain functions from the page's data to answers;
the callbacks in :mod:`qviz.app.callbacks.graph` and ``panels``, and :mod:`qviz.app.redraw`, call them.

>>> import qviz
>>> from qviz.samples import sample_path
>>> from qviz.app.services import START_RECIPE, draw_view
>>> from qviz.app.session import Session
>>> s = Session(qviz.load(sample_path("lenet_digits")), "lenet")
>>> search(draw_view(s, START_RECIPE, ViewChoice()).graph, "relu")
(['layer:relu1', 'layer:relu2', 'layer:relu3'], '3 found')
"""

from __future__ import annotations

from ..layout import DiGraph, ViewKey
from ..layout.view import block_showing
from ..passes import Recipe
from ..render.marks import Frame, short_label
from ..render.image import recipe_badges
from .services import DrawnView, ViewChoice, drawn_key

__all__ = ["opened_frames", "look_at", "search", "search_step", "layer_around",
           "with_expanded", "with_block_toggled", "block_of_layer", "block_rows"]


def opened_frames(session, view: DrawnView, choice: ViewChoice) -> dict[str, Frame]:
    """``{block id: Frame}``: a :class:`~qviz.render.marks.Frame` around each block
    opened in ``view`` (its layers' nodes, or their ops), so the eye finds what was one
    node; none ungrouped.

    >>> import qviz
    >>> from qviz.samples import sample_path
    >>> from qviz.app.services import START_RECIPE, draw_view
    >>> from qviz.app.session import Session
    >>> s = Session(qviz.load(sample_path("lenet_digits")), "lenet")
    >>> choice = ViewChoice(blocks=True, opened=(s.blocks[0].id,))
    >>> [(i, f.label, f.keys[:2]) for i, f in opened_frames(s, draw_view(s, START_RECIPE, choice), choice).items()]
    [('1', 'image … pool', ('layer:image', 'layer:conv1'))]
    """
    if not choice.blocks:
        return {}
    frames = {}
    for block_id in choice.opened:
        block = session.block(block_id)
        if block is None:
            continue
        members = set(block.layers)
        keys = tuple(k for k, d in view.graph.nodes(data=True) if d.get("layer") in members)
        if keys:
            frames[block_id] = Frame(block.label, keys)
    return frames


def look_at(view: DrawnView, frames: dict[str, Frame], session, key: str | None):
    """``((x, y), (width, height))`` to show the selection just expanded or opened: its
    node (or the closed block holding it), else its ops (a layer expanded) or its frame
    (a block opened), all of them; None if it is not drawn.

    >>> import qviz
    >>> from qviz.samples import sample_path
    >>> from qviz.app.services import START_RECIPE, draw_view
    >>> from qviz.app.session import Session
    >>> s = Session(qviz.load(sample_path("lenet_digits")), "lenet")
    >>> choice = ViewChoice(blocks=True, opened=(s.blocks[0].id,))
    >>> view = draw_view(s, START_RECIPE, choice)
    >>> frames = opened_frames(s, view, choice)
    >>> look_at(view, frames, s, "layer:conv2") == (view.pos["layer:conv2"], (0.0, 0.0))
    True
    >>> (x, y), (width, height) = look_at(view, frames, s, f"block:{s.blocks[0].id}")    # the whole frame
    >>> view.pos["layer:image"][0] < x < view.pos["layer:pool"][0] < width
    True
    """
    drawn = drawn_key(view, session.graph, key)
    if drawn is not None:
        return view.pos[drawn], (0.0, 0.0)
    parsed = ViewKey.parse(key)
    if parsed is not None and parsed.is_block:
        box = frames[parsed.name].box(view.pos) if parsed.name in frames else None
    else:
        layer = parsed.layer_in(session.graph) if parsed is not None else None
        ops = tuple(k for k, d in view.graph.nodes(data=True) if layer is not None and d.get("layer") == layer)
        box = Frame("", ops).box(view.pos)     # (the box a frame of them would have)
    if box is None:
        return None
    x0, y0, x1, y1 = box
    return ((x0 + x1) / 2, (y0 + y1) / 2), (x1 - x0, y1 - y0)


def search(vg: DiGraph, needle: str) -> tuple[list[str], str]:
    """``(view keys found, status line)``: an exact layer or op name first, else
    every key whose name contains ``needle`` (any case)."""
    hits, status, note = _found(vg, needle)
    return hits, f"{status} ({note})" if note else status


def _found(vg: DiGraph, needle: str) -> tuple[list[str], str, str]:
    """``(hits, status line, a note for it)``: what :func:`search` says, the note apart."""
    needle = (needle or "").strip()
    if not needle:
        return [], "", ""
    for key in (ViewKey.layer(needle), ViewKey.op(needle)):
        if key in vg:
            return [key], "", ""
    block = block_showing(vg, needle)
    if block is not None and block in vg:
        return [block], f"in block {vg.nodes[block]['label']} (expand opens it)", ""
    low = needle.lower()
    # a closed block is found by its label or by any of its layers' names; an op by its name or
    # by the label drawn for it (layer/op: the scopes between are not in it)
    hits = [k for k in vg if low in _searched(vg, k)]
    if hits:
        return hits, f"{len(hits)} found", _layers_note(vg, hits, low)
    return [], f"no node or layer matches {needle!r}", ""


def _searched(vg: DiGraph, k: str) -> str:
    """The text a search looks through for view node ``k``, in lower case: its names, and
    the label drawn for it (shortened: what a user reads off the graph finds it too)."""
    key, d = ViewKey(k), vg.nodes[k]
    drawn = short_label(str(d.get("label", key.name)))
    if key.is_block:
        return "\n".join([d.get("label", ""), drawn, *d.get("layers", ())]).lower()
    if key.kind == "op":
        return f"{key.name}\n{d.get('label', '')}\n{drawn}".lower()   # (newlines: no match across two)
    return f"{key.name}\n{drawn}".lower()


def _layers_note(vg: DiGraph, hits: list[str], low: str) -> str:
    """How many names the hits stand for, where closed blocks hold several layers that
    match (a block is one hit, one place to look), else ""."""
    names = sum(max(1, sum(low in name.lower() for name in vg.nodes[k].get("layers", ())))
                if ViewKey(k).is_block else 1 for k in hits)
    return f"{names} {'ops and ' if any(ViewKey(k).kind == 'op' for k in hits) else ''}layers, " \
           f"a closed block is one" if names > len(hits) else ""


def search_step(vg: DiGraph, needle: str, current: str | None = None) -> tuple[str | None, str]:
    """``(view key to select, status line)`` for a search: the first hit, or the one
    after ``current`` (Enter pressed again on the same text), round to the first.

    >>> from qviz.layout import DiGraph
    >>> vg = DiGraph([("layer:conv1", "layer:relu1"), ("layer:relu1", "layer:conv2")])
    >>> search_step(vg, "conv")
    ('layer:conv1', '1 of 2 found (Enter: next)')
    >>> search_step(vg, "conv", "layer:conv1"), search_step(vg, "conv", "layer:conv2")[0]
    (('layer:conv2', '2 of 2 found (Enter: next)'), 'layer:conv1')
    >>> search_step(vg, "relu1"), search_step(vg, "pool")
    (('layer:relu1', ''), (None, "no node or layer matches 'pool'"))

    A closed block is one hit, however many of its layers match; the line says so:

    >>> vg.add_node("block:2", label="tail", layers=("conv3", "relu3", "conv4"))
    >>> search_step(vg, "conv")
    ('layer:conv1', '1 of 3 found (4 layers, a closed block is one; Enter: next)')
    """
    hits, status, note = _found(vg, needle)
    if len(hits) < 2:
        return (hits[0] if hits else None), f"{status} ({note})" if note else status
    at = (hits.index(current) + 1) % len(hits) if current in hits else 0
    return hits[at], f"{at + 1} of {len(hits)} found ({'; '.join(filter(None, [note, 'Enter: next']))})"


def layer_around(session, key: str | None) -> str | None:
    """The layer an image of the selection is drawn around: the selected layer's (or
    op's), a closed block's first (the block shows it); None for no selection.

    >>> import qviz
    >>> from qviz.samples import sample_path
    >>> from qviz.app.session import Session
    >>> s = Session(qviz.load(sample_path("lenet_digits")), "lenet")
    >>> layer_around(s, "layer:conv2"), layer_around(s, f"block:{s.blocks[1].id}"), layer_around(s, "block:99")
    ('conv2', 'flatten', None)
    """
    parsed = ViewKey.parse(key)
    if parsed is not None and parsed.is_block:
        block = session.block(parsed.name)
        return block.layers[0] if block is not None else None
    return parsed.layer_in(session.graph) if parsed is not None else None


def with_expanded(view_state: dict, selected_key: str | None, vg: DiGraph | None = None) -> dict | None:
    """The view store with the selected layer expanded into its ops, or the selected
    block opened into its layers (None: nothing to expand). A layer in a closed block
    of ``vg`` (the view drawn) opens the block.

    >>> with_expanded({"expanded": ["a"]}, "layer:b")["expanded"], with_expanded({}, "block:3")["opened"]
    (['a', 'b'], ['3'])
    >>> with_expanded({}, "op:a/Conv2D") is None
    True
    """
    key = ViewKey.parse(selected_key)
    if key is not None and key.is_layer and vg is not None and key not in vg:
        key = block_showing(vg, key.name) or key
    if key is not None and key.is_block:
        return {**view_state, "opened": sorted(set(view_state.get("opened", [])) | {key.name})}
    if key is None or not key.is_layer:
        return None
    return {**view_state, "expanded": sorted(set(view_state.get("expanded", [])) | {key.name})}


def with_block_toggled(view_state: dict, block_id: str) -> dict:
    """The view store with block ``block_id`` opened if it was closed, closed if open
    (and the view grouped: the block's button is in a grouped view's panel).

    >>> with_block_toggled({"blocks": True, "opened": ["2"]}, "3")["opened"]
    ['2', '3']
    >>> with_block_toggled({"blocks": True, "opened": ["2", "3"]}, "3")["opened"]
    ['2']
    """
    opened = set(view_state.get("opened", ()))
    opened ^= {block_id}
    return {**view_state, "blocks": True, "opened": sorted(opened)}


def block_of_layer(session, layer: str | None):
    """The block ``layer`` is in (:attr:`Session.blocks`), or None.

    >>> import qviz
    >>> from qviz.samples import sample_path
    >>> from qviz.app.session import Session
    >>> s = Session(qviz.load(sample_path("lenet_digits")), "lenet")
    >>> block_of_layer(s, "conv2").label, block_of_layer(s, "nope")
    ('image … pool', None)
    """
    return next((b for b in session.blocks if layer in b.layers), None) if layer else None


def block_rows(session, block_id: str, recipe: Recipe):
    """``(block, [(layer, what the recipe does to it), …])`` for a closed block's panel,
    or None if the model has no such block (the page sent an old or forged key).

    >>> import qviz
    >>> from qviz.samples import sample_path
    >>> from qviz.app.session import Session
    >>> s = Session(qviz.load(sample_path("lenet_digits")), "lenet")
    >>> block, rows = block_rows(s, s.blocks[0].id, qviz.Recipe.default(s.graph))
    >>> rows[:3]
    [('image', ''), ('conv1', 'w8a8+bn'), ('bn1', '')]
    """
    block = session.block(block_id)
    if block is None:
        return None
    layers = DiGraph()
    layers.add_nodes_from((ViewKey.layer(name), {"layer": name}) for name in block.layers)
    badges = recipe_badges(session.graph, layers, recipe)
    return block, [(name, badges[ViewKey.layer(name)].text if ViewKey.layer(name) in badges else "")
                   for name in block.layers]
