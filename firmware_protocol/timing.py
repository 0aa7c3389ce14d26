"""Timing of the protocol, shared by the firmware and the host.

These are the values a conforming shoe uses; the host's silence limit is derived from the
heartbeat period so that two lost heartbeats in a row are tolerated and the third is not.

With a shoe that announces the FAST_RECOVERY capability (docs/protocol.md, 8 and 9), both
ends measure the round trip and time their retransmissions from it, as RFC 6298 does
(:mod:`firmware_protocol.rtt`): the timeouts below then start at their usual value and
move between their floor (``*_MIN``) and their maximum.
"""

from __future__ import annotations

from typing import Final

#: The shoe sends a Heartbeat at least this often (seconds), even while sending events.
HEARTBEAT_PERIOD: Final = 1.0
#: The shoe resends an unacknowledged event after this long (seconds), then doubles the wait
#: up to RETRANSMIT_TIMEOUT_MAX, and starts again from RETRANSMIT_TIMEOUT when an AckEvents
#: arrives. With FAST_RECOVERY this is the first timeout, before any round trip is measured.
RETRANSMIT_TIMEOUT: Final = 0.25
RETRANSMIT_TIMEOUT_MAX: Final = 2.0
#: With FAST_RECOVERY: the shortest retransmission timeout the shoe computes (seconds).
#: Above the round trip of a card on USB or a 115200-baud line (some 6 ms), so that a
#: timeout means a loss, not a slow host.
RETRANSMIT_TIMEOUT_MIN: Final = 0.01
#: The host resends a command that got neither Ack, Nak nor its reply after this long.
#: With FAST_RECOVERY this is the first timeout, before any round trip is measured.
COMMAND_TIMEOUT: Final = 0.5
#: The longest wait between two attempts of a command (seconds); waits double up to it.
COMMAND_TIMEOUT_MAX: Final = 4 * COMMAND_TIMEOUT
#: With FAST_RECOVERY: the shortest command timeout the host computes (seconds).
COMMAND_TIMEOUT_MIN: Final = 0.01
#: Attempts before the host declares that the shoe does not answer a command; also the
#: most times in all a host sends a command the shoe answers with Nak(BUSY).
COMMAND_ATTEMPTS: Final = 4
#: With FAST_RECOVERY, the command has failed when no reply came this long after it was
#: first sent under its number (seconds), however many attempts the measured timeout
#: allowed meanwhile: as long as COMMAND_ATTEMPTS attempts take at the fixed timeouts
#: (0.5 + 1 + 2 + 2 s), so that a slow command never fails sooner than it used to.
COMMAND_GIVE_UP: Final = 5.5
#: How long the host waits before it sends again, as a new command, one the shoe answered
#: with Nak(BUSY).
BUSY_RETRY_DELAY: Final = 0.25
#: With FAST_RECOVERY: the host sends at most one ResendEvents in this long (seconds), and
#: sends a command again at once (on a damaged frame) at most this often: a burst of noise
#: makes one request, not one per damaged frame.
RESEND_REQUEST_INTERVAL: Final = 0.01
#: The round-trip estimator's gains, as RFC 6298 gives them: the smoothed round trip moves
#: by RTT_GAIN of each new measurement's difference, its variation by RTTVAR_GAIN, and the
#: timeout is the smoothed round trip plus RTTVAR_FACTOR variations, at least
#: CLOCK_GRANULARITY more (the resolution of a firmware's millisecond tick).
RTT_GAIN: Final = 1 / 8
RTTVAR_GAIN: Final = 1 / 4
RTTVAR_FACTOR: Final = 4
CLOCK_GRANULARITY: Final = 0.001
#: The host declares the link lost after this long without any valid frame from the shoe.
SILENCE_LIMIT: Final = 3.5 * HEARTBEAT_PERIOD
#: The most events a shoe holds unacknowledged; it stops dealing (locks the gate) when full.
MAX_UNACKED_EVENTS: Final = 128
