"""The dealer console in a real browser (Debian's chromium) against the real controller
and the simulated shoe, as a dealer and a supervisor use it: every outcome (dealt,
misdeal, deck removed, a disputed stub count a supervisor accepts, a determination that
contradicts the record, a round a supervisor voids, each fault, the lost link voided
explicitly) from the console alone, in Spanish, at 800x480 (and the full round at
1280x800 and 1920x1080 too); the external generator's signed number, a table that offers
the dice wager and a table of six positions. On every screen: every enabled control
inside the viewport, at least 64x64 px, none overlapping, no text cut, no English word
(tests/api/console_checks.py); the green button is the record's proposal."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from shoe_controller.api.auth import Authenticator
from shoe_controller.api.roles import Role
from shoe_controller.api.server import ApiServer, Listen
from shoe_controller.api.users import UsersFile
from shoe_controller.procedure import TableRules
from shoe_controller.service import Actor, TableController
from shoe_controller.service import events as ev
from shoe_controller.service.config import Config, load_config
from shoe_controller.simulator.transport import live_addresses, switch_off
from tests.api.browser import chromium, screenshot
from tests.api.client import WsClient
from tests.api.conftest import StartServer
from tests.api.console_checks import check_screen, errors_of
from tests.api.records import access, inputs
from tests.service.helpers import Recorder
from tests.service.rng_device import Device

pytestmark = pytest.mark.needs("chromium")

TIMEOUT_MS = 20_000
# Assertions wait as long as actions do: a loaded machine may take seconds to show a step.
expect.set_options(timeout=TIMEOUT_MS)
CARD_TEXT = re.compile(r"(10|[2-9AJQK])[♠♥♦♣]|🃏")
SMALL = {"width": 800, "height": 480}
SIZES = [SMALL, {"width": 1280, "height": 800}, {"width": 1920, "height": 1080}]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as b:
        yield b


@contextmanager
def page_at(browser: Browser, viewport: dict[str, int]) -> Iterator[Page]:
    context = browser.new_context(viewport=viewport)  # type: ignore[arg-type]
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors = errors_of(page)
    try:
        yield page
        assert errors == [], errors
    finally:
        context.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    with page_at(browser, SMALL) as p:
        yield p


@contextmanager
def table_on(
    tmp_path: Path, device: str, config: Config | None = None, **options: float
) -> Iterator[tuple[TableController, Recorder]]:
    table = TableController(
        config or Config(), journal_path=tmp_path / "journal.sqlite3", device=device, **options
    )
    recorder = Recorder()
    table.subscribe(recorder)
    try:
        yield table, recorder
    finally:
        table.stop()
        for address in live_addresses():
            switch_off(address)


def sign_in(page: Page, user: str, pin: str) -> None:
    """Touch the name in the table's list, then the PIN on the keypad."""
    expect(page.locator("#sign-in")).to_be_visible()
    page.click(f'#roster [data-user="{user}"]')
    expect(page.locator("#pin-for")).to_contain_text(user)
    for digit in pin:
        page.click(f'#keypad [data-key="{digit}"]')
    page.click("#sign-in-submit")


def phase(page: Page, name: str) -> None:
    expect(page.locator("#state-words")).to_have_attribute("data-phase", name)


def step(page: Page, name: str) -> None:
    expect(page.locator(f'#next[data-step="{name}"]')).to_be_enabled()


def no_identity_shown(page: Page) -> None:
    assert page.locator(".card").count() == 0
    assert not CARD_TEXT.search(page.inner_text("body"))


def prompted(recorder: Recorder, need: str, message: str = "") -> None:
    recorder.wait_for(
        lambda events: any(
            isinstance(e, ev.PromptEvent) and e.need == need and message in e.message
            for e in events
        )
    )


def ready_prompts(
    recorder: Recorder, events: list[ev.ServiceEvent] | None = None
) -> list[ev.PromptEvent]:
    """The prompts that said the shoe is free and a clear succeeds now, in order."""
    seen = recorder.of(ev.PromptEvent) if events is None else events
    return [e for e in seen if isinstance(e, ev.PromptEvent) and e.code == "attendant_clear_ready"]


def open_round(page: Page, wagers: tuple[int, ...]) -> None:
    step(page, "confirm_shuffle")
    check_screen(page)
    page.click("#next")
    phase(page, "deck_loaded")
    # No wager marked: "No va más" cannot succeed yet, so it is not offered (A3).
    expect(page.locator("#next")).to_be_disabled()
    for position in wagers:
        page.click(f'[data-position="{position}"]')
    for position in wagers:
        expect(page.locator(f'[data-position="{position}"]')).to_have_class(re.compile("wagered"))
    step(page, "no_more_bets")
    check_screen(page)
    page.click("#next")
    phase(page, "bets_closed")


def start_by_rng(page: Page) -> None:
    expect(page.locator('[data-step="start_by_rng"]')).to_be_enabled()
    page.click('[data-step="start_by_rng"]')


def count_as_the_shoe(page: Page, count: int) -> None:
    """The croupier counted what the shoe counted: the proposal, one touch (D1)."""
    expect(page.locator("#stub")).to_be_visible()
    expect(page.locator("#stub-count")).to_have_text("—")
    expect(page.locator('#next[data-step="stub_proposal"]')).to_have_text(
        f"Conté {count}, como el zapato"
    )
    page.click("#next")


def type_count(page: Page, count: int) -> None:
    """The croupier types a count of their own and confirms it (D1)."""
    expect(page.locator("#stub")).to_be_visible()
    for digit in str(count):
        page.click(f'#stub-keys [data-key="{digit}"]')
    expect(page.locator("#stub-count")).to_have_text(str(count))
    page.click('#alternatives [data-step="stub_counted"], #next[data-step="stub_counted"]')


def supervisor_does(page: Page, click: str, pin: str = "735142", user: str = "sam") -> None:
    page.click(click)
    expect(page.locator("#sign-in-title")).to_contain_text("Supervisor")
    # Only supervisors are offered for a supervisor's sign-in.
    expect(page.locator('#roster [data-user="dana"]')).to_have_count(0)
    check_screen(page)
    sign_in(page, user, pin)
    expect(page.locator("#sign-in")).to_be_hidden()


def journaled(journal: Path, kind: str) -> list[dict[str, Any]]:
    """The payloads of the journal's records of ``kind``, in order."""
    conn = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT payload FROM records WHERE kind = ? ORDER BY seq", (kind,)
        ).fetchall()
    finally:
        conn.close()
    return [json.loads(payload) for (payload,) in rows]


@pytest.mark.rule("E1")
@pytest.mark.rule("E2")
@pytest.mark.rule("A3")
@pytest.mark.rule("D1")
@pytest.mark.parametrize("viewport", SIZES, ids=lambda v: f"{v['width']}x{v['height']}")
def test_a_dealt_round_on_every_screen_size(
    browser: Browser, start_server: StartServer, tmp_path: Path, viewport: dict[str, int]
) -> None:
    small = viewport == SMALL
    shots = tmp_path / "shots"

    def shot(name: str) -> None:
        if small:
            screenshot(page, name, shots)
        elif name in ("sign-in", "dealing"):
            screenshot(page, f"{name}-{viewport['width']}x{viewport['height']}", shots)

    with (
        table_on(tmp_path, "sim://?pace=0.01&seed=3") as (table, recorder),
        page_at(browser, viewport) as page,
    ):
        server = start_server(table)
        table.start()
        page.goto(server.url)
        expect(page.locator('#roster [data-user="dana"]')).to_be_visible()
        check_screen(page)
        shot("sign-in")
        page.click('#roster [data-user="dana"]')
        for digit in "4821":
            page.click(f'#keypad [data-key="{digit}"]')
        expect(page.locator("#pin-dots")).to_have_attribute("data-length", "4")
        check_screen(page)
        shot("pin")
        page.click("#sign-in-submit")
        expect(page.locator("#who")).to_have_text("dana (crupier)")
        phase(page, "shuffle_check")
        check_screen(page)
        shot("shuffle")
        page.click("#next")
        phase(page, "deck_loaded")
        for position in (2, 4, 5):
            page.click(f'[data-position="{position}"]')
        expect(page.locator('[data-position="5"]')).to_have_class(re.compile("wagered"))
        expect(page.locator('[data-position="1"]')).to_be_disabled()
        check_screen(page)
        shot("wagers")
        step(page, "no_more_bets")
        page.click("#next")
        phase(page, "bets_closed")
        # Three dice: 2 + 5 + 6 = 13 -> position 6.
        expect(page.locator("#next")).to_be_disabled()
        for die, face in enumerate((2, 5, 6)):
            page.click(f'.die[data-die="{die}"] [data-face="{face}"]')
        expect(page.locator("#dice-total")).to_have_text("Total 13: empieza en la posición 6")
        check_screen(page)
        shot("dice")
        page.click("#next")
        expect(page.locator('[data-position="6"]')).not_to_have_attribute("data-cards", "0")
        no_identity_shown(page)
        shot("dealing")
        # Every round the croupier counts the stub; the shoe's count is the one-touch
        # proposal, with the figures it is checked against; nothing is typed for them.
        phase(page, "stub_confirm")
        expect(page.locator("#step-message")).to_contain_text("El zapato contó 4 cartas")
        expect(page.locator("#figures li")).to_have_text(
            ["Zapato: 4", "Leídas: 4", "Según el reparto: 4", "Esperadas: 4"]
        )
        expect(page.locator('#alternatives [data-step="stub_counted"]')).to_be_disabled()
        check_screen(page)
        shot("stub")
        count_as_the_shoe(page, 4)
        phase(page, "dealt")
        for position in range(1, 8):
            expect(page.locator(f'[data-position="{position}"]')).to_have_attribute(
                "data-cards", "7"
            )
        expect(page.locator("#round-info")).to_contain_text("Remanente: 4")
        expect(page.locator("#outcome")).to_contain_text("Manos en juego")
        no_identity_shown(page)
        check_screen(page)
        step(page, "close_round")
        page.click("#next")
        # After close: the banker's and the wagered hands, for the record; none other.
        for position in (1, 2, 4, 5):
            expect(page.locator(f'#hands [data-position="{position}"] .card')).to_have_count(7)
        for position in (3, 6, 7):
            expect(page.locator(f'#hands [data-position="{position}"]')).to_have_count(0)
        expect(page.locator("#round-info")).to_contain_text("1 ronda ")
        expect(page.locator("#outcome")).to_contain_text("Ronda cerrada")
        check_screen(page)
        shot("hands")
        closed = recorder.of(ev.RoundClosedEvent)[0]
        assert isinstance(closed, ev.RoundClosedEvent)
        shown = page.locator('#hands [data-position="1"] .card').evaluate_all(
            "cards => cards.map(c => c.dataset.code)"
        )
        assert shown == list(closed.hands["1"])
        # The next round starts with every position empty; the last round's hands are
        # apart, marked as the previous round's.
        step(page, "confirm_shuffle")
        page.click("#next")
        phase(page, "deck_loaded")
        expect(page.locator("#outcome")).to_be_hidden()
        expect(page.locator(".position.wagered")).to_have_count(0)
        expect(page.locator("#hands")).to_be_hidden()
        no_identity_shown(page)
        check_screen(page)
        page.click("#previous")
        expect(page.locator("#previous-title")).to_contain_text("Ronda anterior")
        expect(page.locator('#previous-hands [data-position="2"] .card')).to_have_count(7)
        check_screen(page)
        shot("previous")
        page.click("#previous-close")
        check_screen(page)
        page.click('[data-position="3"]')
        step(page, "no_more_bets")
        page.click("#next")
        phase(page, "bets_closed")
        # English on request; the choice is the page's, not the table's.
        page.click("#lang")
        expect(page.locator("html")).to_have_attribute("lang", "en")
        expect(page.locator("#round-info")).to_contain_text("1 round ")
        expect(page.locator("#who")).to_have_text("dana (dealer)")
        check_screen(page, spanish=False)
        dana = Actor("dana", "dealer")
        journal = Path(table.journal_path)
        assert [name for name, actor in inputs(journal) if actor == dana][:7] == [
            "confirm_shuffle",
            "set_wagers",
            "set_wagers",
            "set_wagers",
            "no_more_bets",
            "start_position",
            "stub_counted",
        ]
        [counted] = [p for p in journaled(journal, "stub_counted") if p["source"] == "croupier"]
        assert (counted["count"], counted["agrees"]) == (4, True)


PORTRAIT = [{"width": 480, "height": 800}, {"width": 800, "height": 1280}]


def a_round_to_close(
    page: Page, wagers: tuple[int, ...], *, later: bool, shot: Path | None = None
) -> None:
    """A round from its first screen to its close, every screen checked on the way; in a
    ``later`` round, the last round's hands are a touch away on each of them. With
    ``shot``, a picture of its bets there, named for the screen's size."""
    if page.locator('#next[data-step="confirm_shuffle"]').is_visible():
        check_screen(page)
        page.click("#next")
    phase(page, "deck_loaded")
    check_screen(page)
    if later:
        expect(page.locator("#previous")).to_be_visible()
        page.click("#previous")
        expect(page.locator("#previous-title")).to_contain_text("Ronda anterior")
        check_screen(page)
        page.click("#previous-close")
        check_screen(page)
    for position in wagers:
        page.click(f'[data-position="{position}"]')
        expect(page.locator(f'[data-position="{position}"]')).to_have_class(re.compile("wagered"))
        check_screen(page)
    if shot is not None:
        size = page.viewport_size or {"width": 0, "height": 0}
        screenshot(page, f"second-round-{size['width']}x{size['height']}", shot)
    step(page, "no_more_bets")
    page.click("#next")
    phase(page, "bets_closed")
    check_screen(page)
    for die, face in enumerate((2, 5, 6)):
        page.click(f'.die[data-die="{die}"] [data-face="{face}"]')
        check_screen(page)
    page.click("#next")
    expect(page.locator('[data-position="6"]')).not_to_have_attribute("data-cards", "0")
    check_screen(page)
    until_the_close(page)


def until_the_close(page: Page) -> None:
    """From the stub's count to the close, every screen checked."""
    phase(page, "stub_confirm")
    check_screen(page)
    count_as_the_shoe(page, 4)
    phase(page, "dealt")
    check_screen(page)
    step(page, "close_round")
    page.click("#next")
    expect(page.locator("#outcome")).to_contain_text("Ronda cerrada")
    check_screen(page)


@pytest.mark.rule("F1")
@pytest.mark.rule("F6")
@pytest.mark.parametrize("viewport", SIZES + PORTRAIT, ids=lambda v: f"{v['width']}x{v['height']}")
def test_every_screen_of_consecutive_rounds_fits(
    browser: Browser, start_server: StartServer, tmp_path: Path, viewport: dict[str, int]
) -> None:
    """Two dealt rounds, a round with a jam a supervisor clears, a round after it that a
    supervisor voids, and a round after the void: every screen of each (the previous
    round's hands and the void in the corners by the banker from the second on) passes
    the layout checks."""
    # Two rounds of 52 cards: the jam is at the tenth card of the third.
    device = "sim://?pace=0.01&seed=3&faults=jam@114&jam_for=0.3"
    with (
        table_on(tmp_path, device) as (table, recorder),
        page_at(browser, viewport) as page,
    ):
        server = start_server(table)
        table.start()
        page.goto(server.url)
        sign_in(page, "dana", "4821")
        phase(page, "shuffle_check")
        a_round_to_close(page, (2, 4, 5), later=False)
        a_round_to_close(page, (3, 7), later=True, shot=tmp_path / "shots")
        # The third round: the jam, at the shoe first, then cleared by a supervisor.
        step(page, "confirm_shuffle")
        page.click("#next")
        for position in (2, 6):
            page.click(f'[data-position="{position}"]')
        step(page, "no_more_bets")
        page.click("#next")
        start_by_rng(page)
        expect(page.locator("#fault")).to_be_visible()
        check_screen(page)
        prompted(recorder, "attendant_clear", "no jam")
        expect(page.locator("#fault-clear")).to_be_enabled()
        check_screen(page)
        supervisor_does(page, "#fault-clear")
        expect(page.locator("#fault")).to_be_hidden()
        check_screen(page)
        until_the_close(page)
        # The round after the fault: a supervisor voids it at the stub, undecided.
        step(page, "confirm_shuffle")
        page.click("#next")
        page.click('[data-position="5"]')
        step(page, "no_more_bets")
        page.click("#next")
        start_by_rng(page)
        phase(page, "stub_confirm")
        check_screen(page)
        page.click("#void-open")
        check_screen(page)
        page.click('#void-reasons [data-reason="card_exposed"]')
        check_screen(page)
        supervisor_does(page, "#void-confirm")
        expect(page.locator("#outcome")).to_contain_text("Ronda anulada por un supervisor")
        check_screen(page)
        prompted(recorder, "new_deck")
        step(page, "confirm_new_deck")
        check_screen(page)
        supervisor_does(page, "#next")
        # The round after the void (which has no hands to show).
        a_round_to_close(page, (2, 3, 4, 5, 6, 7), later=False)
        ends = [e.outcome for e in recorder.of(ev.RoundEndEvent) if isinstance(e, ev.RoundEndEvent)]
        assert ends == ["dealt", "dealt", "dealt", "void_fault", "dealt"]
        closed = recorder.of(ev.RoundClosedEvent)
        assert len(closed) == 4


def short_deck_to_review(page: Page, recorder: Recorder) -> None:
    """A deck one card short: the shoe counts 3, and so does the croupier; the deal left 4,
    so the figures disagree and a supervisor accepts the count (D1), which leaves the stub
    at 3: the misdeal determination (D2)."""
    open_round(page, (3,))
    start_by_rng(page)
    phase(page, "stub_confirm")
    expect(page.locator("#figures li")).to_have_text(
        ["Zapato: 3", "Leídas: 3", "Según el reparto: 4", "Esperadas: 4"]
    )
    count_as_the_shoe(page, 3)
    phase(page, "stub_dispute")
    expect(page.locator("#step-message")).to_contain_text(
        "Las cifras no coinciden con el conteo del crupier (3 cartas)"
    )
    expect(page.locator("#figures li").first).to_have_text("Crupier: 3")
    expect(page.locator("#next")).to_have_text("Supervisor: aceptar 3")
    expect(page.locator('#alternatives [data-step="stub_counted"]')).to_have_text("Contar de nuevo")
    check_screen(page)
    supervisor_does(page, "#next")
    phase(page, "misdeal_review")
    [accepted] = recorder.of(ev.StubAcceptedEvent)
    assert isinstance(accepted, ev.StubAcceptedEvent)
    assert (accepted.count, accepted.by) == (3, "sam")


@pytest.mark.rule("D1")
@pytest.mark.rule("D2")
def test_a_short_deck_is_disputed_accepted_and_leaves_the_table_as_the_record_proposes(
    page: Page, start_server: StartServer, tmp_path: Path
) -> None:
    with table_on(tmp_path, "sim://?pace=0.01&seed=3&deck=short") as (table, recorder):
        server = start_server(table)
        table.start()
        page.goto(server.url)
        sign_in(page, "dana", "4821")
        short_deck_to_review(page, recorder)
        # The record proposes "not misdealt": that is the green button, the dealer's to
        # give; "misdealt" would contradict the record: a supervisor's. The evidence is one
        # sentence per figure, in Spanish, nothing cut.
        expect(page.locator("#next")).to_have_attribute("data-step", "not_misdealt")
        expect(page.locator("#next")).to_have_text("No mal repartida")
        expect(page.locator('#alternatives [data-step="misdealt"]')).to_have_text(
            "Supervisor: mal repartida"
        )
        expect(page.locator("#evidence li").first).to_contain_text("no mal repartida")
        expect(page.locator("#evidence")).to_contain_text("7 cartas en cada posición.")
        expect(page.locator("#evidence")).to_contain_text(
            "3 cartas en el remanente (se esperan 4)."
        )
        expect(page.locator("#evidence")).to_contain_text("La baraja tiene 52 cartas.")
        check_screen(page)
        screenshot(page, "misdeal", tmp_path)
        page.click("#next")
        # The deck leaves the table: announced with what to do until the next round.
        expect(page.locator("#outcome")).to_contain_text("retire la baraja")
        [determination] = recorder.of(ev.DeterminationEvent)
        assert isinstance(determination, ev.DeterminationEvent)
        assert (determination.misdealt, determination.contradicts) == (False, False)
        journal = Path(table.journal_path)
        assert ("misdeal_determination", Actor("dana", "dealer")) in inputs(journal)
        assert ("accept_stub_count", Actor("sam", "supervisor")) in inputs(journal)
        # The simulated croupier takes the deck out and loads another: a supervisor
        # confirms it is another one.
        prompted(recorder, "new_deck")
        step(page, "confirm_new_deck")
        check_screen(page)
        screenshot(page, "new-deck", tmp_path)
        supervisor_does(page, "#next")
        phase(page, "deck_loaded")
        expect(page.locator("#outcome")).to_be_hidden()
        assert ("new_deck", Actor("sam", "supervisor")) in inputs(journal)
        expect(page.locator("#who")).to_have_text("dana (crupier)")


@pytest.mark.rule("D2")
@pytest.mark.rule("D4")
def test_a_misdeal_on_a_deck_read_short_contradicts_nothing_and_the_deck_leaves(
    page: Page, start_server: StartServer, tmp_path: Path
) -> None:
    """A stub of 3 beside seven to each may be two cards passed as one: "misdealt" is no
    contradiction, but the shoe read a deck of 52, which leaves the table all the same."""
    with table_on(tmp_path, "sim://?pace=0.01&seed=3&deck=short") as (table, recorder):
        server = start_server(table)
        table.start()
        page.goto(server.url)
        sign_in(page, "dana", "4821")
        short_deck_to_review(page, recorder)
        supervisor_does(page, '#alternatives [data-step="misdealt"]')
        expect(page.locator("#outcome")).not_to_contain_text("contra el registro")
        expect(page.locator("#outcome")).to_contain_text("retire la baraja")
        check_screen(page)
        screenshot(page, "contradicts", tmp_path)
        [determination] = recorder.of(ev.DeterminationEvent)
        assert isinstance(determination, ev.DeterminationEvent)
        assert (determination.misdealt, determination.contradicts) == (True, False)
        [end] = recorder.of(ev.RoundEndEvent)
        assert isinstance(end, ev.RoundEndEvent) and end.outcome == "void_deck_removed"
        journal = Path(table.journal_path)
        assert ("misdeal_determination", Actor("sam", "supervisor")) in inputs(journal)


@pytest.mark.rule("D1")
@pytest.mark.rule("D2")
def test_a_count_nobody_made_is_never_accepted_and_a_supervisor_accepts_the_croupier_s(
    page: Page, start_server: StartServer, tmp_path: Path
) -> None:
    """A stub card passes unread and two pass as one: the shoe counts 3, read 2. The croupier
    counts 4 and types it; the figures disagree, and the reading being no whole one (D4), a
    supervisor accepts the croupier's count, the hands are in play and the supervisor sees
    the notice that the reader needs service."""
    device = "sim://?pace=0.01&seed=3&faults=misread@50,double@51"
    with table_on(tmp_path, device) as (table, recorder):
        server = start_server(table)
        table.start()
        page.goto(server.url)
        sign_in(page, "dana", "4821")
        open_round(page, (2,))
        start_by_rng(page)
        phase(page, "stub_confirm")
        expect(page.locator("#stub-count")).to_have_text("—")
        expect(page.locator('#alternatives [data-step="stub_counted"]')).to_be_disabled()
        type_count(page, 4)
        phase(page, "stub_dispute")
        expect(page.locator("#figures li")).to_have_text(
            ["Crupier: 4", "Zapato: 3", "Leídas: 2", "Según el reparto: 4", "Esperadas: 4"]
        )
        expect(page.locator("#next")).to_have_text("Supervisor: aceptar 4")
        check_screen(page)
        screenshot(page, "dispute", tmp_path)
        supervisor_does(page, "#next")
        phase(page, "dealt")
        expect(page.locator("#notice-open")).to_be_visible()
        check_screen(page)
        page.click("#notice-open")
        expect(page.locator("#notice")).to_contain_text("Aviso para el supervisor")
        expect(page.locator("#notice-text")).to_contain_text("el lector del zapato necesita")
        check_screen(page)
        screenshot(page, "notice", tmp_path)
        page.click("#notice-dismiss")
        expect(page.locator("#notice")).to_be_hidden()
        expect(page.locator("#notice-open")).to_be_hidden()
        [stub] = [e for e in recorder.of(ev.StubEvent) if getattr(e, "source", "") == "croupier"]
        assert isinstance(stub, ev.StubEvent)
        assert (stub.count, stub.agrees) == (4, False)
        [accepted] = recorder.of(ev.StubAcceptedEvent)
        assert isinstance(accepted, ev.StubAcceptedEvent)
        assert (accepted.count, accepted.by) == (4, "sam")


@pytest.mark.rule("D2")
@pytest.mark.rule("C4")
@pytest.mark.rule("F1")
def test_a_misdeal_the_record_cannot_decide_and_a_jam_cleared_when_it_can_be(
    page: Page, start_server: StartServer, tmp_path: Path
) -> None:
    device = "sim://?pace=0.01&seed=3&deck=short&faults=jam@10&jam_for=1.5"
    with table_on(tmp_path, device) as (table, recorder):
        server = start_server(table)
        table.start()
        page.goto(server.url)
        sign_in(page, "dana", "4821")
        open_round(page, (2, 6))
        start_by_rng(page)
        # The jam: the clear cannot succeed while the shoe reports it, so it is not offered.
        expect(page.locator("#fault")).to_be_visible()
        expect(page.locator("#fault-message")).to_have_text("El zapato reporta un atasco.")
        expect(page.locator("#fault-clear")).to_be_disabled()
        expect(page.locator("#step-message")).to_contain_text("Despeje el atasco en el zapato")
        check_screen(page)
        screenshot(page, "fault", tmp_path)
        # The shoe reports the jam cleared: the latest prompt's words, and the clear.
        prompted(recorder, "attendant_clear", "no jam")
        expect(page.locator("#step-message")).to_contain_text("El zapato está listo")
        expect(page.locator("#fault-clear")).to_be_enabled()
        check_screen(page)
        screenshot(page, "fault-ready", tmp_path)
        supervisor_does(page, "#fault-clear")
        expect(page.locator("#fault")).to_be_hidden()
        [cleared] = recorder.of(ev.FaultClearedEvent)
        assert isinstance(cleared, ev.FaultClearedEvent)
        assert cleared.by == "sam"
        # The deal goes on; a jam in the record: the record cannot decide the misdeal, and
        # the dealer determines it.
        phase(page, "stub_confirm")
        count_as_the_shoe(page, 3)
        phase(page, "stub_dispute")
        supervisor_does(page, "#next")
        phase(page, "misdeal_review")
        expect(page.locator("#next")).to_be_hidden()
        expect(page.locator("#evidence li").first).to_have_text(
            "El registro no basta para decidir: determine usted."
        )
        expect(page.locator("#evidence")).to_contain_text("Hubo 1 atasco.")
        expect(page.locator('#alternatives [data-step="misdealt"]')).to_have_text("Mal repartida")
        check_screen(page)
        page.click('#alternatives [data-step="misdealt"]')
        expect(page.locator("#outcome")).to_contain_text("Ronda nula: mal repartida")
        expect(page.locator("#outcome")).to_contain_text("Devuelva todas las apuestas")
        check_screen(page)
        screenshot(page, "void", tmp_path)
        [end] = [e for e in recorder.of(ev.RoundEndEvent) if isinstance(e, ev.RoundEndEvent)]
        assert isinstance(end, ev.RoundEndEvent)
        assert end.outcome == "void_misdeal"
        journal = Path(table.journal_path)
        assert ("misdeal_determination", Actor("dana", "dealer")) in inputs(journal)


#: Faults the simulated shoe makes, with the words the console must show for them.
FAULTS = {
    "door@10&door_for=0.3": ("door_opened", "Se abrió la puerta del zapato durante la ronda."),
    "misread@10": ("unread_card", "Salió una carta sin leerse."),
    "early_draw": ("unexpected_card", "Salió una carta cuando no se esperaba ninguna."),
    "reboot@10&persist=0": ("events_lost", "Se perdieron eventos del zapato."),
}


@pytest.mark.rule("F1")
@pytest.mark.rule("F2")
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_each_fault_is_shown_cleared_and_announced_in_spanish(
    page: Page, start_server: StartServer, tmp_path: Path, fault: str
) -> None:
    code, words = FAULTS[fault]
    with table_on(tmp_path, f"sim://?pace=0.01&seed=3&faults={fault}") as (table, recorder):
        server = start_server(table)
        table.start()
        page.goto(server.url)
        sign_in(page, "dana", "4821")
        if fault != "early_draw":
            open_round(page, (4,))
            start_by_rng(page)
        expect(page.locator("#fault")).to_be_visible()
        expect(page.locator("#fault")).to_have_attribute("data-codes", re.compile(code))
        expect(page.locator("#fault-message")).to_contain_text(words)
        check_screen(page)
        prompted(recorder, "attendant_clear")
        if fault.startswith("door"):
            # The door closes: the table asks again, and the supervisor answers that.
            expect(page.locator("#step-message")).to_have_text(
                "El zapato está listo (sin atasco, puerta cerrada): un supervisor puede "
                "despejar la falla."
            )
        expect(page.locator("#fault-clear")).to_be_enabled()
        check_screen(page)
        supervisor_does(page, "#fault-clear")
        expect(page.locator("#fault")).to_be_hidden()
        journal = Path(table.journal_path)
        assert ("attendant_clear", Actor("sam", "supervisor")) in inputs(journal)
        if fault != "early_draw":
            # The round was void: announced in the top bar, with what to do.
            expect(page.locator("#outcome")).to_contain_text("Ronda nula por una falla")
        # Some prompt says who must do what next, in Spanish (F6).
        expect(page.locator("#step-message")).not_to_be_empty()
        check_screen(page)


@pytest.mark.rule("F2")
@pytest.mark.rule("F6")
def test_a_lost_link_is_voided_only_by_a_supervisor_s_explicit_choice(
    page: Page, start_server: StartServer, tmp_path: Path
) -> None:
    """The shoe falls silent mid-deal past the grace: the clear that would resume is not
    offered while it is away; the supervisor's choice to void the round is, and says so."""
    device = "sim://?pace=0.01&seed=3&faults=silent@10&silent_for=120"
    with table_on(tmp_path, device, link_grace=0.5) as (table, recorder):
        server = start_server(table)
        table.start()
        page.goto(server.url)
        sign_in(page, "dana", "4821")
        open_round(page, (2,))
        start_by_rng(page)
        prompted(recorder, "wait_shoe")
        expect(page.locator("#fault")).to_have_attribute("data-codes", re.compile("link_lost"))
        expect(page.locator("#fault-message")).to_contain_text(
            "Se perdió la conexión con el zapato."
        )
        expect(page.locator("#step-message")).to_contain_text("Para renunciar a la ronda")
        expect(page.locator("#fault-clear")).to_have_text("Supervisor: anular la ronda y despejar")
        expect(page.locator("#shoe-link")).to_have_attribute("data-link", "down")
        check_screen(page)
        screenshot(page, "link-lost", tmp_path)
        supervisor_does(page, "#fault-clear")
        expect(page.locator("#outcome")).to_contain_text("Ronda nula por una falla")
        [end] = [e for e in recorder.of(ev.RoundEndEvent) if isinstance(e, ev.RoundEndEvent)]
        assert isinstance(end, ev.RoundEndEvent) and end.outcome == "void_fault"
        journal = Path(table.journal_path)
        [clear] = [p for p in journaled(journal, "input") if p["name"] == "attendant_clear"]
        assert (clear["by"], clear["accepted"]) == ("sam", True)
        check_screen(page)


@pytest.mark.rule("F6")
def test_a_supervisor_voids_an_undecided_round_with_a_reason(
    page: Page, start_server: StartServer, tmp_path: Path
) -> None:
    with table_on(tmp_path, "sim://?pace=0.01&seed=3") as (table, recorder):
        server = start_server(table)
        table.start()
        page.goto(server.url)
        sign_in(page, "dana", "4821")
        # Between rounds there is no round to void.
        phase(page, "shuffle_check")
        expect(page.locator("#void-open")).to_be_hidden()
        open_round(page, (2, 3))
        expect(page.locator("#void-open")).to_be_visible()
        page.click("#void-open")
        expect(page.locator("#void-title")).to_contain_text("Anular la ronda")
        # No reason chosen: nothing to confirm.
        expect(page.locator("#void-confirm")).to_be_disabled()
        page.click('#void-reasons [data-reason="card_exposed"]')
        expect(page.locator('#void-reasons [data-reason="card_exposed"]')).to_have_attribute(
            "aria-pressed", "true"
        )
        check_screen(page)
        screenshot(page, "void-reasons", tmp_path)
        supervisor_does(page, "#void-confirm")
        expect(page.locator("#outcome")).to_contain_text("Ronda anulada por un supervisor")
        expect(page.locator("#void-open")).to_be_hidden()
        check_screen(page)
        screenshot(page, "void-round", tmp_path)
        [end] = [e for e in recorder.of(ev.RoundEndEvent) if isinstance(e, ev.RoundEndEvent)]
        assert isinstance(end, ev.RoundEndEvent) and end.outcome == "void_fault"
        assert "a card was exposed at the table" in end.reason
        assert "sam" in end.reason
        journal = Path(table.journal_path)
        assert ("void_round", Actor("sam", "supervisor")) in inputs(journal)


@pytest.mark.rule("B1")
def test_the_external_generator_s_signed_number_sets_the_start(
    page: Page, start_server: StartServer, tmp_path: Path
) -> None:
    device = Device(algorithm="hmac-sha256")
    path = tmp_path / "config.toml"
    path.write_text(device.config(tmp_path))
    with table_on(tmp_path, "sim://?pace=0.01&seed=3", load_config(path)) as (table, recorder):
        server = start_server(table)
        table.start()
        page.goto(server.url)
        sign_in(page, "dana", "4821")
        open_round(page, (4,))
        page.click('#alternatives [data-step="use_external"]')
        expect(page.locator("#external-title")).to_contain_text("RNG-0042")
        expect(page.locator('#next[data-step="start_by_external"]')).to_be_disabled()
        value = device.draw(5)
        page.fill("#external-token", "5:99:" + "ab" * 32)
        page.fill("#external-token", "x")
        expect(page.locator("#external-check")).to_have_text(
            "Ese valor no es número:contador:firma de un número de esta mesa."
        )
        page.fill("#external-token", device.token(value))
        expect(page.locator("#external-check")).to_have_text(
            f"Valor firmado: número 5, contador {value.counter}."
        )
        expect(page.locator('#external-numbers [data-number="5"]')).to_have_class(
            re.compile("chosen")
        )
        check_screen(page)
        screenshot(page, "external", tmp_path)
        step(page, "start_by_external")
        page.click("#next")
        expect(page.locator("#round-info")).to_contain_text("Empieza en la posición 5")
        [start] = recorder.of(ev.StartPositionEvent)
        assert isinstance(start, ev.StartPositionEvent)
        assert (start.position, start.method, start.value) == (5, "rng", 5)
        [record] = journaled(Path(table.journal_path), "external_rng")
        assert (record["number"], record["signed"], record["counter"]) == (5, True, value.counter)


@pytest.mark.rule("B2")
def test_a_table_that_offers_the_dice_wager_starts_by_dice_and_settles_it_first(
    page: Page, start_server: StartServer, tmp_path: Path
) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[table]\ndice_wager = true\n")
    with table_on(tmp_path, "sim://?pace=0.01&seed=3", load_config(path)) as (table, recorder):
        server = start_server(table)
        table.start()
        page.goto(server.url)
        sign_in(page, "dana", "4821")
        open_round(page, (2,))
        expect(page.locator("#step-message")).to_contain_text("deciden la apuesta de dados")
        expect(page.locator('[data-step="start_by_rng"]')).to_have_count(0)
        for die, face in enumerate((1, 1, 1)):
            page.click(f'.die[data-die="{die}"] [data-face="{face}"]')
        check_screen(page)
        page.click("#next")
        phase(page, "start_set")
        step(page, "wager_settled")
        expect(page.locator("#next")).to_have_text("Apuestas de dados pagadas")
        assert recorder.of(ev.CardEvent) == []
        check_screen(page)
        page.click("#next")
        phase(page, "dealing")


@pytest.mark.rule("C1")
def test_a_table_of_six_positions_is_laid_out_and_dealt_as_six(
    page: Page, start_server: StartServer, tmp_path: Path
) -> None:
    labels = ((1, "Banca"), *((p, f"Silla {'ABCDE'[p - 2]}") for p in range(2, 7)))
    rules = TableRules(positions=6, cards_per_position=8, stub_size=5, seat_labels=labels)
    with table_on(tmp_path, "sim://?pace=0.01&seed=3", Config(table=rules)) as (table, _):
        server = start_server(table)
        table.start()
        page.goto(server.url)
        sign_in(page, "dana", "4821")
        expect(page.locator(".position")).to_have_count(6)
        # The table's own names for its seats.
        expect(page.locator('[data-position="2"]')).to_contain_text("Silla A")
        expect(page.locator('[data-position="6"]')).to_contain_text("Silla E")
        open_round(page, (6,))
        start_by_rng(page)
        phase(page, "stub_confirm")
        count_as_the_shoe(page, 5)
        phase(page, "dealt")
        for position in range(1, 7):
            expect(page.locator(f'[data-position="{position}"]')).to_have_attribute(
                "data-cards", "8"
            )
        check_screen(page)


def test_a_double_card_is_a_misdeal_announced_with_what_to_do(
    page: Page, start_server: StartServer, tmp_path: Path
) -> None:
    device = "sim://?pace=0.01&seed=3&faults=double_detected@10"
    with table_on(tmp_path, device) as (table, _):
        server = start_server(table)
        table.start()
        page.goto(server.url)
        sign_in(page, "dana", "4821")
        open_round(page, (5,))
        start_by_rng(page)
        expect(page.locator("#outcome")).to_contain_text("Ronda nula: mal repartida")
        expect(page.locator("#outcome")).to_contain_text("recoja las cartas sin mostrarlas")
        check_screen(page)


@pytest.mark.rule("F1")
@pytest.mark.rule("E4")
def test_a_refused_supervisor_keeps_the_sign_in_for_a_retry(
    page: Page, start_server: StartServer, users_file: UsersFile, tmp_path: Path
) -> None:
    """A supervisor touches "clear" on the first jam; while their sign-in waits (PIN checks
    wait for the deal), another supervisor clears that jam, the deal resumes and the shoe
    jams again. The first supervisor's clear answers the prompt they saw, which the table
    has left: it is refused, in Spanish, and never clears the second jam, which they never
    saw. They stay signed in; with the second jam's prompt on the screen, their clear goes
    through without the PIN."""
    users_file.add("sue", Role.SUPERVISOR, "583920")
    device = "sim://?pace=0.01&seed=3&faults=jam@10,jam@30&jam_for=0.2"
    with table_on(tmp_path, device) as (table, recorder):
        server = start_server(table)
        table.start()
        page.goto(server.url)
        sign_in(page, "dana", "4821")
        open_round(page, (3,))
        start_by_rng(page)
        prompted(recorder, "attendant_clear", "no jam")
        expect(page.locator("#fault-clear")).to_be_enabled()
        first_ready = ready_prompts(recorder)[0]
        page.click("#fault-clear")
        page.click('#roster [data-user="sam"]')
        for digit in "735142":
            page.click(f'#keypad [data-key="{digit}"]')

        async def sue_clears() -> None:
            client = await WsClient.open(server.url)
            try:
                await client.login("sue", "583920")
                await client.call("table.clear_fault")
            finally:
                await client.close()

        with ThreadPoolExecutor(1) as pool:  # Playwright's own loop runs on this thread
            pool.submit(asyncio.run, sue_clears()).result()
        page.click("#sign-in-submit")
        # sam's sign-in goes through once the deal stops at the second jam: the clear that
        # follows answers the first jam's prompt, and the table has moved on.
        expect(page.locator("#error")).to_have_text(
            "La mesa ha avanzado desde esa indicación: mire de nuevo lo que pide ahora."
        )
        expect(page.locator("#supervisor-note")).to_contain_text("sam sigue como supervisor")
        check_screen(page)
        journal = Path(table.journal_path)
        assert [actor for name, actor in inputs(journal) if name == "attendant_clear"] == [
            Actor("sue", "supervisor")
        ]
        [refused] = [
            p
            for p in journaled(journal, "input")
            if p["name"] == "attendant_clear" and not p["accepted"]
        ]
        assert (refused["by"], refused["role"], refused["prompt"], refused["refused"]) == (
            "sam",
            "supervisor",
            first_ready.id,
            "the table has moved on since that prompt: look at it again",
        )
        # The second jam: with its prompt on the screen, sam's clear goes through in sam's
        # name, without the PIN.
        recorder.wait_for(lambda events: len(ready_prompts(recorder, events)) >= 2)
        expect(page.locator("#fault-clear")).to_be_enabled()
        page.click("#fault-clear")
        expect(page.locator("#sign-in")).to_be_hidden()
        expect(page.locator("#fault")).to_be_hidden()
        expect(page.locator("#supervisor-note")).to_be_empty()
        expect(page.locator("#error")).to_be_empty()
        clears = [actor for name, actor in inputs(journal) if name == "attendant_clear"]
        assert clears == [Actor("sue", "supervisor"), Actor("sam", "supervisor")]
        [accepted] = [
            p
            for p in journaled(journal, "input")
            if p["name"] == "attendant_clear" and p["accepted"] and p["by"] == "sam"
        ]
        assert accepted["prompt"] == ready_prompts(recorder)[1].id
        sam_sign_ins = [
            1 for action, user, _ in access(journal) if (action, user) == ("sign_in", "sam")
        ]
        assert sam_sign_ins == [1]


def test_a_wrong_pin_says_so_in_spanish(
    page: Page, start_server: StartServer, tmp_path: Path
) -> None:
    with table_on(tmp_path, "sim://?pace=0.01") as (table, _):
        server = start_server(table)
        table.start()
        page.goto(server.url)
        sign_in(page, "dana", "9999")
        expect(page.locator("#sign-in-error")).to_have_text("Usuario o PIN incorrecto.")
        expect(page.locator("#pin-dots")).to_have_attribute("data-length", "0")
        check_screen(page)


def test_sign_out_asks_first(page: Page, start_server: StartServer, tmp_path: Path) -> None:
    with table_on(tmp_path, "sim://?pace=0.01") as (table, _):
        server = start_server(table)
        table.start()
        page.goto(server.url)
        sign_in(page, "dana", "4821")
        phase(page, "shuffle_check")
        page.click("#sign-out")
        expect(page.locator("#confirm-out-text")).to_have_text("¿Cerrar la sesión de dana?")
        check_screen(page)
        page.click("#confirm-out-no")
        expect(page.locator("#who")).to_have_text("dana (crupier)")
        page.click("#sign-out")
        page.click("#confirm-out-yes")
        expect(page.locator("#sign-in")).to_be_visible()
        actions = [(a, u) for a, u, _ in access(Path(table.journal_path))]
        assert ("sign_out", "dana") in actions


@pytest.mark.parametrize(
    "viewport", [{"width": 480, "height": 800}, {"width": 800, "height": 1280}], ids=str
)
def test_portrait_screens_fit(
    browser: Browser, start_server: StartServer, tmp_path: Path, viewport: dict[str, int]
) -> None:
    with (
        table_on(tmp_path, "sim://?pace=0.01&seed=3") as (table, _),
        page_at(browser, viewport) as page,
    ):
        server = start_server(table)
        table.start()
        page.goto(server.url)
        expect(page.locator('#roster [data-user="dana"]')).to_be_visible()
        check_screen(page)
        page.click('#roster [data-user="dana"]')
        check_screen(page)
        for digit in "4821":
            page.click(f'#keypad [data-key="{digit}"]')
        page.click("#sign-in-submit")
        open_round(page, (2, 7))
        check_screen(page)
        for die, face in enumerate((1, 1, 1)):
            page.click(f'.die[data-die="{die}"] [data-face="{face}"]')
        check_screen(page)
        screenshot(page, f"portrait-{viewport['width']}x{viewport['height']}", tmp_path)


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
            sign_in(page, "dana", "4821")
            phase(page, "shuffle_check")
            expect(page.locator("#shoe-link")).to_have_attribute("data-link", "up")
            server.stop()
            expect(page.locator("#link")).to_have_attribute("data-link", "down")
            expect(page.locator("#state-words")).to_contain_text("reconectando")
            server = serve(server.port)
            # Back by itself; the restarted service knows no session: sign in again.
            expect(page.locator("#sign-in-note")).to_have_text(
                "La sesión terminó: inicie sesión de nuevo."
            )
            sign_in(page, "dana", "4821")
            phase(page, "shuffle_check")
            expect(page.locator("#link")).to_have_attribute("data-link", "up")
        finally:
            server.stop()
