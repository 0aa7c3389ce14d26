"""shoe-diag monitor: frames decoded live, card identities hidden unless the shoe is in test
mode outside any round, never an acknowledgement sent."""

from __future__ import annotations

import json
from typing import Any

import pytest

from firmware_protocol import (
    Ack,
    Card,
    CardDrawn,
    Flags,
    GateMode,
    Hello,
    Nak,
    NakReason,
    SetTestMode,
    encode_frame,
)
from shoe_controller.cli import diag_monitor, diag_session
from shoe_controller.cli.diag_monitor import HIDDEN, FrameView
from shoe_controller.errors import ExitCode
from shoe_controller.simulator import SimOptions, SimulatedShoe
from shoe_controller.simulator.transport import SimTransport
from tests.cli.conftest import Run

pytestmark = pytest.mark.usefixtures("hermetic")


class HandsOnShoe(SimTransport):
    """A simulated shoe whose technician pulls one card past the locked gate once the
    shoe is in test mode (``pull_in_test_mode``), as when testing its reader."""

    def __init__(self, address: str, *, pull_in_test_mode: bool = True) -> None:
        super().__init__(SimOptions.from_address(address), address=address)
        self.pull_in_test_mode = pull_in_test_mode
        self.pulled: Card | None = None
        self.model: SimulatedShoe | None = None

    def open(self) -> None:
        super().open()
        self.model = self.shoe

    def read(self, timeout: float) -> bytes:
        if self.pull_in_test_mode and self.pulled is None:
            with self.runner.locked() as shoe:
                if shoe.test_mode and shoe.pull_card(force=True):
                    self.pulled = shoe.draws[-1].card
        return super().read(timeout)


@pytest.fixture
def hands_on(monkeypatch: pytest.MonkeyPatch) -> list[HandsOnShoe]:
    """Every address the monitor opens becomes a HandsOnShoe, kept here for inspection."""
    opened: list[HandsOnShoe] = []

    def opener(address: str) -> HandsOnShoe:
        transport = HandsOnShoe(address)
        opened.append(transport)
        return transport

    monkeypatch.setattr(diag_session, "open_transport", opener)
    return opened


def frames(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def cards(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in found if f.get("type") == "CardDrawn"]


def test_frames_as_json_lines(run: Run) -> None:
    result = run("monitor", "--device", "sim://?seed=5", "--count", "3", "--json")
    assert result.code == ExitCode.OK, result.err
    found = frames(result.out)
    assert found[0]["from"] == "host" and found[0]["type"] == "GetIdentity"
    assert found[0]["fields"] == {"protocol_versions": [1]}
    from_shoe = [f for f in found if f["from"] == "shoe"]
    assert len(from_shoe) == 3  # --count counts the shoe's frames
    assert [f["type"] for f in from_shoe] == ["Hello", "Hello", "DeckLoaded"]
    assert from_shoe[1]["flags"] == ["response"]
    assert from_shoe[2]["flags"] == ["event"]
    hello = from_shoe[0]["fields"]
    assert hello["model"] == "ES-SIM" and hello["serial_number"] == "SIM-00001"
    assert all(set(f) == {"t", "from", "seq", "flags", "type", "fields"} for f in found)
    assert [f["t"] for f in found] == sorted(f["t"] for f in found)


@pytest.mark.rule("E1")
def test_cards_are_hidden_outside_test_mode(run: Run) -> None:
    # early_draw: a card leaves past the locked gate as the shoe starts.
    result = run(
        "monitor", "--device", "sim://?faults=early_draw", "--count", "4", "--json", "--raw"
    )
    assert result.code == ExitCode.OK, result.err
    (card,) = cards(frames(result.out))
    assert card["fields"]["card"] == HIDDEN
    assert card["fields"]["draw_index"] == 1
    assert card["raw"] is None  # its bytes would tell the card
    hello = next(f for f in frames(result.out) if f["type"] == "Hello")
    assert bytes.fromhex(hello["raw"]).endswith(b"\x00")


@pytest.mark.rule("E1")
def test_human_lines_and_hex_dump_hide_the_card(run: Run) -> None:
    result = run("monitor", "--device", "sim://?faults=early_draw", "--count", "4", "--raw")
    assert result.code == ExitCode.OK, result.err
    lines = result.out.splitlines()
    card_at = next(i for i, line in enumerate(lines) if " CardDrawn " in line)
    assert "card=hidden gate_mode=locked" in lines[card_at]
    assert "bytes not shown: the frame carries a card identity" in lines[card_at + 1]
    hello_at = next(i for i, line in enumerate(lines) if " Hello " in line)
    assert lines[hello_at + 1].split()[:2] == ["0000", "03"]
    assert "card identities are hidden unless in test mode" in result.err


@pytest.mark.rule("E1")
def test_test_mode_shows_the_cards_drawn_in_it(run: Run, hands_on: list[HandsOnShoe]) -> None:
    result = run(
        "monitor", "--device", "sim://?seed=8", "--test-mode", "--seconds", "0.8", "--json"
    )
    assert result.code == ExitCode.OK, result.err
    (shoe,) = hands_on
    assert shoe.pulled is not None
    found = frames(result.out)
    asked = next(f for f in found if f["type"] == "SetTestMode")
    assert asked["fields"] == {"enabled": True}
    drawn = cards(found)
    assert drawn, "the card pulled in test mode was not seen"
    assert {f["fields"]["card"] for f in drawn} == {shoe.pulled.text}
    # On the way out the monitor takes the shoe out of test mode, and acknowledged nothing.
    assert found[-1]["type"] == "Ack"
    assert shoe.model is not None
    assert shoe.model.test_mode is False
    assert shoe.model.acknowledged == 0 and shoe.model.unacked


@pytest.mark.rule("E1")
def test_test_mode_refused_during_a_deal_keeps_cards_hidden(run: Run) -> None:
    result = run(
        "monitor",
        "--device",
        "sim://?faults=early_draw",
        "--test-mode",
        "--count",
        "8",
        "--json",
    )
    assert result.code == ExitCode.OK
    assert "refused test mode (a deck is being dealt)" in result.err
    assert len(result.err.splitlines()) == 1
    found = frames(result.out)
    assert any(f["type"] == "Nak" for f in found)
    assert {f["fields"]["card"] for f in cards(found)} == {HIDDEN}


class SteppingClock:
    """A clock that moves on by ``step`` each time it is read, whatever the machine does."""

    def __init__(self, step: float) -> None:
        self.step = step
        self.readings: list[float] = []

    def __call__(self) -> float:
        now = len(self.readings) * self.step
        self.readings.append(now)
        return now


def test_seconds_stops_the_monitor(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    """--seconds is kept on the monitor's clock: it stops once that much has passed on
    it, and no later than one reading after."""
    clock = SteppingClock(step=0.01)
    monkeypatch.setattr(diag_monitor, "clock", clock)
    result = run("monitor", "--device", "sim://", "--seconds", "0.5", "--json")
    assert result.code == ExitCode.OK
    # The link came up and was shown, then the monitor gave up the shoe on its own.
    assert any(f["type"] == "Hello" for f in frames(result.out))
    began = clock.readings[0]
    over = [t for t in clock.readings if t - began >= 0.5]
    assert over, "the monitor stopped before its clock reached --seconds"
    # What the monitor reads after the one that ends it is only its goodbye to the link.
    assert clock.readings.index(over[0]) >= len(clock.readings) - 10


# -- the frame view on its own ---------------------------------------------------------


class Ticks:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.001
        return self.now


def hello(boot_id: int) -> bytes:
    message = Hello((1,), "ES-SIM", "S-1", "sim-1", "1.0.0", bytes(32), 0x7F, boot_id, 1)
    return encode_frame(message, 0)


def drawn(seq: int, code: int, gate: GateMode = GateMode.LOCKED, again: bool = False) -> bytes:
    flags = Flags.RETRANSMIT if again else Flags.NONE
    return encode_frame(CardDrawn(seq, Card.from_code(code), gate, 99), seq, flags)


def shown_cards(view: FrameView, *chunks: bytes) -> list[str]:
    out = []
    for chunk in chunks:
        for frame in view.feed("shoe", chunk):
            if frame.packet is not None and isinstance(frame.packet.message, CardDrawn):
                out.append(frame.fields()["card"])
    return out


def in_test_mode(view: FrameView) -> FrameView:
    view.feed("host", encode_frame(SetTestMode(True), 7))
    view.test_mode_seq = 7
    view.feed("shoe", hello(1) + encode_frame(Ack(), 7, Flags.RESPONSE))
    assert view.test_mode
    return view


@pytest.mark.rule("E1")
def test_only_cards_drawn_after_the_acknowledgement_are_shown() -> None:
    view = FrameView(clock=Ticks())
    before = drawn(3, 0x01)
    assert shown_cards(view, hello(1), before) == [HIDDEN]
    in_test_mode(view)
    assert shown_cards(view, drawn(3, 0x01, again=True)) == [HIDDEN]  # from before
    assert shown_cards(view, drawn(4, 0x12)) == ["2H"]
    assert shown_cards(view, drawn(4, 0x12, again=True)) == ["2H"]
    assert shown_cards(view, drawn(5, 0x13, GateMode.DEAL)) == [HIDDEN]
    assert shown_cards(view, drawn(6, 0x23, GateMode.STUB)) == [HIDDEN]


@pytest.mark.rule("E1")
def test_a_restart_ends_the_test_mode() -> None:
    view = in_test_mode(FrameView(clock=Ticks()))
    assert shown_cards(view, drawn(4, 0x12)) == ["2H"]
    assert shown_cards(view, hello(2), drawn(4, 0x12, again=True), drawn(5, 0x33)) == [
        HIDDEN,
        HIDDEN,
    ]
    assert not view.test_mode


def test_a_refusal_is_kept() -> None:
    view = FrameView(clock=Ticks())
    view.test_mode_seq = 9
    view.feed(
        "shoe", encode_frame(Nak(NakReason.NOT_NOW, "a deck is being dealt"), 9, Flags.RESPONSE)
    )
    assert not view.test_mode
    assert view.refused is not None and view.refused.reason is NakReason.NOT_NOW


def test_garbage_and_frames_split_anywhere() -> None:
    view = FrameView(clock=Ticks())
    stream = b"\x11\x22\x00" + hello(1)
    seen = []
    for i in range(len(stream)):
        seen += view.feed("shoe", stream[i : i + 1])
    assert len(seen) == 2
    assert seen[0].packet is None and seen[0].error is not None
    assert seen[0].to_json(raw=True)["error"] == "malformed"
    assert seen[0].to_json(raw=True)["raw"] is None  # an undecoded frame's bytes never show
    assert seen[0].to_json(raw=True)["bytes"] == 3
    assert "(dropped)" in seen[0].line()
    assert seen[1].packet is not None and isinstance(seen[1].packet.message, Hello)
    overlong = view.feed("shoe", b"\x01" * 300)
    assert len(overlong) == 1 and overlong[0].error is not None
    assert overlong[0].error.kind == "oversized"


@pytest.mark.rule("E1")
@pytest.mark.parametrize("where", ["crc", "card"])
def test_an_undecoded_card_frame_never_shows_its_bytes(where: str) -> None:
    frame = bytearray(drawn(5, 0x12, GateMode.DEAL))  # 2H, dealt
    if where == "crc":
        frame[-2] ^= 0x01  # the line flipped a bit of the CRC: the card byte is intact
    else:
        frame[3] = 0xFF  # the type byte: a message whose fields do not decode
    view = FrameView(clock=Ticks())
    (dropped,) = view.feed("shoe", bytes(frame))
    assert dropped.packet is None
    assert f"{len(frame)} bytes: " in dropped.line()
    assert [line.strip() for line in dropped.dump()] == [
        f"({len(frame)} bytes not shown: an undecoded frame may hold a card)"
    ]
    as_json = dropped.to_json(raw=True)
    assert as_json["raw"] is None and as_json["bytes"] == len(frame)
    text = dropped.line() + json.dumps(as_json)
    assert bytes(frame[1:-1]).hex() not in text and bytes(frame[1:-1]).hex(" ") not in text
