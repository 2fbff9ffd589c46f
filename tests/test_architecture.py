"""The package's layers import one way only (the README's Architecture map).

Every ``import`` of a qviz module counts, at module level or inside a function:
a lazy import is still an arrow. A module may import its own layer or the
layers below it; packages sharing a layer may import each other only without
forming a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent / "qviz"

#: Lowest first. The README's map: ir ← runtime ← matcher/patterns ← passes ←
#: metrics ← pipeline ← analysis/qat/exporters ← layout/render ← app/cli.
LAYERS = (
    ("qviz._text", "qviz.errors", "qviz.choices", "qviz.cache_dir", "qviz.ir"),
    ("qviz.runtime", "qviz.importers", "qviz.keras_layers"),
    ("qviz.matcher", "qviz.patterns"),
    ("qviz.passes",),
    ("qviz.metrics",),
    ("qviz.pipeline",),
    ("qviz.analysis", "qviz.qat", "qviz.exporters", "qviz.summary", "qviz.samples"),
    ("qviz.layout", "qviz.render"),
    ("qviz.app", "qviz.cli", "qviz.notebook", "qviz.__main__", "qviz"),
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_edges() -> set[tuple[str, str, int]]:
    """``(importer, imported module, line)`` for every import of a qviz module."""
    edges = set()
    for path in ROOT.rglob("*.py"):
        module = _module_name(path)
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(package[:len(package) - node.level + 1]) if node.level else ""
                target = ".".join(p for p in (base, node.module or "") if p)
                # `from . import runtime` imports the submodule qviz.runtime
                targets = [f"{target}.{a.name}" if _is_module(f"{target}.{a.name}") else target
                           for a in node.names]
            else:
                continue
            edges.update((module, t, node.lineno) for t in targets if t == "qviz" or t.startswith("qviz."))
    return edges


def _is_module(name: str) -> bool:
    path = ROOT.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or path.is_dir()


def unit_of(module: str) -> str:
    """The entry of LAYERS a module belongs to (its longest listed prefix; the
    package ``qviz`` itself only by name, so a new module must be placed)."""
    best = max((u for layer in LAYERS for u in layer
                if module == u or (u != "qviz" and module.startswith(u + "."))), key=len, default=None)
    assert best is not None, f"{module} is in no layer: add it to LAYERS and the README's map"
    return best


def layer_of(module: str) -> int:
    unit = unit_of(module)
    return next(i for i, layer in enumerate(LAYERS) if unit in layer)


def test_no_module_imports_a_higher_layer():
    upward = sorted(f"{src}:{line} imports {dst} (layer {layer_of(dst)} above {layer_of(src)})"
                    for src, dst, line in import_edges() if layer_of(dst) > layer_of(src))
    assert not upward, "imports against the layering:\n" + "\n".join(upward)


def test_packages_within_a_layer_do_not_import_in_a_cycle():
    g = nx.DiGraph((unit_of(src), unit_of(dst)) for src, dst, _ in import_edges()
                   if unit_of(src) != unit_of(dst) and layer_of(src) == layer_of(dst) and unit_of(src) != "qviz")
    cycles = list(nx.simple_cycles(g))
    assert not cycles, f"import cycles between packages of one layer: {cycles}"


def test_the_checker_sees_a_lazy_back_arrow(tmp_path):
    """The rule is not vacuous: an import inside a function is found and placed."""
    edges = import_edges()
    assert ("qviz.pipeline", "qviz.metrics", 0) not in edges         # lines are real
    assert any(src == "qviz.pipeline" and dst == "qviz.metrics" for src, dst, _ in edges)
    lazy = [(s, d) for s, d, _ in edges if s == "qviz.passes.constants" and d == "qviz.runtime"]
    assert lazy, "the lazy import of runtime inside passes.constants must be seen"
    assert layer_of("qviz.app.callbacks.graph") > layer_of("qviz.render.figure") > layer_of("qviz.ir.graph")
    with pytest.raises(AssertionError, match="in no layer"):
        unit_of("qviz.brand_new_module")


def test_tensorflow_is_imported_only_where_models_are_loaded_run_or_exported():
    allowed = ("qviz.runtime", "qviz.importers", "qviz.exporters", "qviz.qat", "qviz.keras_layers",
               "qviz.ir.proto",      # the GraphDef protobuf classes ship inside the tensorflow wheel
               "qviz.cli",           # silences TensorFlow's start-up logging before a command loads a model
               "qviz.app.worker", "qviz.app.tasks", "qviz.app.celery_worker")
    found = []
    for path in ROOT.rglob("*.py"):
        module = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            if any(n.split(".")[0] in ("tensorflow", "keras", "tf_keras") for n in names) \
                    and not module.startswith(allowed):
                found.append(f"{module}:{node.lineno}")
    assert not found, f"TensorFlow/Keras imported outside the loading/running/exporting modules: {found}"
