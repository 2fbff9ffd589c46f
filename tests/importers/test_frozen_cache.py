"""A Keras file opened again is read back frozen, not loaded by Keras again, and
the cache never answers for other bytes, other options, or a damaged entry."""

import os
import shutil

import numpy as np
import pytest

import qviz
from qviz import runtime
from qviz.importers import frozen_cache
from qviz.passes.calibration import noise_inputs


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("QVIZ_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _entries(cache_dir):
    return sorted(cache_dir.glob(f"{frozen_cache.PREFIX}*{frozen_cache.SUFFIX}"))


def _no_keras(monkeypatch):
    """Make any Keras load fail the test: what is read back must not go through it."""
    from qviz.importers import keras as keras_importer

    def refuse(path, **_):
        pytest.fail(f"Keras was given {path}")

    monkeypatch.setattr(keras_importer, "load_keras_file", refuse)
    monkeypatch.setattr(keras_importer, "load_h5_file", refuse)


def _same(a, b):
    assert a.to_graph_def() == b.to_graph_def()
    assert (a.inputs, a.outputs, a.layers, dict(a.layer_scopes)) == (b.inputs, b.outputs, b.layers, dict(b.layer_scopes))
    assert [n.layer for n in a.nodes] == [n.layer for n in b.nodes]


@pytest.mark.parametrize("sample", ["lenet_digits", "fused_bn_tf_keras"])
def test_a_file_opened_again_is_read_back_without_keras_wherever_it_is(cache_dir, samples, tmp_path, monkeypatch,
                                                                         sample):
    first = qviz.load(samples[sample])
    assert len(_entries(cache_dir)) == 1
    copy = tmp_path / f"elsewhere{samples[sample].suffix}"
    shutil.copy(samples[sample], copy)
    _no_keras(monkeypatch)
    again = qviz.load(copy)
    _same(first, again)
    assert again.source == str(copy)   # (a sample's data and QAT's rebuild are found from it)
    x = noise_inputs(first, count=2)[0]
    np.testing.assert_array_equal(runtime.run(again, x)[0], runtime.run(first, x)[0])


def test_other_bytes_or_another_input_shape_are_frozen_anew(cache_dir, samples, tmp_path, monkeypatch):
    path = tmp_path / "m.keras"
    shutil.copy(samples["lenet_digits"], path)
    qviz.load(path)
    with open(path, "ab") as f:   # (a zip reads the same with bytes after its end: still a model)
        f.write(b"\0")
    loads = []
    from qviz.importers import keras as keras_importer

    real = keras_importer.load_keras_file
    monkeypatch.setattr(keras_importer, "load_keras_file", lambda p, **k: loads.append(p) or real(p, **k))
    qviz.load(path)
    assert loads == [path] and len(_entries(cache_dir)) == 2
    qviz.load(path, input_shape=(8, 8, 1))
    assert loads == [path, path] and len(_entries(cache_dir)) == 3


def test_a_model_loaded_unsafely_is_still_refused_in_safe_mode(cache_dir, tmp_path):
    import keras

    inp = keras.Input((4,), name="x")
    path = tmp_path / "lambda.keras"
    keras.Model(inp, keras.layers.Lambda(lambda t: t * 2.0, name="double")(inp)).save(path)
    qviz.load(path, safe_mode=False)
    assert len(_entries(cache_dir)) == 1
    with pytest.raises(qviz.LoadError, match="Lambda"):
        qviz.load(path)


@pytest.mark.parametrize("damage", ["truncated", "unsafe op", "not a graph", "a FIFO", "giant"])
def test_a_damaged_or_tampered_entry_is_dropped_and_the_file_loaded_again(cache_dir, samples, monkeypatch, damage):
    first = qviz.load(samples["lenet_digits"])
    [entry] = _entries(cache_dir)
    data, limit = entry.read_bytes(), frozen_cache._ENTRY_MAX_BYTES
    if damage == "truncated":
        entry.write_bytes(data[: len(data) // 2])
    elif damage == "unsafe op":   # what someone who can write the cache could put there: refused as in a .pb
        from qviz.ir.proto import pb

        head, _, body = data.partition(b"\n")
        gd = pb().GraphDef()
        gd.ParseFromString(body)
        gd.node.add(name="leak", op="WriteFile")
        entry.write_bytes(head + b"\n" + gd.SerializeToString())
    elif damage == "a FIFO":   # read, it would block the open for good
        entry.unlink()
        os.mkfifo(entry)
    elif damage == "giant":   # (over what an entry may be: not read into memory)
        monkeypatch.setattr(frozen_cache, "_ENTRY_MAX_BYTES", len(data) - 1)
    else:
        entry.write_bytes(b"{}\n" + b"\xff" * 100)
    from qviz.importers import keras as keras_importer

    loads, real = [], keras_importer.load_keras_file
    monkeypatch.setattr(keras_importer, "load_keras_file", lambda p, **k: loads.append(p) or real(p, **k))
    again = qviz.load(samples["lenet_digits"])
    assert loads == [samples["lenet_digits"]]   # the entry refused: the file frozen again
    _same(first, again)
    assert "WriteFile" not in again.op_counts()
    monkeypatch.setattr(frozen_cache, "_ENTRY_MAX_BYTES", limit)
    _no_keras(monkeypatch)   # loaded again, and kept again
    _same(first, qviz.load(samples["lenet_digits"]))


def test_a_cache_that_cannot_be_written_only_costs_the_saving(tmp_path, monkeypatch, samples):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("QVIZ_CACHE_DIR", str(blocker / "cache"))
    assert qviz.load(samples["lenet_digits"]).layers


def test_the_cache_keeps_its_newest_entries_within_its_bounds(cache_dir, samples, tmp_path, monkeypatch):
    monkeypatch.setattr(frozen_cache, "MAX_FILES", 2)
    for i in range(3):
        path = tmp_path / f"m{i}.keras"
        path.write_bytes(samples["lenet_digits"].read_bytes() + b"\0" * i)
        qviz.load(path)
    assert len(_entries(cache_dir)) == 2
    (cache_dir / "layout-other.json").write_text("{}")   # another cache's entry is not its to prune
    qviz.load(samples["lenet_digits"])
    assert len(_entries(cache_dir)) == 2 and (cache_dir / "layout-other.json").exists()
