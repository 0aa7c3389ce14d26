"""The udev rules: syntax, numbering, least privilege, and the shoe's identity from the code."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from shoe_controller.box import installation
from shoe_controller.hal import usb_ids
from tests.box import udev_lint
from tools.real_parts import program

RULES = Path(__file__).resolve().parents[2] / "udev" / installation.RULES_NAME
VID = f"{usb_ids.VENDOR_ID:04x}"
PID = f"{usb_ids.PRODUCT_ID:04x}"
LINK = usb_ids.SYMLINK.removeprefix("/dev/")


@pytest.fixture(scope="module")
def parsed() -> udev_lint.Parsed:
    return udev_lint.parse(RULES.read_text(encoding="utf-8"))


def _value(rule: udev_lint.Rule, key: str, attr: str | None = None) -> str | None:
    items = rule.get(key, attr)
    return items[0].value if items else None


def _matches_shoe(rule: udev_lint.Rule) -> bool:
    keys = ("ATTRS", "ATTR")
    return any(
        _value(rule, k, "idVendor") == VID and _value(rule, k, "idProduct") == PID for k in keys
    )


def test_committed_rules_are_the_rendering_of_usb_ids() -> None:
    assert RULES.read_text(encoding="utf-8") == installation.render_udev_rules(), (
        "udev/ is stale: regenerate it with installation.render_udev_rules()"
    )


def test_rules_parse_without_problems(parsed: udev_lint.Parsed) -> None:
    assert parsed.problems == ()
    assert len(parsed.rules) >= 3


def test_file_number_sorts_before_seat_late() -> None:
    number = re.fullmatch(r"(\d\d)-[a-z0-9-]+\.rules", RULES.name)
    assert number is not None, f"{RULES.name} is not NN-name.rules"
    assert int(number.group(1)) < 73


def test_only_add_and_change_events_reach_the_rules(parsed: udev_lint.Parsed) -> None:
    first = parsed.rules[0]
    assert _value(first, "ACTION") == "add|change"
    assert first.get("ACTION")[0].op == "!="
    assert first.get("GOTO")
    assert parsed.rules[-1].get("LABEL")[0].value == first.get("GOTO")[0].value


def test_no_world_access_and_only_for_the_shoe(parsed: udev_lint.Parsed) -> None:
    granting = [r for r in parsed.rules if r.get("MODE") or r.get("GROUP") or r.get("SYMLINK")]
    assert granting
    for rule in granting:
        assert _matches_shoe(rule), f"line {rule.line} changes a device that is not the shoe"
        for mode in rule.get("MODE"):
            assert not udev_lint.world_accessible(mode.value), f"line {rule.line}: {mode.value}"
            assert mode.value == "0660"
        assert "0666" not in {m.value for m in rule.get("MODE")}


def test_serial_interface_named_grouped_and_hidden_from_modemmanager(
    parsed: udev_lint.Parsed,
) -> None:
    tty = [r for r in parsed.rules if _value(r, "SUBSYSTEM") == "tty" and _matches_shoe(r)]
    main = [r for r in tty if _value(r, "SYMLINK") == LINK]
    assert len(main) == 1
    rule = main[0]
    assert rule.get("SYMLINK")[0].op == "+="
    assert _value(rule, "GROUP") == usb_ids.DEVICE_GROUP
    assert _value(rule, "MODE") == "0660"
    assert _value(rule, "ENV", "ID_MM_DEVICE_IGNORE") == "1"
    kernel = _value(rule, "KERNEL")
    assert kernel is not None
    assert set(kernel.split("|")) == {"ttyACM[0-9]*", "ttyUSB[0-9]*"}
    per_serial = [r for r in tty if (_value(r, "SYMLINK") or "").startswith(f"{LINK}-")]
    assert [r.get("SYMLINK")[0].value for r in per_serial] == [f"{LINK}-$attr{{serial}}"]
    assert _value(per_serial[0], "ATTRS", "serial") == "?*"


def test_raw_usb_device_grouped(parsed: udev_lint.Parsed) -> None:
    usb = [r for r in parsed.rules if _value(r, "SUBSYSTEM") == "usb" and _matches_shoe(r)]
    assert len(usb) == 1
    assert _value(usb[0], "ENV", "DEVTYPE") == "usb_device"
    assert _value(usb[0], "GROUP") == usb_ids.DEVICE_GROUP
    assert _value(usb[0], "MODE") == "0660"


def _udevadm() -> str:
    return program("udevadm")


def _has_verify(udevadm: str) -> bool:
    probe = subprocess.run(
        [udevadm, "verify", "--help"], capture_output=True, text=True, check=False, timeout=10
    )
    return probe.returncode == 0


#: What udevadm says of a rule that is fine where the group does not exist (a build machine).
_NOT_A_COMPLAINT = re.compile(r"Resolving group name is disabled|Unknown group")


def _udevadm_test_complaints(udevadm: str, text: str, tmp_path: Path) -> list[str]:
    """What ``udevadm test`` (systemd < 254 has no ``verify``) says about ``text`` as our
    rules file. It reads only the system's rule directories, so the file is put in
    /etc/udev/rules.d inside a private mount namespace: the machine's own is untouched."""
    rules_dir = tmp_path / "rules.d"
    rules_dir.mkdir()
    (rules_dir / installation.RULES_NAME).write_text(text, encoding="utf-8")
    device = sorted(Path("/sys/class/tty").iterdir())[0]  # any device: the rules are parsed
    script = 'mount --bind "$1" /etc/udev/rules.d && exec "$2" test --resolve-names=never ' + (
        '--action=add "$3"'
    )
    namespace = ["unshare", "--mount", "--propagation", "private"]
    result = subprocess.run(
        [*namespace, "sh", "-c", script, "sh", str(rules_dir), udevadm, str(device)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    named = f"/etc/udev/rules.d/{installation.RULES_NAME}"
    output = result.stdout + result.stderr
    if f"Reading rules file: {named}" not in output:
        pytest.fail(f"udevadm test did not read the rules ({result.returncode}): {output[-500:]}")
    return [
        line
        for line in output.splitlines()
        if line.startswith(f"{named}:") and not _NOT_A_COMPLAINT.search(line)
    ]


@pytest.mark.needs("udev")
def test_udevadm_accepts_the_rules(tmp_path: Path) -> None:
    udevadm = _udevadm()
    if _has_verify(udevadm):
        # The group may not exist on a build machine: verify the syntax, not the names.
        result = subprocess.run(
            [udevadm, "verify", "--resolve-names=never", str(RULES)],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        return
    assert _udevadm_test_complaints(udevadm, RULES.read_text(encoding="utf-8"), tmp_path) == []


@pytest.mark.needs("udev")
def test_udevadm_complains_of_a_broken_rule(tmp_path: Path) -> None:
    # The check above can fail: the same udevadm run on a broken file says so.
    udevadm = _udevadm()
    broken = 'SUBSYSTEM=="tty", FROB="1"\nKERNEL="ttyACM0"\n'
    if _has_verify(udevadm):
        path = tmp_path / installation.RULES_NAME
        path.write_text(broken, encoding="utf-8")
        result = subprocess.run(
            [udevadm, "verify", "--resolve-names=never", str(path)],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
        assert result.returncode != 0
        return
    complaints = _udevadm_test_complaints(udevadm, broken, tmp_path)
    assert len(complaints) == 2, complaints


# The linter itself: each of these must be caught, or the checks above prove nothing.
@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('SUBSYSTEM=="tty", FROB="1"\n', "unknown key"),
        ('KERNEL="ttyACM0"\n', "operator = is not valid"),
        ('SUBSYSTEM=="tty", GROUP=="shoe"\n', "operator == is not valid"),
        ('ATTRS=="1209"\n', "needs {attribute}"),
        ('SUBSYSTEM=="tty", GROUP{x}="shoe"\n', "takes no {attribute}"),
        ("SUBSYSTEM==tty\n", "cannot read"),
        ('SUBSYSTEM=="tty" GROUP="shoe"\n', "separated by commas"),
        ('SUBSYSTEM=="tty", GROUP="shoe",\n', "trailing comma"),
        ('SUBSYSTEM=="tty", MODE="rw-rw----"\n', "not an octal mode"),
        ('SUBSYSTEM=="tty", \\\n', "ends inside a continued line"),
        ('SUBSYSTEM=="tty", \\\n# comment\nGROUP="shoe"\n', "ends in a blank"),
        ('SUBSYSTEM=="tty", \\ \nGROUP="shoe"\n', "whitespace after the continuation"),
        ('ACTION!="add", GOTO="end"\n', "has no LABEL"),
    ],
)
def test_linter_rejects(text: str, problem: str) -> None:
    problems = udev_lint.parse(text).problems
    assert any(problem in p for p in problems), problems


def test_linter_reads_continuations_comments_and_escapes() -> None:
    text = (
        "# a comment\n"
        "\n"
        'SUBSYSTEM=="tty", \\\n'
        '  ATTRS{idVendor}=="1209",\\\n'
        '  PROGRAM=="/bin/echo \\"x\\"", ENV{A}+="b"\n'
    )
    parsed = udev_lint.parse(text)
    assert parsed.problems == ()
    (rule,) = parsed.rules
    assert rule.line == 3
    assert [i.key for i in rule.items] == ["SUBSYSTEM", "ATTRS", "PROGRAM", "ENV"]
    assert rule.get("PROGRAM")[0].value == '/bin/echo \\"x\\"'


@pytest.mark.parametrize(("mode", "world"), [("0660", False), ("0666", True), ("0604", True)])
def test_world_access_detection(mode: str, world: bool) -> None:
    assert udev_lint.world_accessible(mode) is world
