"""Uploads: every bad file is refused with a one-line error naming it (no browser needed)."""

import base64
import io
import zipfile

import pytest

from qviz.app.uploads import load_upload
from qviz.importers import LoadError


def _payload(data: bytes) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(data).decode()


def _zip(files: dict) -> bytes:
    # A fixed timestamp: the bytes are test parameters, and xdist workers must collect the same ones.
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), data)
    return buf.getvalue()


@pytest.mark.parametrize("name,data,cause", [
    pytest.param("model.exe", b"x", "unsupported file type '.exe'", id="exe"),
    pytest.param("big.pb", b"x" * 2048, "is 2.0 KB, over the 1.0 KB upload limit", id="too-big"),
    pytest.param("broken.pb", b"not a protobuf", "not a binary GraphDef", id="not-protobuf"),
    pytest.param("m.zip", b"not a zip", "not a valid zip archive", id="not-zip"),
    pytest.param("m.zip", _zip({"readme.txt": "hi"}), "no SavedModel", id="zip-without-savedmodel"),
    pytest.param("m.zip", _zip({"../evil/saved_model.pb": "x"}), "unsafe path", id="zip-slip"),
])
def test_bad_uploads(name, data, cause):
    limit = 1024 if name == "big.pb" else 10 * 2**20
    with pytest.raises(LoadError) as info:
        load_upload(_payload(data), name, limit)
    msg = str(info.value)
    assert msg.startswith(f"{name}: ") and cause in msg and "\n" not in msg


def test_good_upload(samples):
    g = load_upload(_payload(samples["lenet_digits"].read_bytes()), "lenet_digits.keras", 10 * 2**20)
    assert "conv1" in g.layers
