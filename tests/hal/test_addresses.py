"""Device address parsing and the scheme registry."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator

import pytest

from shoe_controller.errors import BackendUnavailable, ConfigError
from shoe_controller.hal import addresses, usb_ids
from shoe_controller.hal.addresses import (
    Address,
    check_shoe_address,
    known_schemes,
    open_transport,
    parse_address,
    register_scheme,
    transport_class,
)
from shoe_controller.hal.auto_transport import AutoTransport
from shoe_controller.hal.serial_transport import SerialTransport
from shoe_controller.hal.usb_transport import UsbTransport

LAZY_MODULE = "tests.hal.lazy_transport"


@pytest.fixture(autouse=True)
def restore_registry() -> Iterator[None]:
    saved = dict(addresses._registry)
    yield
    addresses._registry.clear()
    addresses._registry.update(saved)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/dev/ttyACM0", Address("/dev/ttyACM0", "serial", path="/dev/ttyACM0")),
        (
            "  /dev/electronic-shoe\n",
            Address("/dev/electronic-shoe", "serial", path="/dev/electronic-shoe"),
        ),
        ("./pty-link", Address("./pty-link", "serial", path="./pty-link")),
        ("auto", Address("auto", "auto")),
        ("AUTO", Address("AUTO", "auto")),
        (
            "socket://127.0.0.1:7000",
            Address("socket://127.0.0.1:7000", "socket", path="127.0.0.1:7000"),
        ),
        ("loop://", Address("loop://", "loop")),
        ("socket://[::1]:7", Address("socket://[::1]:7", "socket", path="[::1]:7")),
        (
            "spy:///dev/ttyUSB0?file=log.txt",
            Address(
                "spy:///dev/ttyUSB0?file=log.txt", "spy", path="/dev/ttyUSB0", query="file=log.txt"
            ),
        ),
        (
            "rfc2217://host:2217?timeout=3",
            Address(
                "rfc2217://host:2217?timeout=3", "rfc2217", path="host:2217", query="timeout=3"
            ),
        ),
        (
            "alt:///dev/ttyS0?class=PosixPollSerial",
            Address(
                "alt:///dev/ttyS0?class=PosixPollSerial",
                "alt",
                path="/dev/ttyS0",
                query="class=PosixPollSerial",
            ),
        ),
        ("hwgrep://1209:0001", Address("hwgrep://1209:0001", "hwgrep", path="1209:0001")),
        (
            "usb://",
            Address("usb://", "usb", vid=usb_ids.VENDOR_ID, pid=usb_ids.PRODUCT_ID),
        ),
        (
            "usb://16c0:05DC",
            Address("usb://16c0:05DC", "usb", path="16c0:05DC", vid=0x16C0, pid=0x05DC),
        ),
        (
            "usb://0x1209:0x0001?serial=ES-042",
            Address(
                "usb://0x1209:0x0001?serial=ES-042",
                "usb",
                path="0x1209:0x0001",
                query="serial=ES-042",
                vid=0x1209,
                pid=0x0001,
                serial_number="ES-042",
            ),
        ),
        (
            "usb://?serial=A%20B",
            Address(
                "usb://?serial=A%20B",
                "usb",
                query="serial=A%20B",
                vid=usb_ids.VENDOR_ID,
                pid=usb_ids.PRODUCT_ID,
                serial_number="A B",
            ),
        ),
        (
            "SIM://?seed=7&deck=short&faults=misread@12,noise=0.01&pace=0",
            Address(
                "SIM://?seed=7&deck=short&faults=misread@12,noise=0.01&pace=0",
                "sim",
                query="seed=7&deck=short&faults=misread@12,noise=0.01&pace=0",
            ),
        ),
    ],
)
def test_parse_address(text: str, expected: Address) -> None:
    assert parse_address(text) == expected
    assert str(parse_address(text)) == text.strip()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no device address given"),
        ("   ", "no device address given"),
        ("ttyACM0", "is not a device address"),
        ("COM3", "is not a device address"),
        ("ftp://host", "unknown device address scheme ftp://"),
        ("serial:///dev/ttyS0", "unknown device address scheme serial://"),
        ("auto://", "unknown device address scheme auto://"),
        ("socket://localhost", "expected socket://HOST:PORT"),
        ("socket://localhost:0", "expected socket://HOST:PORT"),
        ("socket://localhost:65536", "expected socket://HOST:PORT"),
        ("socket://:7000", "expected socket://HOST:PORT"),
        ("rfc2217://host", "expected rfc2217://HOST:PORT"),
        ("usb://1209", "expected usb://VID:PID"),
        ("usb://12345:0001", "expected usb://VID:PID"),
        ("usb://wxyz:0001", "expected usb://VID:PID"),
        ("usb://?port=3", "unknown option 'port'"),
        ("usb://?serial=", "serial= needs"),
        ("usb://?serial", "malformed options"),
        ("usb://?serial=a&&x", "malformed options"),
    ],
)
def test_bad_addresses_are_one_line_config_errors(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        parse_address(text)
    assert "\n" not in str(info.value)


def test_unknown_scheme_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as info:
        parse_address("bluetooth://shoe")
    text = str(info.value)
    for scheme in ("socket://", "loop://", "spy://", "rfc2217://", "usb://", "sim://", "auto"):
        assert scheme in text
    assert "serial://" not in text


def test_every_scheme_maps_to_a_transport_class() -> None:
    expected = {
        "serial": SerialTransport,
        "socket": SerialTransport,
        "loop": SerialTransport,
        "spy": SerialTransport,
        "rfc2217": SerialTransport,
        "alt": SerialTransport,
        "hwgrep": SerialTransport,
        "usb": UsbTransport,
        "auto": AutoTransport,
    }
    for scheme, cls in expected.items():
        assert transport_class(scheme) is cls
    assert set(known_schemes()) == {*expected, "sim"}


@pytest.mark.parametrize(
    ("address", "cls"),
    [
        ("/dev/ttyACM0", SerialTransport),
        ("socket://127.0.0.1:1", SerialTransport),
        ("usb://1209:0001?serial=X", UsbTransport),
        ("auto", AutoTransport),
    ],
)
def test_open_transport_returns_an_unopened_transport(address: str, cls: type) -> None:
    transport = open_transport(address)
    assert type(transport) is cls
    assert not transport.is_open
    assert transport.address == address
    transport.close()  # closing an unopened transport is harmless


def test_usb_address_carries_ids_and_serial_number() -> None:
    transport = open_transport("usb://16c0:05dc?serial=ES-9")
    assert isinstance(transport, UsbTransport)
    assert (transport.vid, transport.pid, transport.serial_number) == (0x16C0, 0x05DC, "ES-9")


def test_serial_path_is_given_to_pyserial_without_scheme() -> None:
    transport = open_transport("/dev/electronic-shoe")
    assert isinstance(transport, SerialTransport)
    assert transport.url == "/dev/electronic-shoe"


def test_registered_module_is_imported_only_when_opened() -> None:
    sys.modules.pop(LAZY_MODULE, None)
    register_scheme("lazy", f"{LAZY_MODULE}:LazyTransport")
    assert parse_address("lazy://x?y=1").scheme == "lazy"
    assert LAZY_MODULE not in sys.modules
    transport = open_transport("lazy://x?y=1")
    assert LAZY_MODULE in sys.modules
    assert type(transport).__name__ == "LazyTransport"
    assert transport.address == "lazy://x?y=1"


def test_registering_the_same_target_again_is_harmless() -> None:
    target = "shoe_controller.simulator.transport:SimTransport"
    register_scheme("sim", target)
    register_scheme("sim", target)
    assert addresses._registry["sim"] == target


@pytest.mark.parametrize(
    ("scheme", "target"),
    [("Bad", "a.b:C"), ("ok", "no_colon"), ("ok", ":C"), ("ok", "a.b:")],
)
def test_register_scheme_rejects_malformed_entries(scheme: str, target: str) -> None:
    with pytest.raises(ValueError):
        register_scheme(scheme, target)


def test_a_transport_module_that_cannot_load_is_backend_unavailable() -> None:
    register_scheme("gone", "shoe_controller.hal.no_such_module:Nothing")
    with pytest.raises(BackendUnavailable, match=r"the gone:// transport cannot be loaded"):
        open_transport("gone://")


def test_a_target_that_is_not_a_transport_is_a_programming_error() -> None:
    register_scheme("notone", "shoe_controller.hal.usb_ids:VENDOR_ID")
    with pytest.raises(TypeError, match="is not a Transport class"):
        open_transport("notone://")


def test_sim_addresses_reach_the_simulator_by_name() -> None:
    module = pytest.importorskip("shoe_controller.simulator.transport")
    transport = open_transport("sim://?seed=7&pace=0")
    assert type(transport) is module.SimTransport
    assert transport.in_process_simulator
    assert not transport.is_open


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("sim://", ("sim", "", "", "SimTransport")),
        ("sim://?seed=3&pace=0", ("sim", "", "seed=3&pace=0", "SimTransport")),
        ("/dev/electronic-shoe", ("serial", "/dev/electronic-shoe", "", "SerialTransport")),
        ("socket://localhost:7000", ("socket", "localhost:7000", "", "SerialTransport")),
        ("usb://1209:0001?serial=SN1", ("usb", "1209:0001", "serial=SN1", "UsbTransport")),
        ("auto", ("auto", "", "", "AutoTransport")),
        ("spy:///dev/ttyACM0", ("spy", "/dev/ttyACM0", "", "SerialTransport")),
    ],
)
def test_check_shoe_address_accepts_what_can_reach_a_shoe(
    address: str, expected: tuple[str, str, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The address is parsed as written and the transport that reaches that kind of shoe
    is built (never opened: building holds no device)."""
    scheme, path, query, transport = expected
    built: list[object] = []
    real = addresses.open_transport

    def recording(text: str) -> object:
        built.append(real(text))
        return built[-1]

    monkeypatch.setattr(addresses, "open_transport", recording)
    parsed = check_shoe_address(address)
    assert (parsed.text, parsed.scheme, parsed.path, parsed.query) == (
        address,
        scheme,
        path,
        query,
    )
    assert [type(t).__name__ for t in built] == [transport]
    if scheme == "usb":
        assert (parsed.vid, parsed.pid, parsed.serial_number) == (0x1209, 0x0001, "SN1")


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("loop://", "loop:// is pyserial's loopback"),
        ("LOOP://?logging=debug", "loop:// is pyserial's loopback"),
        ("spy://loop://?file=x", "loop:// is pyserial's loopback"),
        ("sim://?fault=bogus", "unknown simulator option 'fault'"),
        ("sim://?window=0", "window='0'"),
        ("sim://?heartbeat=nan", "heartbeat='nan'"),
        ("usb://1209", "expected usb://VID:PID"),
        ("nope://x", "unknown device address scheme"),
    ],
)
def test_check_shoe_address_refuses_what_cannot(address: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(expected)):
        check_shoe_address(address)
