"""Real architectures from keras.applications (weights=None, built offline)."""

import numpy as np
import pytest
from google.protobuf import text_format

import qviz
from qviz.cli import main
from qviz.passes.fold_batch_norms import batch_norm_nodes
from tests.models import ZOO_SIZE, rel_err, zoo_model
from qviz import runtime

pytestmark = pytest.mark.zoo


@pytest.mark.parametrize("name", ["MobileNetV2", "ResNet50", "EfficientNetB0"])
def test_run_equals_keras(name):
    model = zoo_model(name)
    g = qviz.load(model)
    x = np.random.default_rng(0).uniform(0, 255 if name == "EfficientNetB0" else 1,
                                         (2, ZOO_SIZE, ZOO_SIZE, 3)).astype(np.float32)
    want = model(x, training=False).numpy()
    got = runtime.run(g, x)[0]
    assert got.shape == want.shape
    assert rel_err(got, want) < 1e-4
    keras_layers = {layer.name for layer in model.layers}
    assert set(g.layers) <= keras_layers | {n.name for n in g.nodes if n.op == "Placeholder"}


def test_info_on_saved_model_pb_and_pbtxt(tmp_path, capsys, mobilenet_v2_saved_model):
    model = zoo_model("MobileNetV2")
    g = qviz.load(model)
    gd = g.to_graph_def()
    (tmp_path / "m.pb").write_bytes(gd.SerializeToString())
    (tmp_path / "m.pbtxt").write_text(text_format.MessageToString(gd))
    assert len(batch_norm_nodes(g)) == 52
    for target in (tmp_path / "m.pb", tmp_path / "m.pbtxt", mobilenet_v2_saved_model):
        assert main(["info", str(target)]) == 0
        out = capsys.readouterr().out
        assert "batch norms: 52 (0 fused, 52 unfused)" in out, target
        assert "(?, 1000)" in out
        assert "  Conv2D                       35" in out
        assert "  DepthwiseConv2dNative        17" in out
