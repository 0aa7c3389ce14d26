"""The approved list and seeded verification (rule A1)."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path
from typing import Any

import pytest

from firmware_protocol import Ack, Capability, VerifyResult
from shoe_controller.errors import ConfigError
from shoe_controller.link.approval import (
    SEED_SIZE,
    ApprovalList,
    ApprovedShoe,
    Challenge,
    keyed_digest,
)
from shoe_controller.link.identity import ShoeIdentity

pytestmark = pytest.mark.rule("A1")

IMAGE = b"approved firmware image\x00\x01\x02" * 100
DIGEST = hashlib.sha256(IMAGE).hexdigest()


def identity(**changes: Any) -> ShoeIdentity:
    values: dict[str, Any] = {
        "model": "ES-7",
        "serial_number": "SN-1",
        "hardware_revision": "B",
        "firmware_version": "1.4.2",
        "firmware_digest": DIGEST,
        "capabilities": Capability.SEEDED_VERIFY | Capability.STUB_MODE,
        "boot_id": 1,
        "protocol_versions": (1,),
    }
    values.update(changes)
    return ShoeIdentity(**values)


def entry(**changes: Any) -> dict[str, Any]:
    values: dict[str, Any] = {"model": "ES-7", "firmware_version": "1.4.2"}
    values["firmware_digest"] = DIGEST
    values.update(changes)
    return values


@pytest.fixture
def image(tmp_path: Path) -> Path:
    path = tmp_path / "es7-1.4.2.bin"
    path.write_bytes(IMAGE)
    return path


def fixed_seed(size: int) -> bytes:
    return bytes(range(size))


# -- the list -------------------------------------------------------------------------


def test_entries_parsed_with_relative_image_from_the_config_directory(image: Path) -> None:
    approval = ApprovalList.from_config(
        [entry(firmware_digest=DIGEST.upper(), image=image.name), entry(firmware_version="1.5")],
        base_dir=image.parent,
    )
    first, second = approval
    assert first == ApprovedShoe("ES-7", "1.4.2", DIGEST, image)
    assert second.image_path is None
    assert len(approval) == 2


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"firmware_version": "1", "firmware_digest": DIGEST}, "entry 1: key 'model' is missing"),
        (entry(model=""), "entry 1: key 'model' must be a non-empty string"),
        (entry(firmware_version=3), "key 'firmware_version' must be a non-empty string"),
        (entry(colour="red"), "entry 1: unknown key 'colour'"),
        (entry(firmware_digest="abc"), "1.4.2): key 'firmware_digest' must be 64 hex"),
        (entry(image=""), "key 'image' must be a file path"),
        (entry(image="/nonexistent/image.bin"), "key 'image': cannot read /nonexistent"),
        ("ES-7", "entry 1 must be a table"),
    ],
)
def test_bad_entries_name_the_entry_and_the_key(raw: Any, expected: str) -> None:
    with pytest.raises(ConfigError, match=r"^approved_shoes ") as caught:
        ApprovalList.from_config([raw])
    message = str(caught.value)
    assert expected in message
    assert "\n" not in message


def test_image_must_match_the_entry_digest(image: Path) -> None:
    other = hashlib.sha256(b"other").hexdigest()
    with pytest.raises(ConfigError, match=r"key 'image': the SHA-256 of .* is "):
        ApprovalList.from_config([entry(firmware_digest=other, image=str(image))])


def test_one_entry_per_model_and_version() -> None:
    with pytest.raises(ConfigError, match=r"entry 2: ES-7 firmware 1\.4\.2 is already listed"):
        ApprovalList.from_config([entry(), entry()])


# -- the identity check ---------------------------------------------------------------


def test_listed_shoe_is_approved() -> None:
    verdict = ApprovalList.from_config([entry()]).check(identity(), False)
    assert verdict.approved and verdict.field is None and not verdict.pending


@pytest.mark.parametrize(
    ("shoe", "field", "words"),
    [
        (identity(model="ES-9"), "model", "'ES-9' is not on the approved list"),
        (identity(firmware_version="1.5.0"), "firmware_version", "(approved: 1.4.2)"),
        (identity(firmware_digest="0" * 64), "firmware_digest", "reports digest 0000"),
    ],
)
def test_unlisted_shoe_is_refused_naming_the_field(
    shoe: ShoeIdentity, field: str, words: str
) -> None:
    verdict = ApprovalList.from_config([entry()]).check(shoe, False)
    assert not verdict.approved
    assert verdict.field == field
    assert verdict.reason.startswith(f"{field}: ") and words in verdict.reason


def test_simulator_approved_out_of_the_box_only_in_process() -> None:
    simulated = identity(model="ES-SIM", firmware_version="1.0.0")
    empty = ApprovalList.from_config([])
    assert empty.check(simulated, transport_is_in_process_simulator=True).approved
    over_a_port = empty.check(simulated, transport_is_in_process_simulator=False)
    assert not over_a_port.approved and over_a_port.field == "model"


def test_in_process_simulator_listed_is_checked_like_any_shoe() -> None:
    approval = ApprovalList.from_config([entry(model="ES-SIM", firmware_version="1.0.0")])
    verdict = approval.check(identity(model="ES-SIM", firmware_version="0.9"), True)
    assert not verdict.approved and verdict.field == "firmware_version"


def test_entry_with_image_waits_for_verification(image: Path) -> None:
    approval = ApprovalList.from_config([entry(image=str(image))])
    verdict = approval.check(identity(), False)
    assert not verdict.approved and verdict.pending and verdict.field == "verification"
    without = approval.check(identity(capabilities=Capability.STUB_MODE), False)
    assert not without.approved and not without.pending and without.field == "capabilities"


# -- seeded verification --------------------------------------------------------------


def shoe_answer(seed: bytes, running: bytes = IMAGE) -> VerifyResult:
    return VerifyResult(seed, hmac.new(seed, running, hashlib.sha256).digest())


def test_verification_with_the_approved_image_passes(image: Path) -> None:
    (approved,) = ApprovalList.from_config([entry(image=str(image))])
    challenge = Challenge.new(approved, fixed_seed)
    assert challenge.seed == fixed_seed(SEED_SIZE)
    assert challenge.message.seed == challenge.seed
    verdict = challenge.judge(shoe_answer(challenge.seed))
    assert verdict.approved and verdict.verified
    assert keyed_digest(image, challenge.seed) == shoe_answer(challenge.seed).digest


def test_default_seeds_are_fresh(image: Path) -> None:
    (approved,) = ApprovalList.from_config([entry(image=str(image))])
    seeds = {Challenge.new(approved).seed for _ in range(8)}
    assert len(seeds) == 8


def test_shoe_running_another_image_is_unverified(image: Path) -> None:
    (approved,) = ApprovalList.from_config([entry(image=str(image))])
    challenge = Challenge.new(approved, fixed_seed)
    # It reports the approved digest in its Hello, but runs something else.
    verdict = challenge.judge(shoe_answer(challenge.seed, running=IMAGE + b"patch"))
    assert not verdict.approved and verdict.field == "verification"
    assert "keyed digest does not match" in verdict.reason


def test_wrong_echoed_seed_is_unverified(image: Path) -> None:
    (approved,) = ApprovalList.from_config([entry(image=str(image))])
    challenge = Challenge.new(approved, fixed_seed)
    replayed = shoe_answer(bytes(SEED_SIZE))  # an answer recorded for another seed
    verdict = challenge.judge(replayed)
    assert not verdict.approved and "different seed" in verdict.reason


@pytest.mark.parametrize("reply", [None, Ack()])
def test_no_digest_is_unverified(image: Path, reply: Ack | None) -> None:
    (approved,) = ApprovalList.from_config([entry(image=str(image))])
    verdict = Challenge.new(approved, fixed_seed).judge(reply, "no answer")
    assert not verdict.approved and verdict.field == "verification"


def test_image_changed_on_disk_after_loading_is_unverified(image: Path) -> None:
    (approved,) = ApprovalList.from_config([entry(image=str(image))])
    challenge = Challenge.new(approved, fixed_seed)
    image.write_bytes(IMAGE + b"tampered")
    verdict = challenge.judge(shoe_answer(challenge.seed, running=IMAGE + b"tampered"))
    assert not verdict.approved and "does not have the approved firmware_digest" in verdict.reason
    image.unlink()
    verdict = challenge.judge(shoe_answer(challenge.seed))
    assert not verdict.approved and "cannot read the approved image" in verdict.reason


def test_seed_source_of_the_wrong_size_is_a_bug(image: Path) -> None:
    (approved,) = ApprovalList.from_config([entry(image=str(image))])
    with pytest.raises(ValueError, match="seed source"):
        Challenge.new(approved, lambda n: b"short")
