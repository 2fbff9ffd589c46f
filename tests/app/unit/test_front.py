"""The page ``qviz serve`` answers with before the app is up (qviz.app.front)."""

import http.client
import os
import socket
import threading

import pytest

from qviz.app.front import (READY_PATH, FirstViewCache, FirstViewEntry, ForkedFront, Front, listening_socket,
                            start_front)
from qviz.app.guard import COOKIE

ENTRY = FirstViewEntry('<svg class="first-view-graph"><circle/></svg>', 7)


def _get(sock, path="/", host="127.0.0.1", headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", sock.getsockname()[1], timeout=10)
    try:
        conn.request("GET", path, headers={"Host": host, **(headers or {})})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read().decode()
    finally:
        conn.close()


@pytest.fixture
def sock():
    s = listening_socket("127.0.0.1", 0)
    yield s
    s.close()


def _started(sock, **kwargs) -> Front:
    front = Front(sock, name="net.keras", **kwargs)
    front.start()
    return front


def test_the_page_holds_the_first_view_and_asks_whether_the_app_is_up(sock):
    front = _started(sock)
    front.show(ENTRY)
    status, headers, page = _get(sock)
    front.hand_over()
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert '<div id="first-view" class="first-view"><svg class="first-view-graph">' in page
    assert "net.keras: 7 layers drawn from the file; the app is starting…" in page
    assert READY_PATH in page and "location.reload()" in page
    assert ".first-view {" in page          # the app's stylesheet, inline: no second request


def test_without_a_first_view_the_page_says_the_app_is_starting(sock):
    front = _started(sock)
    front.show(None)
    status, _, page = _get(sock)
    front.hand_over()
    assert status == 200 and "net.keras: the app is starting…" in page and "<svg" not in page


def test_anything_but_the_page_is_503_until_the_app_answers(sock):
    front = _started(sock)
    front.show(ENTRY)
    answers = [_get(sock, path)[:2] for path in (READY_PATH, "/_dash-layout", "/assets/qviz.css")]
    front.hand_over()
    assert all(status == 503 and headers["Retry-After"] == "1" for status, headers in answers)


def test_a_foreign_host_is_refused_as_the_app_refuses_it(sock):
    front = _started(sock, allowed_hosts={"qviz.lab"})
    front.show(ENTRY)
    refused = _get(sock, host="evil.example:8050")
    allowed = _get(sock, host="qviz.lab:8050")
    front.hand_over()
    assert refused[0] == 403 and "evil.example" in refused[2] and "<svg" not in refused[2]
    assert allowed[0] == 200


def test_a_token_server_shows_nothing_without_its_token(sock):
    front = _started(sock, token="s3cret")
    front.show(ENTRY)
    without = _get(sock)
    wrong = _get(sock, "/?token=nope")
    by_query = _get(sock, "/?token=s3cret")
    by_cookie = _get(sock, headers={"Cookie": f"{COOKIE}=s3cret"})
    front.hand_over()
    assert without[0] == wrong[0] == 401 and "<svg" not in without[2] + wrong[2]
    assert by_query[0] == by_cookie[0] == 200 and "first-view-graph" in by_query[2]


def test_the_links_token_wins_over_a_stale_cookie_as_in_the_app(sock):
    front = _started(sock, token="new")
    front.show(ENTRY)
    fresh_link = _get(sock, "/?token=new", headers={"Cookie": f"{COOKIE}=old"})
    stale_link = _get(sock, "/?token=old", headers={"Cookie": f"{COOKIE}=new"})
    front.hand_over()
    assert fresh_link[0] == 200 and stale_link[0] == 401


def test_head_and_post_are_told_to_come_back_not_501(sock):
    front = _started(sock)
    front.show(ENTRY)
    conn = http.client.HTTPConnection("127.0.0.1", sock.getsockname()[1], timeout=10)
    conn.request("POST", "/_dash-update-component", body=b"{}", headers={"Content-Length": "2"})
    post = conn.getresponse()
    post.read()
    conn.close()
    conn = http.client.HTTPConnection("127.0.0.1", sock.getsockname()[1], timeout=10)
    conn.request("HEAD", "/")
    head = conn.getresponse()
    conn.close()
    front.hand_over()
    assert post.status == 503 and post.getheader("Retry-After") == "1"
    assert head.status == 200 and int(head.getheader("Content-Length")) > 0


def test_a_page_asked_for_while_the_view_is_drawn_waits_for_it(sock):
    front = _started(sock)
    got = {}
    asking = threading.Thread(target=lambda: got.update(page=_get(sock)[2]))
    asking.start()
    front.show(ENTRY)        # drawn after the request came in
    asking.join(30)
    front.hand_over()
    assert "first-view-graph" in got["page"]


def test_hand_over_keeps_the_socket_listening_for_the_app(sock):
    front = _started(sock)
    front.show(ENTRY)
    assert front.hand_over() is sock
    # the next server on the same socket answers (here a bare one standing in for the app)
    conn_sock = socket.create_connection(sock.getsockname()[:2], timeout=10)
    accepted, _ = sock.accept()
    accepted.close()
    conn_sock.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this system")
def test_the_forked_front_answers_from_a_child_and_stops_when_told(sock):
    front = start_front(sock, name="net.keras")
    assert isinstance(front, ForkedFront)
    front.show(ENTRY)
    status, _, page = _get(sock)
    pid = front._pid
    assert front.hand_over() is sock
    assert status == 200 and "net.keras: 7 layers drawn from the file" in page
    with pytest.raises(ChildProcessError):   # reaped: no process is left behind
        os.waitpid(pid, os.WNOHANG)


def test_the_cache_keeps_a_first_view_per_file_version(tmp_path):
    model = tmp_path / "net.keras"
    model.write_bytes(b"one")
    cache = FirstViewCache(tmp_path / "cache")
    assert cache.read(model) is None
    cache.write(model, ENTRY)
    assert cache.read(model) == ENTRY
    model.write_bytes(b"other")                     # a new version of the file
    os.utime(model, ns=(1, 1))
    assert cache.read(model) is None
    assert cache.read(tmp_path / "missing.keras") is None


def test_an_unreadable_entry_is_drawn_again_and_refresh_replaces_a_stale_one(tmp_path):
    model = tmp_path / "net.keras"
    model.write_bytes(b"one")
    cache = FirstViewCache(tmp_path / "cache")
    cache.write(model, ENTRY)
    (entry_file,) = (tmp_path / "cache").glob("first-view-*.json")
    entry_file.write_text("{not json")
    assert cache.read(model) is None
    fresh = FirstViewEntry("<svg>new</svg>", 8)
    cache.refresh(model, fresh)
    assert cache.read(model) == fresh
    cache.refresh(model, None)                      # nothing drawn: the entry stays
    assert cache.read(model) == fresh


def test_the_cache_keeps_at_most_its_number_of_entries(tmp_path):
    cache = FirstViewCache(tmp_path / "cache", max_files=3)
    for i in range(5):
        model = tmp_path / f"m{i}.keras"
        model.write_bytes(b"x")
        cache.write(model, ENTRY)
    assert len(list((tmp_path / "cache").glob("first-view-*.json"))) == 3
    (tmp_path / "cache" / "layout-keep.json").write_text("{}")    # another cache's entries are not touched
    cache.write(tmp_path / "m0.keras", ENTRY)
    assert (tmp_path / "cache" / "layout-keep.json").exists()


def test_a_taken_port_is_an_oserror_and_nothing_stays_open(sock):
    with pytest.raises(OSError):
        listening_socket("127.0.0.1", sock.getsockname()[1])


def test_the_command_line_and_the_front_answer_before_the_heavy_imports():
    """`qviz serve` answers in a tenth of a second only if these stay unimported until the page is out."""
    import subprocess
    import sys

    heavy = ("numpy", "networkx", "dash", "plotly", "flask", "tensorflow")
    out = subprocess.run([sys.executable, "-c", "import sys, qviz, qviz.cli, qviz.samples, qviz.app.front; "
                          f"print([m for m in {heavy!r} if m in sys.modules])"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _entry_file(tmp_path, model):
    cache = FirstViewCache(tmp_path / "cache")
    cache.write(model, ENTRY)
    (entry,) = (tmp_path / "cache").glob("first-view-*.json")
    return cache, entry


@pytest.mark.parametrize("content", [
    '{"svg": "<svg></svg>", "layers": Infinity}',
    '{"svg": "<svg></svg>", "layers": 1e400}',
    "[" * 200_000 + "]" * 200_000,
    '{"svg": "<svg></svg><script>fetch(\'/x?\' + location.search)</script>", "layers": 1}',
    '{"svg": "<div onclick=x></div>", "layers": 1}',
    '{"svg": 5, "layers": 1}',
], ids=["infinity", "overflow", "deep", "script", "not-svg", "not-text"])
def test_a_hostile_entry_is_drawn_again_not_served(tmp_path, content):
    model = tmp_path / "net.keras"
    model.write_bytes(b"one")
    cache, entry = _entry_file(tmp_path, model)
    entry.write_text(content)
    assert cache.read(model) is None


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_link_or_huge_entry_is_not_read(tmp_path, monkeypatch):
    import qviz.app.front as front_module

    model = tmp_path / "net.keras"
    model.write_bytes(b"one")
    cache, entry = _entry_file(tmp_path, model)
    entry.unlink()
    os.mkfifo(entry)                                  # would block a plain open() for ever
    assert cache.read(model) is None
    entry.unlink()
    entry.symlink_to("/dev/zero")                     # would be read until memory runs out
    assert cache.read(model) is None
    entry.unlink()
    entry.write_text('{"svg": "<svg>' + "x" * 2000 + '</svg>", "layers": 1}')
    monkeypatch.setattr(front_module, "MAX_ENTRY_BYTES", 1000)
    assert cache.read(model) is None


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="no file owners here")
def test_an_entry_others_could_have_written_is_not_served(tmp_path):
    model = tmp_path / "net.keras"
    model.write_bytes(b"one")
    cache, entry = _entry_file(tmp_path, model)
    assert cache.read(model) == ENTRY
    entry.chmod(0o666)
    assert cache.read(model) is None
    entry.chmod(0o600)
    (tmp_path / "cache").chmod(0o777)                 # a shared directory: anyone could swap the entry
    try:
        assert cache.read(model) is None
    finally:
        (tmp_path / "cache").chmod(0o700)


def test_a_model_not_seen_before_is_drawn_once_then_read(tmp_path):
    from qviz.samples import sample_path

    model = tmp_path / "block.keras"
    model.write_bytes(sample_path("mobilenet_block").read_bytes())
    cache = FirstViewCache(tmp_path / "cache")
    drawn = cache.read_or_draw(model)
    assert drawn is not None and drawn.layers == 12 and drawn.svg.startswith("<svg")
    assert cache.read(model) == drawn
    (tmp_path / "plain.txt").write_text("not a model")
    assert cache.read_or_draw(tmp_path / "plain.txt") is None
