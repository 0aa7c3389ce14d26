"""Timing of the protocol, shared by the firmware and the host.

These are the values a conforming shoe uses; the host's silence limit is derived from the
heartbeat period so that two lost heartbeats in a row are tolerated and the third is not.
"""

from __future__ import annotations

from typing import Final

#: The shoe sends a Heartbeat at least this often (seconds), even while sending events.
HEARTBEAT_PERIOD: Final = 1.0
#: The shoe resends an unacknowledged event after this long (seconds), then doubles the wait
#: up to RETRANSMIT_TIMEOUT_MAX, and starts again from RETRANSMIT_TIMEOUT when an AckEvents
#: arrives.
RETRANSMIT_TIMEOUT: Final = 0.25
RETRANSMIT_TIMEOUT_MAX: Final = 2.0
#: The host resends a command that got neither Ack, Nak nor its reply after this long.
COMMAND_TIMEOUT: Final = 0.5
#: Attempts before the host declares that the shoe does not answer a command; also the
#: most times in all a host sends a command the shoe answers with Nak(BUSY).
COMMAND_ATTEMPTS: Final = 4
#: How long the host waits before it sends again, as a new command, one the shoe answered
#: with Nak(BUSY).
BUSY_RETRY_DELAY: Final = 0.25
#: The host declares the link lost after this long without any valid frame from the shoe.
SILENCE_LIMIT: Final = 3.5 * HEARTBEAT_PERIOD
#: The most events a shoe holds unacknowledged; it stops dealing (locks the gate) when full.
MAX_UNACKED_EVENTS: Final = 128
