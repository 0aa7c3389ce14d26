"""Debian's chromium driven by Playwright, for the console's tests and screenshots.

Playwright never downloads a browser here: it drives Debian's ``chromium`` (which CI
installs; tests that use it are marked ``@pytest.mark.needs("chromium")``). The browser is
started here, as a child of the test run that dies with it (tools/children.py), with its
profile in a scratch directory that goes with it, and Playwright connects to it over the
DevTools protocol."""

from __future__ import annotations

import os
import re
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from playwright.sync_api import Browser, Page, sync_playwright

from tools import children, real_parts

VIEWPORT = {"width": 1280, "height": 800}
#: Set to a directory (docs/images) to keep the screenshots the tests take.
SCREENSHOTS_ENV = "SHOE_CONSOLE_SCREENSHOTS"
#: Longest wait for the browser to listen.
START_TIMEOUT = 60.0
#: What chromium says once it listens, and where.
LISTENING = re.compile(r"DevTools listening on (ws://\S+)")
#: Headless, and as a test needs it: no sandbox (root in CI), /tmp rather than a small
#: /dev/shm (containers), nothing in the background, timers never throttled, no first run.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-renderer-backgrounding",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--password-store=basic",
    "--use-mock-keychain",
    "--force-color-profile=srgb",
    "--hide-scrollbars",
    "--mute-audio",
)


def _listening(process: subprocess.Popen[str]) -> str:
    """The browser's DevTools address, from what it says on standard error (read on to
    its end by a thread, so that the pipe never fills)."""
    found: list[str] = []
    said: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            said.append(line)
            match = LISTENING.search(line)
            if match and not found:
                found.append(match.group(1))
                ready.set()
        ready.set()

    threading.Thread(target=read, name="chromium-stderr", daemon=True).start()
    if not ready.wait(START_TIMEOUT) or not found:
        raise AssertionError(f"chromium did not start: {''.join(said[-20:])}")
    return found[0]


@dataclass(frozen=True)
class Chromium:
    """A running browser: its process, its DevTools address, its profile's directory."""

    process: subprocess.Popen[str]
    endpoint: str
    profile: Path

    @property
    def port(self) -> int:
        return int(urlsplit(self.endpoint).port or 0)


@contextmanager
def started_chromium() -> Iterator[Chromium]:
    """Debian's chromium, listening on a loopback port of its choosing; stopped after."""
    executable = real_parts.program("chromium")
    profile = children.scratch_directory("shoe-console-chromium-")
    try:
        process = children.spawn(
            [
                executable,
                *FLAGS,
                f"--user-data-dir={profile}",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            # Its crash reporter (a process of its own, which ends with the browser) keeps
            # its reports in the profile too, not in this user's home.
            env={**os.environ, "CHROME_CONFIG_HOME": str(profile)},
        )
        try:
            yield Chromium(process, _listening(process), profile)
        finally:
            children.stop(process)
    finally:
        children.remove(profile)


@contextmanager
def chromium() -> Iterator[Browser]:
    """That browser, driven by Playwright."""
    with started_chromium() as started, sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(started.endpoint)
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
