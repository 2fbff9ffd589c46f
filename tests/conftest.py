"""Shared fixtures (the models and measures they use are in ``tests/models.py``)."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# the layout cache of the app under test: never the user's own ~/.cache
os.environ["QVIZ_CACHE_DIR"] = tempfile.mkdtemp(prefix="qviz-test-layouts-")
atexit.register(shutil.rmtree, os.environ["QVIZ_CACHE_DIR"], True)

# Imported now, in the main thread: apps under test open models in threads, and TensorFlow's
# package import breaks when a thread runs it while another one does ("Registering two gradient…").
import tensorflow  # noqa: F401,E402
import numpy as np
import pytest
from hypothesis import settings

# The first example of a test may import TensorFlow (seconds): no per-example deadline.
settings.register_profile("qviz", deadline=None)
settings.load_profile("qviz")

from qviz.samples import sample_path
from tests.models import small_keras_model, small_tf_keras_model


@pytest.fixture(scope="session")
def keras_model():
    return small_keras_model()


@pytest.fixture(scope="session")
def tf_keras_model():
    return small_tf_keras_model()


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def samples():
    return {name: sample_path(name) for name in
            ("lenet_digits", "mobilenet_block", "resnet_block", "fused_bn_tf_keras")}


@pytest.fixture(scope="session")
def mobilenet_v2_saved_model(tmp_path_factory):
    """A SavedModel of the zoo's MobileNetV2 (tests/models.py), written once for the whole
    run: exporting it costs ~10 s, and two test files read it. The xdist workers share one
    directory (the parent of their base temp dirs); a lock makes the others wait for the first."""
    from tests.models import zoo_model

    shared = tmp_path_factory.getbasetemp().parent if os.environ.get("PYTEST_XDIST_WORKER") \
        else tmp_path_factory.getbasetemp()
    path = shared / "mobilenet_v2_saved_model"
    with _exclusive(shared / "mobilenet_v2_saved_model.lock"):
        if not (path / "saved_model.pb").exists():
            part = path.with_suffix(".part")   # (whole or not there: a failed export leaves no half)
            shutil.rmtree(part, ignore_errors=True)
            zoo_model("MobileNetV2").export(str(part), verbose=False)
            part.rename(path)
    return path


@contextlib.contextmanager
def _exclusive(path):
    """An exclusive lock on ``path`` between processes (fcntl; where there is none, no lock)."""
    try:
        import fcntl
    except ImportError:   # (Windows: two workers may both export)
        yield
        return
    fd = os.open(path, os.O_CREAT | os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)   # (closing releases the lock)
