"""Stateful: the stateful test of the whole table service, run long.

The state machine of ``tests/service/test_stateful.py`` (the real table controller, its
journal on a file, the in-process simulated shoes as ground truth, every person at the
table a rule) with more and longer examples than CI gives it, from a seed, so that every
run explores other sequences: ``--examples`` examples of up to ``--steps`` steps each.

    python benchmarks/stateful.py [--examples N] [--steps N] [--seed S] [--quick]

prints one JSON line (examples and steps run, how often each rule ran, the rounds'
outcomes, inputs taken and refused, the failure if any) and exits 1 on a failure, after
hypothesis shrank it to a short sequence of steps (in ``failure``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

# The stateful test lives with the tests: make the repository importable when run as a script.
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from hypothesis import seed as hypothesis_seed  # noqa: E402
from hypothesis import settings  # noqa: E402
from hypothesis.stateful import get_state_machine_test  # noqa: E402

from tests.service.test_stateful import PROFILES, STATS, TableStateMachine  # noqa: E402


def run(examples: int, steps: int, seed: int, *, progress: bool = False) -> dict[str, Any]:
    """Run the stateful test; returns the report line."""
    started = time.perf_counter()
    if progress:
        STATS.on_example = lambda stats: print(
            f"example {stats.examples}: {stats.steps} steps, {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    profile = settings(
        PROFILES["long"], max_examples=examples, stateful_step_count=steps, derandomize=False
    )
    test = hypothesis_seed(seed)(get_state_machine_test(TableStateMachine, settings=profile))
    failure = None
    try:
        # Hypothesis reports on stdout; the benchmark's stdout is its one JSON line.
        with contextlib.redirect_stdout(sys.stderr):
            test()
    except Exception as exc:  # the failing sequence, as hypothesis printed it after shrinking
        failure = describe(exc)
    elapsed = time.perf_counter() - started
    return {
        "name": "stateful",
        "ok": failure is None,
        "examples": STATS.examples,
        "steps": STATS.steps,
        "steps_per_example": steps,
        "rules": dict(sorted(STATS.rules.items())),
        "rounds_by_outcome": dict(sorted(STATS.outcomes.items())),
        "inputs_accepted": STATS.accepted,
        "inputs_refused": STATS.refused,
        "liveness_steps_max": STATS.liveness_steps_max,
        "phases_after_a_step": dict(sorted(STATS.phases.items())),
        "soak_checks_held": STATS.soak_checked,
        "decks_removed_with_a_defect": STATS.defects,
        "decks_refused_as_removed": STATS.refused_decks,
        "failure": failure,
        "seed": seed,
        "elapsed_s": round(elapsed, 1),
    }


def describe(exc: BaseException) -> str:
    """The failure with the steps hypothesis noted; for one that did not happen again
    when replayed (the threads' timing differs), each failure it saw."""
    lines = ["".join(traceback.format_exception_only(type(exc), exc)).strip()]
    lines += getattr(exc, "__notes__", [])
    if isinstance(exc, BaseExceptionGroup):
        lines += [describe(inner) for inner in exc.exceptions]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    long = PROFILES["long"]
    parser.add_argument(
        "--examples", type=int, default=long.max_examples, help="examples (default %(default)s)"
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=long.stateful_step_count,
        help="steps per example (default %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=20261129, help="seed of the examples")
    parser.add_argument("--quick", action="store_true", help="a short run (5 examples)")
    parser.add_argument("--progress", action="store_true", help="a line per example on stderr")
    args = parser.parse_args(argv)
    examples = 5 if args.quick else args.examples
    steps = 15 if args.quick else args.steps
    if examples < 1 or steps < 1:
        parser.error("--examples and --steps must be 1 or more")
    line = run(examples, steps, args.seed, progress=args.progress)
    print(json.dumps(line))
    return 0 if line["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
