"""Running a :class:`~qviz.ir.Graph` in TensorFlow.

The graph is exported to a GraphDef and imported into a concrete function per set
of fetches, cached on the graph (graphs are immutable, so the cache can never go
stale). TensorFlow is imported on first use only.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Mapping, Sequence

import numpy as np
from cachetools import LRUCache

from .errors import ModelRunError
from ._text import first_line
from .ir import Graph, Shape, canonical_tensor_name

__all__ = ["RunError", "run", "extrema", "run_from", "compiled", "evaluate", "tensor_shapes", "rewritten_shapes", "import_quietly",
           "limit_threads", "shapes_known"]

_lock = threading.Lock()

#: TensorFlow functions kept per graph (one per set of fetches), the least recently used going.
FUNCTIONS_PER_GRAPH = 8


class RunError(ModelRunError, RuntimeError):
    """The graph cannot be executed: an op TensorFlow does not know, a bad feed."""


def _tf():
    import os

    from .ir.proto import tensorflow

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return tensorflow()


def _import_error(graph: Graph, exc: Exception) -> RunError:
    msg = str(exc)
    m = re.search(r"Op type not registered '([^']+)'", msg)
    if m:
        op = m.group(1)
        names = [n.name for n in graph.nodes if n.op == op]
        where = f" (node {names[0]!r})" if names else ""
        return RunError(f"cannot run the graph: op type {op!r}{where} is not known to TensorFlow")
    return RunError(f"cannot run the graph: TensorFlow rejected it: {first_line(exc)}")


def import_quietly() -> None:
    """Import TensorFlow with the process's stderr silenced.

    TF's C++ runtime logs start-up notices (oneDNN, missing CUDA drivers) straight
    to file descriptor 2 before any Python logging setting applies; a CLI whose
    errors are one line, and a server log, must not drown in that. (While the
    import runs, anything else this process writes to stderr is lost too.)
    """
    import logging
    import os
    import sys

    with _quiet_lock:    # one thread redirects (and restores) file descriptor 2 at a time
        if "tensorflow" in sys.modules:
            _tf()        # done, or being imported by a thread that did not come this way: wait for it
            return
        sys.stderr.flush()
        saved = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
        # Python's own stderr (tracebacks, log lines of a server's other threads) goes on to
        # the real stderr meanwhile: only what the C++ runtime writes to fd 2 is dropped.
        python_stderr, real = sys.stderr, os.fdopen(os.dup(saved), "w", buffering=1)
        handlers = [h for h in logging.root.handlers
                    if isinstance(h, logging.StreamHandler) and h.stream is python_stderr]
        try:
            sys.stderr = real
            for h in handlers:
                h.setStream(real)
            os.dup2(devnull, 2)
            tf = _tf()
            tf.config.list_physical_devices("GPU")  # device probing logs too: do it now
        finally:
            os.dup2(saved, 2)
            for h in handlers:
                h.setStream(python_stderr)
            sys.stderr = python_stderr
            real.close()
            os.close(saved)
            os.close(devnull)


_quiet_lock = threading.Lock()


def limit_threads(intra_op: int) -> bool:
    """Cap TensorFlow's intra-op threads (a server leaves a core for requests).

    Only possible before TensorFlow runs anything; returns whether it applied.
    """
    tf = _tf()
    try:
        tf.config.threading.set_intra_op_parallelism_threads(max(1, int(intra_op)))
        return True
    except RuntimeError:  # TF is already initialized
        return False


def _wrapped(graph: Graph):
    """The graph imported into a ``tf.compat.v1.wrap_function`` (memoized per graph)."""
    def build():
        tf = _tf()
        graph_def = graph.to_graph_def()

        def _import():
            tf.compat.v1.import_graph_def(graph_def, name="")

        try:
            return tf.compat.v1.wrap_function(_import, [])
        except Exception as exc:  # TF raises many types here; all mean "cannot build"
            raise _import_error(graph, exc) from exc

    return graph.memo("runtime.wrapped", build)


def _pruned(graph: Graph, fetches: tuple[str, ...] | None, reduced: bool = False):
    """``(function of the inputs → fetches, the inputs' specs)``, memoized;
    ``reduced``: the function returns each fetch's minimum and maximum instead, in turn.

    Each function imports the GraphDef with the inputs mapped to its arguments and
    returns the fetches: TensorFlow keeps only what they need. (Pruning one imported
    function per fetch set, as qviz did to stop 39, cost MobileNetV2 ~0.3 s of Python
    per set and its first call ~0.4 s more: 1.1–1.5 s a new graph, against ~0.45 s.)
    Built under the lock, checked again there: two threads running a graph for the
    first time build it once."""
    # (fetches, reduced) → (fn, input specs), used and filled under _lock; the last few only:
    # a graph a worker keeps (the model's) is asked for other fetches by each local-error
    # report and fold explained, and a function holds the constants its fetches need
    pruned = graph.memo("runtime.pruned", lambda: LRUCache(FUNCTIONS_PER_GRAPH))
    with _lock:
        found = pruned.get((fetches, reduced))
    if found is not None:
        return found
    tf = _tf()  # imported (and configured) before taking the lock
    with _lock:
        found = pruned.get((fetches, reduced))
        if found is None:
            specs = _input_specs(graph, tf)
            if specs is None:      # an input that is no placeholder: no signature to give
                found = _pruned_from_wrapped(graph, fetches, reduced, tf)
            else:
                found = _imported(graph, fetches, reduced, specs, tf), specs
            pruned[(fetches, reduced)] = found
        return found


def _input_specs(graph: Graph, tf) -> list | None:
    """A ``tf.TensorSpec`` per graph input (its placeholder's name with ``_qviz_arg``: the
    function's argument, beside the imported placeholder it replaces); None if an input
    is not a placeholder's output."""
    specs = []
    for t in graph.inputs:
        node = graph.node(t.split(":")[0])
        if node.op != "Placeholder" or "dtype" not in node.raw_attrs:
            return None
        shape = node.raw_attrs["shape"].shape if "shape" in node.raw_attrs else None
        specs.append(tf.TensorSpec(tf.TensorShape(shape), tf.dtypes.as_dtype(node.raw_attrs["dtype"].type),
                                   name=f"{node.name}_qviz_arg"))
    return specs


def _imported(graph: Graph, fetches, reduced: bool, specs: list, tf):
    """The GraphDef imported, its ops keeping their names (a TFLite export made from the
    function names its tensors after them), into a function of ``specs`` returning ``fetches``:
    only the nodes the fetches need (a function holds every constant imported, and a graph
    keeps one function per fetch set: an explainer's early fetches held all the weights)."""
    targets, inputs = list(fetches or graph.outputs), tuple(graph.inputs)
    # The function keeps ``body`` (and what it refers to) as long as it lives: not the graph,
    # whose memo keeps the function (a cycle only the garbage collector frees: a worker grew
    # to 3.3 GB over 8 edits), nor the GraphDef once imported (MBs of weights, held twice).
    # Each node's layer goes in too: a SavedModel written from the function opens with its layers.
    held = [graph.to_graph_def(needed_by=[*targets, *inputs], layers=True)]

    def body(*args):
        out = tf.compat.v1.import_graph_def(held[0], input_map=dict(zip(inputs, args)),
                                            return_elements=targets, name="")
        return _extremes(tf, out) if reduced else out

    try:
        return tf.compat.v1.wrap_function(body, specs)
    except Exception as exc:  # TF raises many types here; all mean "cannot build"
        raise _import_error(graph, exc) from exc
    finally:
        held.clear()


def _extremes(tf, tensors) -> list:
    """Each tensor's minimum and maximum, in turn (what :func:`extrema` fetches)."""
    return [r(t) for t in tensors for r in (tf.reduce_min, tf.reduce_max)]


def _pruned_from_wrapped(graph: Graph, fetches, reduced: bool, tf):
    """The slower way, for inputs that are not placeholders: prune the imported graph."""
    wrapped = _wrapped(graph)
    try:
        tfg = wrapped.graph
        feeds = [tfg.get_tensor_by_name(t) for t in graph.inputs]
        targets = [tfg.get_tensor_by_name(t) for t in (fetches or graph.outputs)]
        if reduced:
            with tfg.as_default():
                targets = _extremes(tf, targets)
        return wrapped.prune(feeds=feeds, fetches=targets), feeds
    except Exception as exc:
        raise _import_error(graph, exc) from exc


def _call(fn, feeds: list, tensors: list, names: Sequence[str] = ()):
    """Call a pruned function with its inputs (``tensors``, for the placeholders or specs
    ``feeds``, named ``names`` in errors: the feeds' own names by default) in order.

    The flat call, not ``fn(*tensors)``: through a pruned function's structured signature
    (no arguments) the call raised and dropped a TypeError that formatted every input
    tensor's values, ~6 ms a call on a small model (11 of 15 s of a sensitivity sweep on
    lenet); and the structured call checks what the flat one does not need. A shape the
    function does not allow aborts the process in some kernels (oneDNN's conv), so shapes
    are checked here (all but the batch).
    """
    for feed, t, name in zip(feeds, tensors, names or [f.name for f in feeds]):
        # the batch is not checked: a graph frozen at batch 1 runs on more examples, as TF allows
        if feed.shape.rank is not None and (t.shape.rank != feed.shape.rank
                                            or not feed.shape[1:].is_compatible_with(t.shape[1:])):
            raise ValueError(f"the input {name} takes shape {feed.shape}, not {t.shape}")
    call_flat = getattr(fn, "_call_flat", None)
    if call_flat is None:   # a TensorFlow without it: the slow public path
        return fn(*tensors)
    return call_flat(tensors, fn.captured_inputs)


def compiled(graph: Graph, fetches: tuple[str, ...] | None = None):
    """A callable from the graph inputs to ``fetches`` (default: the outputs), memoized."""
    return _pruned(graph, fetches)[0]


def run(graph: Graph, *arrays, feeds: Mapping | None = None,
        fetches: Sequence[str] | None = None) -> list[np.ndarray]:
    """Execute ``graph`` on the given inputs; one numpy array per graph output (or
    fetch), read-only: TensorFlow's own buffer, not a copy (``.copy()`` one to change it).

    Args:
        graph: the graph to run.
        *arrays: one array per ``graph.inputs``, in order.
        feeds: alternatively, ``{input tensor name: array}`` (``"x"`` means ``"x:0"``).
        fetches: tensor names to return instead of the graph outputs (any
            tensor of the graph, e.g. a layer's output for calibration).

    Raises:
        RunError: the graph holds an op TensorFlow does not know, or the feeds
            do not fit the graph's inputs.
    """
    if feeds is not None:
        if arrays:
            raise RunError("give the inputs either positionally or as feeds=, not both")
        keyed = {canonical_tensor_name(k): v for k, v in feeds.items()}
        missing = [t for t in graph.inputs if t not in keyed]
        extra = [t for t in keyed if t not in graph.inputs]
        if missing or extra:
            raise RunError(f"feeds do not match the graph inputs {list(graph.inputs)}: "
                           f"missing {missing}, unknown {extra}")
        arrays = tuple(keyed[t] for t in graph.inputs)
    _check_arity(graph, arrays)
    if fetches is not None:
        fetches = tuple(graph.checked_tensor(t, "fetch") for t in fetches)
        if not fetches:
            return []
        fed = {t: i for i, t in enumerate(graph.inputs)}
        if any(t in fed for t in fetches):
            # A graph input fetched is the array given: a pruned function fed and
            # fetching the same placeholder takes no arguments at all.
            rest = tuple(t for t in fetches if t not in fed)
            values = dict(zip(rest, run(graph, *arrays, fetches=rest))) if rest else {}
            return [np.asarray(arrays[fed[t]]) if t in fed else values[t] for t in fetches]
    out = _execute(graph, arrays, fetches)
    # Each result's own buffer, read-only, not a copy: ``.numpy()`` copies, 1.5 s a
    # MobileNetV2 verification fetching every layer. Read-only, so that no caller can
    # change a value TensorFlow still holds.
    arrays = [np.asarray(o) for o in out]
    for a in arrays:
        a.flags.writeable = False
    return arrays


def extrema(graph: Graph, *arrays, tensors: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(minimums, maximums)``: each of ``tensors``' smallest and largest value as ``graph``
    runs on ``arrays`` (one per input), reduced inside TensorFlow, so only two numbers a
    tensor leave it (a NaN anywhere in a tensor makes both NaN). What a calibration needs:
    fetching MobileNetV2's 69 activations of 64 examples held 2.2 GB besides TensorFlow's own.

    >>> import numpy as np, qviz
    >>> from qviz.samples import sample_path
    >>> g = qviz.load(sample_path("lenet_digits"))
    >>> x = np.linspace(-1, 1, 128, dtype=np.float32).reshape(2, 8, 8, 1)
    >>> relu = g.layer_nodes("relu1")[-1].output(0)
    >>> lo, hi = extrema(g, x, tensors=[relu, g.inputs[0]])
    >>> float(lo[0]) == 0.0 < float(hi[0]), (float(lo[1]), float(hi[1]))     # a ReLU's range; the input's
    (True, (-1.0, 1.0))
    """
    _check_arity(graph, arrays)
    tensors = [graph.checked_tensor(t, "fetch") for t in tensors]
    fed = {t: i for i, t in enumerate(graph.inputs)}
    computed = tuple(dict.fromkeys(t for t in tensors if t not in fed))
    flat = _execute(graph, arrays, computed, reduced=True) if computed else []   # min, max, min, max…
    values = {t: (flat[2 * i], flat[2 * i + 1]) for i, t in enumerate(computed)}
    pairs = [(np.min(arrays[fed[t]]), np.max(arrays[fed[t]])) if t in fed else values[t] for t in tensors]
    return (np.array([float(np.asarray(lo)) for lo, _ in pairs]),
            np.array([float(np.asarray(hi)) for _, hi in pairs]))


def _check_arity(graph: Graph, arrays) -> None:
    if len(arrays) != len(graph.inputs):
        raise RunError(f"the graph has {len(graph.inputs)} input(s) {list(graph.inputs)}, "
                       f"but {len(arrays)} array(s) were given")


def _execute(graph: Graph, arrays, fetches: tuple[str, ...] | None, reduced: bool = False) -> list:
    """The pruned function of ``fetches`` called on ``arrays``: TensorFlow's tensors, in a list
    (``reduced``: each fetch's minimum and maximum, in turn)."""
    fn, placeholders = _pruned(graph, fetches, reduced)
    tf = _tf()
    try:
        tensors = [tf.convert_to_tensor(np.asarray(a), dtype=p.dtype) for a, p in zip(arrays, placeholders)]
        out = _call(fn, placeholders, tensors, graph.inputs)
    except (tf.errors.InvalidArgumentError, ValueError, TypeError) as exc:
        raise RunError(f"running the graph failed: {first_line(exc)}") from exc
    return list(out) if isinstance(out, (list, tuple)) else [out]


def run_from(graph: Graph, feeds: Mapping[str, np.ndarray], fetches: Sequence[str]) -> list[np.ndarray]:
    """Run part of ``graph``: ``feeds`` gives values to any tensors (not only the
    inputs), and what ``fetches`` depends on is computed from them. Not cached:
    each call prunes the graph again (for one-off checks, e.g. a layer given
    another runtime's input).

    Raises:
        RunError: a tensor is not in the graph, or the fetches need a tensor not fed.
    """
    feeds = {graph.checked_tensor(t, "feed"): v for t, v in feeds.items()}
    fetches = [graph.checked_tensor(t, "fetch") for t in fetches]
    tf = _tf()
    try:
        with _lock:
            wrapped = _wrapped(graph)
            tfg = wrapped.graph
            feed_tensors = [tfg.get_tensor_by_name(t) for t in feeds]
            fn = wrapped.prune(feeds=feed_tensors, fetches=[tfg.get_tensor_by_name(t) for t in fetches])
        out = _call(fn, feed_tensors, [tf.convert_to_tensor(np.asarray(v), dtype=t.dtype)
                                       for v, t in zip(feeds.values(), feed_tensors)])
    except (tf.errors.InvalidArgumentError, ValueError, TypeError) as exc:
        raise RunError(f"running part of the graph failed: {first_line(exc)}") from exc
    return [o.numpy() for o in (out if isinstance(out, (list, tuple)) else [out])]


def evaluate(graph: Graph, tensors: Sequence[str]) -> list[np.ndarray]:
    """Values of tensors that depend on no graph input (constant subgraphs)."""
    _tf()
    try:
        with _lock:   # pruning adds to the wrapped graph: one thread at a time
            wrapped = _wrapped(graph)
            fn = wrapped.prune(feeds=[], fetches=[wrapped.graph.get_tensor_by_name(t) for t in tensors])
        out = fn()
    except Exception as exc:
        raise RunError(f"cannot evaluate {list(tensors)}: {first_line(exc)}") from exc
    if not isinstance(out, (list, tuple)):
        out = [out]
    return [o.numpy() for o in out]


_SHAPES = "runtime.shapes"


def tensor_shapes(graph: Graph) -> dict[str, Shape]:
    """Static shapes of every tensor, as TensorFlow infers them (cached per graph).

    Keys are canonical tensor names. Graphs with ops TF does not know give ``{}``.
    """
    return graph.memo(_SHAPES, lambda: _inferred_shapes(graph))


def shapes_known(graph: Graph) -> bool:
    """Whether :func:`tensor_shapes` of ``graph`` returns at once (no TensorFlow to run)."""
    return graph.memoized(_SHAPES)


def _inferred_shapes(graph: Graph) -> dict[str, Shape]:
    shapes: dict[str, Shape] = {}
    try:
        tf = _tf()
        tfg = tf.Graph()
        with tfg.as_default():
            tf.compat.v1.import_graph_def(graph.to_graph_def(), name="")
    except Exception as exc:  # unknown ops: no shapes, but the graph still displays
        logging.getLogger(__name__).info("no static shapes for %s: %s", graph, exc)
        return shapes
    for op in tfg.get_operations():
        for t in op.outputs:
            s = t.shape
            shapes[t.name] = Shape.unknown() if s.rank is None else Shape(s.as_list())
    return shapes


def rewritten_shapes(original: Graph, rewritten: Graph) -> dict[str, Shape]:
    """Static shapes of a rewrite of ``original`` without importing it into
    TensorFlow again: the original's shapes, and for each new tensor its first
    input's (what rewrites add to the data path, FakeQuant and BiasAdd, is
    elementwise). Memoized on ``rewritten``."""
    base = tensor_shapes(original)
    if rewritten is original:
        return base

    def propagated() -> dict[str, Shape]:
        shapes = dict(base)
        for node in rewritten.nodes:
            t = node.output(0)
            if t not in shapes and node.inputs and node.inputs[0] in shapes:
                shapes[t] = shapes[node.inputs[0]]
        return shapes

    # keyed by the original too (the memo holds it, so its id is not reused)
    return rewritten.memo(("runtime.rewritten_shapes", id(original)), lambda: (original, propagated()))[1]
