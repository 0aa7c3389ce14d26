"""Debian's chromium driven by Playwright, for the console's tests and screenshots.

Playwright never downloads a browser here: it drives /usr/bin/chromium (the `chromium`
package, which CI installs). A missing browser fails the tests; it never skips them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Browser, Page, sync_playwright

CHROMIUM = Path("/usr/bin/chromium")
VIEWPORT = {"width": 1280, "height": 800}
#: Set to a directory (docs/images) to keep the screenshots the tests take.
SCREENSHOTS_ENV = "SHOE_CONSOLE_SCREENSHOTS"


@contextmanager
def chromium() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        raise AssertionError(
            f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)"
        )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            headless=True,
            # As root in CI: no sandbox; a small /dev/shm in containers: use /tmp.
            args=["--no-sandbox", "--disable-dev-shm-usage"],
        )
        try:
            yield browser
        finally:
            browser.close()


def screenshot(page: Page, name: str, fallback: Path) -> Path:
    """Save a PNG of the page, in $SHOE_CONSOLE_SCREENSHOTS when set, else in ``fallback``."""
    directory = Path(os.environ.get(SCREENSHOTS_ENV) or fallback)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"console-{name}.png"
    page.screenshot(path=str(path))
    return path
