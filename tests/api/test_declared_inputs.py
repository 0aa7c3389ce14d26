"""The API's table inputs, its OpenRPC description, the console's calls and the
controller's Python spelling are all made from the declarations (procedure/declarations.py):
an input added there reaches each of them, and none of them names an input not declared."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pytest_mock import MockerFixture

from shoe_controller.api.methods import METHODS, capability_of
from shoe_controller.api.openrpc import with_inputs
from shoe_controller.api.roles import Capability
from shoe_controller.api.server import schema_text
from shoe_controller.procedure.declarations import DECLARATIONS
from shoe_controller.service.controller import TableController
from shoe_controller.service.external_rng import SignedNumber
from tools import openrpc

CONSOLE = Path(__file__).resolve().parents[2] / "shoe_controller" / "api" / "console"
#: The methods of the table that are no person's input.
READINGS = {"table.state"}


def test_every_table_method_is_a_declared_input_and_every_input_a_method() -> None:
    table = {name for name in METHODS if name.startswith("table.")} - READINGS
    assert table == {d.method for d in DECLARATIONS.values()}


@pytest.mark.rule("E4")
def test_who_may_call_an_input_is_its_declarations_word() -> None:
    for d in DECLARATIONS.values():
        expected = Capability.SUPERVISE if d.supervisor_only else Capability.DEAL
        assert METHODS[d.method].capability is expected is capability_of(d), d.name


def test_the_shipped_description_is_what_the_declarations_make() -> None:
    shipped = json.loads(schema_text())
    assert with_inputs(shipped) == shipped
    assert openrpc.main(["--check"]) == 0


def test_each_inputs_description_lists_the_refusals_it_may_meet() -> None:
    methods = {m["name"]: m for m in json.loads(schema_text())["methods"]}
    for d in DECLARATIONS.values():
        assert methods[d.method]["x-refusals"] == sorted(c.value for c in d.may_refuse)


def test_the_console_calls_only_declared_inputs_and_every_one_of_them() -> None:
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(CONSOLE.glob("*.js")))
    called = set(re.findall(r'"(table\.[a-z_]+)"', text)) - READINGS
    assert called == {d.method for d in DECLARATIONS.values()}


#: One call of each input's Python spelling on the controller, and the values it gives.
SPELLED: dict[str, tuple[str, tuple[Any, ...], dict[str, Any], dict[str, Any]]] = {
    "set_wagers": ("set_wagers", ([3, 2, 3],), {}, {"positions": [2, 3]}),
    "no_more_bets": ("no_more_bets", (), {}, {"wagered": None}),
    "confirm_shuffle": ("confirm_shuffle", (), {}, {}),
    "start_by_dice": ("start_by_dice", (3, 4, 5), {}, {"dice": [3, 4, 5]}),
    "start_by_rng": ("start_by_rng", (), {}, {}),
    "start_by_external_rng": (
        "start_by_external_rng",
        (4,),
        {"signed": SignedNumber(4, 9, b"\xab")},
        {"number": 4, "counter": 9, "signature": "ab"},
    ),
    "wager_settled": ("wager_settled", (), {}, {}),
    "stub_counted": ("stub_counted", (4,), {}, {"count": 4}),
    "close_round": ("close_round", (), {}, {}),
    "accept_stub_count": ("accept_stub_count", (), {}, {}),
    "misdeal_determination": ("misdeal_determination", (True,), {}, {"misdealt": True}),
    "confirm_new_deck": ("confirm_new_deck", (), {}, {}),
    "clear_fault": ("clear_fault", (), {"void_round": True}, {"void_round": True}),
    "void_round": ("void_round", ("a card face up",), {}, {"reason": "a card face up"}),
}


@pytest.mark.parametrize("name", sorted(DECLARATIONS))
def test_the_controllers_spelling_of_each_input_gives_it_by_its_declared_name(
    name: str, mocker: MockerFixture
) -> None:
    controller = object.__new__(TableController)
    give = mocker.patch.object(TableController, "give", autospec=True)
    method, args, kwargs, values = SPELLED[name]
    getattr(controller, method)(*args, **kwargs, prompt=7)
    [call] = give.call_args_list
    assert (*call.args[1:], {})[:2] == (name, values)
    assert call.kwargs["prompt"] == 7
