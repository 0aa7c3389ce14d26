"""The service unit: what it says, and what systemd-analyze makes of it."""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from shoe_controller.box import installation
from shoe_controller.errors import ExitCode
from shoe_controller.hal import usb_ids
from tools.real_parts import program

UNIT = Path(__file__).resolve().parents[2] / "systemd" / installation.UNIT_NAME
MAX_EXPOSURE = 2.0


def _settings(text: str) -> dict[str, dict[str, list[str]]]:
    """Unit sections as {section: {key: [values in order]}} (keys may repeat in units)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
            continue
        assert current is not None, f"setting outside a section: {line}"
        key, _, value = line.partition("=")
        current.setdefault(key, []).append(value)
    return sections


@pytest.fixture(scope="module")
def unit() -> dict[str, dict[str, list[str]]]:
    return _settings(UNIT.read_text(encoding="utf-8"))


def test_committed_unit_is_the_rendering() -> None:
    assert UNIT.read_text(encoding="utf-8") == installation.render_unit(), (
        "systemd/ is stale: regenerate it with installation.render_unit()"
    )


def test_unit_parses_as_ini_with_the_expected_sections() -> None:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.read_string(UNIT.read_text(encoding="utf-8"))
    assert parser.sections() == ["Unit", "Service", "Install"]


def test_runs_the_controller_with_the_installed_config(
    unit: dict[str, dict[str, list[str]]],
) -> None:
    service = unit["Service"]
    assert service["ExecStart"] == [
        f"{installation.DEFAULT_EXECUTABLE} run --wait --config /etc/shoe-controller/config.toml"
    ]
    assert service["User"] == [installation.SERVICE_USER]
    assert service["Group"] == [usb_ids.DEVICE_GROUP]
    assert service["StateDirectory"] == ["shoe-controller"]
    assert service["StateDirectoryMode"] == ["0700"]
    assert service["ConfigurationDirectory"] == ["shoe-controller"]
    assert service["StandardOutput"] == service["StandardError"] == ["journal"]


def test_restarts_on_failure_within_a_limit(unit: dict[str, dict[str, list[str]]]) -> None:
    assert unit["Service"]["Restart"] == ["on-failure"]
    assert unit["Service"]["RestartPreventExitStatus"] == [
        f"{ExitCode.USAGE.value} {ExitCode.CONFIG.value}"
    ]
    assert int(unit["Unit"]["StartLimitBurst"][0]) > 1
    assert int(unit["Unit"]["StartLimitIntervalSec"][0]) > 0
    assert unit["Install"]["WantedBy"] == ["multi-user.target"]


def test_does_not_stop_with_the_device(unit: dict[str, dict[str, list[str]]]) -> None:
    # The controller waits and reconnects itself; see the comment in the unit.
    for key in ("BindsTo", "Requires", "PartOf", "After", "Wants"):
        assert not any(".device" in v for v in unit["Unit"].get(key, []))


def test_only_the_shoes_device_classes(unit: dict[str, dict[str, list[str]]]) -> None:
    service = unit["Service"]
    assert service["DevicePolicy"] == ["closed"]
    assert sorted(service["DeviceAllow"]) == [
        "char-ttyACM rw",
        "char-ttyUSB rw",
        "char-usb_device rw",
    ]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("PrivateTmp", "yes"),
        ("PrivateNetwork", "yes"),
        ("CapabilityBoundingSet", ""),
        ("RestrictAddressFamilies", "AF_UNIX AF_NETLINK"),
        ("MemoryDenyWriteExecute", "yes"),
        ("UMask", "0077"),
    ],
)
def test_hardening(unit: dict[str, dict[str, list[str]]], key: str, value: str) -> None:
    assert unit["Service"][key] == [value]


def _unit_with_executable(tmp_path: Path) -> Path:
    # `verify` insists that ExecStart's program exists and is executable, and the package is
    # not installed at /opt/shoe-controller on a build machine. Point a copy of the committed
    # unit at a stand-in script; every other line is verified as committed. (`--root` would
    # need a whole systemd tree, sysinit.target included, inside the root.)
    program = tmp_path / "bin" / "shoe-controller"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    program.chmod(0o755)
    text = UNIT.read_text(encoding="utf-8")
    exec_line = f"ExecStart={installation.DEFAULT_EXECUTABLE} "
    assert text.count(exec_line) == 1
    copy = tmp_path / installation.UNIT_NAME
    copy.write_text(text.replace(exec_line, f"ExecStart={program} "), encoding="utf-8")
    return copy


def _analyze(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [program("systemd-analyze"), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.mark.needs("systemd")
def test_systemd_analyze_verify(tmp_path: Path) -> None:
    result = _analyze("verify", "--man=no", str(_unit_with_executable(tmp_path)))
    # verify reports problems on stderr and may still exit 0 for some of them.
    assert result.returncode == 0, result.stderr
    assert result.stderr == "", result.stderr


@pytest.mark.needs("systemd")
def test_systemd_analyze_verify_catches_a_broken_unit(tmp_path: Path) -> None:
    broken = _unit_with_executable(tmp_path)
    broken.write_text(
        broken.read_text(encoding="utf-8").replace("Restart=on-failure", "Restart=sometimes"),
        encoding="utf-8",
    )
    result = _analyze("verify", "--man=no", str(broken))
    # systemd 252 exits 0 here and only says so on stderr, hence the stderr check above.
    assert "sometimes" in result.stderr


def exposure(report: str) -> float:
    """The number on systemd-analyze security's "Overall exposure level" line."""
    match = re.search(r"Overall exposure level for \S+: (\d+(?:\.\d+)?)", report)
    assert match is not None, report
    return float(match.group(1))


@pytest.mark.needs("systemd")
def test_security_exposure_at_most_2(tmp_path: Path) -> None:
    result = _analyze(
        "security",
        "--offline=true",
        f"--threshold={int(MAX_EXPOSURE * 10)}",
        str(_unit_with_executable(tmp_path)),
    )
    level = exposure(result.stdout)
    assert level <= MAX_EXPOSURE, result.stdout
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.needs("systemd")
def test_security_rates_an_unhardened_unit_worse(tmp_path: Path) -> None:
    # The same measurement on a unit with no hardening must fail the bar, or the bar is moot.
    plain = tmp_path / "plain.service"
    plain.write_text("[Service]\nExecStart=/bin/sh -c true\n", encoding="utf-8")
    result = _analyze("security", "--offline=true", str(plain))
    assert exposure(result.stdout) > MAX_EXPOSURE


def _documented_drop_in() -> str:
    """The publishing drop-in exactly as docs/install.md prints it."""
    guide = (UNIT.parents[1] / "docs" / "install.md").read_text(encoding="utf-8")
    match = re.search(r"and in the editor:\n\n((?:    .*\n)+)", guide)
    assert match is not None, "docs/install.md lost its publishing drop-in"
    return "".join(line[4:] + "\n" for line in match.group(1).splitlines())


def _security_lines(report: str) -> dict[str, bool]:
    """{setting: passed} from systemd-analyze security's table (✓ passed, ✗ failed)."""
    rows = re.findall(r"^([✓✗]) (\S+)", report, flags=re.MULTILINE)
    return {name: mark == "✓" for mark, name in rows}


@pytest.mark.needs("systemd")
def test_documented_publishing_drop_in_opens_only_the_network(tmp_path: Path) -> None:
    drop_in = _documented_drop_in()
    assert drop_in.startswith("[Service]\n")
    system = tmp_path / "etc" / "systemd" / "system"
    (system / f"{installation.UNIT_NAME}.d").mkdir(parents=True)
    shutil.copy(UNIT, system / installation.UNIT_NAME)
    (system / f"{installation.UNIT_NAME}.d" / "publish.conf").write_text(drop_in, "utf-8")

    before = _analyze("security", "--offline=true", str(UNIT)).stdout
    after = _analyze("security", "--offline=true", f"--root={tmp_path}", installation.UNIT_NAME)
    closed, opened = _security_lines(before), _security_lines(after.stdout)
    changed = {name for name in closed if closed[name] != opened.get(name)}
    assert changed == {
        "PrivateNetwork=",
        "RestrictAddressFamilies=~AF_(INET|INET6)",
        "IPAddressDeny=",
    }, after.stdout
    assert exposure(after.stdout) <= MAX_EXPOSURE
