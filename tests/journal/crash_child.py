"""The crash test's child: a journal writer that deals rounds until it is killed.

Usage: python crash_child.py JOURNAL TRIAL

At start it voids the rounds a previous child left open, as the service does. It then deals
rounds, committing the cards in groups of 1..6, and after each commit writes one line to
standard output: ``<journal seq of the group's last record> <first> <last>``, where first
and last are the shoe event numbers in the group. A line written is an acknowledgement: the
parent may kill the child at any moment and then expects each acknowledged event in the
journal exactly once.
"""

from __future__ import annotations

import random
import sys

from shoe_controller.journal import Journal, Kind
from shoe_controller.procedure import Procedure
from shoe_controller.service.journaling import carry_from, decision_records

CARDS = 49


def main(argv: list[str]) -> int:
    path, trial = argv[1], int(argv[2])
    rng = random.Random(trial)
    journal = Journal.open(path)
    # First of all, as the service does: take over what the journal says (F3).
    procedure = Procedure()
    decisions = procedure.recover(carry_from(journal))
    with journal.transaction():
        for kind, payload, round_id in decision_records(decisions, procedure.round_id, "x"):
            journal.append(kind, payload, round_id)
    event = trial * 1_000_000
    round_no = 0
    while True:
        round_no += 1
        round_id = f"t{trial}-r{round_no}"
        with journal.transaction():
            journal.append(Kind.ROUND_OPENED, {"round_id": round_id}, round_id)
            journal.append(Kind.BETS_CLOSED, {"wagered": [2, 5]}, round_id)
        dealt = 0
        while dealt < CARDS:
            first = event + 1
            with journal.transaction():
                for _ in range(min(rng.randint(1, 6), CARDS - dealt)):
                    event += 1
                    dealt += 1
                    message = {"type": "CardDrawn", "draw_index": dealt}
                    journal.append(Kind.SHOE_EVENT, {"seq": event, "message": message}, round_id)
                    journal.append(
                        Kind.CARD,
                        {
                            "index": dealt,
                            "position": (dealt - 1) % 7 + 1,
                            "card": "??",
                            "gate_mode": "deal",
                        },
                        round_id,
                    )
            sys.stdout.write(f"{journal.last_seq} {first} {event}\n")
            sys.stdout.flush()
        journal.append(
            Kind.ROUND_ENDED,
            {
                "outcome": "dealt",
                "reason": "49 cards dealt",
                "start_position": 1,
                "cards_per_position": {str(p): 7 for p in range(1, 8)},
                "wagered": [2, 5],
                "collected_unseen": [3, 4, 6, 7],
            },
            round_id,
        )


if __name__ == "__main__":
    sys.exit(main(sys.argv))
