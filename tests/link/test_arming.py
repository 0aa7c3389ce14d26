"""The arming, without I/O: the core's events in; events to deliver and commands out."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import pytest

from firmware_protocol import (
    Ack,
    Card,
    CardDrawn,
    GateMode,
    Nak,
    NakReason,
    Verify,
    VerifyResult,
)
from shoe_controller.link.approval import ApprovalList
from shoe_controller.link.arming import Arming, Step
from shoe_controller.link.events import (
    ApprovalChanged,
    CommandCompleted,
    CommandFailed,
    CommandHandle,
    Connected,
    LinkDown,
    ProtocolMismatch,
    ShoeEvent,
)
from tests.link.test_approval import IMAGE, entry, identity

pytestmark = pytest.mark.rule("A1")

SHOE = identity()
CARD = ShoeEvent(1, CardDrawn(1, Card.parse("AS"), GateMode.DEAL, 99), shoe_seq=1)


def seeds(size: int) -> bytes:
    return bytes(range(size))


@pytest.fixture
def image(tmp_path: Path) -> Path:
    path = tmp_path / "es7.bin"
    path.write_bytes(IMAGE)
    return path


@pytest.fixture
def verified(image: Path) -> Arming:
    """An arming whose approved list asks for a seeded verification of the ES-7."""
    return Arming(ApprovalList.from_config([entry(image=str(image))]), seeds)


def answer(verify: Verify, image: bytes = IMAGE) -> VerifyResult:
    return VerifyResult(verify.seed, hmac.new(verify.seed, image, hashlib.sha256).digest())


def completed(message: Verify, reply: object) -> CommandCompleted:
    return CommandCompleted(CommandHandle(message, 7), reply)  # type: ignore[arg-type]


def connect(arming: Arming) -> Verify:
    """Connect the ES-7; the arming asks for a Verify and holds the Connected back."""
    step = arming.receive(Connected(SHOE, 1))
    assert step.deliver == ()
    (verify,) = step.send
    assert isinstance(verify, Verify)
    return verify


def test_a_shoe_needing_no_verification_is_judged_at_once() -> None:
    arming = Arming(ApprovalList.from_config([entry()]))
    step = arming.receive(Connected(SHOE, 1))
    (connected,) = step.deliver
    assert isinstance(connected, Connected) and connected.verdict is not None
    assert connected.verdict.approved and step.send == ()
    assert arming.armed and arming.connected is connected
    assert arming.receive(CARD) == Step(deliver=(CARD,))


def test_an_unlisted_shoe_is_connected_but_not_armed() -> None:
    arming = Arming(ApprovalList())
    (connected,) = arming.receive(Connected(SHOE, 1)).deliver
    assert isinstance(connected, Connected) and connected.verdict is not None
    assert connected.verdict.field == "model" and not arming.armed
    arming.transport_opened(in_process_simulator=True)
    (again,) = arming.receive(Connected(SHOE, 1)).deliver
    assert isinstance(again, Connected) and again.verdict is not None
    assert again.verdict.approved and arming.armed


def test_events_wait_behind_the_connection_until_its_verification_ends(
    verified: Arming,
) -> None:
    verify = connect(verified)
    assert verified.receive(CARD) == Step()  # held
    assert not verified.armed and verified.verdict is not None and verified.verdict.pending
    step = verified.receive(completed(verify, answer(verify)))
    connected, card = step.deliver
    assert isinstance(connected, Connected) and connected.verdict is not None
    assert connected.verdict.approved and connected.verdict.verified
    assert card == CARD
    assert verified.armed


def test_a_wrong_keyed_digest_leaves_the_shoe_unarmed(verified: Arming) -> None:
    verify = connect(verified)
    (connected,) = verified.receive(completed(verify, answer(verify, b"other image"))).deliver
    assert isinstance(connected, Connected) and connected.verdict is not None
    assert connected.verdict.field == "verification" and not verified.armed


def test_a_verification_cut_short_by_the_link_releases_what_it_held(verified: Arming) -> None:
    verify = connect(verified)
    verified.receive(CARD)
    # The core fails its commands, then reports the link down.
    step = verified.receive(CommandFailed(CommandHandle(verify, 7), "link_down"))
    connected, card = step.deliver
    assert isinstance(connected, Connected) and connected.verdict is not None
    assert connected.verdict.field == "verification" and "link down" in connected.verdict.reason
    assert card == CARD
    down = LinkDown("silence")
    assert verified.receive(down) == Step(deliver=(down,))
    assert not verified.armed and verified.connected is None


def test_the_outcome_of_the_arming_s_verify_is_not_delivered_but_the_consumer_s_is(
    verified: Arming,
) -> None:
    verify = connect(verified)
    verified.receive(completed(verify, answer(verify)))
    own = Verify(bytes(32))
    outcome = completed(own, answer(own))
    assert verified.receive(outcome) == Step(deliver=(outcome,))


def test_a_second_connection_before_the_answer_releases_the_first_unverified(
    verified: Arming,
) -> None:
    first = connect(verified)
    verified.receive(CARD)
    rebooted = Connected(identity(boot_id=2), 1, rebooted=True)
    step = verified.receive(rebooted)
    connected, card = step.deliver
    assert isinstance(connected, Connected) and connected.verdict is not None
    assert "connected again first" in connected.verdict.reason and card == CARD
    (second,) = step.send
    assert isinstance(second, Verify) and second is not first
    # The first one's answer, late, is the arming's own: swallowed.
    assert verified.receive(completed(first, answer(first))) == Step()
    (announced,) = verified.receive(completed(second, answer(second))).deliver
    assert isinstance(announced, Connected) and announced.rebooted and verified.armed


def test_verification_on_demand_reports_its_verdict_and_changes_the_state(
    verified: Arming, image: Path
) -> None:
    verify = connect(verified)
    verified.receive(completed(verify, answer(verify)))
    step = verified.verify(SHOE)
    (again,) = step.send
    assert isinstance(again, Verify) and step.verified is None
    # Same verdict as before: nothing to announce, the verdict to the caller.
    done = verified.receive(completed(again, answer(again)))
    assert done.deliver == () and done.verified is not None and done.verified.verified
    # The image on file changes: the next verification fails, and says so.
    image.write_bytes(IMAGE + b"\x00")
    third = verified.verify(SHOE).send[0]
    assert isinstance(third, Verify)
    step = verified.receive(completed(third, answer(third)))
    (changed,) = step.deliver
    assert isinstance(changed, ApprovalChanged) and not changed.verdict.approved
    assert step.verified == changed.verdict and not verified.armed


def test_verification_on_demand_without_an_image_is_judged_at_once() -> None:
    arming = Arming(ApprovalList.from_config([entry()]))
    arming.receive(Connected(SHOE, 1))
    step = arming.verify(SHOE)
    assert step.send == () and step.deliver == ()
    assert step.verified is not None and step.verified.approved


def test_an_on_demand_answer_for_an_earlier_boot_does_not_change_the_verdict(
    verified: Arming,
) -> None:
    verify = connect(verified)
    verified.receive(completed(verify, answer(verify)))
    again = verified.verify(SHOE).send[0]
    assert isinstance(again, Verify)
    nak = completed(again, Nak(NakReason.BUSY, "busy"))
    step = verified.receive(nak)
    assert step.verified is not None and not step.verified.approved
    (changed,) = step.deliver  # still the same boot: the failure counts
    assert isinstance(changed, ApprovalChanged)
    # Another boot connects; an answer meant for the previous one changes nothing.
    verified.receive(Connected(identity(boot_id=9), 1, rebooted=True))
    late = verified.verify(SHOE).send[0]
    assert isinstance(late, Verify)
    step = verified.receive(completed(late, Ack()))
    assert step.deliver == () and step.verified is not None and not step.verified.approved


def test_a_protocol_mismatch_forgets_the_verdict() -> None:
    arming = Arming(ApprovalList.from_config([entry()]))
    arming.receive(Connected(SHOE, 1))
    mismatch = ProtocolMismatch((2,), (1,))
    assert arming.receive(mismatch) == Step(deliver=(mismatch,))
    assert arming.verdict is None and not arming.armed
