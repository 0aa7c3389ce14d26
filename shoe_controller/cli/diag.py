"""``shoe-diag``: the technicians' tool to install, diagnose and repair shoes and boxes.

Only argparse and the light CLI modules are imported here, so that ``shoe-diag --help``
is quick; each command's module is imported when the command runs. Each command's --help
is its manual on the box; docs/technicians.md shows every command at work.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from shoe_controller import __version__
from shoe_controller.accounts.command import add_actions
from shoe_controller.api.roles import USERS
from shoe_controller.cli.errors import ArgumentParser, exit_codes_epilog, run_main

if TYPE_CHECKING:
    from pathlib import Path

PROG = "shoe-diag"

_DEVICE_HELP = (
    "shoe address: a serial path, a pyserial URL (socket://HOST:PORT, ...), "
    "usb://[VID:PID][?serial=SN], sim://[?options] or auto (default: the configuration's "
    "address, else auto)"
)
#: The simulator's options, as `simulate` takes them one by one: (name, metavar, meaning).
SIM_OPTIONS: tuple[tuple[str, str, str], ...] = (
    ("seed", "N", "seeds every random choice; the same seed gives the same run (default 0)"),
    (
        "deck",
        "VARIANT",
        "the first deck: standard (53), short (52), long (54) or duplicate (53, one card twice)",
    ),
    ("repeat_variant", "0|1", "1: every deck loaded is of that variant (default 0)"),
    ("pace", "SECONDS", "between two cards the croupier pulls; 0: as fast as the gate lets"),
    ("autoload", "0|1", "0: the croupier loads the first deck only (default 1)"),
    ("serial_number", "SN", "the shoe's serial number (default SIM-00001)"),
    ("model", "MODEL", "the model in Hello; with the same serial, another shoe (default ES-SIM)"),
    (
        "faults",
        "PLAN",
        "faults to inject, e.g. misread@12,jam@20,noise=0.001: misread, double, "
        "double_detected, jam, door, early_draw, disconnect, reboot or silent @ a card "
        "number; noise (per byte), drop, dup or split (per frame) = a probability",
    ),
    ("buttons", "PRESSES", "buttons pressed after each deck, e.g. no_more_bets@1,confirm@2"),
    ("persist", "0|1", "0: a restart loses the events not acknowledged (default 1)"),
    ("silent_for", "SECONDS", "how long a silent fault lasts (default 10)"),
    ("jam_for", "SECONDS", "before the croupier clears a jam (default 1)"),
    ("door_for", "SECONDS", "before the croupier closes the door (default 1)"),
    ("heartbeat", "SECONDS", "heartbeat period (default 1)"),
    ("retransmit", "SECONDS", "first wait before an event is sent again (default 0.25)"),
    ("retransmit_max", "SECONDS", "longest wait before an event is sent again (default 2)"),
    ("window", "N", "most events held unacknowledged (default 128)"),
    ("busy", "N", "answer the first N SetGate commands that open the gate with Nak(BUSY)"),
    ("fast_recovery", "0|1", "0: no FAST_RECOVERY, retransmission by the timer only (default 1)"),
)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be 1 or more")
    return value


def _whole_number(text: str) -> int:
    """Any whole number: the command itself says which it can use, and why."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} must be a number of seconds above 0")
    return value


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a probability") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"{text} must be a probability above 0 and below 1")
    return value


def _cards(text: str) -> list[str]:
    from firmware_protocol import Card, CardError

    words = text.replace(",", " ").split()
    if not words:
        raise argparse.ArgumentTypeError('name at least one card, e.g. "AS KD 2C JK"')
    cards = []
    for word in words:
        try:
            card = Card.parse(word)
        except CardError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        if card.is_unreadable:
            raise argparse.ArgumentTypeError("?? is no card: claim the cards by name")
        cards.append(card.text)
    return cards


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(
            f"TCP port {value} is out of range: use 1..65535, or 0 for any"
        )
    return value


def _path(text: str) -> Path:
    # pathlib is imported when a path is given, not for --help.
    from pathlib import Path

    return Path(text)


_positive_int.__name__ = "number"
_positive_seconds.__name__ = "seconds"
_port.__name__ = "port"
_probability.__name__ = "probability"
_path.__name__ = "path"
_cards.__name__ = "cards"


def build_parser() -> ArgumentParser:
    # Options every command takes, before or after its name.
    common = ArgumentParser(add_help=False)
    common.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS,
        help="JSON output: one object per line (a result, a frame, a check...)",
    )
    common.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default=argparse.SUPPRESS,
        help="colour: auto (on a terminal, unless NO_COLOR is set), always, never",
    )
    common.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="log details to standard error",
    )
    config = ArgumentParser(add_help=False)
    config.add_argument(
        "--config",
        type=_path,
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="TOML configuration file (default: /etc/shoe-controller/config.toml if present)",
    )
    device = ArgumentParser(add_help=False)
    device.add_argument("--device", metavar="ADDR", default=argparse.SUPPRESS, help=_DEVICE_HELP)
    shoe = [common, config, device]

    parser = ArgumentParser(
        prog=PROG,
        description="Diagnose and repair electronic dealing shoes and the boxes they serve.",
        epilog="each command's --help says what it does and takes\n\n" + exit_codes_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(
        name: str, help_text: str, handler: str, parents: list[ArgumentParser]
    ) -> ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text, parents=parents)
        p.set_defaults(handler=handler, uses_config=config in parents)
        return p

    p = command("ports", "list the shoes this machine sees", "diag_shoe:ports", [common])
    p.add_argument("--all", action="store_true", help="list every serial port, not only shoes")

    command("info", "the shoe's identity and whether it is approved", "diag_shoe:info", shoe)

    p = command(
        "verify",
        "seeded verification of the shoe's firmware against the approved image",
        "diag_shoe:verify",
        shoe,
    )
    p.add_argument(
        "--image",
        type=_path,
        metavar="FILE",
        help="the firmware image to verify against (default: the approved list's image)",
    )

    p = command("selftest", "run the shoe's self-test", "diag_shoe:selftest", shoe)
    p.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=60.0,
        metavar="SECONDS",
        help="longest wait for the whole self-test (default 60)",
    )

    command("counters", "the shoe's lifetime counters", "diag_shoe:counters", shoe)

    p = command(
        "monitor",
        "show the frames on the link as they pass, card identities hidden",
        "diag_monitor:monitor",
        shoe,
    )
    p.add_argument("--raw", action="store_true", help="add a hex dump of every frame")
    p.add_argument(
        "--test-mode",
        action="store_true",
        help="put the shoe in its test mode (refused during a deal) and show the identities "
        "of the cards drawn in it",
    )
    p.add_argument(
        "--count", type=_positive_int, metavar="N", help="stop after N frames from the shoe"
    )
    p.add_argument("--seconds", type=_positive_seconds, metavar="S", help="stop after S seconds")

    p = command(
        "simulate",
        "serve a simulated shoe on a pseudo-terminal or a TCP port until stopped",
        "diag_simulate:simulate",
        [common],
    )
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--pty", action="store_true", help="on a pseudo-terminal; its path is the first line"
    )
    where.add_argument(
        "--tcp",
        type=_port,
        metavar="PORT",
        help="on 127.0.0.1:PORT (0: any free port); the socket:// address is the first line",
    )
    p.add_argument(
        "--link",
        metavar="PATH",
        help="with --pty: a symbolic link to the pseudo-terminal that survives disconnects",
    )
    p.add_argument(
        "--options",
        metavar="QUERY",
        default="",
        help='simulator options as in a sim:// address, e.g. "seed=7&deck=short"',
    )
    for name, metavar, meaning in SIM_OPTIONS:
        p.add_argument(
            "--" + name.replace("_", "-"), dest=f"sim_{name}", metavar=metavar, help=meaning
        )

    audit = sub.add_parser(
        "audit",
        help="verify or export the audit journal",
        description="Verify or export the audit journal.",
        parents=[common],
    )
    audit_sub = audit.add_subparsers(dest="audit_command", required=True, metavar="ACTION")
    journal = ArgumentParser(add_help=False)
    journal.add_argument(
        "--journal",
        type=_path,
        metavar="PATH",
        help="the journal file (default: the configuration's, else the service's)",
    )
    journal.add_argument(
        "--key", type=_path, metavar="PATH", help="its key file (default: beside the journal)"
    )
    p = audit_sub.add_parser(
        "verify",
        help="check the journal's MAC chain and checkpoint",
        description="Check the journal's MAC chain and checkpoint; name the first bad record.",
        parents=[common, config, journal],
    )
    p.set_defaults(handler="diag_audit:verify", uses_config=True)
    p = audit_sub.add_parser(
        "export",
        help="export the journal's events or rounds",
        description="Export the journal's events or rounds; sealed unless --audit.",
        parents=[common, config, journal],
    )
    p.set_defaults(handler="diag_audit:export", uses_config=True)
    p.add_argument("--format", choices=("jsonl", "csv"), default="jsonl", help="default jsonl")
    p.add_argument(
        "--audit",
        action="store_true",
        help="include the identities kept secret (needs the journal's key)",
    )
    p.add_argument("--rounds", action="store_true", help="one row per round, not per event")
    p.add_argument("--round", metavar="ID", help="only this round")
    p.add_argument(
        "--output", type=_path, metavar="FILE", help="write to FILE (default: standard output)"
    )

    journal_group = sub.add_parser(
        "journal",
        help="answer a question from the audit journal without showing what it keeps secret",
        description="Answer a question from the audit journal without showing what it keeps "
        "secret.",
        parents=[common],
    )
    journal_sub = journal_group.add_subparsers(
        dest="journal_command", required=True, metavar="ACTION"
    )
    p = journal_sub.add_parser(
        "confirm-stub",
        help="does a claimed stub match a round's stub? (the answer only, never the stub)",
        description="Say whether a claimed stub matches a round's stub, kept sealed or as "
        "commitments (rule E1); nothing of the stub is shown.",
        parents=[common, config, journal],
    )
    p.set_defaults(handler="diag_journal:confirm", uses_config=True)
    p.add_argument("--round", required=True, metavar="ID", help="the round")
    p.add_argument(
        "--cards",
        required=True,
        type=_cards,
        metavar="CARDS",
        help='the claimed stub, e.g. "AS KD 2C JK" (any order, spaces or commas); some of '
        "its cards claim that those were in it",
    )
    p.add_argument(
        "--stub-key",
        type=_path,
        metavar="PATH",
        help="the stub key (default: beside the journal's key, journal.stub.key)",
    )

    users = sub.add_parser(
        "users",
        help="who may sign in to the dealer console and the API",
        description="Add, list, remove users of the dealer console and the API, or reset a "
        "PIN. The users file: --users, else [api] users, else users.json beside the journal.",
        parents=[common],
    )
    users_file = ArgumentParser(add_help=False)
    users_file.add_argument(
        "--users", type=_path, metavar="FILE", help="the users file (default: see above)"
    )
    for p in add_actions(users, USERS, [common, config, users_file]).values():
        p.set_defaults(handler="diag_users:users", uses_config=True)

    p = command(
        "floor",
        "is the public record reaching the floor? broker, cursor, backlog; enroll: make "
        "this box's signing key",
        "diag_floor:floor",
        [common, config, journal],
    )
    p.add_argument(
        "action",
        nargs="?",
        choices=("status", "enroll"),
        default="status",
        help="status (the default): what reaches the floor; enroll: make this box's signing "
        "key (once; never replaced) and print what the floor enrols",
    )
    p.add_argument("--broker", metavar="URL", help="the broker (default: the configuration's)")
    p.add_argument("--table-id", metavar="ID", help="this table's id on the floor")

    p = command(
        "rules",
        "the rule -> tests matrix (fails when a rule has no test)",
        "diag_procedure:rules",
        [common],
    )
    p.add_argument(
        "--tests",
        type=_path,
        metavar="DIR",
        help="the test directory to read (default: the source tree's tests/)",
    )
    command(
        "diagram",
        "the dealing procedure's state diagram (mermaid)",
        "diag_procedure:diagram",
        [common],
    )

    p = command(
        "rng-report",
        "draw the starting position N times with the controller's generator and test the "
        "counts for uniformity (chi-square)",
        "diag_rng:report",
        [common, config],
    )
    p.add_argument(
        "--draws",
        type=_whole_number,
        default=70_000,
        metavar="N",
        help="starting positions to draw (default 70000; at least 5 per position)",
    )
    p.add_argument(
        "--alpha",
        type=_probability,
        default=0.001,
        metavar="P",
        help="fail (exit code 11) when the p-value is below P (default 0.001)",
    )

    p = command(
        "check",
        "is this box ready for the shoe? every check with what to do",
        "diag_box:check",
        [common, config, device],
    )
    p.set_defaults(uses_config=False)  # it reports a bad configuration as a failed check
    p.add_argument(
        "--root",
        type=_path,
        metavar="DIR",
        help="check a root directory that is not running (an image) instead of this box",
    )

    p = command(
        "install",
        "install the udev rules, users, configuration directory and service unit",
        "diag_box:install",
        [common],
    )
    p.add_argument("--dry-run", action="store_true", help="list every step and change nothing")
    p.add_argument(
        "--prefix",
        "--root",
        dest="prefix",
        type=_path,
        default="/",
        metavar="DIR",
        help="install into this root directory (an image; default: this box)",
    )
    p.add_argument(
        "--config",
        type=_path,
        metavar="FILE",
        help="a configuration file to install as /etc/shoe-controller/config.toml",
    )
    p.add_argument(
        "--executable",
        type=_path,
        metavar="PATH",
        help="the installed shoe-controller script (default: "
        "/opt/shoe-controller/bin/shoe-controller)",
    )
    p.add_argument(
        "--start", action="store_true", help="start the service once enabled (this box only)"
    )

    p = command(
        "verify-install",
        "read the installation again and compare it with the software manifest the service "
        "journaled at its latest start",
        "diag_install:verify_install",
        [common, config, journal],
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    return run_main(PROG, _main, args)


def _main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    from shoe_controller.cli.diag_common import Context

    ctx = Context(args)
    if args.uses_config:
        ctx.config()  # a bad configuration ends any command that reads one, at once
    return _handler(args.handler)(ctx)


def _handler(target: str) -> Callable[..., int]:
    module_name, _, function = target.partition(":")
    module = importlib.import_module(f"shoe_controller.cli.{module_name}")
    handler: Callable[..., int] = getattr(module, function)
    return handler


if __name__ == "__main__":
    raise SystemExit(main())
