"""Human output: text from outside escaped, colour that never misaligns a table, progress bars
that leave nothing behind, and NO_COLOR as no-color.org defines it."""

from __future__ import annotations

import dataclasses
import io
import json
import re

import pytest

from shoe_controller.cli import controller as controller_cli
from shoe_controller.cli.output import Output, Styled, printable
from shoe_controller.errors import ExitCode
from shoe_controller.simulator.shoe import SimulatedShoe
from tests.cli.conftest import Run

pytestmark = pytest.mark.usefixtures("hermetic")

#: A model name as a hostile shoe could send it: set the window title, clear the screen,
#: go home, print a fake status line, and a C1 CSI that some terminals honour.
HOSTILE = "ES\x1b]0;owned\x07\x1b[2J\x1b[HAPPROVED\x9b31m\x7f\u202eMIS"
SIM = "sim://?seed=3"


@pytest.fixture
def hostile_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """The simulated shoe sends :data:`HOSTILE` as its model in Hello (the model comes from
    the simulator's options, whose parser accepts printable text only)."""
    identity = SimulatedShoe.identity
    monkeypatch.setattr(
        SimulatedShoe,
        "identity",
        lambda self: dataclasses.replace(identity(self), model=HOSTILE),
    )


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def render(text: str) -> list[str]:
    """What a terminal shows for ``text``: carriage returns and erase-line applied."""
    screen: list[str] = []
    for raw in text.split("\n"):
        line, cursor = "", 0
        for piece in re.split(r"(\r|\x1b\[K)", raw):
            if piece == "\r":
                cursor = 0
            elif piece == "\x1b[K":
                line = line[:cursor]
            else:
                line = line[:cursor] + piece + line[cursor + len(piece) :]
                cursor += len(piece)
        screen.append(line)
    return screen


def no_control(text: str) -> bool:
    return re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e]", text) is None


def test_printable_escapes_every_control_character() -> None:
    assert printable("plain text, ñ and € stay") == "plain text, ñ and € stay"
    assert printable("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert printable("\x9b31m") == "\\x9b31m"
    assert printable("\x7f\x00") == "\\x7f\\x00"
    assert printable("two\nlines\r\t") == "two\\nlines\\r\\t"
    assert printable("\u202eevil") == "\\u202eevil"


def test_the_shoes_text_is_escaped_in_human_output(run: Run, hostile_model: None) -> None:
    result = run("info", "--device", SIM)
    assert result.code == ExitCode.OK, result.err
    assert no_control(result.out), result.out
    assert "model              ES\\x1b]0;owned\\x07\\x1b[2J" in result.out


def test_json_output_keeps_the_shoes_text_exact(run: Run, hostile_model: None) -> None:
    result = run("info", "--device", SIM, "--json")
    assert result.code == ExitCode.OK, result.err
    assert no_control(result.out.rstrip("\n"))
    assert json.loads(result.out)["model"] == HOSTILE


def test_the_service_narration_escapes_the_shoes_text(
    hostile_model: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code = controller_cli.main(["demo", "--rounds", "1", "--device", "sim://?seed=4&pace=0"])
    out = capsys.readouterr().out
    assert code == ExitCode.OK
    assert "Shoe connected at sim://?seed=4&pace=0: ES\\x1b]0;owned" in out
    assert no_control(out)


def test_error_lines_are_escaped(run: Run) -> None:
    result = run("info", "--device", "/dev/no-such-\x1b[2J-shoe")
    assert result.code == ExitCode.DEVICE_NOT_FOUND
    assert "\\x1b[2J" in result.error_line
    assert no_control(result.err.rstrip("\n"))


def test_a_coloured_table_stays_aligned() -> None:
    stream = Terminal()
    out = Output(color="always", stream=stream)
    out.table(
        ("STEP", "RESULT", "DETAIL"),
        [("1/2", Styled("pass", ("green",)), "ok"), ("2/2", Styled("FAIL", ("red",)), "bad")],
    )
    plain = re.sub(r"\x1b\[[0-9;]*m", "", stream.getvalue()).splitlines()
    assert plain == ["STEP  RESULT  DETAIL", "1/2   pass    ok", "2/2   FAIL    bad"]
    assert "\x1b[32mpass\x1b[0m" in stream.getvalue()


def test_selftest_table_is_aligned_with_colour(run: Run) -> None:
    coloured = run("selftest", "--device", SIM, "--color", "always").out
    plain = run("selftest", "--device", SIM, "--color", "never").out
    assert "\x1b[32m" in coloured
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain


def test_progress_bar_is_cleared_when_done() -> None:
    stream = Terminal()
    out = Output(stream=stream)
    out.progress(1, 2, "first")
    out.progress(2, 2, "second")
    out.progress_done()
    out.line("result")
    assert render(stream.getvalue()) == ["result", ""]


def test_selftest_leaves_no_progress_bar(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = Terminal()
    monkeypatch.setattr("sys.stdout", terminal)
    assert run("selftest", "--device", SIM).code == ExitCode.OK
    text = terminal.getvalue()
    assert "\r  [" in text  # it was shown while the test ran
    assert not any("[###" in line for line in render(text)), render(text)


@pytest.mark.parametrize(("value", "coloured"), [("", True), ("1", False), ("0", False)])
def test_no_color_counts_only_when_not_empty(
    run: Run, monkeypatch: pytest.MonkeyPatch, value: str, coloured: bool
) -> None:
    monkeypatch.setenv("NO_COLOR", value)
    out = run("selftest", "--device", SIM, "--color", "always").out
    assert ("\x1b[32m" in out) is coloured
