"""The dealer console in a real browser (Debian's chromium) against the real controller
and the simulated shoe: a full round from sign-in to the hands shown, a fault cleared by a
supervisor, both languages, and the reconnection after the server restarts."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from shoe_controller.api.auth import Authenticator
from shoe_controller.api.server import ApiServer, Listen
from shoe_controller.api.users import UsersFile
from shoe_controller.service import Actor, TableController
from shoe_controller.service import events as ev
from shoe_controller.service.config import Config
from shoe_controller.simulator.transport import live_addresses, switch_off
from tests.api.browser import VIEWPORT, chromium, screenshot
from tests.api.conftest import StartServer
from tests.api.records import access, inputs
from tests.service.helpers import Recorder

TIMEOUT_MS = 20_000
CARD_TEXT = re.compile(r"(10|[2-9AJQK])[♠♥♦♣]|🃏")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as b:
        yield b


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    yield page
    context.close()


@contextmanager
def table_on(tmp_path: Path, device: str) -> Iterator[tuple[TableController, Recorder]]:
    table = TableController(Config(), journal_path=tmp_path / "journal.sqlite3", device=device)
    recorder = Recorder()
    table.subscribe(recorder)
    try:
        yield table, recorder
    finally:
        table.stop()
        for address in live_addresses():
            switch_off(address)


def sign_in(page: Page, user: str, pin: str) -> None:
    expect(page.locator("#sign-in")).to_be_visible()
    page.fill("#user", user)
    for digit in pin:
        page.click(f'#keypad [data-key="{digit}"]')
    page.click("#sign-in-submit")


def phase(page: Page, name: str) -> None:
    expect(page.locator("#state-words")).to_have_attribute("data-phase", name)


def no_identity_shown(page: Page) -> None:
    assert page.locator(".card").count() == 0
    assert not CARD_TEXT.search(page.inner_text("body"))


@pytest.mark.rule("E1")
@pytest.mark.rule("A3")
def test_a_full_round_through_the_page(
    page: Page, start_server: StartServer, tmp_path: Path
) -> None:
    with table_on(tmp_path, "sim://?pace=0.01&seed=3") as (table, recorder):
        server = start_server(table)
        table.start()
        page.goto(server.url)
        screenshot(page, "sign-in", tmp_path)
        sign_in(page, "dana", "1111")
        expect(page.locator("#who")).to_have_text("dana (dealer)")
        phase(page, "shuffle_check")
        screenshot(page, "shuffle", tmp_path)
        page.click('#next[data-step="confirm_shuffle"]')
        phase(page, "deck_loaded")
        # Wagers: positions toggled while bets are open; the banker cannot be.
        for position in (2, 4, 5):
            page.click(f'[data-position="{position}"]')
        expect(page.locator('[data-position="5"]')).to_have_class(re.compile("wagered"))
        expect(page.locator('[data-position="1"]')).to_be_disabled()
        screenshot(page, "wagers", tmp_path)
        expect(page.locator("#next")).to_have_attribute("data-step", "no_more_bets")
        page.click("#next")
        phase(page, "bets_closed")
        # Three dice: 2 + 5 + 6 = 13 -> position 6.
        expect(page.locator("#next")).to_be_disabled()
        for die, face in enumerate((2, 5, 6)):
            page.click(f'.die[data-die="{die}"] [data-face="{face}"]')
        expect(page.locator("#dice-total")).to_contain_text("6")
        screenshot(page, "dice", tmp_path)
        page.click("#next")
        # The deal: counts fill, identities never appear.
        expect(page.locator('[data-position="6"]')).not_to_have_attribute("data-cards", "0")
        no_identity_shown(page)
        screenshot(page, "dealing", tmp_path)
        # The croupier confirms the stub's count in every round (D1).
        phase(page, "stub_confirm")
        expect(page.locator("#next")).to_have_attribute("data-step", "stub_counted")
        page.click("#next")
        phase(page, "dealt")
        for position in range(1, 8):
            expect(page.locator(f'[data-position="{position}"]')).to_have_attribute(
                "data-cards", "7"
            )
        expect(page.locator("#round-info")).to_contain_text("Remanente: 4")
        no_identity_shown(page)
        expect(page.locator("#next")).to_have_attribute("data-step", "close_round")
        page.click("#next")
        # After close: the banker's and the wagered hands, for settlement; none other.
        for position in (1, 2, 4, 5):
            expect(page.locator(f'[data-position="{position}"] .card')).to_have_count(7)
        for position in (3, 6, 7):
            expect(page.locator(f'[data-position="{position}"] .card')).to_have_count(0)
        expect(page.locator("#rates")).to_contain_text("1 rondas")
        screenshot(page, "hands", tmp_path)
        closed = recorder.of(ev.RoundClosedEvent)[0]
        assert isinstance(closed, ev.RoundClosedEvent)
        shown = page.locator('[data-position="1"] .card').evaluate_all(
            "cards => cards.map(c => c.dataset.code)"
        )
        assert shown == list(closed.hands["1"])
        # English on request; the choice is the page's, not the table's.
        page.click("#lang")
        expect(page.locator("html")).to_have_attribute("lang", "en")
        expect(page.locator("#rates")).to_contain_text("1 rounds")
        dana = Actor("dana", "dealer")
        assert [name for name, actor in inputs(Path(table.journal_path)) if actor == dana][:5] == [
            "confirm_shuffle",
            "set_wagers",
            "set_wagers",
            "set_wagers",
            "no_more_bets",
        ]


@pytest.mark.rule("F1")
def test_a_fault_is_cleared_by_a_supervisor(
    page: Page, start_server: StartServer, tmp_path: Path
) -> None:
    device = "sim://?pace=0.01&seed=3&faults=jam@10&jam_for=0.2"
    with table_on(tmp_path, device) as (table, recorder):
        server = start_server(table)
        table.start()
        page.goto(server.url)
        sign_in(page, "dana", "1111")
        phase(page, "shuffle_check")
        page.click('#next[data-step="confirm_shuffle"]')
        phase(page, "deck_loaded")
        page.click('[data-position="3"]')
        expect(page.locator('[data-position="3"]')).to_have_class(re.compile("wagered"))
        page.click("#next")
        phase(page, "bets_closed")
        page.click('[data-step="start_by_rng"]')
        expect(page.locator("#fault")).to_be_visible()
        recorder.wait_for(
            lambda events: any(
                isinstance(e, ev.PromptEvent) and e.need == "attendant_clear" for e in events
            )
        )
        screenshot(page, "fault", tmp_path)
        # The dealer cannot clear it: the banner asks for a supervisor's sign-in.
        page.click("#fault-clear")
        expect(page.locator("#sign-in-title")).to_contain_text("Supervisor")
        # The page renders again at every change of the table's state or of the language
        # (here the language, twice): the sign-in stays the supervisor's.
        page.evaluate("document.getElementById('lang').click()")
        expect(page.locator("#sign-in-title")).to_contain_text("Supervisor: sign in")
        page.evaluate("document.getElementById('lang').click()")
        expect(page.locator("#sign-in-title")).to_contain_text("Supervisor: inicie")
        sign_in(page, "sam", "2222")
        expect(page.locator("#fault")).to_be_hidden()
        expect(page.locator("#sign-in")).to_be_hidden()
        expect(page.locator("#who")).to_have_text("dana (dealer)")
        [cleared] = recorder.of(ev.FaultClearedEvent)
        assert isinstance(cleared, ev.FaultClearedEvent)
        assert cleared.by == "sam"
        journal = Path(table.journal_path)
        assert ("attendant_clear", Actor("sam", "supervisor")) in inputs(journal)
        actions = [(action, user) for action, user, _ in access(journal)]
        assert ("sign_in", "sam") in actions
        assert ("sign_out", "sam") in actions


def test_a_wrong_pin_says_so_on_the_page(
    page: Page, start_server: StartServer, tmp_path: Path
) -> None:
    with table_on(tmp_path, "sim://?pace=0.01") as (table, _):
        server = start_server(table)
        table.start()
        page.goto(server.url)
        sign_in(page, "dana", "9999")
        expect(page.locator("#sign-in-error")).to_have_text("wrong user name or PIN")
        expect(page.locator("#pin")).to_have_value("")


def test_the_console_reconnects_after_the_server_restarts(
    page: Page, users_file: UsersFile, tmp_path: Path
) -> None:
    with table_on(tmp_path, "sim://?pace=0.01") as (table, _):

        def serve(port: int) -> ApiServer:
            server = ApiServer(table, Authenticator(users_file), Listen("127.0.0.1", port))
            server.start()
            return server

        server = serve(0)
        table.start()
        try:
            page.goto(server.url)
            sign_in(page, "dana", "1111")
            phase(page, "shuffle_check")
            server.stop()
            expect(page.locator("#link")).to_have_attribute("data-link", "down")
            server = serve(server.port)
            # Back by itself; the restarted service knows no session: sign in again.
            expect(page.locator("#link")).to_have_attribute("data-link", "up")
            expect(page.locator("#sign-in-note")).not_to_be_empty()
            sign_in(page, "dana", "1111")
            phase(page, "shuffle_check")
        finally:
            server.stop()
