"""The console's view logic (shoe_controller/api/console/view.js) and its words (i18n.js),
tested function by function in Debian's chromium: no page, no server, no Node toolchain.

- One language: every need, phase, outcome, link status and error code of the service's
  schema, every fault and notice code of the procedure and every role has its words in
  both languages, and both languages have the same keys; plurals follow Intl.PluralRules.
- The state fold: a new round starts with every position empty; a card is never counted
  twice; the fault's clear is offered only once the shoe stops reporting a jam.
- The words of the latest prompt, the evidence of a misdeal determination, the next step
  (the record's proposal is the green button) and the positions' layout.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page

from shoe_controller.api.roles import Role
from shoe_controller.api.server import schema_text
from shoe_controller.procedure.decisions import FaultCode, NoticeCode
from tests.api.browser import chromium
from tests.api.console_checks import CONSOLE

SCHEMA: dict[str, Any] = json.loads(schema_text())
SCHEMAS = SCHEMA["components"]["schemas"]


@pytest.fixture(scope="module")
def js() -> Iterator[Page]:
    with chromium() as browser:
        page = browser.new_page()
        page.set_content("<!doctype html><html><head></head><body></body></html>")
        for name in ("i18n.js", "view.js"):
            page.add_script_tag(content=(CONSOLE / name).read_text(encoding="utf-8"))
        yield page
        page.close()


def call(js: Page, expression: str, *args: Any) -> Any:
    """``expression`` is a function of ``V`` (ConsoleView), ``T`` (the texts) and args."""
    return js.evaluate(
        f"([args]) => {{ const V = window.ConsoleView, T = window.CONSOLE_TEXT; "
        f"return ({expression})(...args); }}",
        [list(args)],
    )


def t(js: Page, lang: str, key: str, values: dict[str, Any] | None = None) -> str | None:
    result: str | None = call(js, "(l, k, v) => V.lookup(T, l, k, v)", lang, key, values or {})
    return result


# --- one language ----------------------------------------------------------------------


def _enum(schema: dict[str, Any]) -> list[str]:
    for option in schema.get("anyOf", [schema]):
        if "enum" in option:
            return [v for v in option["enum"] if v is not None]
    raise AssertionError(f"no enum in {schema}")


def needed_keys() -> list[str]:
    """Every key the console looks up for a value the service can send."""
    needs = set(_enum(SCHEMAS["Event.prompt"]["properties"]["need"]))
    needs |= set(_enum(SCHEMAS["Snapshot"]["properties"]["prompt"]["properties"]["need"]))
    phases = _enum(SCHEMAS["Event.state"]["properties"]["state"])
    outcomes = _enum(SCHEMAS["Event.round_end"]["properties"]["outcome"])
    links = _enum(SCHEMAS["Event.link"]["properties"]["status"])
    roles = _enum(SCHEMAS["Session"]["properties"]["role"]) if "Session" in SCHEMAS else []
    keys = [f"need_{n}" for n in sorted(needs)]
    keys += [f"state_{p}" for p in phases] + ["state_null"]
    keys += [f"outcome_{o}" for o in outcomes]
    keys += [f"shoe_link_{s}" for s in links] + ["shoe_link_up", "shoe_link_none"]
    keys += ["shoe_link_stopped"]
    keys += [f"fault_{code.value}" for code in FaultCode]
    keys += [f"notice_{code.value}" for code in NoticeCode]
    keys += [f"role_{role}" for role in sorted({*roles, *(r.value for r in Role)})]
    return keys


@pytest.mark.parametrize("lang", ["es", "en"])
def test_every_value_the_service_sends_has_words(js: Page, lang: str) -> None:
    missing = [key for key in needed_keys() if t(js, lang, key, {"n": 2}) in (None, "")]
    assert missing == []


@pytest.mark.parametrize("lang", ["es", "en"])
def test_every_error_code_of_the_schema_has_words_of_its_own(js: Page, lang: str) -> None:
    for error in SCHEMA["components"]["errors"].values():
        data = {"role": "dealer", "retry_after": 300}
        key, values = call(
            js, "(e) => V.errorText(e, 'ana')", {"code": error["code"], "data": data}
        )
        assert key != "err_other", error
        assert t(js, lang, key, values), (error, key)


def test_both_languages_have_the_same_keys_and_every_plural_both_forms(js: Page) -> None:
    shape = call(
        js,
        "() => Object.fromEntries(Object.entries(T).map(([lang, table]) => [lang, "
        "Object.fromEntries(Object.entries(table).map(([k, v]) => "
        "[k, typeof v === 'object' ? Object.keys(v).sort() : 'text']))]))",
    )
    assert set(shape["es"]) == set(shape["en"])
    for key, form in shape["es"].items():
        assert form == shape["en"][key], key
        if form != "text":
            assert {"one", "other"} <= set(form), key


def test_a_plural_follows_the_number(js: Page) -> None:
    assert t(js, "es", "cards", {"n": 1}) == "1 carta"
    assert t(js, "es", "cards", {"n": 0}) == "0 cartas"
    assert t(js, "es", "cards", {"n": 7}) == "7 cartas"
    assert t(js, "en", "rounds_today", {"n": 1}) == "Today: 1 round"
    assert t(js, "es", "rounds_today", {"n": 3}) == "Hoy: 3 rondas"


def test_a_missing_key_is_never_shown_as_text(js: Page) -> None:
    assert t(js, "es", "no_such_key") is None
    translated = call(js, "() => V.translator(T, 'es')('no_such_key', {}, 'need_other')")
    assert translated == t(js, "es", "need_other")
    assert call(js, "() => V.translator(T, 'es')('no_such_key')") == ""


def test_an_error_is_worded_by_its_code_never_by_the_service_s_message(js: Page) -> None:
    error = {"code": -32003, "message": "there is no fault to clear (F1)"}
    assert call(js, "(e) => V.errorText(e)", error) == ["err_not_now", {}]
    locked = {"code": -32005, "message": "too many", "data": {"retry_after": 290}}
    key, values = call(js, "(e) => V.errorText(e, 'ana')", locked)
    assert t(js, "es", key, values) == (
        "Demasiados PIN incorrectos: ana queda bloqueado; intente en 5 minutos o pida a un "
        "supervisor."
    )
    assert call(js, "(e) => V.errorText(e)", {"code": -32099, "message": "x"}) == [
        "err_other",
        {"code": -32099},
    ]
    assert call(js, "() => V.errorText(undefined)") == ["err_network", {}]


# --- the state fold --------------------------------------------------------------------

ROUND_1, ROUND_2 = "20261129T120000Z-1", "20261129T121000Z-2"


def snapshot(**changes: Any) -> dict[str, Any]:
    state: dict[str, Any] = {
        "phase": "deck_loaded",
        "round": ROUND_1,
        "service": None,
        "shoe": {"link": "up", "approved": True},
        "wagers": [],
        "wagered": None,
        "start_position": None,
        "cards": {str(p): 0 for p in range(1, 8)},
        "cards_dealt": 0,
        "stub": None,
        "prompt": None,
        "fault": None,
        "notice": None,
        "last_round": None,
        "updated": None,
        "today": {"rounds": 0, "hands": 0, "rounds_per_hour": 0, "hands_per_hour": 0},
    }
    state.update(changes)
    return state


def fold(js: Page, state: dict[str, Any], *events: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = call(
        js,
        "(s, events) => events.reduce((acc, e) => V.fold(acc, e), V.fromSnapshot(s, null))",
        state,
        list(events),
    )
    return result


def event(name: str, round_id: str | None = ROUND_1, **fields: Any) -> dict[str, Any]:
    return {"event": name, "ts": "2026-11-29T12:00:00.000Z", "round": round_id, **fields}


def prompt(need: str, message: str = "", **fields: Any) -> dict[str, Any]:
    return event(
        "prompt", need=need, message=message, rule=None, proposal=None, evidence=None, **fields
    )


@pytest.mark.rule("A3")
def test_a_new_round_starts_with_every_position_empty(js: Page) -> None:
    hands = {"1": ["QH"] * 7, "2": ["2C"] * 7}
    state = fold(
        js,
        snapshot(phase="dealt", wagered=[2, 4], cards={str(p): 7 for p in range(1, 8)}),
        event(
            "round_end",
            outcome="dealt",
            reason="",
            start_position=3,
            cards_per_position={},
            wagered=[2, 4],
            collected_unseen=[3, 5, 6, 7],
        ),
        event("state", state="closed", previous="dealt"),
        event("round_closed", hands=hands),
        event("state", state="shuffle_check", previous="closed"),
    )
    assert state["wagered"] is None and state["wagers"] == []
    assert call(js, "(s) => V.handsOf(s)", state) == {
        "round": ROUND_1,
        "hands": hands,
        "current": True,
    }
    assert call(js, "(s) => V.outcomeOf(s)", state) == ["outcome_closed", {}]
    state = fold(js, state, event("state", ROUND_2, state="deck_loaded", previous="shuffle_check"))
    assert state["round"] == ROUND_2
    assert set(state["cards"].values()) == {0}
    assert state["wagers"] == [] and state["wagered"] is None
    # The last round's hands are apart now, and its outcome is no longer announced.
    assert call(js, "(s) => V.handsOf(s).current", state) is False
    assert call(js, "(s) => V.outcomeOf(s)", state) is None
    assert call(js, "(s) => V.stepOf(s, {}).main", state) == {
        "key": "do_no_more_bets",
        "action": "no_more_bets",
        "enabled": False,
    }


def test_a_card_is_counted_once_even_when_its_event_follows_the_snapshot(js: Page) -> None:
    state = snapshot(phase="dealing", cards_dealt=2, cards={**snapshot()["cards"], "3": 1, "4": 1})
    folded = fold(js, state, event("card", index=2, position=4), event("card", index=3, position=5))
    assert folded["cards"]["4"] == 1
    assert folded["cards"]["5"] == 1
    assert folded["cards_dealt"] == 3


@pytest.mark.rule("F1")
def test_the_clear_is_offered_once_the_shoe_stops_reporting_the_jam(js: Page) -> None:
    state = fold(
        js,
        snapshot(phase="dealing"),
        event("fault", code="jam", message="the shoe reports a jam", rule="C4"),
        event("state", state="fault", previous="dealing"),
        prompt("attendant_clear", "Dealing is blocked: an attendant must clear the fault (jam)."),
    )
    clear = call(js, "(s) => V.clearOf(s)", state)
    assert clear == {
        "visible": True,
        "enabled": False,
        "key": "fault_clear",
        "action": "clear_fault",
    }
    assert call(js, "(s) => V.promptText(s).key", state) == "need_attendant_clear_jam"
    ready = fold(
        js,
        state,
        prompt(
            "attendant_clear",
            "The shoe is there and reports no jam or open door: an attendant may now clear the "
            "fault.",
        ),
    )
    assert call(js, "(s) => V.clearOf(s).enabled", ready) is True
    assert call(js, "(s) => V.promptText(s).key", ready) == "need_attendant_clear_ready"
    # A console that connects in the fault reads the same from the snapshot alone.
    again = call(
        js, "(s) => V.fromSnapshot(s, null)", {k: v for k, v in ready.items() if k != "console"}
    )
    assert call(js, "(s) => V.clearOf(s).enabled", again) is True
    door = fold(
        js,
        snapshot(phase="dealing"),
        event("fault", code="door_opened", message="door", rule="C4"),
        event("state", state="fault", previous="dealing"),
        prompt(
            "attendant_clear",
            "Dealing is blocked: an attendant must clear the fault (door_opened).",
        ),
    )
    assert call(js, "(s) => V.clearOf(s).enabled", door) is True


@pytest.mark.rule("F2")
def test_while_the_shoe_is_away_the_clear_says_it_voids_the_round(js: Page) -> None:
    state = fold(
        js,
        snapshot(phase="dealing"),
        event("fault", code="link_lost", message="lost", rule="F2"),
        event("state", state="fault", previous="dealing"),
        prompt("wait_shoe", "Dealing is blocked (link_lost) and the link to the shoe is down"),
    )
    assert call(js, "(s) => V.clearOf(s)", state) == {
        "visible": True,
        "enabled": True,
        "key": "fault_void_clear",
        "action": "void_clear",
    }


# --- the latest prompt, the evidence, the next step ----------------------------------------


@pytest.mark.rule("D1")
def test_the_hand_count_has_no_default_and_shows_the_shoe_s_count(js: Page) -> None:
    state = fold(
        js,
        snapshot(phase="stub_count"),
        event("stub", count=3, source="shoe"),
        event("state", state="stub_recount", previous="stub_count"),
        prompt(
            "stub_count", "The shoe counted 3 cards in the stub, not 4: count the stub by hand."
        ),
    )
    text = call(js, "(s) => V.promptText(s)", state)
    assert text["key"] == "need_stub_count_counted" and text["values"] == {"n": 3}
    assert state["console"]["shoeStub"] == 3
    assert call(js, "(s) => V.stepOf(s, {stub: null}).main.enabled", state) is False
    assert call(js, "(s) => V.stepOf(s, {stub: 4}).main.enabled", state) is True


EVIDENCE = {
    "cards_per_position": [7, 7, 7, 7, 7, 7, 7],
    "composition": "short",
    "conclusive": True,
    "jams": 0,
    "notes": [],
    "stub_cards_read": 3,
    "stub_count": 3,
    "stub_expected": 4,
    "unread_cards": 0,
}


def evidence_text(js: Page, lang: str, prompt_: dict[str, Any]) -> list[str]:
    lines: list[str] = call(
        js,
        "(p, lang) => { const t = V.translator(T, lang);"
        " const label = (n) => n === 1 ? t('banker') : t('position', {n});"
        " return V.evidenceLines(p, label).map(([k, v]) => k === 'ev_cards_each' ?"
        " t(k, {list: v.list.map(([p, n]) => t('ev_cards_item', {position: p, n})).join(', ')})"
        " : t(k, v)); }",
        prompt_,
        lang,
    )
    return lines


@pytest.mark.rule("D2")
def test_the_evidence_is_one_sentence_per_figure_in_the_console_s_language(js: Page) -> None:
    shown = evidence_text(js, "es", {"proposal": "no-misdeal", "evidence": EVIDENCE})
    assert shown == [
        "El registro propone: no mal repartida (manos nulas y la baraja sale de la mesa).",
        "7 cartas en cada posición.",
        "3 cartas en el remanente (se esperan 4).",
        "La baraja tiene 52 cartas.",
        "Todas las cartas se leyeron, sin repetidas: a la baraja le faltan cartas.",
        "Todas las cartas del reparto se leyeron.",
        "El zapato leyó 3 cartas del remanente.",
        "El registro es concluyente.",
    ]
    uneven = {
        **EVIDENCE,
        "cards_per_position": [7, 8, 7, 7, 7, 7, 6],
        "unread_cards": 1,
        "jams": 1,
        "notes": ["a note the journal keeps"],
        "conclusive": False,
    }
    shown = evidence_text(js, "es", {"proposal": None, "evidence": uneven})
    assert shown[0] == "El registro no basta para decidir: determine usted."
    assert shown[1] == (
        "Cartas por posición: Banca: 7, Posición 2: 8, Posición 3: 7, Posición 4: 7, "
        "Posición 5: 7, Posición 6: 7, Posición 7: 6."
    )
    assert "1 carta salió sin leerse." in shown
    assert "Hubo 1 atasco." in shown
    assert "El diario anota 1 irregularidad del remanente." in shown
    assert not any("note the journal" in line for line in shown)


@pytest.mark.rule("D2")
@pytest.mark.parametrize(
    ("proposal", "green", "other"),
    [
        ("no-misdeal", "not_misdealt", ["misdealt"]),
        ("misdeal", "misdealt", ["not_misdealt"]),
        (None, None, ["misdealt", "not_misdealt"]),
    ],
)
def test_the_green_button_is_the_record_s_proposal(
    js: Page, proposal: str | None, green: str | None, other: list[str]
) -> None:
    state = fold(
        js,
        snapshot(phase="stub_recount"),
        event("state", state="misdeal_review", previous="stub_recount"),
        prompt("misdeal_determination", "The stub holds 3")
        | {"proposal": proposal, "evidence": EVIDENCE},
    )
    step = call(js, "(s) => V.stepOf(s, {})", state)
    assert (step["main"]["action"] if step["main"] else None) == green
    assert [b["action"] for b in step["alternatives"]] == other


# --- the positions -------------------------------------------------------------------------

SIZES = [(360, 330), (360, 280), (460, 380), (760, 600), (1050, 900), (460, 420), (780, 1000)]


@pytest.mark.parametrize("positions", [6, 7])
@pytest.mark.parametrize(("width", "height"), SIZES)
def test_the_positions_fit_without_overlapping(
    js: Page, positions: int, width: int, height: int
) -> None:
    tiles = call(js, "(n, w, h) => V.layout(n, w, h)", positions, width, height)
    assert [tile["position"] for tile in tiles] == list(range(1, positions + 1))
    for tile in tiles:
        assert tile["x"] >= 0 and tile["y"] >= 0
        assert tile["x"] + tile["w"] <= width and tile["y"] + tile["h"] <= height
        assert tile["w"] >= 64 and tile["h"] >= 64, tile
    for i, a in enumerate(tiles):
        for b in tiles[i + 1 :]:
            apart = (
                a["x"] + a["w"] <= b["x"]
                or b["x"] + b["w"] <= a["x"]
                or a["y"] + a["h"] <= b["y"]
                or b["y"] + b["h"] <= a["y"]
            )
            assert apart, (a, b)


def test_the_positions_sit_counterclockwise_from_the_banker(js: Page) -> None:
    tiles = call(js, "() => V.layout(7, 760, 600)")
    centre = {t["position"]: (t["x"] + t["w"] / 2, t["y"] + t["h"] / 2) for t in tiles}
    banker_x, banker_y = centre[1]
    assert all(banker_y > y for p, (_, y) in centre.items() if p != 1)  # the dealer's side
    assert centre[2][0] > banker_x and centre[7][0] < banker_x  # 2 on the right, 7 on the left
    assert centre[4][1] < centre[3][1] < centre[2][1]  # up the right side, over the top
    assert centre[5][0] < centre[4][0]


def test_the_number_of_positions_comes_from_the_state(js: Page) -> None:
    six = snapshot(cards={str(p): 0 for p in range(1, 7)})
    assert call(js, "(s) => V.positionsOf(V.fromSnapshot(s, null))", six) == 6
    folded = fold(js, six, event("state", ROUND_2, state="deck_loaded", previous="idle"))
    assert sorted(folded["cards"]) == ["1", "2", "3", "4", "5", "6"]


def test_every_word_the_page_names_is_in_both_languages(js: Page) -> None:
    script = (CONSOLE / "console.js").read_text(encoding="utf-8")
    page = (CONSOLE / "index.html").read_text(encoding="utf-8")
    view = (CONSOLE / "view.js").read_text(encoding="utf-8")
    keys = set(re.findall(r"""\bt\(\s*"([a-z_]+)\"""", script))
    keys |= set(re.findall(r'''(?:supervisor|key): "([a-z_]+)"''', script))
    keys |= set(re.findall(r'data-i18n(?:-aria)?="([a-z_]+)"', page))
    keys |= set(re.findall(r'"((?:do|ev|err|fault|outcome)_[a-z_]+)"', view))
    keys = {k for k in keys if not k.endswith("_")}  # prefixes: walked by the tests above
    assert len(keys) > 60
    for lang in ("es", "en"):
        missing = sorted(k for k in keys if t(js, lang, k, {"n": 2}) in (None, ""))
        assert missing == [], lang
