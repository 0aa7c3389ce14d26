"""``shoe-controller``: the table-side service (``run``) and its demonstration (``demo``).

Imports of the service are deferred to the command functions so that ``--help`` is quick.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from shoe_controller import __version__
from shoe_controller.cli.errors import ArgumentParser, exit_codes_epilog, run_main

PROG = "shoe-controller"
DEMO_DEVICE = "sim://?pace=0.005"


def _positions(text: str) -> frozenset[int]:
    from shoe_controller.cli.croupier import parse_positions

    try:
        return parse_positions(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _dice(text: str) -> tuple[int, int, int]:
    from shoe_controller.cli.croupier import parse_dice

    try:
        return parse_dice(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _rounds(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of rounds") from None
    if value < 1:
        raise argparse.ArgumentTypeError("the number of rounds must be 1 or more")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of cards") from None
    if not 0 <= value <= 53:
        raise argparse.ArgumentTypeError("a stub count is from 0 to 53 cards")
    return value


def _attendant(text: str) -> str:
    """The bench attendant's id, journaled as whoever clears: free text, so bounded."""
    from shoe_controller.procedure.inputs import text_too_long

    if not text.strip():
        raise argparse.ArgumentTypeError("the attendant's id is needed, e.g. att-1")
    refusal = text_too_long("an attendant's id", text, "give a shorter one")
    if refusal is not None:
        raise argparse.ArgumentTypeError(refusal)
    return text


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog=PROG,
        description="Drive an approved card-reading dealing shoe through the dealing "
        "procedure, journal every step, and publish the round's events.",
        epilog=exit_codes_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true", help="log details to standard error")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, help_text in (
        ("demo", "complete rounds against the simulated shoe, nothing to configure"),
        ("run", "the table-side service on a real or simulated shoe"),
    ):
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--debug", action="store_true", help="log details to standard error")
        p.add_argument(
            "--device",
            metavar="ADDR",
            help="shoe address: a serial path, a pyserial URL, usb://[VID:PID][?serial=SN], "
            "sim://[?options] or auto (default: "
            + ("a simulated shoe)" if name == "demo" else "the configuration, else auto)"),
        )
        p.add_argument("--config", type=Path, metavar="PATH", help="TOML configuration file")
        p.add_argument(
            "--journal",
            type=Path,
            metavar="PATH",
            help="audit journal file"
            + (" (default: a temporary journal)" if name == "demo" else ""),
        )
        p.add_argument(
            "--rounds",
            type=_rounds,
            metavar="N",
            default=3 if name == "demo" else None,
            help="stop after N rounds (default: " + ("3)" if name == "demo" else "forever)"),
        )
        p.add_argument(
            "--wagers",
            type=_positions,
            metavar="2,4,5",
            help="bench automation: positions holding a wager (betting positions of the rules "
            "profile, 2..7 in pr-pai-gow-poker; default: "
            + (
                "2,4,5, so that the unwagered hands are seen collected unseen)"
                if name == "demo"
                else "entered at the console, never assumed)"
            ),
        )
        start = p.add_mutually_exclusive_group()
        start.add_argument(
            "--dice", type=_dice, metavar="A,B,C", help="bench automation: three dice for B1"
        )
        start.add_argument(
            "--rng",
            action="store_true",
            help="bench automation: starting position from the controller's RNG",
        )
        p.add_argument(
            "--on-review",
            choices=("misdeal", "no-misdeal"),
            help="bench automation: the determination when the stub is not 4 and the record "
            "cannot decide",
        )
        p.add_argument(
            "--stub-count",
            type=_count,
            metavar="N",
            help="bench automation: the count of the stub when the shoe's is not 4 or there "
            "is none (D1)",
        )
        p.add_argument(
            "--attendant",
            type=_attendant,
            metavar="ID",
            help="bench automation: this id clears every fault (F1)",
        )
        p.add_argument(
            "--wait",
            action="store_true",
            help="wait for a shoe that is not there yet (the service at boot) instead of "
            "ending with exit code 4",
        )
        if name == "run":
            p.add_argument(
                "--bench",
                action="store_true",
                help="a test bench, not a table: allows the simulated shoe (sim://) and the "
                "bench automation options, and records the run in the journal as a bench run; at "
                "a table every input comes from a signed-in person (E4)",
            )
        p.add_argument("--json", action="store_true", help="one JSON object per line")
        p.add_argument("--color", choices=("auto", "always", "never"), default=None)
        if name == "run":
            p.add_argument(
                "--api",
                metavar="HOST:PORT",
                help="serve the dealer console and the API there (default: [api] listen in "
                "the configuration, else not served); off loopback it needs TLS",
            )
            p.add_argument(
                "--users",
                type=Path,
                metavar="FILE",
                help="the users file (default: [api] users, else users.json beside the journal)",
            )
            p.add_argument(
                "--broker",
                metavar="URL",
                help="forward the public record to the floor's MQTT broker, mqtt://HOST:PORT "
                "or mqtts://HOST:PORT (default: the configuration's [floor] broker)",
            )
            p.add_argument(
                "--table-id",
                metavar="ID",
                help="this table's id on the floor (default: the configuration's [floor] table_id)",
            )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    return run_main(PROG, _main, args)


def _main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    from shoe_controller.cli.table_session import run_session

    return run_session(args, demo=args.command == "demo")


if __name__ == "__main__":
    raise SystemExit(main())
