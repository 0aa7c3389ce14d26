"""shoe-diag ports, info, verify, selftest and counters, against the in-process simulator,
and the errors a technician meets opening a shoe."""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_mock import MockerFixture

from shoe_controller.errors import ExitCode
from shoe_controller.hal import discovery
from shoe_controller.hal.serial_transport import SerialTransport
from shoe_controller.simulator import firmware
from tests.cli.conftest import Run, write_config

pytestmark = pytest.mark.usefixtures("hermetic")

SIM = "sim://?seed=11"
IDENTITY_KEYS = {
    "model",
    "serial_number",
    "hardware_revision",
    "firmware_version",
    "firmware_digest",
    "protocol_versions",
    "capabilities",
    "boot_id",
}


def one_json(text: str) -> dict[str, Any]:
    (line,) = text.splitlines()
    value = json.loads(line)
    assert isinstance(value, dict)
    return value


@pytest.fixture
def pty_path() -> Iterator[str]:
    """A serial port with nothing behind it that answers."""
    master, slave = os.openpty()
    path = os.ttyname(slave)
    os.close(slave)
    try:
        yield path
    finally:
        os.close(master)


# -- info ------------------------------------------------------------------------------


@pytest.mark.rule("A1")
def test_info_shows_the_identity_and_the_verdict(run: Run) -> None:
    result = run("info", "--device", SIM)
    assert result.code == ExitCode.OK
    assert result.err == ""
    lines = result.out.splitlines()
    assert lines[0] == f"device             {SIM}"
    assert "model              ES-SIM" in lines
    assert f"firmware digest    {hashlib.sha256(firmware.IMAGE).hexdigest()}" in lines
    assert lines[-1].startswith("approval           approved: the in-process simulated shoe")


@pytest.mark.rule("A1")
def test_info_json_shape(run: Run) -> None:
    result = run("info", "--device", SIM, "--json")
    assert result.code == ExitCode.OK
    info = one_json(result.out)
    assert set(info) == IDENTITY_KEYS | {
        "device",
        "protocol_version",
        "approved",
        "verified",
        "reason",
    }
    assert info["device"] == SIM
    assert info["model"] == firmware.MODEL
    assert info["firmware_digest"] == hashlib.sha256(firmware.IMAGE).hexdigest()
    assert "seeded_verify" in info["capabilities"]
    assert (info["approved"], info["verified"]) == (True, False)


@pytest.mark.rule("A1")
def test_info_runs_the_seeded_verification_the_approved_list_asks_for(
    run: Run, approving_config: Path
) -> None:
    result = run("info", "--device", SIM, "--config", str(approving_config), "--json")
    assert result.code == ExitCode.OK, result.err
    info = one_json(result.out)
    assert (info["approved"], info["verified"]) == (True, True)
    assert "seeded verification passed" in info["reason"]


@pytest.mark.rule("A1")
def test_unapproved_shoe_is_shown_then_refused_in_one_line(run: Run, tmp_path: Path) -> None:
    config = write_config(tmp_path / "config.toml", version="9.9.9")
    result = run("info", "--device", SIM, "--config", str(config))
    assert result.code == ExitCode.NOT_APPROVED
    assert "approval           not approved: firmware_version" in result.out
    line = result.error_line
    assert "is not approved" in line and "[[approved_shoes]]" in line


def test_device_defaults_to_the_configured_address(run: Run, tmp_path: Path) -> None:
    config = write_config(tmp_path / "config.toml", device="sim://?serial=CONF-1")
    result = run("info", "--config", str(config), "--json")
    assert result.code == ExitCode.OK, result.err
    info = one_json(result.out)
    assert (info["device"], info["serial_number"]) == ("sim://?serial=CONF-1", "CONF-1")


# -- verify ----------------------------------------------------------------------------


@pytest.mark.rule("A1")
def test_verify_against_the_approved_image(run: Run, approving_config: Path) -> None:
    result = run("verify", "--device", SIM, "--config", str(approving_config), "--json")
    assert result.code == ExitCode.OK, result.err
    report = one_json(result.out)
    assert report["verified"] is True
    assert report["digest"] == report["expected"]
    assert len(bytes.fromhex(report["seed"])) == 32
    assert report["image_sha256"] == hashlib.sha256(firmware.IMAGE).hexdigest()
    assert set(report) >= IDENTITY_KEYS | {"device", "image", "reason"}


@pytest.mark.rule("A1")
def test_verify_seeds_differ_every_time(run: Run, image: Path) -> None:
    seeds = set()
    for _ in range(2):
        result = run("verify", "--device", SIM, "--image", str(image), "--json")
        assert result.code == ExitCode.OK, result.err
        report = one_json(result.out)
        assert report["reason"] == f"the shoe's keyed digest matches {image}"
        seeds.add(report["seed"])
    assert len(seeds) == 2


@pytest.mark.rule("A1")
def test_verify_against_another_image_fails(run: Run, tmp_path: Path) -> None:
    other = tmp_path / "other.bin"
    other.write_bytes(firmware.IMAGE[:-1] + b"\x00")
    result = run("verify", "--device", SIM, "--image", str(other))
    assert result.code == ExitCode.NOT_APPROVED
    assert "NOT VERIFIED" in result.out
    assert "seeded verification" in result.error_line and "failed" in result.error_line


def test_verify_without_an_image_says_where_to_give_one(run: Run) -> None:
    result = run("verify", "--device", SIM)
    assert result.code == ExitCode.CONFIG
    assert "--image FILE" in result.error_line


def test_verify_with_an_unreadable_image(run: Run, tmp_path: Path) -> None:
    result = run("verify", "--device", SIM, "--image", str(tmp_path / "missing.bin"))
    assert result.code == ExitCode.CONFIG
    assert "cannot read firmware image" in result.error_line


# -- selftest and counters ------------------------------------------------------------


def test_selftest_table(run: Run) -> None:
    result = run("selftest", "--device", SIM)
    assert result.code == ExitCode.OK, result.err
    lines = result.out.splitlines()
    assert lines[0].split() == ["STEP", "TEST", "RESULT", "DETAIL"]
    assert [line.split()[:3] for line in lines[1:5]] == [
        ["1/4", "memory", "pass"],
        ["2/4", "reader", "pass"],
        ["3/4", "gate", "pass"],
        ["4/4", "sensors", "pass"],
    ]
    assert lines[-1] == "self-test passed: 4 of 4 steps"


def test_selftest_json_is_one_object_per_step(run: Run) -> None:
    result = run("selftest", "--device", SIM, "--json")
    assert result.code == ExitCode.OK
    steps = [json.loads(line) for line in result.out.splitlines()]
    assert [s["step"] for s in steps] == [1, 2, 3, 4]
    assert all(set(s) == {"step", "total", "name", "passed", "detail"} for s in steps)
    assert all(s["passed"] and s["total"] == 4 for s in steps)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_selftest_shows_progress_on_a_terminal(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = _Terminal()
    monkeypatch.setattr("sys.stdout", terminal)
    assert run("selftest", "--device", SIM).code == ExitCode.OK
    text = terminal.getvalue()
    assert "\r  [" in text and "4/4 sensors" in text
    assert "self-test passed" in text


def test_counters(run: Run) -> None:
    result = run("counters", "--device", SIM, "--json")
    assert result.code == ExitCode.OK
    counters = one_json(result.out)
    assert counters == {
        "device": SIM,
        "model": firmware.MODEL,
        "serial_number": firmware.DEFAULT_SERIAL_NUMBER,
        "cards_read": 0,
        "misreads": 0,
        "jams": 0,
        "door_openings": 0,
        "power_cycles": 1,
    }
    human = run("counters", "--device", SIM)
    assert "power cycles   1" in human.out


# -- ports -----------------------------------------------------------------------------


def _candidates() -> list[discovery.Candidate]:
    return [
        discovery.Candidate(
            "/dev/ttyACM0",
            "serial",
            0x1209,
            0x0001,
            "ES7-000123",
            "1-1.2:1.0",
            "Electronic shoe",
            ("/dev/electronic-shoe",),
            known=True,
        ),
        discovery.Candidate("/dev/ttyS0", "serial", None, None, None, None, "ttyS0"),
    ]


def test_ports_lists_the_shoes(run: Run, mocker: MockerFixture) -> None:
    mocker.patch.object(discovery, "list_candidates", _candidates)
    result = run("ports")
    assert result.code == ExitCode.OK
    lines = result.out.splitlines()
    assert lines[0].split()[:5] == ["ADDRESS", "KIND", "USB", "ID", "SERIAL"]
    assert lines[1].split()[:6] == [
        "/dev/ttyACM0",
        "serial",
        "1209:0001",
        "ES7-000123",
        "yes",
        "/dev/electronic-shoe",
    ]
    assert len(lines) == 2  # ttyS0 is no shoe
    every = run("ports", "--all", "--json")
    ports = [json.loads(line) for line in every.out.splitlines()]
    assert [p["address"] for p in ports] == ["/dev/ttyACM0", "/dev/ttyS0"]
    assert ports[0] == {
        "address": "/dev/ttyACM0",
        "kind": "serial",
        "vid": "1209",
        "pid": "0001",
        "serial_number": "ES7-000123",
        "location": "1-1.2:1.0",
        "description": "Electronic shoe",
        "symlinks": ["/dev/electronic-shoe"],
        "shoe": True,
    }
    assert ports[1]["shoe"] is False


def test_ports_when_no_shoe_is_attached(run: Run, mocker: MockerFixture) -> None:
    mocker.patch.object(discovery, "list_candidates", lambda: _candidates()[1:])
    result = run("ports")
    assert result.code == ExitCode.OK
    assert result.out.startswith("no shoe found (1 other serial port(s); --all lists them)")
    assert run("ports", "--json").out == ""


# -- errors opening the shoe -----------------------------------------------------------


def test_no_such_device(run: Run, tmp_path: Path) -> None:
    result = run("info", "--device", str(tmp_path / "ttyACM9"))
    assert result.code == ExitCode.DEVICE_NOT_FOUND
    assert "not found" in result.error_line and "shoe-diag ports" in result.error_line


def test_auto_without_a_shoe(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    # Discovery's own sources, empty: no serial port and no USB device.
    monkeypatch.setattr(discovery, "_comports", list)
    monkeypatch.setattr(discovery, "_known_usb_devices", list)
    result = run("counters", "--device", "auto")
    assert result.code == ExitCode.DEVICE_NOT_FOUND
    assert "no shoe found" in result.error_line


def test_permission_denied(run: Run, pty_path: str, mocker: MockerFixture) -> None:
    real_open = os.open

    def kernel_says_no(name: str, flags: int, *args: Any) -> int:
        if name == pty_path:
            raise OSError(errno.EACCES, os.strerror(errno.EACCES), name)
        return real_open(name, flags, *args)

    mocker.patch("serial.serialposix.os.open", side_effect=kernel_says_no)
    result = run("info", "--device", pty_path)
    assert result.code == ExitCode.PERMISSION_DENIED
    assert "permission denied" in result.error_line
    assert "usermod -aG shoe" in result.error_line


@pytest.mark.skipif(os.geteuid() == 0, reason="root opens a mode 000 node anyway")
def test_permission_denied_by_the_node_mode(run: Run, pty_path: str) -> None:
    os.chmod(pty_path, 0)
    result = run("selftest", "--device", pty_path)
    assert result.code == ExitCode.PERMISSION_DENIED


def test_port_busy_while_another_process_holds_it(run: Run, pty_path: str) -> None:
    holder = SerialTransport(pty_path)
    holder.open()
    try:
        result = run("counters", "--device", pty_path)
    finally:
        holder.close()
    assert result.code == ExitCode.DEVICE_BUSY
    line = result.error_line
    assert "in use by another process" in line
    assert "sudo systemctl stop shoe-controller" in line and "ask it instead" in line


def test_malformed_address(run: Run) -> None:
    result = run("info", "--device", "ttyACM0")
    assert result.code == ExitCode.CONFIG
    assert "is not a device address" in result.error_line


def test_bad_simulator_option_in_the_address(run: Run) -> None:
    result = run("info", "--device", "sim://?deck=huge")
    assert result.code == ExitCode.CONFIG
    assert "simulator option deck='huge'" in result.error_line


def test_bad_configuration(run: Run, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[device\naddress = 1\n", encoding="utf-8")
    result = run("info", "--device", SIM, "--config", str(config))
    assert result.code == ExitCode.CONFIG
    assert "is not valid TOML" in result.error_line


def test_configuration_with_a_wrong_key(run: Run, tmp_path: Path) -> None:
    config = write_config(tmp_path / "config.toml", extra="[output]\ncolour = 'never'\n")
    result = run("counters", "--config", str(config), "--device", SIM)
    assert result.code == ExitCode.CONFIG
    assert "unknown key output.colour" in result.error_line


def test_missing_configuration(run: Run, tmp_path: Path) -> None:
    result = run("info", "--device", SIM, "--config", str(tmp_path / "nope.toml"))
    assert result.code == ExitCode.CONFIG
    assert "does not exist" in result.error_line


# -- colour ----------------------------------------------------------------------------


def test_colour_only_when_asked_and_never_with_no_color(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "\x1b[" not in run("selftest", "--device", SIM).out  # not a terminal
    assert "\x1b[32m" in run("selftest", "--device", SIM, "--color", "always").out
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in run("selftest", "--device", SIM, "--color", "always").out


def test_colour_from_the_configuration(run: Run, tmp_path: Path) -> None:
    config = write_config(tmp_path / "config.toml", extra='[output]\ncolor = "always"\n')
    assert "\x1b[" in run("info", "--device", SIM, "--config", str(config)).out
    assert "\x1b[" not in run("info", "--device", SIM, "--config", str(config), "--json").out


# -- a shoe on raw USB (pyusb's real code paths over the simulator's backend) ----------


@pytest.fixture
def usb_shoe(monkeypatch: pytest.MonkeyPatch) -> object:
    usb_backend = pytest.importorskip("shoe_controller.simulator.usb_backend")
    from shoe_controller.hal import usb_transport
    from shoe_controller.simulator import SimOptions

    backend = usb_backend.SimUsbBackend(SimOptions(seed=4, serial_number="USB-7"))
    monkeypatch.setattr(usb_transport, "default_backend", lambda: backend)
    monkeypatch.setattr(discovery, "_comports", list)  # this machine's own serial ports
    return backend


def test_a_usb_shoe_is_listed_then_found_by_auto(
    run: Run, usb_shoe: object, approving_config: Path
) -> None:
    ports = run("ports", "--json")
    assert ports.code == ExitCode.OK
    listed = one_json(ports.out)
    assert (listed["address"], listed["kind"], listed["shoe"]) == (
        "usb://1209:0001?serial=USB-7",
        "usb",
        True,
    )
    info = run("info", "--device", "auto", "--config", str(approving_config), "--json")
    assert info.code == ExitCode.OK, info.err
    shoe = one_json(info.out)
    assert (shoe["device"], shoe["serial_number"], shoe["verified"]) == ("auto", "USB-7", True)


@pytest.mark.rule("A1")
def test_a_usb_shoe_is_approved_only_by_the_list(run: Run, usb_shoe: object) -> None:
    result = run("info", "--device", "usb://1209:0001")
    assert result.code == ExitCode.NOT_APPROVED
    assert "not on the approved list" in result.error_line


def test_a_device_that_does_not_answer(pty_path: str) -> None:
    from shoe_controller.cli.diag_session import ShoeSession
    from shoe_controller.errors import LinkError
    from shoe_controller.link.core import LinkCore

    transport = SerialTransport(pty_path)
    transport.open()
    quick = LinkCore(command_timeout=0.02, silence_limit=0.1, handshake_timeout=0.1)
    with (
        ShoeSession(transport, core=quick) as session,
        pytest.raises(LinkError, match="answered like a shoe"),
    ):
        session.handshake()
    assert not transport.is_open
