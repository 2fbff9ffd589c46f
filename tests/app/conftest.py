"""Browser tests: a real headless Chromium driven by dash[testing] (``dash_duo``)."""

import shutil

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def pytest_setup_options():
    from selenium.webdriver.chrome.options import Options

    options = Options()
    if CHROMIUM:
        options.binary_location = CHROMIUM
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1600,1200"):
        options.add_argument(arg)
    return options


@pytest.fixture(autouse=True)
def _needs_chromium():
    if not CHROMIUM or not shutil.which("chromedriver"):
        pytest.fail("browser tests need chromium and chromedriver: apt-get install -y chromium chromium-driver")
