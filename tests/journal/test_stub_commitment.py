"""Rule E1 ("no se enseñarán a persona alguna"): with the profile's ``stub = "commitment"``
the journal keeps no stub identity, only keyed commitments that confirm a claimed stub."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
from pathlib import Path

import pytest

from shoe_controller.errors import JournalError
from shoe_controller.journal.records import Kind, Record, check_record
from shoe_controller.journal.stub_commitment import (
    StubCommitter,
    confirm_stub,
    default_stub_key_path,
    load_or_create_stub_key,
    load_stub_key,
    stub_committer,
)

pytestmark = pytest.mark.rule("E1")

KEY = bytes(range(32))
ROUND = "20260501T201503Z-7"


def _by_the_documented_formula(key: bytes, round_id: str, index: int, card: str) -> str:
    message = b"shoe-controller stub card v1\n" + f"{round_id}\n{index}\n{card}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def _record(seq: int, kind: Kind, payload: dict[str, object]) -> Record:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return Record(seq, "2026-05-01T20:15:03.000000Z", seq, ROUND, kind.value, text, b"")


def _committed_stub(cards: list[str], committer: StubCommitter) -> list[Record]:
    return [
        _record(
            i, Kind.STUB_CARD, committer.commit("stub_card", {"index": 49 + i, "card": c}, ROUND)
        )
        for i, c in enumerate(cards, start=1)
    ]


def test_the_commitment_is_the_documented_hmac() -> None:
    committer = StubCommitter(KEY, deal_size=49)
    assert committer.commitment(ROUND, 50, "AS") == _by_the_documented_formula(KEY, ROUND, 50, "AS")
    check = hmac.new(KEY, b"shoe-controller stub key check v1", hashlib.sha256).hexdigest()
    assert committer.key_id == check[:16]


def test_a_stub_card_keeps_its_commitment_in_place_of_its_card() -> None:
    committer = StubCommitter(KEY, deal_size=49)
    kept = committer.commit("stub_card", {"index": 51, "card": "KD"}, ROUND)
    assert kept == {
        "index": 51,
        "commitment": _by_the_documented_formula(KEY, ROUND, 51, "KD"),
        "key_id": committer.key_id,
    }
    assert check_record("stub_card", kept, ROUND) is Kind.STUB_CARD


def test_only_cards_after_the_deal_are_committed() -> None:
    committer = StubCommitter(KEY, deal_size=49)
    dealt = {"index": 12, "position": 3, "card": "AS", "gate_mode": "deal"}
    assert committer.commit("card", dealt, ROUND) is dealt
    during = {"index": 20, "card": "7H"}
    assert committer.commit("unassigned_card", during, ROUND) is during
    after = committer.commit("unassigned_card", {"index": 50, "card": "7H"}, ROUND)
    assert "card" not in after and after["commitment"]
    security = committer.commit(
        "security", {"index": 52, "reason": "duplicates a card already read", "card": "2C"}, ROUND
    )
    assert "card" not in security and security["reason"] == "duplicates a card already read"
    assert committer.commit("stub_card", {"index": 50, "card": "AS"}, None) == {
        "index": 50,
        "card": "AS",
    }


def test_a_stub_record_holds_a_card_or_its_commitment_never_both() -> None:
    with pytest.raises(ValueError, match="a card or its commitment"):
        check_record("stub_card", {"index": 50}, ROUND)
    with pytest.raises(ValueError, match="a card or its commitment"):
        check_record("stub_card", {"index": 50, "card": "AS", "commitment": "00"}, ROUND)
    assert check_record("stub_card", {"index": 50, "card": "AS"}, ROUND) is Kind.STUB_CARD


def test_the_stub_key_lives_beside_the_journal_key(tmp_path: Path) -> None:
    assert default_stub_key_path(Path("/var/lib/x/journal.key")) == Path(
        "/var/lib/x/journal.stub.key"
    )
    assert default_stub_key_path(Path("/keys/table7")) == Path("/keys/table7.stub")
    assert stub_committer(False, tmp_path / "journal.key", 49) is None
    committer = stub_committer(True, tmp_path / "journal.key", 49)
    assert committer is not None
    created = tmp_path / "journal.stub.key"
    assert stat.S_IMODE(os.stat(created).st_mode) == 0o600
    assert len(bytes.fromhex(created.read_text())) == 32
    # Created once, never replaced.
    again = stub_committer(True, tmp_path / "journal.key", 49)
    assert again is not None and again.key_id == committer.key_id
    assert load_or_create_stub_key(created) == load_stub_key(created)


def test_a_stub_key_that_is_not_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(JournalError, match="not found: restore it from its backup"):
        load_stub_key(tmp_path / "none.key")
    bad = tmp_path / "bad.key"
    bad.write_text("not hex\n")
    with pytest.raises(JournalError, match="is not a stub key"):
        load_stub_key(bad)
    with pytest.raises(JournalError, match="is not a stub key"):
        load_stub_key(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(JournalError, match="is not a stub key"):
        load_stub_key(fifo)


@pytest.mark.parametrize(
    ("claim", "matches", "complete"),
    [
        (["JK", "2C", "KD", "AS"], True, True),  # any order
        (["KD"], True, False),  # a part of the stub
        (["AS", "KD", "2C", "JK", "QH"], False, False),
        (["QH"], False, False),
        (["AS", "AS"], False, False),  # one ace of spades in the stub, not two
    ],
)
def test_a_claim_against_commitments(claim: list[str], matches: bool, complete: bool) -> None:
    committer = StubCommitter(KEY, deal_size=49)
    records = _committed_stub(["AS", "KD", "2C", "JK"], committer)
    result = confirm_stub(ROUND, records, claim, committer)
    assert (result.matches, result.complete) == (matches, complete)
    assert (result.kept_as, result.stub_cards, result.unread) == ("commitment", 4, 0)
    assert result.key_id == committer.key_id


def test_a_claim_against_a_sealed_stub_and_an_unread_card() -> None:
    records = [
        _record(1, Kind.STUB_CARD, {"index": 50, "card": "AS"}),
        _record(2, Kind.STUB_CARD, {"index": 51, "card": "??"}),
        _record(3, Kind.STUB_CARD, {"index": 52, "card": "2C"}),
        _record(4, Kind.STUB_CARD, {"index": 53, "card": "JK"}),
    ]
    result = confirm_stub(ROUND, records, ["AS", "2C", "JK"], None)
    assert (result.kept_as, result.matches, result.complete, result.unread) == (
        "sealed",
        True,
        False,
        1,
    )


def test_a_duplicate_in_the_stub_is_read_once_and_committed() -> None:
    committer = StubCommitter(KEY, deal_size=49)
    records = _committed_stub(["AS", "KD", "2C"], committer)
    unassigned = committer.commit("unassigned_card", {"index": 53, "card": "KD"}, ROUND)
    security = committer.commit(
        "security", {"index": 53, "reason": "duplicates a card already read", "card": "KD"}, ROUND
    )
    records += [_record(4, Kind.UNASSIGNED_CARD, unassigned), _record(5, Kind.SECURITY, security)]
    result = confirm_stub(ROUND, records, ["AS", "KD", "KD", "2C"], committer)
    assert (result.stub_cards, result.matches, result.complete) == (4, True, True)


def test_commitments_need_their_own_key() -> None:
    committer = StubCommitter(KEY, deal_size=49)
    records = _committed_stub(["AS", "KD", "2C", "JK"], committer)
    with pytest.raises(JournalError, match="the stub key is needed"):
        confirm_stub(ROUND, records, ["AS"], None)
    other = StubCommitter(bytes(32))
    with pytest.raises(JournalError, match=f"committed under stub key id {committer.key_id}"):
        confirm_stub(ROUND, records, ["AS"], other)


def test_a_commitment_is_bound_to_its_round_and_draw() -> None:
    committer = StubCommitter(KEY, deal_size=49)
    records = _committed_stub(["AS", "KD", "2C", "JK"], committer)
    assert not confirm_stub("another-round", records, ["AS"], committer).matches
    assert committer.commitment(ROUND, 50, "AS") != committer.commitment(ROUND, 51, "AS")
