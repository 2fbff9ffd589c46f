"""Freezing a traced TensorFlow function into a GraphDef: variables become constants,
and ops that no output needs are dropped.

TensorFlow's ``convert_variables_to_constants_v2`` does this in two steps and then a third:
it imports the frozen GraphDef back into a new function, only to return a
``ConcreteFunction``. qviz wants the GraphDef alone, and that third step was most of the
freeze (MobileNetV2 1.5 → 0.25 s, DenseNet121 4.5 → 0.5 s, NASNetMobile 5.7 → 1.6 s, at
64×64, the freeze alone). So :func:`freeze` calls the first two steps and does itself what
the third did that shows in the graph: ops that no output depends on (the unused ``Shape``
and ``dilation_rate`` constants of depthwise convolutions) are dropped, the placeholders
lose the ``_user_specified_name`` mark tracing gives them, the nodes a SavedModel's call
inlined lose their debug record of where they came from and their colocation (``_class``),
and the nodes are put in the order the re-import left them, which decides the order of
the graph's layers.

For Keras models and SavedModels the result is the public function's GraphDef, node for
node and in the same order (tests/importers/test_freeze.py). What the re-import would also
change, none of which computes anything and none of which the tested models have: it drops
a control input that is also a data input, and with three or more inputs its placeholders
come in an order of its own (it takes them from a set). A graph with loops (a Keras RNN)
or library functions, and any graph if a TensorFlow release changes those private steps,
is frozen by the public function.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ..ir import parse_tensor_name
from ..ir.ops import LOOP_BACK_OPS, LOOP_OPS

__all__ = ["FrozenFunction", "freeze"]

log = logging.getLogger(__name__)

#: The two steps of ``convert_variables_to_constants_v2`` called directly (TensorFlow 2.21's
#: names): the converter's view of the function, and the replacement of variables by constants.
_PRIVATE_STEPS = ("_FunctionConverterDataInEager", "_replace_variables_by_constants")


@dataclass(frozen=True)
class FrozenFunction:
    """A frozen function: its GraphDef and the tensor names of its inputs and outputs."""

    graph_def: object
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


def freeze(concrete) -> FrozenFunction:
    """Freeze ``concrete`` (a ``ConcreteFunction``). What cannot be frozen raises
    TensorFlow's own error, from its public function."""
    try:
        frozen, why_not = _freeze_fast(concrete)
    except Exception as exc:   # a TensorFlow whose private steps changed shape: its public one decides
        frozen, why_not = None, f"the fast freeze failed ({type(exc).__name__}: {exc})"
    if frozen is None:
        log.info("freezing through convert_variables_to_constants_v2: %s", why_not)
        return _freeze_public(concrete)
    return frozen


def _freeze_fast(concrete) -> tuple[FrozenFunction | None, str]:
    """(the frozen function, "") or (None, why the public function must do it)."""
    from tensorflow.python.framework import convert_to_constants

    converter, replace = (getattr(convert_to_constants, name, None) for name in _PRIVATE_STEPS)
    if converter is None or replace is None:
        return None, "TensorFlow's converter steps moved"
    if any(op.type in LOOP_OPS for op in concrete.graph.get_operations()):
        return None, "the graph has loops"     # (known before converting: not converted twice)
    outputs = tuple(t.name for t in concrete.outputs)
    graph_def, _ = replace(converter_data=converter(func=concrete, lower_control_flow=True,
                                                    aggressive_inlining=False))
    placeholders = {nd.name for nd in graph_def.node if nd.op == "Placeholder"}
    # the inputs left are those not turned into constants: the variables' handles were
    # placeholders too, and are Const now
    inputs = tuple(t.name for t in concrete.inputs if parse_tensor_name(t.name)[0] in placeholders)
    # A graph with loops (a Keras RNN's while loop, lowered to TF1 control flow) is left to
    # TensorFlow's re-import, whose renaming and pruning of the loop's nodes is its own.
    # So is a graph that keeps functions in its library (not seen from Keras or a SavedModel
    # here): where the re-import would put their callers was not checked.
    if len(graph_def.library.function):
        return None, "the graph keeps functions in its library"
    if any(nd.op in LOOP_BACK_OPS for nd in graph_def.node):
        return None, "the graph has loops"
    if not _keep_needed_in_lift_order(graph_def, inputs, outputs):
        return None, "the nodes wait on each other"
    for nd in graph_def.node:
        nd.ClearField("experimental_debug_info")     # where an inlined node came from
        nd.attr.pop("_class", None)                  # colocation with another node
        if nd.op == "Placeholder":
            nd.attr.pop("_user_specified_name", None)
    return FrozenFunction(graph_def, inputs, outputs), ""


def _freeze_public(concrete) -> FrozenFunction:
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    frozen = convert_variables_to_constants_v2(concrete)
    return FrozenFunction(frozen.graph.as_graph_def(), tuple(t.name for t in frozen.inputs),
                          tuple(t.name for t in frozen.outputs))


def _keep_needed_in_lift_order(graph_def, inputs, outputs) -> bool:
    """Keep, in place, only the nodes the outputs need, in the order TensorFlow's re-import
    left them (its ``lift_to_graph``): the inputs; then the nodes without inputs, then the
    others, each group in reverse of a depth-first walk from the outputs that steps to a
    node's inputs (data, then control, in order) once all its consumers were walked.
    Node order decides the order of layers and of matches, so it is kept as it was.
    Returns False, the GraphDef untouched, if the walk cannot reach every node (a loop).
    """
    inputs_of = {}
    for nd in graph_def.node:
        data = [parse_tensor_name(i)[0] for i in nd.input if not i.startswith("^")]
        inputs_of[nd.name] = data + [i[1:] for i in nd.input if i.startswith("^")]
    sources = [parse_tensor_name(t)[0] for t in inputs]
    ends = [parse_tensor_name(t)[0] for t in outputs]
    consumers: dict[str, set[str]] = {}
    reached, todo = set(sources), list(ends)
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        reached.add(name)
        for i in inputs_of[name]:
            consumers.setdefault(i, set()).add(name)
            todo.append(i)
    walked: set[str] = set()
    order: list[str] = []
    todo = [name for name in ends if not consumers.get(name)]
    while todo:
        name = todo.pop()
        if name in walked:
            continue
        walked.add(name)
        order.append(name)
        todo.extend(i for i in inputs_of[name] if consumers[i] <= walked)
    if reached - walked - set(sources):     # nodes waiting on each other: a loop (an input
        # no output needs is never walked, and is kept, as the public function keeps it)
        return False
    order.sort(key=lambda name: not inputs_of[name])
    source_set = set(sources)
    order = sources + [name for name in reversed(order) if name not in source_set]
    by_name = {nd.name: nd for nd in graph_def.node}
    kept = [by_name[name] for name in order]
    del graph_def.node[:]
    graph_def.node.extend(kept)
    return True
