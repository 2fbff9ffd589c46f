"""What the browser benchmarks share: a free local port and a headless Chromium.

    from browser import chromium, free_port   # (benchmarks/ is on sys.path when a script runs)
"""

from __future__ import annotations

import shutil
import socket


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on (now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chromium(width: int = 1600, height: int = 1000, *, paint_timing: bool = False, extra_args=(),
             console_log: bool = False):
    """A headless Chromium (Debian's ``chromium`` + ``chromium-driver``) driven by Selenium.

    ``paint_timing``: ``get()`` returns at once (page-load strategy ``none``), so a script
    can time the first paint rather than the load event. ``console_log``: keep the
    page's console messages (``driver.get_log("browser")``).
    """
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options

    options = Options()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    if paint_timing:
        options.page_load_strategy = "none"
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", f"--window-size={width},{height}", *extra_args):
        options.add_argument(arg)
    if console_log:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options)
