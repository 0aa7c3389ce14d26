"""``shoe-diag check`` says whether the box's clock is synchronised (E3): a notice
otherwise, a failure where the rules profile wants it synchronised before the first
round."""

from __future__ import annotations

import json

import pytest

from shoe_controller.box import checks
from shoe_controller.cli.diag import main

pytestmark = [pytest.mark.usefixtures("hermetic"), pytest.mark.rule("E3")]


def test_a_synchronised_clock_passes() -> None:
    result = checks.clock(True, "adjtimex", required=True)
    assert (result.ok, result.notice) == (True, False)


def test_an_unsynchronised_clock_is_a_notice() -> None:
    result = checks.clock(False, "adjtimex", required=False)
    assert (result.ok, result.notice) == (True, True)
    assert result.detail.startswith("not synchronised: every start journals a notice")
    assert "timedatectl set-ntp true" in result.fix


@pytest.mark.parametrize("state", [False, None])
def test_an_unsynchronised_clock_fails_where_the_profile_wants_one(state: bool | None) -> None:
    result = checks.clock(state, "adjtimex", required=True)
    assert result.ok is False
    assert "wants it synchronised before the first round" in result.detail


def test_the_check_reports_this_boxs_clock(capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", "--json"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    [clock] = [line for line in lines if line["check"] == "clock"]
    assert clock["ok"] is True and clock.get("notice", True) is True
