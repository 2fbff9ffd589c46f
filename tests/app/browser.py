"""Whether a real browser is here, and the mark for tests that need one."""

import shutil

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
BROWSER = bool(CHROMIUM and shutil.which("chromedriver"))

needs_browser = pytest.mark.skipif(
    not BROWSER, reason="needs chromium and chromedriver (apt-get install chromium chromium-driver; .ci/run does)")
