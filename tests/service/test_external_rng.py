"""Rule B1: an external generator's number, signed by its configured device and checked
(signature, counter, replay) before the procedure takes it; the record says whether it
was signed."""

from __future__ import annotations

import json
import os
import sqlite3
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from shoe_controller.cli.croupier import SCRIPT, ScriptedCroupier
from shoe_controller.errors import ConfigError, ProcedureError
from shoe_controller.service import events as ev
from shoe_controller.service.config import Config, load_config
from shoe_controller.service.controller import TableController
from shoe_controller.service.external_rng import (
    ExternalRng,
    ExternalRngSettings,
    SignedNumber,
    load_verifier,
    parse_signed_value,
    signed_message,
)
from shoe_controller.simulator.transport import switch_off
from tests.service.helpers import DEFAULT_SCRIPT, Recorder
from tests.service.rng_device import Device

pytestmark = pytest.mark.rule("B1")


def _rng(device: Device, tmp_path: Path, **kwargs: Any) -> ExternalRng:
    settings = ExternalRngSettings(device.name, device.algorithm, device.key_file(tmp_path))
    return ExternalRng.at_start(settings, required=kwargs.pop("required", False), **kwargs)


def test_the_signed_message_is_the_documented_text() -> None:
    assert signed_message("RNG-0042", 5, 17) == b"shoe-controller external rng v1\nRNG-0042\n5\n17"


@pytest.mark.parametrize("algorithm", ["ed25519", "hmac-sha256"])
def test_a_signed_number_is_accepted_and_recorded(tmp_path: Path, algorithm: str) -> None:
    device = Device(algorithm=algorithm)
    rng = _rng(device, tmp_path, journaled=[])
    value = device.draw(5)
    record = rng.check(5, value)
    assert record == {
        "number": 5,
        "signed": True,
        "device": "RNG-0042",
        "algorithm": algorithm,
        "counter": 1,
        "signature": value.signature.hex(),
        "skipped": 0,
    }
    rng.accepted(record)
    assert rng.last_counter == 1


def test_the_ed25519_key_as_64_hex_digits(tmp_path: Path) -> None:
    device = Device()
    settings = ExternalRngSettings(device.name, "ed25519", device.key_file(tmp_path, pem=False))
    verify = load_verifier(settings)
    assert verify(device.sign(3, 9), signed_message(device.name, 3, 9))
    assert not verify(device.sign(3, 9), signed_message(device.name, 4, 9))


def test_a_forged_or_foreign_signature_is_refused(tmp_path: Path) -> None:
    device = Device()
    rng = _rng(device, tmp_path, journaled=[])
    value = device.draw(5)
    flipped = bytes([value.signature[0] ^ 1]) + value.signature[1:]
    with pytest.raises(ProcedureError, match="the signature is not RNG-0042's over number 5"):
        rng.check(5, SignedNumber(5, value.counter, flipped))
    # The same device's signature over another number, counter or device name.
    for number, counter, name in ((6, 1, None), (5, 2, None), (5, 1, "RNG-0043")):
        signature = device.sign(number, counter, name=name)
        with pytest.raises(ProcedureError, match="the signature is not"):
            rng.check(5, SignedNumber(5, 1, signature))
    other = Device()  # another device, the same name
    with pytest.raises(ProcedureError, match="the signature is not"):
        rng.check(5, other.draw(5))
    with pytest.raises(ProcedureError, match="the signed value is for 5, not 4"):
        rng.check(4, value)
    assert rng.last_counter is None  # nothing refused was used


def test_a_value_is_accepted_once(tmp_path: Path) -> None:
    device = Device()
    rng = _rng(device, tmp_path, journaled=[])
    first = device.draw(2)
    rng.accepted(rng.check(2, first))
    with pytest.raises(ProcedureError, match="counter 1 was already used"):
        rng.check(2, first)
    device.counter = 4  # three numbers the device gave never reached the table
    record = rng.check(7, device.draw(7))
    assert (record["counter"], record["skipped"]) == (5, 3)
    rng.accepted(record)
    with pytest.raises(ProcedureError, match="already used"):
        rng.check(1, SignedNumber(1, 3, device.sign(1, 3)))  # an older value, unused


def test_the_last_counter_comes_from_the_journal(tmp_path: Path) -> None:
    device = Device()
    journaled = [
        {"number": 3, "signed": False},
        {"number": 2, "signed": True, "device": "RNG-0042", "counter": 8},
        {"number": 2, "signed": True, "device": "RNG-0001", "counter": 99},  # another device
        {"number": 4, "signed": True, "device": "RNG-0042", "counter": 11},
    ]
    rng = _rng(device, tmp_path, journaled=journaled)
    assert rng.last_counter == 11
    device.counter = 10
    with pytest.raises(ProcedureError, match="counter 11 was already used"):
        rng.check(4, device.draw(4))


def test_unsigned_numbers_as_the_profile_says(tmp_path: Path) -> None:
    optional = ExternalRng(None, required=False)
    assert optional.check(6, None) == {"number": 6, "signed": False}
    required = _rng(Device(), tmp_path, journaled=[], required=True)
    with pytest.raises(ProcedureError, match="only with its signature"):
        required.check(6, None)
    with pytest.raises(ProcedureError, match="only with its signature"):
        ExternalRng(None, required=True).check(6, None)
    with pytest.raises(ProcedureError, match=r"needs its generator configured \(\[external_rng\]"):
        optional.check(6, Device().draw(6))


@pytest.mark.parametrize(
    ("token", "number", "counter"),
    [("5:17:ab01", 5, 17), (" 3:0:FFee \n", 3, 0)],
)
def test_the_token_the_device_shows(token: str, number: int, counter: int) -> None:
    value = parse_signed_value(token)
    assert (value.number, value.counter) == (number, counter)


@pytest.mark.parametrize(
    "token", ["5", "5:17", "5:17:", "5:17:abc", "x:1:ab", "5:-1:ab", "5:1:zz", "5:1:" + "ab" * 129]
)
def test_a_token_that_is_not_one(token: str) -> None:
    with pytest.raises(ProcedureError, match="is not a signed value: enter it as the generator"):
        parse_signed_value(token)


def test_the_configuration_section(tmp_path: Path) -> None:
    device = Device()
    path = tmp_path / "config.toml"
    path.write_text(device.config(tmp_path))
    config = load_config(path)
    assert config.external_rng == ExternalRngSettings(
        "RNG-0042", "ed25519", tmp_path / "rng-0042.key"
    )
    assert load_config(None).external_rng is None


@pytest.mark.parametrize(
    ("section", "says"),
    [
        ('device = "RNG 1"\nalgorithm = "ed25519"\nkey = "k"', "external_rng.device is 'RNG 1'"),
        ('device = "R"\nalgorithm = "rsa"\nkey = "k"', "external_rng.algorithm is 'rsa'"),
        ('device = "R"\nalgorithm = "ed25519"', "external_rng.key must be the path"),
        (
            'device = "R"\nalgorithm = "ed25519"\nkey = "k"\nseed = 1',
            "unknown key external_rng.seed",
        ),
    ],
)
def test_a_wrong_section_is_refused_in_one_line(tmp_path: Path, section: str, says: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(f"[external_rng]\n{section}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_a_key_file_that_is_not_the_devices_key(tmp_path: Path) -> None:
    settings = ExternalRngSettings("R", "ed25519", tmp_path / "none.pub")
    with pytest.raises(ConfigError, match="does not exist"):
        load_verifier(settings)
    garbage = tmp_path / "garbage.pub"
    garbage.write_text("not a key\n")
    with pytest.raises(ConfigError, match="is not an Ed25519 public key"):
        load_verifier(ExternalRngSettings("R", "ed25519", garbage))
    with pytest.raises(ConfigError, match="is not an HMAC key"):
        load_verifier(ExternalRngSettings("R", "hmac-sha256", garbage))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="is not a key file"):
        load_verifier(ExternalRngSettings("R", "ed25519", fifo))
    # An RSA public key is a PEM public key, not the Ed25519 key the algorithm says.
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    pem = tmp_path / "rsa.pub"
    pem.write_bytes(
        rsa_key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    )
    with pytest.raises(ConfigError, match="is not an Ed25519 public key"):
        load_verifier(ExternalRngSettings("R", "ed25519", pem))


# --- at the table ----------------------------------------------------------------------------


class ExternalCroupier:
    """A croupier who starts each round with the external generator's values given for it,
    in order (a refused one first, say), and answers every other prompt as the script."""

    def __init__(self, controller: TableController, starts: list[list[SignedNumber | int]]):
        self.controller = controller
        self.starts = starts
        self.script = ScriptedCroupier(controller, DEFAULT_SCRIPT, lambda error: None)
        self.futures: list[Future[None]] = []

    def __call__(self, event: ev.ServiceEvent) -> None:
        if isinstance(event, ev.PromptEvent) and event.need == "start_position":
            if self.starts:
                for value in self.starts.pop(0):
                    if isinstance(value, int):
                        self.futures.append(
                            self.controller.start_by_external_rng(value, actor=SCRIPT)
                        )
                    else:
                        number = value.number
                        self.futures.append(
                            self.controller.start_by_external_rng(
                                number, signed=value, actor=SCRIPT
                            )
                        )
        elif isinstance(event, ev.PromptEvent):
            self.script(event)


def _play(
    tmp_path: Path, config: Config, starts: list[list[SignedNumber | int]], rounds: int
) -> list[Future[None]]:
    controller = TableController(
        config, journal_path=tmp_path / "journal.sqlite3", device=f"sim://?pace=0&seed={rounds}"
    )
    recorder = Recorder()
    croupier = ExternalCroupier(controller, starts)
    controller.subscribe(recorder)
    controller.subscribe(croupier)
    controller.start()
    try:
        recorder.wait_for(
            lambda events: sum(isinstance(e, ev.RoundClosedEvent) for e in events) >= rounds
        )
    finally:
        controller.stop()
        switch_off(f"sim://?pace=0&seed={rounds}")
    return croupier.futures


def _payloads(journal: Path, kind: str) -> list[dict[str, Any]]:
    conn = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT payload FROM records WHERE kind = ? ORDER BY seq", (kind,))
        return [json.loads(payload) for (payload,) in rows]
    finally:
        conn.close()


def test_signed_numbers_at_the_table_across_a_restart(tmp_path: Path) -> None:
    device = Device()
    path = tmp_path / "config.toml"
    path.write_text(device.config(tmp_path))
    config = load_config(path)
    first, second = device.draw(5), device.draw(3)
    futures = _play(tmp_path, config, [[first], [first, second]], rounds=2)
    assert futures[0].result(5) is None
    with pytest.raises(ProcedureError, match="counter 1 was already used"):
        futures[1].result(5)
    assert futures[2].result(5) is None
    # A restart keeps the counter: the journal says which values were used.
    third = device.draw(6)
    futures = _play(tmp_path, config, [[second, third], [4]], rounds=2)
    with pytest.raises(ProcedureError, match="counter 2 was already used"):
        futures[0].result(5)
    assert futures[1].result(5) is None
    assert futures[2].result(5) is None  # unsigned, as the profile allows by default
    journal = tmp_path / "journal.sqlite3"
    records = _payloads(journal, "external_rng")
    assert [(r["number"], r["signed"], r.get("counter")) for r in records] == [
        (5, True, 1),
        (3, True, 2),
        (6, True, 3),
        (4, False, None),
    ]
    assert [p["position"] for p in _payloads(journal, "start_position")] == [5, 3, 6, 4]
    # A laboratory verifies a recorded number with the device's public key alone.
    public = device.private.public_key()
    for record in records[:2]:
        message = (
            f"shoe-controller external rng v1\n{record['device']}\n{record['number']}\n"
            f"{record['counter']}"
        ).encode()
        public.verify(bytes.fromhex(record["signature"]), message)
    refused = [
        p
        for p in _payloads(journal, "input")
        if p["accepted"] is False and p["name"] == "start_position"
    ]
    assert [p["counter"] for p in refused] == [1, 2]
    assert all("already used" in p["refused"] for p in refused)


def test_a_profile_that_requires_signing_refuses_a_typed_number(tmp_path: Path) -> None:
    device = Device(algorithm="hmac-sha256")
    path = tmp_path / "config.toml"
    path.write_text('[table]\nexternal_rng_signature = "required"\n' + device.config(tmp_path))
    config = load_config(path)
    futures = _play(tmp_path, config, [[6, device.draw(6)]], rounds=1)
    with pytest.raises(ProcedureError, match="only with its signature"):
        futures[0].result(5)
    assert futures[1].result(5) is None
    (record,) = _payloads(tmp_path / "journal.sqlite3", "external_rng")
    assert record["signed"] is True and record["algorithm"] == "hmac-sha256"
    (started,) = _payloads(tmp_path / "journal.sqlite3", "service_started")
    assert started["evidence"]["external_rng_signature"] == "required"


def test_a_device_key_that_cannot_be_read_stops_the_start(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        f'[external_rng]\ndevice = "R"\nalgorithm = "ed25519"\nkey = "{tmp_path / "gone.pub"}"\n'
    )
    controller = TableController(
        load_config(path), journal_path=tmp_path / "journal.sqlite3", device="sim://?pace=0"
    )
    with pytest.raises(ConfigError, match="does not exist: install the generator's key file"):
        controller.start()


def test_a_shared_key_others_can_read_is_refused(tmp_path: Path) -> None:
    device = Device(algorithm="hmac-sha256")
    key = device.key_file(tmp_path)
    settings = ExternalRngSettings(device.name, device.algorithm, key)
    for mode in (0o640, 0o604):
        key.chmod(mode)
        with pytest.raises(ConfigError, match=f"chmod 600 {key}$"):
            load_verifier(settings)
    key.chmod(0o600)
    assert load_verifier(settings)(device.sign(2, 1), signed_message(device.name, 2, 1))
