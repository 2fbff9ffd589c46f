"""Hypothesis strategies shared by the pattern tests: random patterns and graphs."""

from hypothesis import strategies as st

from qviz.ir import Graph, Node
from qviz.matcher import AttrTest, OneofPattern, OpTypePattern, iter_patterns

OPS = ["Conv2D", "Relu", "Relu6", "AddV2", "Mul", "Identity", "Const", "Placeholder", "BiasAdd"]
names = st.sampled_from(["a", "b", "conv", "act", "x_1", None, None, None])
values = st.one_of(st.text(max_size=6), st.integers(-10**6, 10**6), st.booleans(),
                   st.floats(allow_nan=False, allow_infinity=False, width=32),
                   st.lists(st.integers(-9, 9), max_size=4))
attr_tests = st.lists(st.builds(AttrTest, st.sampled_from(["T", "padding", "strides", "data_format"]),
                                values, st.booleans()), max_size=2)


def _op(children):
    inputs = st.just([]) if children is None else st.lists(children, max_size=3)
    return st.builds(
        lambda types, name, inputs, ordered, attrs, optional: OpTypePattern(
            types, name=name, inputs=inputs or None, ordered_inputs=ordered, attrs=attrs,
            optional=optional and bool(inputs)),
        st.one_of(st.just("*"), st.lists(st.sampled_from(OPS), min_size=1, max_size=3, unique=True)
                  .map("|".join)),
        names, inputs, st.booleans(), attr_tests, st.booleans())


patterns = st.recursive(
    _op(None),
    lambda kids: st.one_of(_op(kids), st.builds(lambda subs, name: OneofPattern(subs, name=name),
                                                st.lists(kids, min_size=1, max_size=3), names)),
    max_leaves=12)


ATTRS = {"T": ["float32", "int32"], "padding": ["SAME", "VALID"], "data_format": ["NHWC", "NCHW"]}


@st.composite
def graphs(draw, max_nodes=12):
    """Small random DAGs over OPS: inputs from earlier nodes (repeats allowed,
    output 0 or 1), a few attributes."""
    n = draw(st.integers(1, max_nodes))
    nodes = []
    for i in range(n):
        k = draw(st.integers(0, min(i, 3)))
        inputs = [f"n{draw(st.integers(0, i - 1))}:{draw(st.integers(0, 1))}" for _ in range(k)]
        attrs = {a: draw(st.sampled_from(v)) for a, v in ATTRS.items() if draw(st.booleans())}
        nodes.append(Node(f"n{i}", draw(st.sampled_from(OPS)), inputs, attrs=attrs))
    return Graph(nodes, outputs=[nodes[-1].name])


@st.composite
def shared_patterns(draw):
    """Patterns where some objects are used more than once (``$name`` in text),
    possibly by their own descendants. A reference never replaces the first
    input of an optional node, so every cycle consumes an input (and ends)."""
    root = draw(patterns)
    for _ in range(draw(st.integers(0, 3))):
        everything = list(iter_patterns(root))
        parents = [p for p in everything if isinstance(p, OpTypePattern) and len(p.inputs) > p.optional]
        if not parents:
            break
        parent = draw(st.sampled_from(parents))
        i = draw(st.integers(int(parent.optional), len(parent.inputs) - 1))
        target = draw(st.sampled_from(everything))
        parent.inputs = parent.inputs[:i] + (target,) + parent.inputs[i + 1:]
    return root
