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
from shoe_controller.accounts.command import add_actions
from shoe_controller.commandline import ArgumentParser, run_main
from shoe_floor.dashboard.roles import USERS

PROG = "shoe-floor"
#: The installed manual's summary: what the exit codes mean (the wheel ships no docs/).
EPILOG = """\
Each command's options: shoe-floor COMMAND --help.

exit codes:
    0  done
    1  a bug: run again with --debug and report it
    2  an unknown option or a malformed value
    3  the configuration, an option, a key file or the users file is wrong
   11  the audit found the journal differs from what the floor received
   12  the floor's store cannot be opened, read or written
  130  interrupted (Ctrl-C)"""


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
    broker.add_argument(
        "--insecure-broker",
        action="store_true",
        help="accept a broker without TLS and without a user name (anyone who reaches it "
        "may publish): for a test bench only",
    )
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
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
    p.add_argument(
        "--key",
        type=Path,
        metavar="FILE",
        help="the floor's signing key, which signs the replay requests to the boxes: made "
        "(0600, with FILE.pub beside it) when absent, never replaced; without it, gaps are "
        "reported but not asked for again",
    )

    p = sub.add_parser(
        "enroll",
        help="trust a box's public key for its table (journaled in the store)",
        description="Enrol a box's public key (shoe-diag floor enroll on the box prints it): "
        "from now on the floor stores what that key signed for that table.",
        parents=[common, db],
    )
    p.add_argument("--site", required=True, metavar="SITE", help="the box's site")
    p.add_argument("--table", required=True, metavar="ID", help="the box's table id")
    p.add_argument(
        "--key", required=True, type=Path, metavar="FILE", help="the box's public key (PEM)"
    )
    p.add_argument(
        "--fingerprint",
        metavar="SHA256:...",
        help="refuse the key unless it has this fingerprint (as the box printed it)",
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
        help="where to serve the page (default 127.0.0.1:8780; an address other than "
        "loopback needs TLS)",
    )
    p.add_argument(
        "--users",
        required=True,
        type=Path,
        metavar="FILE",
        help="the dashboard's users file (shoe-floor users add makes it)",
    )
    p.add_argument("--tls-cert", type=Path, metavar="FILE", help="TLS: the page's certificate")
    p.add_argument("--tls-key", type=Path, metavar="FILE", help="TLS: its private key")
    p.add_argument(
        "--host-name",
        action="append",
        metavar="NAME",
        help="a host name the pit's browsers use for the dashboard (repeatable; default: "
        "only the listen address)",
    )

    users = sub.add_parser(
        "users",
        help="the dashboard's users: add, list, remove, reset a PIN (roles pit and viewer)",
        description="Add, list, remove users of the pit's dashboard, or reset a PIN, under "
        "the box's rules (shoe-diag users): PINs of 6 to 12 digits, none trivial.",
        parents=[common],
    )
    users_file = ArgumentParser(add_help=False)
    users_file.add_argument(
        "--users", required=True, type=Path, metavar="FILE", help="the users file"
    )
    users_file.add_argument("--json", action="store_true", help="the result as one JSON object")
    add_actions(users, USERS, [common, users_file])

    p = sub.add_parser(
        "audit",
        help="check a box's journal against the chain heads the floor received",
        description="Check a box's journal against the chain heads the floor received: a "
        "journal rolled back or cut short no longer verifies.",
        parents=[common, db],
    )
    p.add_argument("--table", required=True, metavar="ID", help="the table whose journal it is")
    p.add_argument(
        "--site",
        metavar="NAME",
        help="the table's site (needed only where two sites have a table of that name)",
    )
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
    if args.command == "users":
        from shoe_controller.accounts.command import Lines, run
        from shoe_floor.dashboard.users import FloorUsers

        return run(FloorUsers(args.users), args, Lines(), as_json=args.json)
    if args.command == "enroll":
        from shoe_floor.enrol import enroll

        return enroll(args)
    if args.command == "report":
        from shoe_floor.report_cli import report

        return report(args)
    if args.command == "serve":
        from shoe_floor.dashboard.serve import serve

        return serve(args, _broker(args), stop_on_signals)
    from shoe_floor.audit import audit_command

    return audit_command(args)


def _broker(args: argparse.Namespace) -> object:
    from shoe_controller.errors import ConfigError
    from shoe_controller.floor.broker import broker_settings

    settings = broker_settings(
        args.broker,
        username=args.username,
        password_file=args.password_file,
        ca_file=args.ca_file,
        cert_file=args.cert_file,
        key_file=args.key_file,
        what="--broker",
    )
    if settings.open and not args.insecure_broker:
        raise ConfigError(
            f"the broker {settings.describe()} has neither TLS nor a user name, so anyone who "
            "reaches it may publish: use mqtts:// and a user (--username, --password-file), "
            "or give --insecure-broker on a test bench"
        )
    return settings


def _collect(args: argparse.Namespace) -> int:
    from shoe_controller.floor.broker import BrokerSettings
    from shoe_controller.floor.keys import make_signing_key
    from shoe_floor.collector import Collector

    broker = _broker(args)
    assert isinstance(broker, BrokerSettings)

    def notice(text: str) -> None:
        sys.stderr.write(f"{PROG}: {text}\n")
        sys.stderr.flush()

    floor_key = None
    if args.key is not None:
        floor_key, made = make_signing_key(args.key)
        public = args.key.with_name(args.key.name + ".pub")
        if made or not public.exists():
            public.write_bytes(floor_key.public.to_pem())
        notice(
            f"the floor's key {args.key} ({'made now' if made else 'kept'}), fingerprint "
            f"{floor_key.public.fingerprint}: give each box {public} as floor.floor_key"
        )
    collector = Collector(broker, args.db, name=args.name, floor_key=floor_key, notice=notice)
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
