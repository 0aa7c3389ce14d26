"""The journal as the outbox: which records are public, and the event each one is.

:func:`public_event` projects one journal record onto the event a subscriber of the
``--json`` stream sees for it, with the record's wall time as ``ts`` and its round id as
``round``; records that are not public (card identities, the stub's cards, inputs, the
shoe's raw events) project onto None. Confidentiality (rule E1) is decided here: a
``card`` record publishes its index and position, never its card; a ``round_closed``
record publishes the banker's hand and the wagered positions' hands only (E2).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from shoe_controller.journal.records import BANKER, Kind, Record
from shoe_controller.service import events as ev

#: How a ``link`` record's state reads in the event stream.
_LINK_STATUS = {"down": "lost", "lost": "lost", "events_lost": "events_lost", "error": "error"}


def public_event(record: Record) -> ev.ServiceEvent | None:
    """The public event of ``record``, or None when the record is not public."""
    try:
        payload = record.payload_object()
        return _project(record, payload, _wall(record.wall))
    except (ValueError, KeyError, TypeError, IndexError):
        # A record the projection cannot read publishes nothing rather than something wrong.
        return None


def _wall(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _project(record: Record, p: dict[str, Any], ts: datetime) -> ev.ServiceEvent | None:
    kind, rnd = record.kind, record.round_id
    if kind == Kind.STATE:
        return ev.StateChanged(state=str(p["new"]), previous=p.get("old"), ts=ts, round=rnd)
    if kind == Kind.START_POSITION:
        raw = [int(v) for v in p["raw"]]
        if p["method"] == "dice":
            return ev.StartPosition(
                position=int(p["position"]),
                method="dice",
                dice=(raw[0], raw[1], raw[2]),
                ts=ts,
                round=rnd,
            )
        return ev.StartPosition(
            position=int(p["position"]), method="rng", value=raw[0], ts=ts, round=rnd
        )
    if kind == Kind.CARD:
        return ev.CardDealt(index=int(p["index"]), position=int(p["position"]), ts=ts, round=rnd)
    if kind == Kind.STUB_COUNTED:
        return ev.StubCounted(count=int(p["count"]), ts=ts, round=rnd)
    if kind == Kind.FAULT:
        return ev.FaultRaised(
            code=str(p["code"]), message=str(p["reason"]), rule=p.get("rule"), ts=ts, round=rnd
        )
    if kind == Kind.FAULT_CLEARED:
        return ev.FaultCleared(by=str(p["by"]), ts=ts, round=rnd)
    if kind == Kind.ROUND_ENDED:
        counts = p.get("cards_per_position") or {}
        return ev.RoundEnded(
            outcome=str(p["outcome"]),
            reason=str(p["reason"]),
            start_position=p.get("start_position"),
            cards_per_position={str(k): int(v) for k, v in counts.items()},
            wagered=tuple(int(x) for x in p.get("wagered") or ()),
            collected_unseen=tuple(int(x) for x in p.get("collected_unseen") or ()),
            ts=ts,
            round=rnd,
        )
    if kind == Kind.ROUND_CLOSED:
        visible = {BANKER, *(int(x) for x in p.get("wagered") or ())}
        hands = {
            str(position): tuple(str(c) for c in cards)
            for position, cards in p["hands"].items()
            if int(position) in visible
        }
        return ev.RoundClosed(hands=hands, ts=ts, round=rnd)
    if kind == Kind.SHOE_CONNECTED:
        identity = p["identity"]
        return ev.Connected(
            device="",
            model=str(identity["model"]),
            serial=str(identity["serial_number"]),
            firmware=str(identity["firmware_version"]),
            approved=bool(p["approved"]),
            reason=str(p["reason"]),
            ts=ts,
            round=rnd,
        )
    if kind == Kind.LINK and p["state"] in _LINK_STATUS:
        return ev.LinkChanged(
            status=_LINK_STATUS[p["state"]], message=str(p.get("detail", "")), ts=ts, round=rnd
        )
    return None
