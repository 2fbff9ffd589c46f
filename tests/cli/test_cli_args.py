"""Command-line mistakes: one line on stderr, exit status 2, before any model is loaded."""

import socket
import sys

import pytest

from qviz.cli import main
from qviz.samples import sample_path

LENET = str(sample_path("lenet_digits"))


def _fails(capsys, argv, *fragments):
    with pytest.raises(SystemExit) as info:
        sys.exit(main(argv))
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("qviz: error: "), err
    assert "Traceback" not in err
    for f in fragments:
        assert f in err, err
    return err


@pytest.mark.parametrize("argv,fragment", [
    (["recipe", LENET, "--weight-bits", "1"], "'1' is not a bit width"),
    (["recipe", LENET, "--activation-bits", "17"], "'17' is not a bit width"),
    (["recipe", LENET, "--weight-bits", "eight"], "'eight' is not a bit width"),
    (["sensitivity", LENET, "--bits", "1", "17"], "'1' is not a bit width"),
    (["info", LENET, "--max-model-mb", "-3"], "must be a positive number"),
    (["frobnicate"], "invalid choice"),
    (["info"], "the following arguments are required"),
])
def test_bad_arguments_are_one_line(capsys, argv, fragment):
    _fails(capsys, argv, fragment)


def test_an_output_it_cannot_write_is_refused_before_loading(capsys, tmp_path):
    recipe = tmp_path / "r.json"
    recipe.write_text("{}")
    _fails(capsys, ["apply", LENET, "--recipe", str(recipe), "-o", str(tmp_path / "x.onnx")], "*.pb or *.pbtxt")
    _fails(capsys, ["export-qat", LENET, "--recipe", str(recipe), "-o", str(tmp_path / "x.h5")], "*.keras")
    assert not (tmp_path / "x.onnx").exists()


def test_a_missing_model_is_refused_before_tensorflow_is_imported(capsys, monkeypatch):
    monkeypatch.setattr("qviz.cli._quiet_tensorflow", lambda: pytest.fail("imported TensorFlow first"))
    _fails(capsys, ["info", "no/such/model.keras"], "no such file or directory")
    _fails(capsys, ["serve", "no/such/model.keras", "--port", "0"], "no such file or directory")


def test_a_busy_port_is_refused_before_serving(capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        _fails(capsys, ["serve", "--port", str(port)], f"cannot serve on 127.0.0.1:{port}", "--port")


def test_library_refuses_a_graph_under_a_foreign_suffix(tmp_path):
    import qviz
    from qviz.exporters import ExportError, save_graph_def

    with pytest.raises(ExportError, match="name the file .pb or .pbtxt"):
        save_graph_def(qviz.load(LENET), tmp_path / "model.onnx")
