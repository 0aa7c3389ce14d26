"""``shoe-diag monitor``: the frames on the link, decoded, as they pass.

Card identities are hidden (rule E1) unless the shoe is in its test mode outside any round:
only when ``--test-mode`` was asked for and the shoe acknowledged it, and then only for
cards drawn after that acknowledgement while the gate was locked (not part of a deal). A
card from before (the shoe sends its unacknowledged events again), drawn through an open
gate, or drawn after the shoe restarted (which ends its test mode) stays hidden. The hex
dump of a frame that carries a hidden card is not shown either: its bytes tell the card.
Nor is any byte of a frame that could not be decoded (a card frame with a bad CRC still
holds the card's code): only its length and why it was dropped.

The monitor never acknowledges an event: the shoe keeps them all for the service.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from firmware_protocol import (
    Ack,
    CardDrawn,
    Flags,
    GateMode,
    Hello,
    Nak,
    Packet,
    SetTestMode,
)
from firmware_protocol.framing import DELIMITER, MAX_ENCODED_FRAME, FrameError, decode_frame
from shoe_controller.cli.diag_common import Context, message_fields
from shoe_controller.cli.diag_session import Direction, ShoeSession
from shoe_controller.errors import ExitCode, LinkError, ShoeControllerError
from shoe_controller.link.events import CommandFailed

HIDDEN: Final = "hidden"
#: How long one wait for the link lasts, so that --seconds is kept to.
_TICK = 0.25
#: The monitor's clock, and its link's: --seconds is measured on it.
clock: Callable[[], float] = time.monotonic


@dataclass(frozen=True)
class Frame:
    """One frame (or run of bytes that is not a frame) seen on the link."""

    t: float
    direction: Direction
    raw: bytes
    packet: Packet | None = None
    error: FrameError | None = None
    #: The frame carries a card identity that is not shown.
    hidden: bool = False

    def fields(self) -> dict[str, Any]:
        if self.packet is None:
            return {}
        values = message_fields(self.packet.message)
        if self.hidden:
            values["card"] = HIDDEN
        return values

    def to_json(self, raw: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"t": round(self.t, 6), "from": self.direction}
        if self.packet is None:
            assert self.error is not None
            out.update(error=self.error.kind, detail=_reason(self.error), bytes=len(self.raw))
        else:
            out.update(
                seq=self.packet.seq,
                flags=_flag_names(self.packet.flags),
                type=type(self.packet.message).__name__,
                fields=self.fields(),
            )
        if raw:
            out["raw"] = None if self.hidden or self.packet is None else self.raw.hex()
        return out

    def line(self) -> str:
        head = f"{self.t:9.3f}  {self.direction:<4}  "
        if self.packet is None:
            assert self.error is not None
            reason = f"{self.error.kind}: {_reason(self.error)}"
            return head + f"{'(dropped)':<14} {len(self.raw)} bytes: {reason}"
        name = type(self.packet.message).__name__
        flags = ",".join(_flag_names(self.packet.flags)) or "-"
        values = " ".join(f"{k}={_text(v)}" for k, v in self.fields().items())
        return f"{head}{name:<14} seq={self.packet.seq:<6} {flags:<17} {values}".rstrip()

    def dump(self) -> Iterator[str]:
        """The frame's bytes as they were on the wire, 16 to a line."""
        if self.hidden:
            yield f"{'':17}({len(self.raw)} bytes not shown: the frame carries a card identity)"
            return
        if self.packet is None:
            yield f"{'':17}({len(self.raw)} bytes not shown: an undecoded frame may hold a card)"
            return
        for offset in range(0, len(self.raw), 16):
            chunk = self.raw[offset : offset + 16]
            yield f"{'':17}{offset:04x}  {chunk.hex(' ')}"


def _reason(error: FrameError) -> str:
    """Why a frame was dropped, without any value read from it: a field that does not
    decode is named by its message type only."""
    if error.kind == "malformed" and error.detail.startswith("type 0x"):
        return error.detail.split(":", 1)[0] + ": its fields do not decode"
    return error.detail


def _flag_names(flags: Flags) -> list[str]:
    return [flag.name.lower() for flag in Flags if flag.value and flag in flags and flag.name]


def _text(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    if isinstance(value, str) and (not value or " " in value):
        return repr(value)
    return str(value)


@dataclass
class FrameView:
    """Splits each direction's bytes into frames and decides what may be shown."""

    clock: Callable[[], float] = time.monotonic
    start: float = field(default=0.0)
    #: Sequence number of our SetTestMode(True), until the shoe answers it.
    test_mode_seq: int | None = None
    #: The shoe acknowledged test mode (and has not restarted since).
    test_mode: bool = False
    #: The shoe refused test mode: its Nak.
    refused: Nak | None = None
    _boot_id: int | None = None
    #: Event sequence numbers of the cards drawn in test mode, shown again when resent.
    _shown: set[int] = field(default_factory=set)
    _buffers: dict[str, bytearray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.start = self.clock()

    def feed(self, direction: Direction, data: bytes) -> list[Frame]:
        buf = self._buffers.setdefault(direction, bytearray())
        buf += data
        frames: list[Frame] = []
        while (end := buf.find(DELIMITER)) >= 0:
            chunk = bytes(buf[: end + 1])
            del buf[: end + 1]
            if end:  # a lone delimiter is idle fill
                frames.append(self._frame(direction, chunk))
        if len(buf) > MAX_ENCODED_FRAME:
            frames.append(self._frame(direction, bytes(buf)))
            buf.clear()
        return frames

    def _frame(self, direction: Direction, raw: bytes) -> Frame:
        t = self.clock() - self.start
        try:
            packet = decode_frame(raw.rstrip(DELIMITER))
        except FrameError as exc:
            return Frame(t, direction, raw, error=exc)
        hidden = False
        if direction == "shoe":
            self._follow(packet)
            hidden = isinstance(packet.message, CardDrawn) and not self._may_show(packet)
        return Frame(t, direction, raw, packet, hidden=hidden)

    def _follow(self, packet: Packet) -> None:
        message = packet.message
        if isinstance(message, Hello):
            if self._boot_id is not None and message.boot_id != self._boot_id:
                # A restart ends the test mode; the event numbers may start again.
                self.test_mode = False
                self._shown.clear()
            self._boot_id = message.boot_id
        elif Flags.RESPONSE in packet.flags and packet.seq == self.test_mode_seq:
            self.test_mode_seq = None
            if isinstance(message, Ack):
                self.test_mode = True
            elif isinstance(message, Nak):
                self.refused = message

    def _may_show(self, packet: Packet) -> bool:
        message = packet.message
        assert isinstance(message, CardDrawn)
        if message.gate_mode is not GateMode.LOCKED:
            return False  # a card of a deal
        if Flags.RETRANSMIT in packet.flags:
            return packet.seq in self._shown
        # Frames keep their order on the line: first sent after the acknowledgement, it
        # was drawn in test mode.
        if self.test_mode:
            self._shown.add(packet.seq)
            return True
        return False


def monitor(ctx: Context) -> int:
    count: int | None = ctx.option("count")
    seconds: float | None = ctx.option("seconds")
    raw = bool(ctx.option("raw"))
    out = ctx.out
    view = FrameView()
    shown = 0

    def show(direction: Direction, data: bytes) -> None:
        nonlocal shown
        for frame in view.feed(direction, data):
            if count is not None and shown >= count:
                return
            if direction == "shoe":
                shown += 1
            if ctx.json:
                out.json(frame.to_json(raw))
                continue
            out.line(frame.line(), *(("dim",) if frame.packet is None else ()))
            if raw:
                for text in frame.dump():
                    out.line(text, "dim")

    def done() -> bool:
        over = seconds is not None and clock() - began >= seconds
        return over or (count is not None and shown >= count)

    began = clock()
    if not ctx.json:
        out.warn(f"monitoring {ctx.device}; card identities are hidden unless in test mode")
    with ShoeSession.open(ctx.device, tap=show, clock=clock) as session:
        if ctx.option("test_mode"):
            _enter_test_mode(session, view, out.warn)
        try:
            while not done():
                until = clock() + _TICK
                if seconds is not None:
                    until = min(until, began + seconds)
                session.pump(until)
                session.drain()
        except KeyboardInterrupt:
            pass  # Ctrl-C is how a technician ends the monitor
        finally:
            if view.test_mode:
                _leave_test_mode(session)
    return int(ExitCode.OK)


def _enter_test_mode(session: ShoeSession, view: FrameView, warn: Callable[[str], None]) -> None:
    handle = session.send(SetTestMode(True))
    view.test_mode_seq = handle.seq
    outcome = session.outcome(handle)
    if isinstance(outcome, CommandFailed):
        view.test_mode_seq = None
        if outcome.nak is None:
            raise LinkError(f"{outcome}: the shoe at {session.address} did not take test mode")
        warn(
            f"the shoe refused test mode ({outcome.nak.text or outcome.nak.reason.name}): "
            "card identities stay hidden; finish or void the round first"
        )


def _leave_test_mode(session: ShoeSession) -> None:
    # When the link is gone, the shoe leaves test mode as it restarts.
    with contextlib.suppress(ShoeControllerError):
        session.command(SetTestMode(False))
