"""The server under hostile requests, through Flask's test client (no browser):
forged callback values, broken input, oversized bodies, foreign Host headers,
evicted sessions and upload directories. Every answer is a 200 with one line
for the page (or a plain 403/401 from the guard), never a bare 500."""

import base64
import io
import json
import tempfile
import threading
import time
import zipfile
from concurrent.futures import Future
from pathlib import Path

import pytest

import qviz
from qviz.app import create_app
from qviz.app.jobs import ThreadRunner
from qviz.app.session import Origin, PendingOpen, Session, SessionGone, SessionStore
from qviz.app.uploads import load_upload, save_upload
from qviz.importers import LoadError
from qviz.samples import sample_path


@pytest.fixture(scope="module")
def lenet():
    return qviz.load(sample_path("lenet_digits"))


@pytest.fixture
def app():
    return create_app(worker=False, max_upload_mb=1, sessions=2)


def _payload(data: bytes) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(data).decode()


def _body(app, output_fragment, values, changed, trigger=None):
    """The request the page would send for the callback whose outputs include ``output_fragment``
    (and, given ``trigger`` — "id.prop" —, whose inputs include it: several write one output)."""
    def outputs_of(key, plain=False):
        # (an output several callbacks write is spelled "id.prop@hash" in all but one)
        outs = key.strip(".").split("...") if key.startswith("..") else [key]
        return [o.split("@")[0] for o in outs] if plain else outs

    def fires_on(cb):
        return trigger is None or trigger in {f'{i["id"]}.{i["property"]}' for i in cb["inputs"]}

    # the callback naming the output as it is first, then those naming it with a hash
    key = next(k for plain in (False, True) for k, cb in app.callback_map.items()
               if output_fragment in outputs_of(k, plain) and fires_on(cb))
    cb = app.callback_map[key]
    outputs = [{"id": o.rsplit(".", 1)[0], "property": o.rsplit(".", 1)[1]} for o in outputs_of(key, plain=True)]
    pick = lambda specs: [{**x, "value": values.get(f'{x["id"]}.{x["property"]}')} for x in specs]  # noqa: E731
    return {"output": key, "outputs": outputs if len(outputs) > 1 else outputs[0],
            "inputs": pick(cb["inputs"]), "state": pick(cb.get("state", [])), "changedPropIds": changed}


def _post(app, body):
    r = app.server.test_client().post("/_dash-update-component", json=body)
    assert r.status_code in (200, 204), r.data[:300]
    return json.loads(r.data) if r.status_code == 200 else {}


def _texts(answer) -> dict:
    """component id → children, from both the outputs and the side updates."""
    out = {}
    for part in (answer.get("response", {}), answer.get("sideUpdate", {})):
        for cid, props in part.items():
            if "children" in props:
                out[cid] = props["children"]
    return out


def _one_line(text):
    assert isinstance(text, str) and text and "\n" not in text, text
    assert "Traceback" not in text and " at 0x" not in text and "/tmp/" not in text, text
    return text


def _with_session(app, lenet, origin=Origin("sample", "lenet_digits"), upload_dir=None):
    store = app.qviz_sessions
    sid = store.new_id()
    store.put(sid, Session(lenet, origin.name, origin=origin, upload_dir=upload_dir))
    return sid


def test_forged_model_picker_value_is_one_line_in_the_page(app):
    sid = app.qviz_sessions.new_id()
    answer = _post(app, _body(app, "model-status.children",
                              {"model-picker.value": "../../etc/passwd", "session-store.data": {"sid": sid}},
                              ["model-picker.value"]))
    assert "no such sample" in _one_line(_texts(answer)["model-status"])


@pytest.mark.parametrize("session", [None, "x", {"sid": 5}, {"sid": "not-issued-here"}])
def test_forged_session_data_gets_a_message_not_a_500(app, session):
    answer = _post(app, _body(app, "graph.figure", {"session-store.data": session, "recipe-store.data": {}},
                              ["recipe-store.data"]))
    assert "reload the page" in _one_line(_texts(answer)["alert"])


@pytest.mark.parametrize("text,where", [
    ('Relu[a="\\q"]', "line 1, column"),                 # a bad escape in an attribute string
    ("Relu(" * 2000 + "*" + ")" * 2000, "line 1, column"),  # 2,000 levels deep
    ("Conv2D[n=" + "9" * 5000 + "]", "line 1, column"),  # an integer Python refuses to convert
], ids=["bad-escape", "2000-deep", "5000-digit-int"])
def test_hostile_pattern_text_is_a_pattern_error(app, lenet, text, where):
    sid = _with_session(app, lenet)
    recipe = {"history": [qviz.Recipe().to_dict()], "pos": 0}
    answer = _post(app, _body(app, "graph.figure", {"session-store.data": {"sid": sid}, "recipe-store.data": recipe,
                                                    "view-store.data": {"mode": "layer", "expanded": []},
                                                    "pattern-text.value": text, "show-graph.value": "rewritten",
                                                    "view-mode.value": "layer", "direction.value": "LR"},
                              ["pattern-text.value"]))
    texts = _texts(answer)
    message = texts.get("pattern-error") or texts.get("alert")
    assert where in _one_line(message), texts


@pytest.mark.parametrize("recipe_text", [
    "[" * 100_000,
    '{"quantize": {"default": {"weight_bits": 1' + "0" * 5000 + "}}}",
    '{"fold": {"layers": {"conv\\n1": true}}}',
], ids=["100k-deep", "5000-digit-int", "newline-in-name"])
def test_hostile_recipe_upload_is_one_line(app, lenet, recipe_text):
    sid = _with_session(app, lenet)
    recipe = {"history": [qviz.Recipe().to_dict()], "pos": 0}
    answer = _post(app, _body(app, "recipe-error.children",
                              {"session-store.data": {"sid": sid}, "recipe-store.data": recipe,
                               "recipe-upload.contents": _payload(recipe_text.encode()),
                               "recipe-upload.filename": "my\nrecipe.json"},
                              ["recipe-upload.contents"]))
    texts = _texts(answer)
    message = texts.get("recipe-error") or texts.get("alert")
    # one line, naming the file (quoted: its name holds a newline)
    assert _one_line(message).startswith("recipe not loaded: 'my\\nrecipe.json': "), message


def test_malformed_dash_request_is_answered_in_the_page(app):
    r = app.server.test_client().post("/_dash-update-component", json={"output": "nope.children"})
    assert r.status_code == 200
    assert "server log" in _one_line(json.loads(r.data)["sideUpdate"]["alert"]["children"])


def test_oversized_request_is_answered_in_the_page(app):
    too_big = app.server.config["MAX_CONTENT_LENGTH"] + 1
    r = app.server.test_client().post("/_dash-update-component", data=b"x" * too_big,
                                      content_type="application/json")
    assert r.status_code == 200
    message = json.loads(r.data)["sideUpdate"]["model-status"]["children"]
    assert "over the 1.0 MB upload limit" in _one_line(message)


def test_the_page_refuses_oversized_files_before_sending_them(app):
    page = app.server.test_client().get("/_dash-layout").data.decode()
    assert '"data-bytes":"1048576"' in page.replace(" ", "")   # what assets/upload_limit.js reads
    assert (Path(__file__).resolve().parents[3] / "assets" / "upload_limit.js").is_file()


def test_foreign_host_is_refused():
    app = create_app(worker=False, allowed_hosts=["qviz.lab"])
    client = app.server.test_client()
    assert client.get("/", headers={"Host": "evil.example"}).status_code == 403
    assert client.get("/", headers={"Host": "evil.example:8050"}).status_code == 403
    for host in ("127.0.0.1:8050", "localhost", "[::1]:8050", "qviz.lab:8050"):
        assert client.get("/", headers={"Host": host}).status_code == 200, host


def test_token_is_required_once_then_kept_in_a_cookie():
    app = create_app(worker=False, token="s3cret")
    client = app.server.test_client()
    assert client.get("/").status_code == 401
    assert client.get("/?token=wrong").status_code == 401
    first = client.get("/?token=s3cret")
    assert first.status_code == 302 and "token" not in first.headers["Location"]
    assert "HttpOnly" in first.headers["Set-Cookie"]
    assert client.get("/").status_code == 200                      # the cookie carries it now
    other = app.server.test_client()
    assert other.get("/_dash-layout", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    # a cookie left by an earlier server on this host does not override the link just opened
    stale = app.server.test_client()
    stale.set_cookie("qviz_token", "old-server", domain="localhost")
    assert stale.get("/?token=s3cret").status_code == 302
    assert stale.get("/").status_code == 200


# ----------------------------------------------------------------------------- sessions and uploads

@pytest.fixture(autouse=True)
def private_tmp(tmp_path, monkeypatch):
    """Uploads of this test go to its own temp dir (other workers upload too)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _upload_dirs() -> set:
    return set(Path(tempfile.gettempdir()).glob("qviz-upload-*"))


def test_upload_directories_go_with_their_sessions(lenet):
    store = SessionStore(capacity=1)
    first = save_upload(_payload(sample_path("lenet_digits").read_bytes()), "a.keras", 10 * 2**20)
    second = save_upload(_payload(sample_path("lenet_digits").read_bytes()), "b.keras", 10 * 2**20)
    store.put("s1", Session(lenet, "a.keras", origin=Origin("upload", "a.keras"), upload_dir=first.directory))
    store.put("s1", Session(lenet, "b.keras", origin=Origin("upload", "b.keras"), upload_dir=second.directory))
    assert not first.directory.exists() and second.directory.exists()       # replaced: removed
    store.put("s2", Session(lenet, "lenet", origin=Origin("sample", "lenet_digits")))
    assert not second.directory.exists()                                    # evicted: removed
    with pytest.raises(SessionGone) as gone:
        store.require({"sid": "s1"})
    assert gone.value.origin == Origin("upload", "b.keras") and not gone.value.origin.reopenable
    third = save_upload(_payload(b"\x08\x01"), "c.pb", 1024)
    store.put("s2", Session(lenet, "c.pb", origin=Origin("upload", "c.pb"), upload_dir=third.directory))
    # an open that finished while the server stopped, before its page took it up
    fourth = save_upload(_payload(sample_path("lenet_digits").read_bytes()), "d.keras", 10 * 2**20)
    done = Future()
    done.set_result(lenet)
    store.loading["s3"] = PendingOpen(done, Origin("upload", "d.keras"), 0.0, upload=fourth, answer=("opened",))
    store.close_all()                                                       # at exit: removed
    assert not third.directory.exists() and not fourth.directory.exists()
    assert not _upload_dirs()


@pytest.mark.parametrize("name,data", [
    ("broken.keras", b"PK\x03\x04 not really"),
    ("m.zip", b"not a zip"),
    ("noise.pb", bytes((i * 97 + 13) % 256 for i in range(2048))),   # fixed: xdist workers must agree
], ids=["broken-keras", "not-a-zip", "noise-pb"])
def test_refused_and_failed_uploads_leave_nothing(name, data):
    with pytest.raises(LoadError) as info:
        load_upload(_payload(data), name, 10 * 2**20)
    assert str(info.value).startswith(f"{name}: ") and "/tmp" not in str(info.value)
    assert not _upload_dirs()


def _bomb() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("model/saved_model.pb", b"\0" * (64 * 2**20))   # 64 MB of zeros: ~64 KB compressed
    return buf.getvalue()


def test_zip_bomb_upload_is_refused_by_its_directory():
    t = time.perf_counter()
    with pytest.raises(LoadError, match="zip bomb|over"):
        load_upload(_payload(_bomb()), "bomb.zip", 100 * 2**20)
    assert time.perf_counter() - t < 30          # refused from the directory, not by inflating
    assert not _upload_dirs()


def test_evicted_session_is_told_and_a_sample_reopens_with_its_recipe(app, lenet):
    first = _with_session(app, lenet)
    _with_session(app, lenet)
    _with_session(app, lenet)                       # capacity 2: the first is evicted
    recipe = {"history": [qviz.Recipe().to_dict()], "pos": 0}
    answer = _post(app, _body(app, "graph.figure", {"session-store.data": {"sid": first}, "recipe-store.data": recipe},
                              ["recipe-store.data"]))
    assert "reopening lenet_digits with your recipe" in _one_line(_texts(answer)["alert"])
    assert answer["sideUpdate"]["model-poll"] == {"disabled": False}
    future = app.qviz_sessions.loading[first].future
    future.result(timeout=120)
    polled = _post(app, _body(app, "model-status.children",
                              {"session-store.data": {"sid": first}, "view-store.data": {"mode": "layer"},
                               "model-poll.n_intervals": 1}, ["model-poll.n_intervals"]))
    assert polled["response"]["model-status"]["children"].startswith("lenet_digits: ")
    assert "recipe-store" not in polled["response"]            # the user's recipe is kept
    assert app.qviz_sessions.get(first) is not None


def test_an_evicted_upload_asks_for_the_file_again(app, lenet):
    first = _with_session(app, lenet, origin=Origin("upload", "mine.keras"))
    _with_session(app, lenet)
    _with_session(app, lenet)
    answer = _post(app, _body(app, "graph.figure", {"session-store.data": {"sid": first}, "recipe-store.data": {}},
                              ["recipe-store.data"]))
    assert "upload mine.keras again" in _one_line(_texts(answer)["alert"])


def test_opens_wait_in_a_bounded_queue_that_tells_their_place():
    started, gate = threading.Event(), threading.Event()
    queue = ThreadRunner(threads=1, functions={"open": lambda *args, progress: (started.set(), gate.wait(10)),
                                               "noop": lambda progress: None})
    running = queue.submit("open", "big.keras")
    waiting = [queue.submit("noop") for _ in range(3)]
    assert started.wait(10)
    assert queue.position(running) == 0
    assert [queue.position(f) for f in waiting] == [1, 2, 3]
    gate.set()
    for f in waiting:
        f.result(timeout=10)
    assert queue.position(waiting[-1]) == 0
    queue.close()


def test_a_sample_is_frozen_once_for_every_page(app):
    first, second = app.qviz_sessions.new_id(), app.qviz_sessions.new_id()
    for sid in (first, second):
        _post(app, _body(app, "model-status.children",
                         {"model-picker.value": "lenet_digits", "session-store.data": {"sid": sid}},
                         ["model-picker.value"]))
    a, b = app.qviz_sessions.loading[first].future, app.qviz_sessions.loading[second].future
    assert a is b and a.result(timeout=120) is b.result(timeout=120)
