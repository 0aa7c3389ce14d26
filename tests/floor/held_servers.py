"""Not collected by a test run (its name does not start with ``test_``): run alone by
tests/test_nothing_left_behind.py, which kills the run with SIGKILL while this test holds
the servers its fixtures started, then looks for any of them left."""

from __future__ import annotations

import json
import os
import sys

import pytest
from playwright.sync_api import sync_playwright

from tests.api.browser import started_chromium
from tests.floor.servers import Mosquitto, Postgres


@pytest.mark.needs("mosquitto", "postgresql", "chromium")
def test_servers_held_until_killed(broker: Mosquitto, postgres: Postgres, pg_url: str) -> None:
    with started_chromium() as browser, sync_playwright() as playwright:
        playwright.chromium.connect_over_cdp(browser.endpoint).new_page()
        held = {
            "run": os.getpid(),
            "servers": {
                "mosquitto": broker.process.pid if broker.process else None,
                "postgres": postgres.process.pid if postgres.process else None,
                "chromium": browser.process.pid,
            },
            "ports": {
                "mosquitto": broker.port,
                "postgres": postgres.port,
                "chromium": browser.port,
            },
            "directories": [str(postgres.root), str(browser.profile)],
        }
        print(f"HELD {json.dumps(held)}", flush=True)
        sys.stdin.read()  # until killed (standard input stays open)
