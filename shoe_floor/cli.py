"""``shoe-floor``: the floor's collector, reports, dashboard and audit.

Commands import what they need when they run, so that ``--help`` is quick. Errors end with
one line on standard error and the exit code of ``shoe_controller.errors.ExitCode``.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from shoe_controller import __version__
from shoe_controller.cli.errors import ArgumentParser, run_main

PROG = "shoe-floor"


def build_parser() -> ArgumentParser:
    common = ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", help="log details to standard error")
    db = ArgumentParser(add_help=False)
    db.add_argument(
        "--db",
        required=True,
        metavar="URL",
        help="the floor's store: a SQLite file path, or postgresql://USER@HOST/DBNAME",
    )
    broker = ArgumentParser(add_help=False)
    broker.add_argument(
        "--broker", required=True, metavar="URL", help="mqtt://HOST:PORT or mqtts://HOST:PORT"
    )
    broker.add_argument("--username", metavar="NAME", help="the broker user name")
    broker.add_argument(
        "--password-file", type=Path, metavar="FILE", help="a file holding the broker password"
    )
    broker.add_argument("--ca-file", type=Path, metavar="FILE", help="TLS: trusted CA certificates")
    broker.add_argument("--cert-file", type=Path, metavar="FILE", help="TLS: client certificate")
    broker.add_argument("--key-file", type=Path, metavar="FILE", help="TLS: client key")
    shifts = ArgumentParser(add_help=False)
    shifts.add_argument(
        "--shifts",
        metavar="NAME=HH:MM,...",
        default=None,
        help="the shifts by their start times (default: day=06:00,swing=14:00,night=22:00)",
    )
    shifts.add_argument(
        "--timezone",
        metavar="ZONE",
        default=None,
        help="the floor's time zone for shifts and dates, e.g. America/Puerto_Rico "
        "(default: this machine's)",
    )

    parser = ArgumentParser(
        prog=PROG,
        description="The floor: collect every table's public record, report, show, audit.",
        epilog="docs/floor.md describes the floor, its topics and its store.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "collect",
        help="store every table's public record (runs until stopped)",
        description="Subscribe to every table's records and store them, each once.",
        parents=[common, broker, db],
    )
    p.add_argument(
        "--name",
        metavar="NAME",
        help="this collector's name, unique among the floor's collectors (default: the host "
        "name); its broker session is kept under it",
    )

    p = sub.add_parser(
        "report",
        help="rounds, outcomes, faults, hands per hour, offline time per table and shift",
        description="Per table and per shift: rounds, outcomes, faults, hands per hour, offline.",
        parents=[common, db, shifts],
    )
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.add_argument("--since", metavar="TIME", help="from this time (ISO 8601; default: 24 h ago)")
    p.add_argument("--until", metavar="TIME", help="until this time (ISO 8601; default: now)")

    p = sub.add_parser(
        "serve",
        help="the pit's dashboard: every table live",
        description="Serve the pit's dashboard: every table live, updating by itself.",
        parents=[common, broker, db, shifts],
    )
    p.add_argument(
        "--listen",
        default="127.0.0.1:8780",
        metavar="HOST:PORT",
        help="where to serve the page (default 127.0.0.1:8780)",
    )

    p = sub.add_parser(
        "audit",
        help="check a box's journal against the chain heads the floor received",
        description="Check a box's journal against the chain heads the floor received: a "
        "journal rolled back or cut short no longer verifies.",
        parents=[common, db],
    )
    p.add_argument("--table", required=True, metavar="ID", help="the table whose journal it is")
    p.add_argument("--journal", required=True, type=Path, metavar="FILE", help="the journal file")
    p.add_argument(
        "--key",
        type=Path,
        metavar="FILE",
        help="also verify the journal's MAC chain with its key (default: beside the journal, "
        "when readable)",
    )
    p.add_argument("--json", action="store_true", help="the result as one JSON object")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    return run_main(PROG, _main, args)


def _main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "collect":
        return _collect(args)
    if args.command == "report":
        from shoe_floor.report_cli import report

        return report(args)
    if args.command == "serve":
        from shoe_floor.dashboard.serve import serve

        return serve(args, _broker(args), stop_on_signals)
    from shoe_floor.audit import audit_command

    return audit_command(args)


def _broker(args: argparse.Namespace) -> object:
    from shoe_controller.broker import broker_settings

    return broker_settings(
        args.broker,
        username=args.username,
        password_file=args.password_file,
        ca_file=args.ca_file,
        cert_file=args.cert_file,
        key_file=args.key_file,
        what="--broker",
    )


def _collect(args: argparse.Namespace) -> int:
    from shoe_controller.broker import BrokerSettings
    from shoe_floor.collector import Collector

    broker = _broker(args)
    assert isinstance(broker, BrokerSettings)

    def notice(text: str) -> None:
        sys.stderr.write(f"{PROG}: {text}\n")
        sys.stderr.flush()

    collector = Collector(broker, args.db, name=args.name, notice=notice)
    done = threading.Event()
    with stop_on_signals(done):
        collector.start()
        notice(f"collecting from {broker.describe()} into {args.db}")
        while not done.is_set() and not collector.wait(0.5):
            pass
        collector.stop()
    if collector.failure is not None:
        raise collector.failure
    notice(f"stopped; {collector.stats.stored} records stored in this run")
    return 0


@contextmanager
def stop_on_signals(done: threading.Event) -> Iterator[None]:
    """SIGTERM and SIGINT end a long-running command through its clean stop."""

    def handler(signum: int, frame: FrameType | None) -> None:
        done.set()

    previous = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


if __name__ == "__main__":
    raise SystemExit(main())
