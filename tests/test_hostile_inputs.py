"""Hostile input is normal input (issue 12): every bad model file gets one line.

The corpus (``tests/hostile.py``, built at test time in temporary directories)
goes through three doors:

1. ``qviz.load`` in this process: a :class:`qviz.LoadError` whose message is one
   printable line, ``<the file's name>: <cause>``; nothing appears next to the
   model or in the temporary directory; code in the file never runs.
2. ``qviz info FILE`` (and a few ``qviz match`` / ``qviz apply`` cases): one
   driver subprocess runs ``qviz.cli.main`` for every item (TensorFlow imported
   once), with ``TMPDIR``, ``HOME`` and the working directory pointed at fresh
   directories: exit status 2, exactly one line ``qviz: error: …`` on stderr,
   nothing on stdout, no traceback, well within its time limit; afterwards the
   working directory is empty and ``HOME`` holds only what Keras writes on
   import. It starts as soon as the corpus exists and runs while the in-process
   tests do.
3. The app's upload path (``load_upload``) with each model file's bytes: the
   error names the upload, shows no server path, and leaves no upload directory.

Cases that carry code would create a marker file if it ran; the marker must not
exist after any of the above, and with ``safe_mode=False`` it does appear (for
the ``.keras``/``.h5`` Lambda layers and the ``.pb`` WriteFile), so the checks
can fail.
"""

from __future__ import annotations

import faulthandler
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

import qviz
from qviz.app.uploads import load_upload
from qviz.samples import sample_path

from . import hostile
from .hostile import CORPUS, MARKER, UPLOADS, payload
from qviz import runtime

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
NOBODY = 65534
CLI_JOB_TIMEOUT = 60          # seconds any one CLI job may take before the driver aborts
CLI_TOTAL_TIMEOUT = 240       # the whole driver run
UPLOAD_LIMIT = 16 * 2**20
HOME_ALLOWED = {".keras", ".keras/keras.json"}   # what Keras writes into HOME when imported

#: Items also run through the other subcommands that load a model (same loader, same cause):
#: case id → whether it is a Keras file (``export-qat`` takes only those).
OTHER_COMMANDS_ON = {"fifo.pb": False, "k3-lambda.keras": True, "tf_keras-lambda.h5": True, "writefile.pb": False,
                     "keras-bomb-ratio": True, "name-ansi-escape": False, "h5-external-storage-fifo": True,
                     "saved-model-variables-fifo": False}

CASES = {c.id: c for c in CORPUS}
assert len(CASES) == len(CORPUS), "case ids must be unique"


def shown(name: str) -> str:
    """A source name as a one-line message shows it (see qviz.LoadError)."""
    name = str(name)
    if len(name) > 300:
        name = name[:300] + "…"
    return name if name.isprintable() else repr(name)


def check_message(msg: str, name: str, cause: str) -> None:
    assert msg.isprintable(), f"not one printable line: {msg!r}"
    assert len(msg) < 1200, f"{len(msg)} characters: {msg[:200]!r}…"
    assert msg.startswith(shown(name) + ": "), f"does not start with the name {shown(name)!r}: {msg!r}"
    assert cause in msg, f"cause {cause!r} missing: {msg!r}"


class as_unprivileged:
    """Run a block with the effective user id of ``nobody`` when root (where
    mode 000 does not stop a read): the permission case needs a real refusal."""

    def __enter__(self):
        if IS_ROOT:
            os.seteuid(NOBODY)

    def __exit__(self, *exc):
        if IS_ROOT:
            os.seteuid(0)


class deadline:
    """Abort the whole run, with every thread's traceback, if a block hangs."""

    def __init__(self, seconds: float):
        self.seconds = seconds

    def __enter__(self):
        faulthandler.dump_traceback_later(self.seconds, exit=True)

    def __exit__(self, *exc):
        faulthandler.cancel_dump_traceback_later()


# -- the corpus and the CLI driver (session fixtures) -----------------------------------------


@pytest.fixture(scope="session")
def corpus(tmp_path_factory) -> dict[str, Path]:
    """Every case built in a directory of its own; case id → the path to load."""
    root = tmp_path_factory.mktemp("hostile")
    built = {}
    for case in CORPUS:
        d = root / case.id
        d.mkdir()
        built[case.id] = case.build(d)
    return built


def _bad_patterns() -> dict[str, str]:
    return {
        "pattern-deep": "Relu(" * 5000 + "*" + ")" * 5000,
        "pattern-unterminated-string": 'Conv2D[padding="SAME',
        "pattern-huge-number": "Conv2D[strides=1e999999]",
        "pattern-control-chars": "Relu(\x00\x1b[31m\n)",
        "pattern-empty": "",
    }


def _bad_recipes(d: Path) -> dict[str, Path]:
    texts = {
        "recipe-deep": "[" * 100_000 + "]" * 100_000,
        "recipe-huge-int": '{"quantize": {"default": {"weight_bits": ' + "9" * 100_000 + ', "activation_bits": 8}}}',
        "recipe-invalid-json": '{"quantize": ',
        "recipe-list": "[1, 2, 3]",
        "recipe-not-utf8": b"\xff\xfe\x00{",
    }
    paths = {}
    for key, text in texts.items():
        paths[key] = d / f"{key}.json"
        paths[key].write_bytes(text if isinstance(text, bytes) else text.encode())
    return paths


class CliRun:
    """The driver subprocess: started once, results read when a test first needs them."""

    def __init__(self, base: Path, corpus: dict[str, Path]):
        self.base = base
        for sub in ("cwd", "home", "tmp", "capture", "recipes"):
            (base / sub).mkdir()
        lenet = str(sample_path("lenet_digits"))
        jobs = []
        for case in CORPUS:
            if case.cli:
                jobs.append({"id": case.id, "argv": ["info", str(corpus[case.id])],
                             "euid": NOBODY if IS_ROOT and case.id == "no-read-permission.pb" else None,
                             "timeout": CLI_JOB_TIMEOUT})
        for key, text in _bad_patterns().items():
            jobs.append({"id": key, "argv": ["match", lenet, "--pattern", text], "timeout": CLI_JOB_TIMEOUT})
        for key, path in _bad_recipes(base / "recipes").items():
            jobs.append({"id": key, "argv": ["apply", lenet, "--recipe", str(path), "-o", "out.pb",
                                             "--report", "report.json"], "timeout": CLI_JOB_TIMEOUT})
        jobs.append({"id": "recipe-path-newline", "timeout": CLI_JOB_TIMEOUT,
                     "argv": ["apply", lenet, "--recipe", str(base / "recipes" / "no\nsuch.json"), "-o", "out.pb"]})
        good_recipe = base / "recipes" / "good.json"
        good_recipe.write_text("{}")
        for case_id, is_keras in OTHER_COMMANDS_ON.items():
            model = str(corpus[case_id])
            commands = {"recipe": ["recipe", model], "match": ["match", model, "--builtin", "conv_bn"],
                        "apply": ["apply", model, "--recipe", str(good_recipe), "-o", "out.pb",
                                  "--saved-model", "out_sm", "--report", "report.json"]}
            commands["export-code"] = ["export-code", model, "--recipe", str(good_recipe), "--tool",
                                       "ai-edge-quantizer", "-o", "out.json"]
            if is_keras:
                commands["export-qat"] = ["export-qat", model, "--recipe", str(good_recipe), "-o", "out.keras"]
                commands["export-code:tfmot"] = ["export-code", model, "--recipe", str(good_recipe), "--tool",
                                                 "tfmot", "-o", "out.py"]
            for command, argv in commands.items():
                jobs.append({"id": f"{command}:{case_id}", "argv": argv, "timeout": CLI_JOB_TIMEOUT})
        self.ids = [j["id"] for j in jobs]
        (base / "jobs.json").write_text(json.dumps(jobs))
        env = dict(os.environ, TMPDIR=str(base / "tmp"), HOME=str(base / "home"),
                   PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parent.parent),
                                               os.environ.get("PYTHONPATH", "")]))
        env.pop("TF_CPP_MIN_LOG_LEVEL", None)   # as a user runs it: the CLI must quiet TensorFlow itself
        self.results_path = base / "capture" / "results.jsonl"
        self.proc = subprocess.Popen(
            [sys.executable, "-X", "faulthandler", str(Path(hostile.__file__).resolve()),
             str(base / "jobs.json"), str(self.results_path), str(base / "capture")],
            cwd=base / "cwd", env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._results = None
        # The real entry point, on the tf_keras .h5 whose Lambda used to run on load.
        self.entry_path = corpus["tf_keras-lambda.h5"]
        self.entry_proc = subprocess.Popen(
            [sys.executable, "-m", "qviz", "info", str(self.entry_path)], cwd=base / "cwd", env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # A recipe that is a FIFO: started now, judged at the end (it must not block).
        os.mkfifo(base / "recipes" / "fifo.json")
        self.fifo_started = time.monotonic()
        self.fifo_proc = subprocess.Popen(
            [sys.executable, "-m", "qviz", "apply", lenet, "--recipe", str(base / "recipes" / "fifo.json"),
             "-o", "out.pb"], cwd=base / "cwd", env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def results(self) -> dict[str, dict]:
        if self._results is None:
            try:
                out, err = self.proc.communicate(timeout=CLI_TOTAL_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                out, err = self.proc.communicate()
            lines = self.results_path.read_text().splitlines() if self.results_path.exists() else []
            self._results = {r["id"]: r for r in map(json.loads, lines)}
            self.driver_output = (out + err).decode("utf-8", "replace")
            self.returncode = self.proc.returncode
        return self._results

    def result(self, job_id: str) -> dict:
        results = self.results()
        if job_id not in results:
            done = len(results)
            hung = self.ids[done] if done < len(self.ids) else "?"
            pytest.fail(f"the CLI driver stopped (status {self.returncode}) before {job_id!r}; "
                        f"it was running {hung!r}:\n{self.driver_output[-3000:]}")
        return results[job_id]


@pytest.fixture(scope="session")
def cli_run(corpus, tmp_path_factory) -> CliRun:
    run = CliRun(tmp_path_factory.mktemp("hostile-cli"), corpus)
    yield run
    for proc in (run.proc, run.fifo_proc, run.entry_proc):
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.fixture(autouse=True)
def _start_cli_early(request):
    """Start the CLI driver before the first test, so it runs while the in-process tests do."""
    request.getfixturevalue("cli_run")


@pytest.fixture
def private_tmp(tmp_path, monkeypatch) -> Path:
    """tempfile's directory for this test: a fresh one we can inspect."""
    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


def _listing(d: Path) -> list[str]:
    return sorted(str(p.relative_to(d)) for p in d.rglob("*"))


# -- 1. qviz.load ------------------------------------------------------------------------------


@pytest.mark.parametrize("case_id", list(CASES))
def test_load_refuses_with_one_line(case_id, corpus, private_tmp):
    case, path = CASES[case_id], corpus[case_id]
    before = _listing(path.parent)
    with deadline(120), pytest.raises(qviz.LoadError) as info:
        if case_id == "no-read-permission.pb":
            with as_unprivileged():
                qviz.load(path)
        else:
            qviz.load(path)
    check_message(str(info.value), str(path), case.cause)
    assert not (path.parent / MARKER).exists(), "the file's code ran"
    assert _listing(path.parent) == before, "the loader wrote next to the model"
    assert _listing(private_tmp) == [], "the loader left files in the temporary directory"


def test_corpus_is_big_enough():
    assert len(CORPUS) + len(UPLOADS) >= 60
    assert sum(c.code for c in CORPUS) >= 10


# -- code would run only when allowed -----------------------------------------------------------


@pytest.mark.parametrize("case_id", [c.id for c in CORPUS if c.unsafe_marker])
def test_code_in_the_file_runs_with_safe_mode_off(case_id, tmp_path):
    """The proof that the marker checks can fail: loaded unsafely (and, for a
    graph, run), the same file does create its marker."""
    case = CASES[case_id]
    path = case.build(tmp_path)
    assert not (tmp_path / MARKER).exists()
    with deadline(120):
        graph = qviz.load(path, safe_mode=False)
        if path.suffix in (".pb", ".pbtxt"):
            runtime.run(graph, np.ones((1, 4), np.float32))
    assert (tmp_path / MARKER).exists(), "the hostile code did not run even with safe_mode=False"


def test_keras_refuses_what_qviz_lets_through(corpus):
    """keras.utils.get_file passes qviz's module check (it is Keras): Keras' own
    safe mode refuses it, and the marker never appears."""
    case = CASES["keras-utils-get_file"]
    with pytest.raises(qviz.LoadError, match="could not be deserialized"):
        qviz.load(corpus[case.id])
    assert not (corpus[case.id].parent / MARKER).exists()


# -- 3. the app's upload path ---------------------------------------------------------------------


@pytest.mark.parametrize("case_id", [c.id for c in CORPUS if c.upload])
def test_upload_refuses_with_one_line(case_id, corpus, private_tmp):
    case, path = CASES[case_id], corpus[case_id]
    name = path.name
    with deadline(120), pytest.raises(qviz.LoadError) as info:
        load_upload(payload(path.read_bytes()), name, UPLOAD_LIMIT)
    msg = str(info.value)
    check_message(msg, name, case.upload_cause or case.cause)
    assert "qviz-upload-" not in msg and str(private_tmp) not in msg, f"server path shown: {msg!r}"
    assert not (path.parent / MARKER).exists(), "the file's code ran"
    assert _listing(private_tmp) == [], "the upload left files behind"


@pytest.mark.parametrize("ucase", UPLOADS, ids=[u.id for u in UPLOADS])
def test_archive_upload_refuses_with_one_line(ucase, tmp_path, private_tmp):
    build_dir = tmp_path / "build"
    build_dir.mkdir()
    data = ucase.build(build_dir)
    outside = Path("/tmp/escaped.txt")   # where the archive's absolute member points
    existed = outside.exists()
    with deadline(120), pytest.raises(qviz.LoadError) as info:
        load_upload(payload(data), ucase.filename, UPLOAD_LIMIT)
    msg = str(info.value)
    check_message(msg, ucase.filename, ucase.cause)
    assert "qviz-upload-" not in msg and str(private_tmp) not in msg, f"server path shown: {msg!r}"
    assert not (build_dir / MARKER).exists()
    assert _listing(private_tmp) == [], "the upload left files behind"
    assert not (tmp_path / "escaped.txt").exists() and outside.exists() == existed




@pytest.mark.parametrize("filename,name", [
    ("../../escape.pb", "escape.pb"),
    ("/etc/passwd.pb", "passwd.pb"),
    ("evil\nname.pb", "evil\nname.pb"),
    ("\x1b]0;title\x07.pb", "\x1b]0;title\x07.pb"),
    ("nul\x00.pb", "nul\x00.pb"),
    ("n" * 300 + ".pb", "n" * 300 + ".pb"),
], ids=["dotdot", "absolute", "newline", "osc-escape", "nul-byte", "300-chars"])
def test_upload_file_names(filename, name, private_tmp):
    """The browser's file name is only a label: it cannot leave the upload
    directory, break the message, or crash the upload."""
    with deadline(60), pytest.raises(qviz.LoadError) as info:
        load_upload(payload(b"not a graph"), filename, UPLOAD_LIMIT)
    msg = str(info.value)
    check_message(msg, name, "not a binary GraphDef")
    assert "qviz-upload-" not in msg and str(private_tmp) not in msg, f"server path shown: {msg!r}"
    assert _listing(private_tmp) == [], "the upload left files behind"
    assert not (private_tmp.parent / "escape.pb").exists()


# -- 2. the command line --------------------------------------------------------------------------


def check_cli(result: dict) -> str:
    """Exit 2, one printable stderr line ``qviz: error: …``, nothing else; the message."""
    assert result["crash"] is None, result["crash"]
    err = result["stderr"]
    assert result["rc"] == 2, f"exit status {result['rc']}, stderr {err!r}"
    assert result["stdout"] == "", result["stdout"]
    assert "Traceback" not in err, err
    assert err.startswith("qviz: error: ") and err.endswith("\n") and err.count("\n") == 1, \
        f"stderr is not one line: {err!r}"
    assert err[:-1].isprintable(), f"stderr line has control characters: {err!r}"
    assert result["seconds"] < CLI_JOB_TIMEOUT / 2, f"took {result['seconds']} s"
    return err[len("qviz: error: "):-1]


@pytest.mark.parametrize("case_id", [c.id for c in CORPUS if c.cli])
def test_cli_info_refuses_with_one_line(case_id, corpus, cli_run):
    result = cli_run.result(case_id)
    msg = check_cli(result)
    check_message(msg, str(corpus[case_id]), CASES[case_id].cause)
    assert not (corpus[case_id].parent / MARKER).exists(), "the file's code ran"


@pytest.mark.parametrize("job_id", list(_bad_patterns()))
def test_cli_match_bad_pattern(job_id, cli_run):
    msg = check_cli(cli_run.result(job_id))
    assert msg.startswith("--pattern: "), msg




@pytest.mark.parametrize("job_id", [
    "recipe-deep", "recipe-huge-int", "recipe-invalid-json", "recipe-list", "recipe-path-newline",
    "recipe-not-utf8",
])
def test_cli_apply_bad_recipe(job_id, cli_run):
    msg = check_cli(cli_run.result(job_id))
    assert msg.startswith("--recipe "), msg


def test_cli_apply_recipe_fifo_does_not_hang(cli_run):
    cli_run.results()   # the driver has run meanwhile: by now the FIFO job had ample time
    remaining = 20 - (time.monotonic() - cli_run.fifo_started)
    try:
        out, err = cli_run.fifo_proc.communicate(timeout=max(remaining, 1))
    except subprocess.TimeoutExpired:
        cli_run.fifo_proc.kill()
        cli_run.fifo_proc.communicate()
        pytest.fail("qviz apply --recipe FIFO still blocked after 20 s")
    result = {"rc": cli_run.fifo_proc.returncode, "stdout": out.decode(), "stderr": err.decode(),
              "crash": None, "seconds": 0}
    assert "--recipe" in check_cli(result)


@pytest.mark.parametrize("job_id", [f"{command}:{case_id}" for case_id, is_keras in OTHER_COMMANDS_ON.items()
                                    for command in ("recipe", "match", "apply", "export-code", "export-qat",
                                                    "export-code:tfmot")
                                    if command not in ("export-qat", "export-code:tfmot") or is_keras])
def test_cli_other_commands_refuse_with_one_line(job_id, corpus, cli_run):
    case_id = job_id.rsplit(":", 1)[1]
    msg = check_cli(cli_run.result(job_id))
    check_message(msg, str(corpus[case_id]), CASES[case_id].cause)
    assert not (corpus[case_id].parent / MARKER).exists(), "the file's code ran"


def test_cli_writes_nothing_outside_its_temp_dir(cli_run):
    results = cli_run.results()
    assert len(results) == len(cli_run.ids), "the driver did not finish"
    base = cli_run.base
    assert _listing(base / "cwd") == [], "the CLI wrote into the working directory"
    assert set(_listing(base / "home")) <= HOME_ALLOWED, _listing(base / "home")
    assert _listing(base / "tmp") == [], "the CLI left files in its temporary directory"
    assert cli_run.returncode == 0, cli_run.driver_output[-3000:]


def test_cli_entry_point_refuses_lambda_h5(cli_run):
    """The real ``python -m qviz info`` on the tf_keras .h5 whose Lambda used to run on load."""
    out, err = cli_run.entry_proc.communicate(timeout=120)
    out, err = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    path = cli_run.entry_path
    assert cli_run.entry_proc.returncode == 2 and out == "", (out, err)
    assert err.count("\n") == 1 and err.startswith(f"qviz: error: {path}: "), err
    assert "is a Lambda layer" in err and "--unsafe" in err
    assert not (path.parent / MARKER).exists()
