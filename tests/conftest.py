"""Shared fixtures (the models and measures they use are in ``tests/models.py``)."""

from __future__ import annotations

import atexit
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
