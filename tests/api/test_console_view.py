"""The console's view logic (shoe_controller/api/console/view.js) and its words (i18n.js),
tested function by function in Debian's chromium: no page, no server, no Node toolchain.

- One language: every need, phase, outcome, link status and error code of the service's
  schema, every fault and notice code of the procedure and every role has its words in
  both languages, and both languages have the same keys; plurals follow Intl.PluralRules.
  Every prompt the procedure can emit (procedure/prompts.py), as the service publishes it,
  is worded by its code and values in both languages.
- The state fold: a new round starts with every position empty; a card is never counted
  twice; the fault's clear is offered only once the shoe stops reporting a jam; the number
  of positions is the table's.
- The words of the latest prompt, the stub's figures, the evidence of a misdeal
  determination, the next step (the record's proposal is the green button, and what only
  a supervisor gives says so), voiding a round, the external generator's value, and the
  positions' layout.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from playwright.sync_api import Page

from shoe_controller.api.methods import refusal_data
from shoe_controller.api.roles import Role
from shoe_controller.api.server import schema_text
from shoe_controller.journal.records import Record, canonical_json
from shoe_controller.procedure import prompts
from shoe_controller.procedure.decisions import (
    Composition,
    Evidence,
    FaultCode,
    NoticeCode,
    Outcome,
    Prompt,
    StubFigures,
)
from shoe_controller.procedure.declarations import DECLARATIONS
from shoe_controller.procedure.refusals import RefusalCode
from shoe_controller.service.journaling import decision_record
from shoe_controller.service.public import public_event
from tests.api.browser import chromium
from tests.api.console_checks import CONSOLE
from tests.procedure.test_refusals import made_refusals

pytestmark = pytest.mark.needs("chromium")

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


#: Arguments for every prompt function of procedure/prompts.py, one call per variant; a
#: function missing here fails the walk below.
_FIGURES = StubFigures(shoe_count=3, stub_cards_read=3, by_deal=4, expected=4)
_EVIDENCE = Evidence((7,) * 7, 0, 0, 5, 4, 3, Composition.UNVERIFIED, True)
#: A deck of 52 the shoe read whole: a stub of 3 beside seven to each (D4).
_READ_SHORT = Evidence((7,) * 7, 0, 0, 3, 4, 3, Composition.SHORT, False)
PROMPT_CALLS: dict[str, list[tuple[tuple[Any, ...], dict[str, Any]]]] = {
    "connect_shoe": [((), {})],
    "load_deck": [((), {})],
    "confirm_shuffle": [((), {})],
    "no_more_bets": [((), {})],
    "wagers_first": [((), {})],
    "start_position": [((), {}), ((), {"dice_only": True})],
    "wager_settled": [((), {})],
    "close_round": [((), {})],
    "deal": [((1,), {}), ((5,), {})],
    "wait_stub": [((), {})],
    "stub_count": [
        ((_FIGURES,), {}),
        ((StubFigures(1, 1, 4, 4),), {}),
        ((StubFigures(None, 0, 4, 4),), {}),
    ],
    "stub_accepted": [
        ((StubFigures(3, 3, 4, 4, croupier_count=4),), {}),
        ((StubFigures(None, 2, 4, 4, croupier_count=1),), {}),
    ],
    "misdeal_determination": [
        ((5, 4, Outcome.VOID_DECK_REMOVED, _EVIDENCE), {}),
        ((3, 4, Outcome.VOID_DECK_REMOVED, _READ_SHORT), {"read": True}),
        ((1, 4, None, _EVIDENCE), {}),
    ],
    "attendant_clear": [
        (((FaultCode.DOOR_OPENED,),), {}),
        (((FaultCode.JAM, FaultCode.UNREAD_CARD),), {"jammed": True}),
    ],
    "clear_possible": [((), {})],
    "wait_shoe": [(((FaultCode.LINK_LOST,),), {})],
    "new_deck": [((), {})],
    "remove_void_deck": [(("20261129T120000Z-1", "F1"), {}), ((None, "F1"), {})],
    "remove_deck_for_good": [((), {})],
}


def every_prompt() -> list[Prompt]:
    """One prompt of every variant prompts.py can make, by calling each of its functions."""
    functions = {
        name
        for name, value in vars(prompts).items()
        if callable(value)
        and getattr(value, "__module__", None) == prompts.__name__
        and not name.startswith("_")
        and not isinstance(value, type)
    }
    assert functions == set(PROMPT_CALLS), "a prompt function without arguments in this test"
    made = []
    for name, calls in PROMPT_CALLS.items():
        for args, kwargs in calls:
            made.append(getattr(prompts, name)(*args, **kwargs))
    return made


#: The journal's sequence numbers of the prompts published here.
_SEQ = itertools.count(1000)


def published(prompt: Prompt) -> dict[str, Any]:
    """``prompt`` as the service publishes it: its journal record's public event."""
    entry = decision_record(prompt, "ana")
    assert entry is not None
    kind, payload = entry
    record = Record(
        next(_SEQ),
        "2026-11-29T12:00:00.000000Z",
        0,
        ROUND_1,
        kind.value,
        canonical_json(payload),
        b"",
    )
    event = public_event(record)
    assert event is not None
    return event.to_json()


def test_every_prompt_code_is_made_by_prompts_py_and_named_by_the_schema() -> None:
    made = {p.code for p in every_prompt()}
    assert made == set(prompts.CODES)
    assert set(_enum(SCHEMAS["Event.prompt"]["properties"]["code"])) == made
    snapshot = SCHEMAS["Snapshot"]["properties"]["prompt"]["properties"]["code"]
    assert set(_enum(snapshot)) == made


@pytest.mark.rule("F6")
@pytest.mark.parametrize("lang", ["es", "en"])
def test_every_prompt_the_procedure_can_emit_is_worded_by_its_code(js: Page, lang: str) -> None:
    """Each prompt as published, folded into the console's state: its words are its code's,
    every value filled in, in the console's language and never the service's message."""
    for prompt_ in every_prompt():
        event_ = published(prompt_)
        assert event_["code"] == prompt_.code and event_["values"] == {
            k: list(v) if isinstance(v, tuple) else v for k, v in prompt_.values.items()
        }
        shown = call(
            js,
            "(s, e, lang) => { const t = V.translator(T, lang);"
            " const label = (n) => n === 1 ? t('banker') : t('position', {n});"
            " const p = V.promptText(V.fold(V.fromSnapshot(s, null), e), label);"
            " return [p.key, V.lookup(T, lang, p.key, p.values)]; }",
            snapshot(),
            event_,
            lang,
        )
        assert shown[0] == f"prompt_{prompt_.code}", prompt_
        assert shown[1], f"no {lang} words for prompt code {prompt_.code} with {prompt_.values}"
        if lang == "es":
            assert shown[1] != prompt_.message


def test_a_prompt_without_a_code_or_with_one_the_console_does_not_know_keeps_its_need(
    js: Page,
) -> None:
    old = prompt("remove_deck", "an old journal's prompt")
    text = call(js, "(s, e) => V.promptText(V.fold(V.fromSnapshot(s, null), e))", snapshot(), old)
    assert (text["key"], text["fallback"]) == ("need_remove_deck", "need_remove_deck")
    newer = prompt("stub_count", "x", code="stub_count_by_magic", values={"count": 4})
    translated = call(
        js,
        "(s, e) => { const p = V.promptText(V.fold(V.fromSnapshot(s, null), e));"
        " return V.translator(T, 'es')(p.key, p.values, p.fallback); }",
        snapshot(),
        newer,
    )
    assert translated == t(js, "es", "need_stub_count")
    # A code whose words name a value the prompt lacks falls back to its need's words too.
    missing = prompt("stub_count", "x", code="stub_count", values={})
    translated = call(
        js,
        "(s, e) => { const p = V.promptText(V.fold(V.fromSnapshot(s, null), e));"
        " return V.translator(T, 'es')(p.key, p.values, p.fallback); }",
        snapshot(),
        missing,
    )
    assert translated == t(js, "es", "need_stub_count")


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


@pytest.mark.parametrize("lang", ["es", "en"])
def test_every_refusal_the_procedure_makes_is_worded_by_its_code(js: Page, lang: str) -> None:
    """Each refusal of procedure/refusals.py, as the API sends it (-32003 with its code and
    values in ``data``): its own words, every value filled in, never the English line."""
    seen = set()
    for made in made_refusals():
        error = {"code": -32003, "message": made.message, "data": refusal_data(made.error())}
        error = json.loads(json.dumps(error))
        key, values, fallback = call(js, "(e) => V.errorText(e)", error)
        assert (key, fallback) == (f"refusal_{made.code}", "err_not_now")
        worded = call(
            js, "(l, k, v) => V.wordedValues(V.translator(T, l), k, v)", lang, key, values
        )
        words = t(js, lang, key, worded)
        assert words, f"no {lang} words for refusal {made.code} with {dict(made.values)}"
        if lang == "es":
            assert words != made.message
        for name, value in made.values.items():
            if name == "input":  # an input's name, said in words
                said = t(js, lang, f"input_{value}")
                assert said and said in words, (made.code, value, words)
            elif isinstance(value, (int, str)):
                assert str(value) in words, (made.code, words)
        seen.add(made.code)
    assert seen == set(RefusalCode)


@pytest.mark.rule("E4")
@pytest.mark.parametrize("lang", ["es", "en"])
def test_every_declared_input_is_named_in_words(js: Page, lang: str) -> None:
    """A refusal that names an input (``supervisor_only``'s ``input``) is worded by it:
    every declared input has its words, in each language; a declaration without them
    fails here."""
    missing = [name for name in DECLARATIONS if not t(js, lang, f"input_{name}")]
    assert missing == []
    error = {
        "code": -32003,
        "message": "dealer-1 is a dealer: clearing a fault (F1) is a supervisor's; ...",
        "data": {"refusal": "supervisor_only", "values": {"input": "clear_fault"}},
    }
    words = call(
        js,
        "(l, e) => { const t = V.translator(T, l); const [k, v, f] = V.errorText(e); "
        "return t(k, V.wordedValues(t, k, v), f); }",
        lang,
        error,
    )
    assert (
        words
        == {
            "es": "Esto lo da un supervisor: despejar una falla. Que un supervisor inicie sesión "
            "y lo dé.",
            "en": "Only a supervisor gives this: clearing a fault. A supervisor must sign in and "
            "give it.",
        }[lang]
    )
    # An input this console does not know yet is still a supervisor's: said generally.
    newer = {**error, "data": {"refusal": "supervisor_only", "values": {"input": "by_magic"}}}
    assert "by_magic" not in call(
        js,
        "(l, e) => { const t = V.translator(T, l); const [k, v, f] = V.errorText(e); "
        "return t(k, V.wordedValues(t, k, v), f); }",
        lang,
        newer,
    )


@pytest.mark.parametrize("lang", ["es", "en"])
def test_a_pin_that_breaks_the_policy_is_not_called_wrong(js: Page, lang: str) -> None:
    """A right PIN that breaks the PIN policy (edited into the users file by hand), as the
    API refuses it: -32004 with ``data.pin_policy``. The console says it must be reset by a
    technician, never "wrong user name or PIN"; a -32004 without it is a wrong PIN."""
    said = (
        "boss's PIN breaks the PIN policy (fewer than 6 digits for a supervisor): have it "
        "reset with 'shoe-diag users reset boss'"
    )
    error = {
        "code": -32004,
        "message": said,
        "data": {"pin_policy": "fewer than 6 digits for a supervisor"},
    }
    key, values = call(js, "(e) => V.errorText(e, 'boss')", error)
    assert (key, values) == ("err_pin_policy", {"user": "boss"})
    assert (
        t(js, lang, key, values)
        == {
            "es": "El PIN de boss no cumple la política de PIN: un técnico debe restablecerlo "
            "(shoe-diag users reset boss).",
            "en": "boss's PIN breaks the PIN policy: a technician must reset it "
            "(shoe-diag users reset boss).",
        }[lang]
    )
    key, values = call(js, "(e) => V.errorText(e)", error)
    assert "shoe-diag users reset" in (t(js, lang, key, values) or "")
    wrong = {"code": -32004, "message": "wrong user name or PIN"}
    assert call(js, "(e) => V.errorText(e, 'boss')", wrong) == ["err_sign_in", {}]
    odd = {**wrong, "data": {"pin_policy": 6}}
    assert call(js, "(e) => V.errorText(e, 'boss')", odd) == ["err_sign_in", {}]


def test_every_refusal_code_is_named_by_the_schema_and_its_data_validates() -> None:
    data = SCHEMA["components"]["errors"]["NotNow"]["data"]
    assert set(data["properties"]["refusal"]["enum"]) == set(RefusalCode)
    validator = Draft202012Validator({**data, "$defs": {}, "components": SCHEMA["components"]})
    for made in made_refusals():
        sent = json.loads(json.dumps(refusal_data(made.error())))
        validator.validate(sent)
    assert not validator.is_valid({"refusal": "by_magic", "values": {}})
    assert not validator.is_valid({"refusal": "start_set", "values": {"round": 5}})


def test_an_error_is_worded_by_its_code_never_by_the_service_s_message(js: Page) -> None:
    error = {"code": -32003, "message": "there is no fault to clear (F1)"}
    assert call(js, "(e) => V.errorText(e)", error) == ["err_not_now", {}]
    # A refusal by code; a code this console does not know yet falls back to "not now".
    stub = {**error, "data": {"refusal": "stub_unfinished", "values": {}}}
    key, values, fallback = call(js, "(e) => V.errorText(e)", stub)
    assert t(js, "es", key, values) == (
        "El zapato aún no terminó el remanente: espere a que se declare vacío, o saque del "
        "zapato las cartas que queden, y cuéntelas."
    )
    newer = {**error, "data": {"refusal": "by_magic", "values": {}}}
    key, values, fallback = call(js, "(e) => V.errorText(e)", newer)
    assert t(js, "es", key, values) is None and fallback == "err_not_now"
    odd = {**error, "data": {"refusal": "<b>x</b>", "values": {}}}
    assert call(js, "(e) => V.errorText(e)", odd) == ["err_not_now", {}]
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
    moved_on = {"code": -32007, "message": "the table has moved on since that prompt"}
    assert call(js, "(e) => V.errorText(e)", moved_on) == ["err_moved_on", {}]
    assert t(js, "es", "err_moved_on") == (
        "La mesa ha avanzado desde esa indicación: mire de nuevo lo que pide ahora."
    )
    assert t(js, "en", "err_moved_on") == (
        "The table has moved on since that prompt: look at what it asks now."
    )


# --- the state fold --------------------------------------------------------------------

ROUND_1, ROUND_2 = "20261129T120000Z-1", "20261129T121000Z-2"


def snapshot(**changes: Any) -> dict[str, Any]:
    state: dict[str, Any] = {
        "table": {"positions": 7, "cards_per_position": 7, "stub_size": 4, "seat_labels": {}},
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
        "(s, events) => events.reduce((acc, e) => V.fold(acc, e),"
        " s.console ? s : V.fromSnapshot(s, null))",
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
        "values": {},
        "action": "no_more_bets",
        "enabled": False,
        "supervisor": False,
    }


def test_a_card_is_counted_once_even_when_its_event_follows_the_snapshot(js: Page) -> None:
    state = snapshot(phase="dealing", cards_dealt=2, cards={**snapshot()["cards"], "3": 1, "4": 1})
    folded = fold(js, state, event("card", index=2, position=4), event("card", index=3, position=5))
    assert folded["cards"]["4"] == 1
    assert folded["cards"]["5"] == 1
    assert folded["cards_dealt"] == 3


def published_prompt(prompt_: Prompt) -> dict[str, Any]:
    """A prompt of prompts.py as the service publishes it, for a fold."""
    return published(prompt_)


@pytest.mark.rule("E4")
def test_an_action_names_the_prompt_on_the_screen(js: Page) -> None:
    """Every call the console makes names the prompt it answers, so that the service
    refuses it once the table has moved on; what the snapshot says counts as much as what
    the events said."""
    asked = published_prompt(prompts.clear_possible())
    state = fold(js, snapshot(phase="fault"), asked)
    params = {"void_round": True}
    assert call(js, "(s, p) => [V.answering(s, p), p]", state, params) == [
        {"void_round": True, "prompt": asked["id"]},
        params,
    ]
    # The next prompt is the one answered from then on; between a change of state and its
    # prompt, none is named (the table has moved on from the last one).
    later = published_prompt(prompts.close_round())
    assert later["id"] > asked["id"]
    assert call(js, "(s) => V.answering(s, {})", fold(js, state, later)) == {"prompt": later["id"]}
    moved = fold(js, state, event("state", state="dealing", previous="fault"))
    assert call(js, "(s) => V.answering(s, {count: 4})", moved) == {"count": 4}
    # After a reconnection, the snapshot's prompt.
    shown = snapshot(phase="dealt", prompt={**later, "id": 4321})
    assert call(js, "(s) => V.answering(V.fromSnapshot(s, null))", shown) == {"prompt": 4321}
    # Anything else is not a prompt's number, and is not sent.
    for bad in ("7", 0, -3, 1.5, None):
        odd = snapshot(phase="dealt", prompt={**later, "id": bad})
        assert call(js, "(s) => V.answering(V.fromSnapshot(s, null), {})", odd) == {}


@pytest.mark.rule("F1")
@pytest.mark.rule("C4")
def test_the_clear_is_offered_once_the_shoe_stops_reporting_the_jam(js: Page) -> None:
    state = fold(
        js,
        snapshot(phase="dealing"),
        event("fault", code="jam", message="the shoe reports a jam", rule="C4"),
        event("state", state="fault", previous="dealing"),
        published_prompt(prompts.attendant_clear((FaultCode.JAM,), jammed=True)),
    )
    clear = call(js, "(s) => V.clearOf(s)", state)
    assert clear == {
        "visible": True,
        "enabled": False,
        "key": "fault_clear",
        "action": "clear_fault",
    }
    assert call(js, "(s) => V.promptText(s).key", state) == "prompt_attendant_clear_jam"
    assert call(js, "(s) => V.faultCodes(s)", state) == ["jam"]
    ready = fold(js, state, published_prompt(prompts.clear_possible()))
    assert call(js, "(s) => V.clearOf(s).enabled", ready) is True
    assert call(js, "(s) => V.promptText(s).key", ready) == "prompt_attendant_clear_ready"
    # A console that connects in the fault reads the same from the snapshot alone.
    for folded in (state, ready):
        again = call(
            js,
            "(s) => V.fromSnapshot(s, null)",
            {k: v for k, v in folded.items() if k != "console"},
        )
        assert call(js, "(s) => V.clearOf(s)", again) == call(js, "(s) => V.clearOf(s)", folded)
    # The shoe reports a jam again once it said it was free: the clear waits again.
    again = fold(js, ready, event("fault", code="jam", message="jam", rule="C4"))
    assert call(js, "(s) => V.clearOf(s).enabled", again) is False
    assert call(js, "(s) => V.promptText(s).key", again) == "prompt_attendant_clear_jam"
    door = fold(
        js,
        snapshot(phase="dealing"),
        event("fault", code="door_opened", message="door", rule="C4"),
        event("state", state="fault", previous="dealing"),
        published_prompt(prompts.attendant_clear((FaultCode.DOOR_OPENED,))),
    )
    assert call(js, "(s) => V.clearOf(s).enabled", door) is True


@pytest.mark.rule("F2")
def test_while_the_shoe_is_away_the_clear_says_it_voids_the_round(js: Page) -> None:
    state = fold(
        js,
        snapshot(phase="dealing"),
        event("fault", code="link_lost", message="lost", rule="F2"),
        event("state", state="fault", previous="dealing"),
        published_prompt(prompts.wait_shoe((FaultCode.LINK_LOST,))),
    )
    assert call(js, "(s) => V.clearOf(s)", state) == {
        "visible": True,
        "enabled": True,
        "key": "fault_void_clear",
        "action": "void_clear",
    }


def stub_state(js: Page, prompt_: Prompt, phase: str = "stub_confirm") -> dict[str, Any]:
    return fold(
        js,
        snapshot(phase="stub_count"),
        event("state", state=phase, previous="stub_count"),
        published_prompt(prompt_),
    )


@pytest.mark.rule("D1")
def test_the_shoe_s_count_is_the_green_button_and_nothing_is_typed_for_the_croupier(
    js: Page,
) -> None:
    figures = StubFigures(shoe_count=4, stub_cards_read=4, by_deal=4, expected=4)
    state = stub_state(js, prompts.stub_count(figures))
    step = call(js, "(s) => V.stepOf(s, {stub: null})", state)
    assert step["kind"] == "stub"
    assert step["main"] == {
        "key": "do_stub_proposal",
        "values": {"n": 4},
        "action": "stub_proposal",
        "enabled": True,
        "supervisor": False,
    }
    # The count typed is a choice of its own, never filled in: none typed, none offered.
    [typed] = step["alternatives"]
    assert (typed["key"], typed["enabled"]) == ("do_stub_counted", False)
    typed = call(js, "(s) => V.stepOf(s, {stub: 3}).alternatives[0]", state)
    assert (typed["key"], typed["values"], typed["enabled"]) == (
        "do_stub_counted_n",
        {"n": 3},
        True,
    )
    lines = call(js, "(s) => V.figureLines(s.prompt)", state)
    assert lines == [
        ["fig_shoe", {"n": 4}],
        ["fig_read", {"n": 4}],
        ["fig_deal", {"n": 4}],
        ["fig_expected", {"n": 4}],
    ]
    text = call(js, "(s) => V.promptText(s)", state)
    assert t(js, "es", text["key"], text["values"]) == (
        "El zapato contó 4 cartas en el remanente: cuéntelo usted y confirme su conteo."
    )


@pytest.mark.rule("D1")
def test_a_stub_the_shoe_did_not_count_has_no_green_button_until_a_count_is_typed(
    js: Page,
) -> None:
    state = stub_state(js, prompts.stub_count(StubFigures(None, 2, 4, 4)))
    assert call(js, "(s) => V.stepOf(s, {stub: null}).main.enabled", state) is False
    assert call(js, "(s) => V.stepOf(s, {stub: 4}).main", state) == {
        "key": "do_stub_counted_n",
        "values": {"n": 4},
        "action": "stub_counted",
        "enabled": True,
        "supervisor": False,
    }
    assert call(js, "(s) => V.figureLines(s.prompt)[0]", state) == ["fig_shoe_none", {}]


@pytest.mark.rule("D1")
def test_a_disputed_count_is_the_supervisor_s_to_accept_or_the_croupier_s_to_count_again(
    js: Page,
) -> None:
    figures = StubFigures(3, 3, 4, 4, croupier_count=4)
    state = stub_state(js, prompts.stub_accepted(figures), phase="stub_dispute")
    step = call(js, "(s) => V.stepOf(s, {stub: null})", state)
    assert step["kind"] == "dispute"
    assert step["main"] == {
        "key": "do_accept_stub",
        "values": {"n": 4},
        "action": "accept_stub_count",
        "enabled": True,
        "supervisor": True,
    }
    assert [(b["action"], b["enabled"], b["supervisor"]) for b in step["alternatives"]] == [
        ("stub_counted", False, False)
    ]
    assert call(js, "(s) => V.figureLines(s.prompt)[0]", state) == ["fig_croupier", {"n": 4}]
    assert t(js, "es", "do_accept_stub", {"n": 4}) == "Supervisor: aceptar 4"


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
        # Against a record that shows every position complete, "misdealt" is a supervisor's.
        ("no-misdeal", ("not_misdealt", False), [("misdealt", True)]),
        ("misdeal", ("misdealt", False), [("not_misdealt", False)]),
        (None, None, [("misdealt", False), ("not_misdealt", False)]),
    ],
)
def test_the_green_button_is_the_record_s_proposal(
    js: Page,
    proposal: str | None,
    green: tuple[str, bool] | None,
    other: list[tuple[str, bool]],
) -> None:
    state = fold(
        js,
        snapshot(phase="stub_dispute"),
        event("state", state="misdeal_review", previous="stub_dispute"),
        prompt("misdeal_determination", "The stub holds 3")
        | {"proposal": proposal, "evidence": EVIDENCE},
    )
    step = call(js, "(s) => V.stepOf(s, {})", state)
    main = (step["main"]["action"], step["main"]["supervisor"]) if step["main"] else None
    assert main == green
    assert [(b["action"], b["supervisor"]) for b in step["alternatives"]] == other


@pytest.mark.rule("D2")
def test_a_contradicting_determination_is_announced_as_such(js: Page) -> None:
    state = fold(
        js,
        snapshot(phase="bets_closed", round=None),
        event("state", state="deck_loaded", previous="shuffle_check"),
        event("state", state="misdeal_review", previous="stub_dispute"),
        event("determination", misdealt=True, contradicts=True),
        round_end("void_deck_removed"),
        event("state", state="deck_removed", previous="misdeal_review"),
    )
    assert call(js, "(s) => V.outcomeOf(s)", state) == [
        "outcome_void_deck_removed_contradicts",
        {},
    ]
    plain = fold(
        js,
        snapshot(phase="misdeal_review"),
        event("determination", misdealt=False, contradicts=False),
        round_end("void_deck_removed"),
    )
    assert call(js, "(s) => V.outcomeOf(s)", plain) == ["outcome_void_deck_removed", {}]


def round_end(outcome: str) -> dict[str, Any]:
    return event(
        "round_end",
        outcome=outcome,
        reason="",
        start_position=3,
        cards_per_position={},
        wagered=[2],
        collected_unseen=[],
    )


@pytest.mark.rule("F6")
def test_a_supervisor_may_void_every_undecided_round_and_the_void_is_announced(
    js: Page,
) -> None:
    undecided = {
        "deck_loaded",
        "bets_closed",
        "start_set",
        "dealing",
        "stub_count",
        "stub_confirm",
        "stub_dispute",
        "misdeal_review",
    }
    for phase in SCHEMAS["Event.state"]["properties"]["state"]["enum"]:
        shown = call(js, "(s) => V.voidOf(s).visible", snapshot(phase=phase))
        assert shown is (phase in undecided), phase
    assert call(js, "(s) => V.voidOf(s).visible", snapshot(phase="dealing", round=None)) is False
    reasons = call(js, "() => V.VOID_REASONS")
    assert len(reasons) >= 3 and all(text for _, text in reasons)
    for lang in ("es", "en"):
        for code, _ in reasons:
            assert t(js, lang, f"void_reason_{code}"), (lang, code)
    # Seen from bets open with no fault: a supervisor's void; after a fault: the fault's.
    opened = fold(
        js,
        snapshot(phase="idle", round=None),
        event("state", state="deck_loaded", previous="shuffle_check"),
    )
    voided = fold(js, opened, round_end("void_fault"))
    assert call(js, "(s) => V.outcomeOf(s)", voided) == ["outcome_void_round", {}]
    faulted = fold(
        js,
        opened,
        event("fault", code="door_opened", message="", rule="C4"),
        round_end("void_fault"),
    )
    assert call(js, "(s) => V.outcomeOf(s)", faulted) == ["outcome_void_fault", {}]
    # Joined halfway, the console cannot tell: it says what to do, not why.
    joined = fold(js, snapshot(phase="dealing"), round_end("void_fault"))
    assert call(js, "(s) => V.outcomeOf(s)", joined) == ["outcome_void", {}]
    # What the console saw outlives the snapshots it reads until the round is replaced.
    later = call(
        js,
        "(s) => V.outcomeOf(V.fromSnapshot(Object.assign({}, s, {phase: 'shuffle_check', "
        "round: null}), s))",
        voided,
    )
    assert later == ["outcome_void_round", {}]


@pytest.mark.rule("B1")
def test_the_external_generator_s_value_is_offered_where_one_is_configured(js: Page) -> None:
    table = {"positions": 7, "external_rng": {"device": "RNG-0042", "signature": "optional"}}
    state = fold(
        js,
        snapshot(phase="bets_closed", table=table),
        published_prompt(prompts.start_position()),
    )
    step = call(js, "(s) => V.stepOf(s, {})", state)
    assert [b["action"] for b in step["alternatives"]] == ["start_by_rng", "use_external"]
    external = call(js, "(s) => V.stepOf(s, {method: 'external', external: {}})", state)
    assert external["kind"] == "external"
    assert (external["main"]["action"], external["main"]["enabled"]) == ("start_by_external", False)
    params = "(s, e) => V.externalParams(s, {method: 'external', external: e})"
    assert call(js, params, state, {"number": 5}) == {"number": 5}
    assert call(js, params, state, {"number": 8}) is None
    signed = {"token": " 3:41:A1b2 "}
    assert call(js, params, state, signed) == {"number": 3, "counter": 41, "signature": "a1b2"}
    for bad in ("3:41:abc", "9:41:ab", "3:x:ab", "3:99999999999999999999:ab"):
        assert call(js, params, state, {"token": bad, "number": 3}) is None, bad
    required = fold(
        js,
        state,
        event(
            "started",
            None,
            version="1",
            profile="p 3",
            bench=True,
            table={**table, "external_rng": {"device": "RNG-0042", "signature": "required"}},
        ),
    )
    assert call(js, params, required, {"number": 5}) is None
    assert call(js, params, required, signed) == {"number": 3, "counter": 41, "signature": "a1b2"}
    # None configured: not offered. The dice decide the dice wager: only the dice.
    plain = fold(js, snapshot(phase="bets_closed"), published_prompt(prompts.start_position()))
    assert [b["action"] for b in call(js, "(s) => V.stepOf(s, {}).alternatives", plain)] == [
        "start_by_rng"
    ]
    dice = fold(
        js,
        snapshot(phase="bets_closed", table=table),
        published_prompt(prompts.start_position(dice_only=True)),
    )
    assert call(js, "(s) => V.stepOf(s, {method: 'external'})", dice)["alternatives"] == []


# --- the positions -------------------------------------------------------------------------

SIZES = [(360, 330), (360, 280), (460, 380), (760, 600), (1050, 900), (460, 420), (780, 1000)]


@pytest.mark.parametrize("corner", [0, 96])
@pytest.mark.parametrize("positions", [6, 7])
@pytest.mark.parametrize(("width", "height"), SIZES)
def test_the_positions_fit_without_overlapping(
    js: Page, positions: int, width: int, height: int, corner: int
) -> None:
    """With ``corner``, the corners at the dealer's side by the banker hold a button of
    that width at least, clear of every tile."""
    tiles = call(js, "(n, w, h, c) => V.layout(n, w, h, c)", positions, width, height, corner)
    assert [tile["position"] for tile in tiles] == list(range(1, positions + 1))
    boxes = list(tiles)
    if corner:
        corners = call(js, "(tiles, w) => V.cornersOf(tiles, w)", tiles, width)
        assert corners is not None
        for box in (corners["left"], corners["right"]):
            assert box["w"] >= corner and box["h"] >= 64, box
        banker = tiles[0]
        assert corners["left"]["y"] + corners["left"]["h"] == banker["y"] + banker["h"]
        boxes += [corners["left"], corners["right"]]
    for tile in boxes:
        assert tile["x"] >= 0 and tile["y"] >= 0
        assert tile["x"] + tile["w"] <= width and tile["y"] + tile["h"] <= height
        assert tile["w"] >= 64 and tile["h"] >= 64, tile
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
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


def test_the_number_of_positions_comes_from_the_table(js: Page) -> None:
    six = snapshot(table={"positions": 6}, cards={str(p): 0 for p in range(1, 7)})
    assert call(js, "(s) => V.positionsOf(V.fromSnapshot(s, null))", six) == 6
    folded = fold(js, six, event("state", ROUND_2, state="deck_loaded", previous="idle"))
    assert sorted(folded["cards"]) == ["1", "2", "3", "4", "5", "6"]
    # A service that starts with another table lays the positions out anew.
    started = fold(
        js,
        snapshot(),
        event("started", None, version="1", profile="p 1", bench=True, table={"positions": 6}),
    )
    assert call(js, "(s) => V.positionsOf(s)", started) == 6
    assert sorted(started["cards"]) == ["1", "2", "3", "4", "5", "6"]
    # A snapshot without the table (an older service): the cards' positions.
    older = {k: v for k, v in six.items() if k != "table"}
    assert call(js, "(s) => V.positionsOf(V.fromSnapshot(s, null))", older) == 6


def test_every_word_the_page_names_is_in_both_languages(js: Page) -> None:
    script = (CONSOLE / "console.js").read_text(encoding="utf-8")
    page = (CONSOLE / "index.html").read_text(encoding="utf-8")
    view = (CONSOLE / "view.js").read_text(encoding="utf-8")
    keys = set(re.findall(r"""\bt\(\s*"([a-z_]+)\"""", script))
    keys |= set(re.findall(r'''(?:act|key): "([a-z_]+)"''', script))
    keys |= set(re.findall(r'data-i18n(?:-aria)?="([a-z_]+)"', page))
    keys |= set(re.findall(r'"((?:do|ev|fig|err|fault|outcome)_[a-z_]+)"', view))
    keys = {k for k in keys if not k.endswith("_")}  # prefixes: walked by the tests above
    assert len(keys) > 60
    for lang in ("es", "en"):
        missing = call(js, "(keys, lang) => keys.filter((k) => !T[lang][k])", sorted(keys), lang)
        assert missing == [], lang
