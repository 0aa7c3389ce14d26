"""Rules profiles: the game's constants come from a shipped, versioned profile; the
configuration chooses one and sets only what it declares adjustable."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from shoe_controller.errors import ConfigError
from shoe_controller.procedure.table import (
    CountingDirection,
    DealingDirection,
    TableRules,
    UnreadCardPolicy,
)
from shoe_controller.profiles import DEFAULT_PROFILE, load_profile, shipped_profiles
from shoe_controller.service.config import load_config

PYPROJECT = Path(__file__).parents[2] / "pyproject.toml"


def _config(tmp_path: Path, table: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text("[table]\n" + table)
    return path


@pytest.mark.rule("C1")
@pytest.mark.rule("D1")
def test_the_default_profile_is_the_puerto_rico_paragraph() -> None:
    profile = load_profile(DEFAULT_PROFILE)
    assert (profile.name, profile.version) == ("pr-pai-gow-poker", 3)
    rules = profile.rules
    assert (rules.positions, rules.cards_per_position, rules.deck_size, rules.stub_size) == (
        7,
        7,
        53,
        4,
    )
    assert rules.counting_direction is CountingDirection.COUNTERCLOCKWISE
    # "de derecha a izquierda", seen from the croupier: the counting direction.
    assert rules.dealing_direction is DealingDirection.COUNTING
    assert rules.deal_order(3)[:7] == (3, 4, 5, 6, 7, 1, 2)
    assert rules.gate_window == 1
    assert set(profile.adjustable) == {
        "dice_wager",
        "require_synchronized_clock",
        "unread_card_policy",
        "seat_labels",
        "gate_window",
        "stub",
        "external_rng_signature",
    }


def test_every_shipped_profile_loads() -> None:
    assert DEFAULT_PROFILE in shipped_profiles()
    for name in shipped_profiles():
        assert load_profile(name).name == name


def test_profiles_are_package_data() -> None:
    assert '"profiles/*.toml"' in PYPROJECT.read_text()


def test_no_configuration_means_the_default_profile() -> None:
    config = load_config(None)
    assert config.profile.name == DEFAULT_PROFILE
    assert config.table == load_profile(DEFAULT_PROFILE).rules
    assert config.source_sha256 is None


@pytest.mark.rule("C1")
@pytest.mark.rule("D1")
@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("positions = 6", "positions"),
        ("cards_per_position = 8", "cards_per_position"),
        ("deck_size = 52", "deck_size"),
        ("stub_size = 5", "stub_size"),
        ('dealing_direction = "reverse"', "dealing_direction"),
        ('counting_direction = "clockwise"', "counting_direction"),
        ("positions = 7", "positions"),  # even its own value: the profile holds it
        ("shuffle = true", "shuffle"),
    ],
)
def test_the_games_constants_cannot_be_configured(tmp_path: Path, line: str, key: str) -> None:
    path = _config(tmp_path, line + "\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: table.{key} ")
    assert message.endswith(
        "[table] may set only: profile, dice_wager, require_synchronized_clock, "
        "unread_card_policy, seat_labels, gate_window, stub, external_rng_signature"
    )
    assert "\n" not in message


def test_an_unknown_profile_is_refused(tmp_path: Path) -> None:
    for name in ('"nj-pai-gow"', '"../../etc/passwd"', "7"):
        with pytest.raises(ConfigError, match=r"table\.profile is .*, not a rules profile "):
            load_config(_config(tmp_path, f"profile = {name}\n"))


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "dice_wager = 1",
            "table.dice_wager is 1; the rules profile pr-pai-gow-poker version 3 "
            "allows false or true",
        ),
        ('unread_card_policy = "ignore"', 'allows "void" or "record_unknown"'),
        (
            "gate_window = 5",
            "table.gate_window is 5; the rules profile pr-pai-gow-poker version "
            "3 allows an integer from 1 to 4",
        ),
        ("gate_window = 0", "allows an integer from 1 to 4"),
        ("gate_window = true", "allows an integer from 1 to 4"),
        ("seat_labels = { 1 = 'Banker' }", "expected exactly one label for each position 1 to 7"),
    ],
)
def test_adjustable_keys_take_only_the_values_the_profile_allows(
    tmp_path: Path, line: str, expected: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(_config(tmp_path, line + "\n"))
    assert expected in str(caught.value)


@pytest.mark.rule("B2")
@pytest.mark.rule("C3")
def test_adjustable_keys_are_applied(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        'profile = "pr-pai-gow-poker"\ndice_wager = true\n'
        'unread_card_policy = "record_unknown"\ngate_window = 3\n'
        "[table.seat_labels]\n" + "".join(f'{p} = "S{p}"\n' for p in range(1, 8)),
    )
    config = load_config(path)
    assert config.table.dice_wager is True
    assert config.table.unread_card_policy is UnreadCardPolicy.RECORD_UNKNOWN
    assert config.table.gate_window == 3
    assert config.table.seat_label(4) == "S4"
    assert config.table.positions == 7
    assert config.source_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_gate_window_is_a_table_rule() -> None:
    assert TableRules().gate_window == 1
    assert TableRules(gate_window=4).gate_window == 4
    for bad in (0, 50, True, "1"):
        with pytest.raises(ConfigError, match=r"^table\.gate_window is "):
            TableRules(gate_window=bad)  # type: ignore[arg-type]


def test_rules_as_plain_json() -> None:
    rules = load_profile(DEFAULT_PROFILE).apply(
        {"seat_labels": {str(p): f"S{p}" for p in range(1, 8)}}
    )
    plain = rules.plain()
    assert json.loads(json.dumps(plain)) == plain
    assert plain["dealing_direction"] == "counting"
    assert plain["seat_labels"]["1"] == "S1"
    assert plain["gate_window"] == 1
    assert TableRules.from_mapping({**plain, "seat_labels": plain["seat_labels"]}) == rules
