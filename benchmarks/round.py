"""Complete rounds over a real pseudo-terminal: cards per second, card-to-ack latency.

The simulated shoe runs in a child process behind a pty, at pace 0 (the virtual croupier
pulls a card as soon as the gate lets it); this process runs the table controller as a
service does: its link driver on the pty through pyserial, the journal on a real file
(WAL, ``synchronous=FULL``: every acknowledgement waits for its commit to reach the disk),
and a scripted croupier that answers every prompt at once. A round is 49 cards dealt and
the 4 of the stub counted in the shoe.

- ``value``: cards per second sustained, over the rounds after a first warm-up round;
- ``latency_p50_ms`` / ``latency_p99_ms``: from the shoe putting a CardDrawn on the wire to
  it receiving the AckEvents that covers it, timed in the shoe's process;
- baseline: the cards per second a 115200-baud line could carry (10 bits per byte) with the
  bytes this run actually exchanged per card, heartbeats and commands included, in the
  busier direction (the line is full duplex). ``ratio`` above 1: the host outruns the wire;
  ``host_us_per_card`` and ``wire_us_per_card`` give the same comparison in time per card.

    python benchmarks/round.py [--quick] [--rounds N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import emit, filesystem_of, result
from _table import CARDS_PER_ROUND, RoundCounter, log_errors_only, start_table
from _timed_shoe import ShoeProcess

BAUD = 115_200
BITS_PER_BYTE = 10
WARM_UP_ROUNDS = 1


def run(rounds: int, directory: Path, seed: int) -> dict[str, Any]:
    marks: dict[str, float] = {}
    cards_at: dict[str, int] = {}
    with ShoeProcess(seed) as shoe:

        def on_round(finished: int) -> None:
            # On the controller's loop thread, the moment the round is published.
            if finished == WARM_UP_ROUNDS:
                shoe.mark()
                marks["start"], cards_at["start"] = time.perf_counter(), counter.cards
            elif finished == WARM_UP_ROUNDS + rounds:
                marks["end"], cards_at["end"] = time.perf_counter(), counter.cards

        counter = RoundCounter(target=WARM_UP_ROUNDS + rounds, on_round=on_round)
        controller = start_table(shoe.path, directory / "journal.sqlite3", counter)
        try:
            counter.wait_rounds(WARM_UP_ROUNDS + rounds, timeout=60 + rounds)
        finally:
            controller.stop()
        if controller.failure is not None:
            raise RuntimeError(f"the controller stopped: {controller.failure}")
        figures = shoe.figures()
    if counter.played != {"dealt": WARM_UP_ROUNDS + rounds}:
        raise RuntimeError(f"rounds ended otherwise than dealt: {counter.outcomes}")
    cards = cards_at["end"] - cards_at["start"]
    if cards != rounds * CARDS_PER_ROUND:
        raise RuntimeError(f"{cards} cards in {rounds} rounds, not {CARDS_PER_ROUND} each")
    figures["cards"] = cards
    figures["seconds"] = marks["end"] - marks["start"]
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run, for CI")
    parser.add_argument("--rounds", type=int, help="measured rounds (default 200, quick 5)")
    parser.add_argument("--dir", type=Path, help="where the journal goes (default: a temp dir)")
    parser.add_argument("--seed", type=int, default=1, help="the simulator's seed")
    args = parser.parse_args(argv)
    log_errors_only()
    rounds = args.rounds or (5 if args.quick else 200)
    with tempfile.TemporaryDirectory(prefix="bench-round-", dir=args.dir) as tmp:
        figures = run(rounds, Path(tmp), args.seed)
        journal_fs = filesystem_of(tmp)
    cards = int(figures["cards"])
    seconds = float(figures["seconds"])
    rate = cards / seconds
    # The line's limit is its busier direction: the shoe's events, as a rule.
    busier = max(int(figures["bytes_to_host"]), int(figures["bytes_from_host"]))
    bytes_per_card = busier / cards
    wire_rate = BAUD / BITS_PER_BYTE / bytes_per_card
    emit(
        result(
            "round",
            rate,
            "cards/s",
            f"{BAUD}-baud line, same bytes",
            wire_rate,
            latency_p50_ms=round(float(figures["latency_p50_ms"]), 2),
            latency_p99_ms=round(float(figures["latency_p99_ms"]), 2),
            latency_max_ms=round(float(figures["latency_max_ms"]), 2),
            host_us_per_card=round(1e6 / rate, 1),
            wire_us_per_card=round(1e6 / wire_rate, 1),
            bytes_to_host_per_card=round(int(figures["bytes_to_host"]) / cards, 1),
            bytes_from_host_per_card=round(int(figures["bytes_from_host"]) / cards, 1),
            rounds=rounds,
            cards=cards,
            cards_acknowledged=int(figures["cards_acknowledged"]),
            seconds=round(seconds, 3),
            journal_fs=journal_fs,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
