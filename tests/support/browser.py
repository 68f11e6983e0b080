"""A real headless browser for tests: Debian's chromium driven by Selenium through Debian's
chromedriver (`make chromium` installs both; `make test` does it first).

Selenium never downloads anything here: the driver is always `Service(CHROMEDRIVER)` with the
browser's `binary_location` set (Selenium Manager is skipped when a driver path is given), and
`SE_OFFLINE=true` is set while the browser starts, as a second guard. A missing browser or
driver fails the test with the command that installs it; it never skips.

    driver = start_chromium(tmp_dir)     # 1400x1000, headless, its own profile in tmp_dir
    ...
    driver.quit()
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

__all__ = ["CHROMIUM", "CHROMEDRIVER", "start_chromium"]

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def _find(path: str) -> str | None:
    if os.access(path, os.X_OK):
        return path
    return shutil.which(Path(path).name)


def start_chromium(profile_dir: Path, width: int = 1400, height: int = 1000) -> Any:
    """A headless chromium under Selenium with a fresh profile in `profile_dir`."""
    browser, driver = _find(CHROMIUM), _find(CHROMEDRIVER)
    if browser is None or driver is None:
        pytest.fail(f"no {'chromium' if browser is None else 'chromedriver'} found "
                    f"({CHROMIUM}, {CHROMEDRIVER} or on PATH): `make chromium` installs "
                    "Debian's chromium and chromium-driver (`make test` does it first)",
                    pytrace=False)
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail("selenium is not installed: it is in the `dev` extra (`make venv`)",
                    pytrace=False)
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update",
                f"--window-size={width},{height}", f"--user-data-dir={profile_dir}"):
        options.add_argument(arg)
    saved = os.environ.get("SE_OFFLINE")
    os.environ["SE_OFFLINE"] = "true"  # never let Selenium Manager reach the network
    try:
        return webdriver.Chrome(service=Service(driver), options=options)
    finally:
        if saved is None:
            os.environ.pop("SE_OFFLINE", None)
        else:
            os.environ["SE_OFFLINE"] = saved
