"""The wire from the shoe to the host, with the line faults of the fault plan.

Frames are queued as segments: the host receives one segment per read of
:meth:`ShoeLine.take`. A frame is normally appended to the current segment; ``split``
cuts it and puts the rest in a new segment, so that the host reads it in pieces.
``drop`` loses the frame, ``dup`` sends it twice, and ``noise`` corrupts each byte with its
probability (the byte is XORed with a random non-zero value, so it always changes).
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass

from shoe_controller.simulator.faults import LineFaultRates


@dataclass(slots=True)
class LineStats:
    frames: int = 0
    dropped: int = 0
    duplicated: int = 0
    split: int = 0
    corrupted_bytes: int = 0


class ShoeLine:
    def __init__(self, rates: LineFaultRates, rng: random.Random) -> None:
        self._rates = rates
        self._rng = rng
        self._segments: deque[bytearray] = deque([bytearray()])
        self.stats = LineStats()

    def send(self, frame: bytes) -> None:
        self.stats.frames += 1
        rates = self._rates
        if not rates.any:
            self._segments[-1] += frame
            return
        rng = self._rng
        if rates.drop and rng.random() < rates.drop:
            self.stats.dropped += 1
            return
        copies = 1
        if rates.dup and rng.random() < rates.dup:
            self.stats.duplicated += 1
            copies = 2
        for _ in range(copies):
            data = self._noisy(frame) if rates.noise else frame
            if rates.split and len(data) > 1 and rng.random() < rates.split:
                self.stats.split += 1
                cut = rng.randrange(1, len(data))
                self._segments[-1] += data[:cut]
                self._segments.append(bytearray(data[cut:]))
            else:
                self._segments[-1] += data

    def _noisy(self, frame: bytes) -> bytes:
        rng, p = self._rng, self._rates.noise
        out = bytearray(frame)
        for i in range(len(out)):
            if rng.random() < p:
                out[i] ^= rng.randrange(1, 256)
                self.stats.corrupted_bytes += 1
        return bytes(out)

    def take(self) -> bytes:
        """The next segment to deliver, or b"" when nothing waits."""
        segments = self._segments
        data = bytes(segments.popleft())
        if not segments:
            segments.append(bytearray())
        return data

    def clear(self) -> int:
        """Lose what is on the wire (the link dropped, the shoe rebooted)."""
        lost = sum(len(s) for s in self._segments)
        self._segments = deque([bytearray()])
        return lost

    @property
    def pending(self) -> int:
        return sum(len(s) for s in self._segments)
