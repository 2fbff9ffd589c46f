"""The on-disk layout cache: a reopened model is drawn where it was, without laying it out."""

import os

import networkx as nx

from qviz.layout import LayoutCache, layered_routes
from qviz.layout import cache as cache_module


def _graph(n=40):
    g = nx.DiGraph()
    for i in range(n):
        g.add_edge(f"layer:n{i}", f"layer:n{i + 1}")
        if i % 5 == 0:
            g.add_edge(f"layer:n{i}", f"layer:n{i + 3}")
    return g


def test_a_cached_layout_is_the_layout(tmp_path):
    g = _graph()
    cache = LayoutCache(tmp_path)
    assert cache.routes(g, "TB") == layered_routes(g, "TB")
    assert cache.routes(g, "TB") == layered_routes(g, "TB") and cache.hits == 1
    # another direction, or another graph, is another entry
    cache.routes(g, "LR")
    g.add_edge("layer:n0", "layer:n7")
    cache.routes(g, "LR")
    assert cache.hits == 1 and len(list(tmp_path.glob("layout-*.json"))) == 3


def test_a_damaged_entry_is_laid_out_again_and_replaced(tmp_path):
    g = _graph()
    cache = LayoutCache(tmp_path)
    cache.routes(g)
    (entry,) = tmp_path.glob("layout-*.json")
    for junk in (b"", b"{\"pos\": 1}", b"\x00" * 10, b'{"pos": {"layer:n0": [0, 0]}, "routes": []}'):
        entry.write_bytes(junk)
        assert cache.routes(g) == layered_routes(g) and cache.hits == 0
    entry.unlink()
    os.mkfifo(entry)   # read, it would block for good: refused, laid out again, replaced
    assert cache.routes(g) == layered_routes(g) and cache.hits == 0
    assert cache.routes(g) == layered_routes(g) and cache.hits == 1


def test_an_unwritable_directory_costs_only_the_saving(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    g = _graph()
    assert LayoutCache(blocker / "layouts").routes(g) == layered_routes(g)


def test_the_cache_never_grows_past_its_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_module, "MAX_FILES", 3)
    cache = LayoutCache(tmp_path)
    for n in range(10, 16):
        cache.routes(_graph(n))
    assert len(list(tmp_path.glob("layout-*.json"))) == 3
    assert not list(tmp_path.glob("*.tmp"))


def test_the_app_cache_lives_where_the_environment_says(tmp_path, monkeypatch):
    monkeypatch.setenv("QVIZ_CACHE_DIR", str(tmp_path / "c"))
    assert cache_module.default_cache().directory == tmp_path / "c"
    monkeypatch.delenv("QVIZ_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_module.default_cache().directory == tmp_path / "qviz" / "layouts"
    assert os.environ["XDG_CACHE_HOME"] == str(tmp_path)


def test_the_cache_leaves_other_files_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_module, "MAX_FILES", 1)
    mine = tmp_path / "notes.json"
    mine.write_text("{}")
    cache = LayoutCache(tmp_path)
    for n in range(10, 13):
        cache.routes(_graph(n))
    assert mine.read_text() == "{}"
