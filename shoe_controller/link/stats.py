"""Counters of what the link dropped, repaired and did, for diagnostics."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class LinkStats:
    """Counters of what the link dropped or repaired, for diagnostics."""

    events_delivered: int = 0
    duplicate_events: int = 0
    out_of_order_events: int = 0
    events_outside_window: int = 0
    events_before_handshake: int = 0
    events_lost: int = 0
    commands_sent: int = 0
    command_retransmissions: int = 0
    busy_retries: int = 0
    duplicate_replies: int = 0
    stale_replies: int = 0
    wrong_version_frames: int = 0
    unknown_messages: int = 0
    unexpected_messages: int = 0
    acks_sent: int = 0
    #: ResendEvents sent, and commands sent again at once on a damaged frame (both only
    #: to a shoe with FAST_RECOVERY; the latter also count as command retransmissions).
    resend_requests: int = 0
    hastened_commands: int = 0
    shoe_restarts: int = 0
    handshakes: int = 0
    links_lost: int = 0
