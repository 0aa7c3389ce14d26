"""What the stateful test holds the table to after every step: the journal against the
shoes' ground truth and against what the controller published.

:class:`JournalCheck` reads the journal as it grows (a read-only SQLite connection of its
own) and says, one line each, what breaks E1, E2, E3 and F2 and which round has more than
one outcome; every line starts with the rule it checks. :class:`ErrorLog` collects what the
product logs as an error, which the test counts as a failure too.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
from collections import Counter
from typing import TYPE_CHECKING, Any

from firmware_protocol import CardDrawn, Message
from shoe_controller.journal.verification import verify
from shoe_controller.service import events as ev

if TYPE_CHECKING:
    from tests.service.stateful_table import StatefulTable

#: The range a journaled loss of events names (EventsLost's text).
LOSS = re.compile(r"events (\d+)\.\.(\d+) were lost")
#: A quoted card identity in a published event's JSON (E1): "AS", "TD", "JK".
CARD_TEXT = re.compile(r'"(?:[A2-9TJQK][SHDC]|JK)"')
OUTCOMES = frozenset({"dealt", "not_played", "void_misdeal", "void_deck_removed", "void_fault"})

Row = tuple[int, str, str | None, dict[str, Any]]
#: What one shoe says of itself: the newest event it saw acknowledged, every event it
#: issued by number, those it lost in a restart that kept nothing, and the highest "oldest
#: event I hold" it said in a frame a link decoded (what the link can know it lost).
Truth = tuple[int, dict[int, Message], set[int], int]


class JournalCheck:
    """Reads the journal as it grows and holds it to the shoes' ground truth and to the
    published events. :meth:`check` returns the problems it found, one line each."""

    def __init__(self, table: StatefulTable) -> None:
        self.table = table
        self.rows: list[Row] = []
        #: The shoes by what a ``shoe_event`` record names them: (model, serial number).
        self.keys = {(spec.model, spec.serial): key for key, spec in table.specs.items()}
        #: (shoe key, the shoe's own event number) -> times journaled.
        self.journaled: Counter[tuple[str, int]] = Counter()
        self.opened: set[str] = set()
        self.outcomes: dict[str, list[str]] = {}
        self.closed: Counter[str] = Counter()
        self.wagered: dict[str, tuple[int, ...]] = {}
        #: round -> position -> the cards journaled to it, in draw order.
        self.hands: dict[str, dict[int, list[str]]] = {}
        self.stub: dict[str, set[str]] = {}
        self.events_seen = 0
        #: The shoe event journaled last: a card's identity follows it in its transaction.
        self._last_event: tuple[str, int] | None = None
        #: The shoe the link connected last, as the journal says: a loss it reports is
        #: that shoe's.
        self._connected: str | None = None
        #: Shoe key -> how many of its events the journal reports lost (F2), in all and
        #: since the controller last started.
        self.reported_lost: Counter[str] = Counter()
        self.reported_lost_in_run: Counter[str] = Counter()
        self._audited: set[tuple[str, int]] = set()

    def truths(self) -> dict[str, Truth]:
        """What each shoe says of itself now (see :data:`Truth`)."""
        truths: dict[str, Truth] = {}
        for key, truth in self.table.shoes.items():
            # What a shoe told the link is read first: whatever it tells later is about
            # events it holds now or issues later.
            told = self.table.told(key)
            with truth.runner.locked() as shoe:
                truths[key] = (shoe.acknowledged, dict(shoe.events), set(truth.lost), told)
        return truths

    def read(self) -> list[Row]:
        path = self.table.journal
        after = self.rows[-1][0] if self.rows else 0
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            fresh = conn.execute(
                "SELECT seq, kind, round_id, payload FROM records WHERE seq > ? ORDER BY seq",
                (after,),
            ).fetchall()
        finally:
            conn.close()
        rows = [(s, k, r, json.loads(p)) for s, k, r, p in fresh]
        self.rows += rows
        return rows

    def check(self) -> list[str]:
        """Every check, on what is new since the last call."""
        table = self.table
        # The shoes first: anything they saw acknowledged was journaled before (E3), so a
        # journal read after them must hold it.
        truths = self.truths()
        problems: list[str] = []
        report = verify(table.journal)
        if not report.ok:
            problems.append(f"the journal does not verify: {report.summary()}")
        for row in self.read():
            problems += self._row(row, truths)
        for key, (acked, issued, lost, _) in truths.items():
            missing = [
                seq
                for seq in issued
                if seq <= acked and seq not in lost and self.journaled[(key, seq)] == 0
            ]
            if missing:
                problems.append(
                    f"E3: shoe {key} saw events acknowledged that are not journaled: {missing[:8]}"
                )
        heard = table.heard()
        problems += self.unreported_losses(truths, table.at_table if heard else None)
        problems += self._published()
        return problems

    def _row(self, row: Row, truths: dict[str, Truth]) -> list[str]:  # noqa: C901 (one branch per column of the row)
        _, kind, round_id, p = row
        problems: list[str] = []
        if kind == "service_started":
            self._last_event = None
            self._connected = None
            self.reported_lost_in_run.clear()
        elif kind == "shoe_connected":
            identity = p["identity"]
            self._connected = self.keys.get((identity["model"], identity["serial_number"]))
        elif kind == "link" and p.get("state") == "events_lost":
            problems += self._loss(row)
        elif kind == "shoe_event":
            problems += self._shoe_event(row, truths)
        elif kind in ("card", "stub_card", "unassigned_card"):
            problems += self._audit(row, truths)
        elif kind == "round_opened":
            rid = str(p["round_id"])
            if rid in self.opened:
                problems.append(f"round {rid} opened twice")
            self.opened.add(rid)
        elif kind == "bets_closed" and round_id is not None:
            self.wagered[round_id] = tuple(int(x) for x in p["wagered"])
        elif kind == "round_ended" and round_id is not None:
            outcome = str(p["outcome"])
            ends = self.outcomes.setdefault(round_id, [])
            ends.append(outcome)
            if outcome not in OUTCOMES:
                problems.append(f"round {round_id}: unknown outcome {outcome}")
            if len(ends) > 1:
                problems.append(f"Outcomes: round {round_id} has more than one: {ends}")
            if round_id not in self.opened:
                problems.append(f"round {round_id} ended without being opened")
        elif kind == "round_closed" and round_id is not None:
            self.closed[round_id] += 1
            if self.closed[round_id] > 1:
                problems.append(f"E2: round {round_id} closed twice")
            if self.outcomes.get(round_id) != ["dealt"]:
                problems.append(
                    f"E2: round {round_id} closed with outcomes {self.outcomes.get(round_id)}"
                )
        return problems

    def _loss(self, row: Row) -> list[str]:
        seq, _, _, p = row
        if self._connected is None:
            return [f"record {seq}: events lost with no shoe connected: {p}"]
        found = LOSS.search(str(p.get("detail")))
        if found is not None:
            first, last = int(found.group(1)), int(found.group(2))
            self.reported_lost[self._connected] += last - first + 1
            self.reported_lost_in_run[self._connected] += last - first + 1
        return []

    def unreported_losses(self, truths: dict[str, Truth], at_table: str | None) -> list[str]:
        """F2: what a shoe lost in a restart that kept nothing, and never sent, is
        reported lost once the shoe has told the link so; nothing more is. A controller
        that starts again may report a loss the run before reported (it resumes after the
        last event journaled, and the loss came after it): at most once in each run.

        The link learns of a loss only from a frame in which the shoe names the oldest
        event it holds (its Hello, a Heartbeat: docs/protocol.md, 8). The line may lose or
        damage the Hello a restarted shoe sends, and the shoe answers commands meanwhile,
        so that the table is heard before the next Heartbeat tells: the loss is due from
        that frame on, not from the restart."""
        problems = []
        for key, (_, _, lost, told) in truths.items():
            unjournaled = sorted(seq for seq in lost if self.journaled[(key, seq)] == 0)
            known = [seq for seq in unjournaled if seq < told]
            reported = self.reported_lost[key]
            in_run = self.reported_lost_in_run[key]
            if in_run > len(unjournaled):
                problems.append(
                    f"F2: {in_run} events of shoe {key} reported lost in this run, it lost "
                    f"{unjournaled}"
                )
            elif key == at_table and reported < len(known):
                problems.append(
                    f"F2: shoe {key} said it no longer holds events {known[:8]}, never "
                    f"journaled, and the journal reports {reported} lost"
                )
        return problems

    def _shoe_event(self, row: Row, truths: dict[str, Truth]) -> list[str]:
        """E3: each event a shoe issued is journaled once, as the shoe issued it."""
        seq, _, _, p = row
        key = self.keys.get((str(p.get("model")), str(p.get("serial_number"))))
        if key is None:
            return [f"record {seq}: an event of a shoe never at the table: {p}"]
        shoe_seq = int(p["shoe_seq"])
        message = truths[key][1].get(shoe_seq)
        if message is None:
            return [f"record {seq}: shoe {key} never issued event {shoe_seq}"]
        problems = []
        if p["message"]["type"] != type(message).__name__:
            problems.append(
                f"record {seq}: {p['message']['type']} where shoe {key} issued "
                f"{type(message).__name__} as event {shoe_seq}"
            )
        self.journaled[(key, shoe_seq)] += 1
        times = self.journaled[(key, shoe_seq)]
        if times > 1:
            problems.append(
                f"E3: shoe {key} event {shoe_seq} ({type(message).__name__}) journaled "
                f"{times} times (record {seq})"
            )
        self._last_event = (key, shoe_seq)
        return problems

    def _audit(self, row: Row, truths: dict[str, Truth]) -> list[str]:
        """E3: a card's identity is journaled right after the shoe's event for it, in the
        same transaction: it must be the identity the shoe reported, for that card, once."""
        seq, kind, round_id, p = row
        last = self._last_event
        if last is None:
            return [f"record {seq}: a {kind} record with no shoe event before it"]
        message = truths[last[0]][1].get(last[1])
        if not isinstance(message, CardDrawn):
            return [f"record {seq}: a {kind} record after {type(message).__name__}"]
        problems = []
        if int(p["index"]) != message.draw_index:
            problems.append(
                f"record {seq}: card {p['index']} for the shoe's card {message.draw_index}"
            )
        if p["card"] != message.card.text:
            problems.append(
                f"E3: record {seq}: card {p['index']} journaled as {p['card']}, the shoe "
                f"said {message.card.text}"
            )
        if last in self._audited:
            problems.append(f"E3: record {seq}: a second identity for shoe event {last}")
        self._audited.add(last)
        if round_id is not None and kind == "card":
            hands = self.hands.setdefault(round_id, {})
            hands.setdefault(int(p["position"]), []).append(str(p["card"]))
        elif round_id is not None and kind == "stub_card":
            self.stub.setdefault(round_id, set()).add(str(p["card"]))
        return problems

    def _published(self) -> list[str]:
        """E1, E2: no identity in any event but a closed round's record, which holds the
        banker's and the wagered hands as journaled, and no card of the stub."""
        events = self.table.log.events
        with self.table.log.cond:
            fresh = events[self.events_seen :]
            self.events_seen = len(events)
        problems: list[str] = []
        for event in fresh:
            if not isinstance(event, ev.RoundClosedEvent):
                text = json.dumps(event.to_json())
                found = CARD_TEXT.search(text)
                if found:
                    problems.append(
                        f"E1: a {event.NAME} event publishes a card {found.group()}: {text}"
                    )
                continue
            rid = event.round
            if rid is None or self.outcomes.get(rid) != ["dealt"]:
                problems.append(f"E2: round {rid} published before it was dealt and closed")
                continue
            wagered = self.wagered.get(rid, ())
            positions = {str(p) for p in (1, *wagered)}
            if set(event.hands) != positions:
                problems.append(
                    f"E1: round {rid} publishes hands {sorted(event.hands)}, not "
                    f"{sorted(positions)}"
                )
            journaled = self.hands.get(rid, {})
            stub = self.stub.get(rid, set())
            for position, cards in event.hands.items():
                if list(cards) != journaled.get(int(position), []):
                    problems.append(f"E2: round {rid} position {position}: published {cards}")
                if stub & set(cards):
                    problems.append(
                        f"E1: round {rid} publishes a stub card: {sorted(stub & set(cards))}"
                    )
        return problems


class ErrorLog(logging.Handler):
    """What the product logs at ERROR or above: a failure caught somewhere in a thread."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.name}: {record.getMessage()}")
