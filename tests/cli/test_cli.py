"""``qviz info`` on samples and on every file form of a real net; errors exit 2, one line."""

import re
import subprocess
import sys

import pytest

from qviz.cli import main


def _info(capsys, *args):
    assert main(["info", *map(str, args)]) == 0
    return capsys.readouterr().out


def test_info_on_each_sample(capsys, samples):
    expect = {"lenet_digits": "batch norms: 3 (0 fused, 3 unfused)",
              "mobilenet_block": "batch norms: 3 (0 fused, 3 unfused)",
              "resnet_block": "batch norms: 4 (0 fused, 4 unfused)",
              "fused_bn_tf_keras": "batch norms: 3 (3 fused, 0 unfused)"}
    for name, path in samples.items():
        out = _info(capsys, path)
        assert expect[name] in out, out
        assert "image:0  (?, " in out
    out = _info(capsys, samples["lenet_digits"])
    assert "Identity:0  (?, 10)  float32" in out
    layers = out.split("layers:\n")[1].split()
    assert layers == ["image", "conv1", "bn1", "relu1", "conv2", "bn2", "relu2", "pool",
                      "flatten", "fc1", "bn3", "relu3", "logits"]
    assert re.search(r"^  Conv2D\s+2$", out, re.M) and re.search(r"^  MatMul\s+2$", out, re.M)


def test_error_is_one_line_on_stderr_with_exit_2(tmp_path):
    bad = tmp_path / "broken.pbtxt"
    bad.write_text("node { name: ")
    proc = subprocess.run([sys.executable, "-m", "qviz", "info", str(bad)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith("qviz: error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert "malformed text GraphDef" in proc.stderr


@pytest.mark.parametrize("args, said", [(["info", "x.keras", "--input-shape", "a,b"], "must be integers"),
                                        (["info", "x.keras", "--input-shape", "8,,1"], "must be integers"),
                                        (["render", "x.keras", "-o", "x.png", "--scale", "0"], "must be a positive"),
                                        (["info", "x.keras", "--max-model-mb", "nan"], "must be a positive"),
                                        (["sensitivity", "x.keras", "--target-sqnr", "nan"], "must be a finite"),
                                        (["sensitivity", "x.keras", "--size-kb", "-5"], "must be a positive")])
def test_bad_arguments_are_refused_by_the_parser(capsys, args, said):
    """"8,,1" read as 8,1; --scale 0 wrote a 1×1 PNG and said "wrote"."""
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    assert said in capsys.readouterr().err


def test_an_input_shape_the_model_does_not_take_says_which_it_takes(capsys, samples):
    """TensorFlow's error from tracing starts "in user code:" and a traceback: the one line
    said only that; the cause is its last line."""
    assert main(["info", str(samples["lenet_digits"]), "--input-shape", "9,9,9"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.endswith("expected shape=(None, 8, 8, 1), found shape=(None, 9, 9, 9)"), err


def test_input_shape_flag(tmp_path, capsys):
    import keras

    inp = keras.Input((None, None, 3), name="img")
    keras.Model(inp, keras.layers.Conv2D(2, 3, name="c")(inp)).save(tmp_path / "dyn.keras")
    assert main(["info", str(tmp_path / "dyn.keras")]) == 2
    assert "--input-shape" in capsys.readouterr().err
    out = _info(capsys, tmp_path / "dyn.keras", "--input-shape", "9,9,3")
    assert "Identity:0  (?, 7, 7, 2)" in out


def test_report_writes_one_html_file_and_says_what_it_cannot_explain(tmp_path, capsys, samples):
    model = str(samples["lenet_digits"])
    recipe = tmp_path / "r.json"
    assert main(["recipe", model, "--rule", "name~conv2: w4a8"]) == 0
    recipe.write_text(capsys.readouterr().out)
    out = tmp_path / "report.html"
    assert main(["report", model, "--recipe", str(recipe), "-o", str(out), "--explain", "conv2"]) == 0
    assert "opens from disk, no network" in capsys.readouterr().out
    page = out.read_text()
    assert "conv2 absorbs bn2" in page and "name~conv2: w4a8" in page and '<script src="http' not in page
    # its batch norm named explains the same fold (it said "no batch norm after it")
    assert main(["report", model, "--recipe", str(recipe), "-o", str(out), "--explain", "bn2"]) == 0
    assert "conv2 absorbs bn2" in out.read_text()
    capsys.readouterr()
    for args, words in ((["--explain", "relu1"], "--explain relu1: layer 'relu1' has no batch norm after it"),
                        (["--explain", "nope"], "--explain nope: no layer of that name in the model")):
        assert main(["report", model, "--recipe", str(recipe), "-o", str(out), *args]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and words in err
    assert main(["report", model, "--recipe", str(recipe), "-o", str(tmp_path / "r.txt")]) == 2
    assert "*.html" in capsys.readouterr().err


def test_apply_counts_the_changes_the_page_draws(tmp_path, capsys, samples):
    """One fold: the CLI said "2 ops added, 23 removed, 4 modified", counting the folded
    kernel, bn1's constants and the NoOp; the page's line under the graph counts drawn ops."""
    import qviz
    from qviz.app import services
    from qviz.app.session import Session

    recipe = qviz.Recipe(fold_default=False, quantize_default=None, fold_layers={"conv1": True})
    path = tmp_path / "r.json"
    path.write_text(recipe.to_json())
    assert main(["apply", str(samples["lenet_digits"]), "--recipe", str(path)]) == 0
    said = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("changes: "))
    assert said == "changes: 0 ops added, 2 removed, 3 modified (not counting constants)"
    session = Session(qviz.load(samples["lenet_digits"]), "lenet")
    assert said.removeprefix("changes: ") in services.change_line(session, session.result(recipe))


def test_apply_says_each_tflite_difference_once_with_its_layers(tmp_path, capsys, samples):
    """Every unfolded batch norm of MobileNetV2 made a line of its own: 52 near-identical
    warnings. One line per reason, its layers in the model's order."""
    import qviz

    g = qviz.load(samples["lenet_digits"])
    path = tmp_path / "r.json"
    path.write_text(qviz.Recipe.default(g, qviz.LayerBits(6, 8)).to_json())
    assert main(["apply", str(samples["lenet_digits"]), "--recipe", str(path)]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "weights at 6 bits" in line]
    assert lines == ["qviz: warning: TFLite: conv1, conv2, fc1, logits: weights at 6 bits: TFLite re-rounds them "
                     "onto its int8 grid, an extra rounding qviz does not simulate"], lines


def test_float_and_bits_together_are_refused(capsys, samples):
    """``qviz recipe M --float --weight-bits 4`` quietly ignored the bits."""
    assert main(["recipe", str(samples["lenet_digits"]), "--float", "--weight-bits", "4"]) == 2
    assert "--float quantizes nothing" in capsys.readouterr().err


def test_a_wrong_channel_count_says_which_the_layer_takes(capsys, samples):
    """Keras 3's reason is a bold line above the call's arguments: the line shown was the
    last argument, "• kwargs=<class 'inspect._empty'>"."""
    assert main(["info", str(samples["lenet_digits"]), "--input-shape", "8,8,2"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "\x1b" not in err and err.endswith(
        "expected axis -1 of input shape to have value 1, but received input with shape (None, 8, 8, 2)"), err


@pytest.mark.parametrize("text, cause", [
    ('node { name: "x" op: "Bogus" }', "has no inputs (no Placeholder)"),
    ('node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }\n'
     'node { name: "b" op: "Relu" input: "x" attr { key: "T" value { type: DT_FLOAT } } }',
     "input x:0 has an unknown shape: give it (--input-shape"),
])
def test_a_graph_that_cannot_be_run_is_one_line_naming_the_file(tmp_path, capsys, text, cause):
    """A graph qviz can draw but not run (no inputs to verify on, an input of unknown shape):
    `apply` says so in one line naming the file (it raised IndexError from the verification)."""
    model = tmp_path / "odd.pbtxt"
    model.write_text(text)
    recipe = tmp_path / "r.json"
    recipe.write_text('{"fold": {"default": true}, "quantize": {"default": {"weight_bits": 8, "activation_bits": 8}}}')
    assert main(["apply", str(model), "--recipe", str(recipe), "-o", str(tmp_path / "out.pb")]) == 2
    # (after the note that a model which is not a sample is calibrated on noise)
    err = "\n".join(line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("note: "))
    assert err.startswith(f"qviz: error: {model}: ") and cause in err and "\n" not in err, err


def test_export_qat_takes_unsafe_for_a_model_with_a_lambda(tmp_path, capsys, samples):
    """It said "--unsafe on the command line", then refused --unsafe as an unknown argument."""
    import keras

    inputs = keras.Input((8, 8, 1))
    x = keras.layers.Conv2D(4, 3, name="conv")(inputs)
    x = keras.layers.Lambda(lambda t: t * 2.0, name="twice")(x)
    outputs = keras.layers.Dense(3, name="fc")(keras.layers.Flatten()(x))
    keras.Model(inputs, outputs).save(tmp_path / "lam.keras")
    recipe = tmp_path / "r.json"
    recipe.write_text('{"fold": {"default": true}, "quantize": {"default": {"weight_bits": 8, "activation_bits": 8}}}')
    args = ["export-qat", str(tmp_path / "lam.keras"), "--recipe", str(recipe), "-o", str(tmp_path / "q.keras")]
    assert main(args) == 2 and "--unsafe on the command line" in capsys.readouterr().err
    assert main([*args, "--unsafe"]) == 0 and (tmp_path / "q.keras").is_file()


def test_the_report_says_when_the_fold_it_explains_is_off_in_the_recipe(samples):
    """It headed "conv2 absorbs bn2" for a recipe with conv2's fold off, and said nothing else."""
    import qviz
    from qviz.render.report import make_report

    g = qviz.load(samples["lenet_digits"])
    on = qviz.Recipe().with_preset("all-8", g)
    off = make_report(g, on.with_fold("conv2", False), name="lenet", explain=["conv2"])
    assert "This recipe leaves this fold off" in off
    assert "This recipe leaves this fold off" not in make_report(g, on, name="lenet", explain=["conv2"])


def test_a_report_reads_the_widths_its_sensitivity_checkpoint_holds(tmp_path, capsys, samples):
    """A checkpoint swept at 8 and 4 bits: the report measured 6, 3 and 2 bits too (318
    more measurements on MobileNetV2)."""
    model = str(samples["lenet_digits"])
    checkpoint = tmp_path / "sweep.json"
    assert main(["sensitivity", model, "--bits", "8", "4", "--checkpoint", str(checkpoint)]) == 0
    capsys.readouterr()
    recipe = tmp_path / "r.json"
    recipe.write_text('{"fold": {"default": true}, "quantize": {"default": {"weight_bits": 8, "activation_bits": 8}}}')
    before = checkpoint.read_bytes()
    assert main(["report", model, "--recipe", str(recipe), "-o", str(tmp_path / "r.html"),
                 "--sensitivity", str(checkpoint)]) == 0
    assert "measuring" not in capsys.readouterr().err and checkpoint.read_bytes() == before


def test_a_model_quantized_already_is_said_so_and_not_offered_for_quantizing(tmp_path, capsys, samples):
    """A graph ``qviz apply`` wrote, given back to qviz: every command says it is
    fake-quantized already, its default recipe quantizes nothing more, and a sweep has
    nothing to measure (it printed an empty table and an empty "suggested recipe")."""
    assert main(["recipe", str(samples["lenet_digits"])]) == 0
    (tmp_path / "r.json").write_text(capsys.readouterr().out)
    assert main(["apply", str(samples["lenet_digits"]), "--recipe", str(tmp_path / "r.json"),
                 "-o", str(tmp_path / "q.pb")]) == 0
    capsys.readouterr()
    out = _info(capsys, tmp_path / "q.pb")
    assert "fake-quantized already: 4 layers (" in out and "qviz does not quantize them again" in out
    assert main(["recipe", str(tmp_path / "q.pb")]) == 0
    said = capsys.readouterr()
    assert '"layers": {}' in said.out and "note: " in said.err and "fake-quantized already" in said.err
    assert main(["sensitivity", str(tmp_path / "q.pb"), "--checkpoint", str(tmp_path / "s.json")]) == 2
    assert "nothing to measure: the model has no conv/dense layer left to quantize (4 fake-quantized already)" \
        in capsys.readouterr().err
    assert not (tmp_path / "s.json").exists()


def test_an_empty_model_file_is_refused_before_tensorflow_is_imported(tmp_path):
    """It took 4.7 s (TensorFlow's import) to say the file is empty."""
    (tmp_path / "m.keras").write_bytes(b"")
    code = ("import sys; from qviz.cli import main; rc = main(['info', sys.argv[1]]); "
            "print(rc, 'tensorflow' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "m.keras")], capture_output=True, text=True,
                          timeout=120)
    assert proc.stdout.split() == ["2", "False"], proc.stdout + proc.stderr
    assert proc.stderr.strip().endswith("m.keras: the file is empty")


def test_a_pattern_on_an_op_type_the_model_lacks_says_so(capsys, samples):
    """``match --pattern 'Conv2d as c'`` said "0 match(es)": the typo went unseen."""
    assert main(["match", str(samples["lenet_digits"]), "--pattern", "Conv2d as c"]) == 0
    assert capsys.readouterr().out.strip() == "0 match(es): no op of type Conv2d in this model"


def test_what_the_cli_calibrates_on_is_said_and_can_be_the_users_data(tmp_path, capsys, samples):
    """A model that is not a sample was calibrated and verified on noise without a word
    (an --int8-io input scale from noise), and there was no way to give data."""
    import numpy as np

    from qviz.samples import SAMPLE_DIR, sample_data

    recipe = tmp_path / "r.json"
    assert main(["recipe", str(samples["lenet_digits"])]) == 0
    recipe.write_text(capsys.readouterr().out)
    copy = tmp_path / "mine.keras"      # a copy of a sample is the sample (same bytes)
    copy.write_bytes(samples["lenet_digits"].read_bytes())
    assert main(["apply", str(copy), "--recipe", str(recipe)]) == 0
    said = capsys.readouterr()
    assert "outputs on 450 examples" in said.out and "fixed-seed noise" not in said.err
    # another model: noise, said on stderr
    other = tmp_path / "other.keras"
    other.write_bytes(samples["lenet_digits"].read_bytes() + b"\0")   # (a zip reads past trailing bytes)
    assert main(["apply", str(other), "--recipe", str(recipe)]) == 0
    said = capsys.readouterr()
    assert "outputs on 16 examples" in said.out and "calibrated and verified on fixed-seed noise" in said.err
    assert "not a bundled sample" in said.err
    # its data given: the same figures as the sample's own
    assert main(["apply", str(other), "--recipe", str(recipe), "--data",
                 str(SAMPLE_DIR / "lenet_digits_data.npz")]) == 0
    said = capsys.readouterr()
    assert "outputs on 450 examples" in said.out and "test accuracy: 99.78%" in said.out and "noise" not in said.err
    bad = tmp_path / "bad.npz"
    np.savez(bad, x_calib=sample_data("lenet_digits")["x_calib"][:, :4])
    assert main(["apply", str(other), "--recipe", str(recipe), "--data", str(bad)]) == 2
    assert "bad.npz: x_calib holds examples of shape (4, 8, 1); the model's input image:0 takes (8, 8, 1)" \
        in capsys.readouterr().err
    # a sample with no data of its own: noise too, and not called "not a sample"
    assert main(["recipe", str(samples["resnet_block"])]) == 0
    (resnet_recipe := tmp_path / "resnet.json").write_text(capsys.readouterr().out)
    assert main(["apply", str(samples["resnet_block"]), "--recipe", str(resnet_recipe)]) == 0
    assert "fixed-seed noise (the resnet_block sample ships no data)" in capsys.readouterr().err


def test_outputs_that_cannot_be_written_are_refused_before_anything_is(tmp_path, capsys, samples):
    """`apply -o x.pb --saved-model full_dir` wrote x.pb, then failed on the directory; a
    --report naming a directory failed after the whole run."""
    assert main(["recipe", str(samples["lenet_digits"])]) == 0
    (tmp_path / "r.json").write_text(capsys.readouterr().out)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    base = ["apply", str(samples["lenet_digits"]), "--recipe", str(tmp_path / "r.json")]
    for extra, said in ((["-o", str(tmp_path / "x.pb"), "--saved-model", str(tmp_path / "full")],
                         "exists and is not empty"),
                        (["-o", str(tmp_path / "x.pb"), "--report", str(tmp_path)], "is a directory; name a file"),
                        (["-o", str(tmp_path / "y.pb"), "--saved-model", str(tmp_path / "y.pb")],
                         "the outputs must be different paths"),
                        (["-o", str(tmp_path / "no" / "x.pb")], "no such directory to write it in")):
        assert main(base + extra) == 2
        assert said in capsys.readouterr().err
    assert not (tmp_path / "x.pb").exists() and not (tmp_path / "y.pb").exists()


def test_code_for_a_model_quantized_already_is_refused_in_one_line(tmp_path, capsys, samples):
    assert main(["recipe", str(samples["lenet_digits"])]) == 0
    (tmp_path / "r.json").write_text(capsys.readouterr().out)
    assert main(["apply", str(samples["lenet_digits"]), "--recipe", str(tmp_path / "r.json"),
                 "-o", str(tmp_path / "q.pb")]) == 0
    capsys.readouterr()
    assert main(["recipe", str(tmp_path / "q.pb")]) == 0
    (tmp_path / "rq.json").write_text(capsys.readouterr().out)
    assert main(["export-code", str(tmp_path / "q.pb"), "--recipe", str(tmp_path / "rq.json"),
                 "--tool", "ai-edge-quantizer", "-o", str(tmp_path / "aeq.json")]) == 2
    assert "q.pb: fake-quantized already (4 layers); ai-edge-quantizer quantizes a float model" \
        in capsys.readouterr().err


@pytest.mark.parametrize("args, said", [
    (["render", "{m}", "-o", "{t}/g.svg", "--hops", "3"], "--hops 3: says how far from --around LAYER to draw"),
    (["apply", "{m}", "--recipe", "{t}"], "is a directory; name a recipe file"),
])
def test_flags_that_would_be_ignored_or_misread_are_refused(tmp_path, capsys, samples, args, said):
    args = [a.format(m=samples["lenet_digits"], t=tmp_path) for a in args]
    assert main(args) == 2
    assert said in capsys.readouterr().err


def test_a_hostile_data_file_is_refused_in_one_line_without_running_anything(tmp_path, samples):
    """--data is a file from outside: a FIFO, a truncated or empty archive, a pickle inside, a zip
    bomb, arrays of the wrong kind are each one line naming it (nothing waits, nothing runs)."""
    import os
    import zipfile

    import numpy as np

    import qviz
    from qviz.importers import LoadError
    from qviz.samples import data_from_file

    g = qviz.load(samples["lenet_digits"])
    good = tmp_path / "good.npz"
    np.savez(good, x_calib=np.zeros((4, 8, 8, 1), np.float32))
    cases = {}
    os.mkfifo(tmp_path / "fifo.npz")
    cases["fifo.npz"] = "not a regular file (a FIFO)"
    (tmp_path / "empty.npz").write_bytes(b"")
    cases["empty.npz"] = "the file is empty"
    (tmp_path / "cut.npz").write_bytes(good.read_bytes()[:100])
    cases["cut.npz"] = "not a valid zip archive"
    np.savez(tmp_path / "pickle.npz", x_calib=np.array([object()], dtype=object))
    cases["pickle.npz"] = "not a numpy .npz file"
    with zipfile.ZipFile(tmp_path / "bomb.npz", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("x_calib.npy", b"\0" * (64 * 2**20))
    cases["bomb.npz"] = "a zip bomb?"
    np.savez(tmp_path / "words.npz", x_calib=np.array(["a", "b"]))
    cases["words.npz"] = "x_calib is not a non-empty array of numbers"
    np.savez(tmp_path / "labels.npz", x_calib=np.zeros((4, 8, 8, 1), np.float32), y_test=np.zeros(3, np.int64))
    cases["labels.npz"] = "y_test must be one integer class label per example of x_test (4)"
    for name, said in cases.items():
        with pytest.raises(LoadError) as err:
            data_from_file(g, tmp_path / name)
        assert str(err.value).startswith(f"{name}: ") and said in str(err.value) and "\n" not in str(err.value), \
            (name, str(err.value))
