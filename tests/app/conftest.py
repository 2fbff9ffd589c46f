"""Browser tests: a real headless Chromium driven by dash[testing] (``dash_duo``).

Tests that need the browser carry :data:`needs_browser` (from ``tests/app/browser/helpers.py``):
without ``chromium`` and ``chromedriver`` they are skipped with a one-line
reason, and the rest of ``tests/app`` still runs.
"""

from .browser.helpers import CHROMIUM


def pytest_setup_options():
    from selenium.webdriver.chrome.options import Options

    options = Options()
    if CHROMIUM:
        options.binary_location = CHROMIUM
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--no-first-run",
                "--window-size=1600,1200"):
        options.add_argument(arg)
    return options
