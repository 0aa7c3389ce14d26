"""The table's public state: a fold over the published events.

:class:`PublicState` reads nothing but the events a subscriber of the ``--json`` stream
sees, so the snapshot it gives can hold nothing that was not published: no card identity
while a round is open, never the stub's or an unwagered hand's (rule E1). It is what
``GET /api/v1/state`` answers and what a console shows after it (re)connects.

The fold works on the events' JSON objects (``ServiceEvent.to_json()``), so a consumer
that only has the stream (the floor, a table's UI) folds it the same way.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime, tzinfo
from typing import Any

from shoe_controller.service.events import ServiceEvent

#: Shortest span a per-hour rate is computed over, so that the first round of the day
#: does not read as hundreds of rounds per hour.
MIN_RATE_SPAN_S = 600.0

JSON = dict[str, Any]
#: What the snapshot keeps of the latest prompt.
PROMPT_KEYS = (
    "id",
    "need",
    "code",
    "values",
    "message",
    "proposal",
    "evidence",
    "role",
    "options",
    "rule",
)
#: Phases in which no round is open: what the table shows of a deal is cleared.
BETWEEN_ROUNDS = frozenset({"no_shoe", "idle", "shuffle_check"})


def parse_ts(text: str) -> datetime:
    """An event's ``ts`` (ISO 8601 UTC with ``Z``) as an aware datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


class PublicState:
    """The snapshot of the table, built from the public events in their order.

    ``apply`` and ``as_json`` are thread-safe: the controller's loop thread applies
    events while an API thread reads snapshots. ``tz`` is the time zone whose calendar day
    "today" means (the box's local zone by default); ``clock`` gives "now" for the rates.
    """

    def __init__(
        self,
        positions: int = 7,
        *,
        tz: tzinfo | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self._positions = positions
        self._tz = tz
        self._clock = clock or (lambda: datetime.now(UTC))
        self._lock = threading.Lock()
        self._state: JSON = {
            "table": {"positions": positions},
            "phase": None,
            "round": None,
            "service": None,
            "shoe": None,
            "wagers": [],
            "wagered": None,
            "start_position": None,
            "cards": self._no_cards(),
            "cards_dealt": 0,
            "stub": None,
            "prompt": None,
            "fault": None,
            "notice": None,
            "last_round": None,
            "updated": None,
        }
        self._day: date | None = None
        self._first_round_at: datetime | None = None
        self._rounds_today = 0
        self._hands_today = 0
        self._apply: dict[str, Callable[[JSON], None]] = {
            "started": self._started,
            "connected": self._connected,
            "link": self._link,
            "state": self._phase,
            "prompt": self._prompt,
            "wagers": self._wagers,
            "bets_closed": self._bets_closed,
            "start_position": self._start_position,
            "card": self._card,
            "stub": self._stub,
            "fault": self._fault,
            "fault_cleared": self._fault_cleared,
            "notice": self._notice,
            "round_end": self._round_end,
            "round_closed": self._round_closed,
            "stopped": self._stopped,
        }

    # --- folding ---------------------------------------------------------------------------

    def apply(self, event: ServiceEvent) -> None:
        """Fold one published event into the state."""
        self.apply_json(event.to_json())

    def apply_json(self, event: Mapping[str, Any]) -> None:
        """Fold one event given as its ``--json`` object. Unknown events change only the
        time of the last update: consumers ignore what they do not know."""
        with self._lock:
            s = self._state
            s["updated"] = event.get("ts")
            round_id = event.get("round")
            if round_id is not None and round_id != s["round"]:
                self._new_round(round_id)
            elif round_id is None and event.get("event") == "state":
                # Only state changes say reliably that no round is open now.
                s["round"] = None
            handler = self._apply.get(str(event.get("event")))
            if handler is not None:
                handler(dict(event))

    def as_json(self) -> JSON:
        """A JSON-ready copy of the snapshot, with today's rounds and hands per hour."""
        with self._lock:
            snapshot = copy.deepcopy(self._state)
            snapshot["today"] = self._today()
        return snapshot

    # --- handlers (called with the lock held) ----------------------------------------------

    def _no_cards(self) -> dict[str, int]:
        return {str(p): 0 for p in range(1, self._positions + 1)}

    def _started(self, e: JSON) -> None:
        s = self._state
        s["service"] = {k: e.get(k) for k in ("version", "profile", "bench")}
        table = e.get("table")
        if isinstance(table, dict) and isinstance(table.get("positions"), int):
            # The rules profile's table: the positions a console lays out.
            s["table"] = dict(table)
            if table["positions"] != self._positions:
                self._positions = table["positions"]
                s["cards"] = self._no_cards()

    def _connected(self, e: JSON) -> None:
        keys = ("device", "model", "serial", "firmware", "approved", "reason")
        self._state["shoe"] = {**{k: e.get(k) for k in keys}, "link": "up"}

    def _link(self, e: JSON) -> None:
        shoe = self._state["shoe"]
        if shoe is not None:
            shoe["link"] = e.get("status")
            shoe["link_message"] = e.get("message")

    def _phase(self, e: JSON) -> None:
        s = self._state
        s["phase"] = e.get("state")
        if e.get("state") in BETWEEN_ROUNDS:
            s["round"] = None
            self._clear_round()
        # A prompt belongs to the state it was published in; the next one follows.
        s["prompt"] = None

    def _new_round(self, round_id: str) -> None:
        self._state["round"] = round_id
        self._clear_round()

    def _prompt(self, e: JSON) -> None:
        self._state["prompt"] = {k: e.get(k) for k in PROMPT_KEYS}

    def _wagers(self, e: JSON) -> None:
        self._state["wagers"] = sorted(e.get("positions") or [])

    def _bets_closed(self, e: JSON) -> None:
        self._state["wagered"] = sorted(e.get("wagered") or [])

    def _start_position(self, e: JSON) -> None:
        self._state["start_position"] = {
            k: e[k] for k in ("position", "method", "dice", "value") if k in e
        }

    def _card(self, e: JSON) -> None:
        s = self._state
        position = str(e.get("position"))
        if position in s["cards"]:
            s["cards"][position] += 1
        s["cards_dealt"] = max(s["cards_dealt"] + 1, int(e.get("index") or 0))

    def _stub(self, e: JSON) -> None:
        self._state["stub"] = e.get("count")

    def _fault(self, e: JSON) -> None:
        self._state["fault"] = {k: e.get(k) for k in ("code", "message", "rule")}

    def _fault_cleared(self, e: JSON) -> None:
        self._state["fault"] = None

    def _notice(self, e: JSON) -> None:
        self._state["notice"] = {k: e.get(k) for k in ("code", "message", "ts")}

    def _round_end(self, e: JSON) -> None:
        s = self._state
        if e.get("outcome") == "not_played":
            # A stop closed a round whose gate never opened: nothing was played, and the
            # round before it stays the last one shown.
            return
        wagered = sorted(e.get("wagered") or [])
        if e.get("outcome") == "dealt" or s["wagered"] is None:
            s["wagered"] = wagered
        s["last_round"] = {
            "round": e.get("round"),
            "outcome": e.get("outcome"),
            "reason": e.get("reason"),
            "start_position": e.get("start_position"),
            "cards_per_position": e.get("cards_per_position"),
            "wagered": wagered,
            "hands": None,
        }
        if e.get("outcome") == "dealt":
            self._count_round(e, len(wagered))

    def _round_closed(self, e: JSON) -> None:
        last = self._state["last_round"]
        if last is not None and last["round"] == e.get("round"):
            last["hands"] = e.get("hands")
        # The round is over: its record is the last round's; the table shows no deal now.
        self._clear_round()

    def _clear_round(self) -> None:
        self._state.update(
            wagers=[],
            wagered=None,
            start_position=None,
            cards=self._no_cards(),
            cards_dealt=0,
            stub=None,
        )

    def _stopped(self, e: JSON) -> None:
        s = self._state
        s["phase"] = "stopped"
        s["prompt"] = None
        if s["shoe"] is not None:
            s["shoe"]["link"] = "stopped"

    # --- today's rates ---------------------------------------------------------------------

    def _count_round(self, e: JSON, hands: int) -> None:
        ts = e.get("ts")
        when = parse_ts(ts) if isinstance(ts, str) else self._clock()
        day = when.astimezone(self._tz).date()
        if day != self._day:
            self._day = day
            self._first_round_at = when
            self._rounds_today = 0
            self._hands_today = 0
        self._rounds_today += 1
        self._hands_today += hands

    def _today(self) -> JSON:
        now = self._clock()
        if self._day != now.astimezone(self._tz).date() or self._first_round_at is None:
            return {"rounds": 0, "hands": 0, "rounds_per_hour": 0.0, "hands_per_hour": 0.0}
        hours = max((now - self._first_round_at).total_seconds(), MIN_RATE_SPAN_S) / 3600
        return {
            "rounds": self._rounds_today,
            "hands": self._hands_today,
            "rounds_per_hour": round(self._rounds_today / hours, 1),
            "hands_per_hour": round(self._hands_today / hours, 1),
        }
