"""The retransmission timeout measured from the round trip, as RFC 6298 computes it.

Both ends of a link whose shoe announces the FAST_RECOVERY capability keep one
(docs/protocol.md, 8 and 9): the shoe for its events, from an event's first send to the
AckEvents that covers it; the host for its commands, from a command's send to its reply.
Only an unambiguous round trip is measured: a frame that was sent again gives none (Karn's
algorithm), since its answer may be the first send's.

Sans-I/O like the rest of the package: the caller measures the time and says what
happened; all values are in seconds.
"""

from __future__ import annotations

from firmware_protocol.timing import CLOCK_GRANULARITY, RTT_GAIN, RTTVAR_FACTOR, RTTVAR_GAIN


class RetransmitTimer:
    """The timeout to wait for an answer before sending again.

    It is ``initial`` until the first measurement; then the smoothed round trip plus four
    times its variation, kept between ``minimum`` and ``maximum``. Each timeout that
    passes doubles it (:meth:`back_off`, up to ``maximum``) until the next measurement.
    """

    __slots__ = ("_base", "_timeout", "initial", "maximum", "minimum", "rttvar", "srtt")

    def __init__(self, initial: float, minimum: float, maximum: float) -> None:
        if not 0 < minimum <= maximum or not 0 < initial <= maximum:
            raise ValueError(
                f"timeouts must be positive with minimum <= maximum and initial <= maximum: "
                f"initial {initial!r}, minimum {minimum!r}, maximum {maximum!r}"
            )
        self.initial = initial
        self.minimum = minimum
        self.maximum = maximum
        #: The smoothed round trip (None before the first measurement), and its variation.
        self.srtt: float | None = None
        self.rttvar = 0.0
        # The timeout the measurements give, and the one in force (backed off from it).
        self._base = initial
        self._timeout = initial

    @property
    def timeout(self) -> float:
        """How long to wait now for an answer before sending again."""
        return self._timeout

    @property
    def measured(self) -> bool:
        return self.srtt is not None

    def measure(self, rtt: float) -> None:
        """One round trip, of a frame sent once: update the estimate (RFC 6298, 2.2 and
        2.3; the variation first, from the smoothed value before this measurement)."""
        rtt = max(rtt, 0.0)
        srtt = self.srtt
        if srtt is None:
            srtt, self.rttvar = rtt, rtt / 2
        else:
            self.rttvar += RTTVAR_GAIN * (abs(srtt - rtt) - self.rttvar)
            srtt += RTT_GAIN * (rtt - srtt)
        self.srtt = srtt
        timeout = srtt + max(CLOCK_GRANULARITY, RTTVAR_FACTOR * self.rttvar)
        self._base = self._timeout = min(max(timeout, self.minimum), self.maximum)

    def back_off(self) -> float:
        """A timeout passed unanswered: double the timeout, up to ``maximum``, until the next
        measurement (RFC 6298, 5.5). Returns the new timeout."""
        self._timeout = min(self._timeout * 2, self.maximum)
        return self._timeout

    def restart(self) -> None:
        """Undo the back-off: the timeout is the estimate's again."""
        self._timeout = self._base

    def reset(self) -> None:
        """Forget every measurement (a new connection, another shoe)."""
        self.srtt = None
        self.rttvar = 0.0
        self._base = self._timeout = self.initial

    def __repr__(self) -> str:
        srtt = "unmeasured" if self.srtt is None else f"srtt={self.srtt * 1000:.2f}ms"
        return f"<RetransmitTimer {srtt} timeout={self._timeout * 1000:.2f}ms>"
