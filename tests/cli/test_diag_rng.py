"""``shoe-diag rng-report``, end to end: the controller's own start-position generator
(the operating system's source: no seed can fix it), its counts and their chi-square test
(rule B1). The statistics' verdicts on biased sources are in tests/service/test_rng_report.py."""

from __future__ import annotations

import json
import math

import pytest

from shoe_controller.errors import ExitCode
from tests.cli.conftest import Run, run_process

pytestmark = [pytest.mark.usefixtures("hermetic"), pytest.mark.rule("B1")]


def _consistent(report: dict[str, object], code: int) -> None:
    """What holds for any run of a real generator: the counts add up, the statistic and the
    p-value are those of the counts, and the exit code follows the threshold."""
    counts = report["counts"]
    assert isinstance(counts, dict)
    assert list(counts) == [str(p) for p in range(1, 8)]
    values = [int(n) for n in counts.values()]
    assert sum(values) == report["draws"]
    assert report["expected"] == pytest.approx(int(report["draws"]) / 7)  # type: ignore[call-overload]
    # Pearson's statistic, and its upper tail at 6 degrees of freedom in closed form,
    # written out here rather than asked of the code under test.
    expected = sum(values) / 7
    statistic = sum((n - expected) ** 2 / expected for n in values)
    assert report["chi_square"] == pytest.approx(statistic)
    assert report["degrees_of_freedom"] == 6
    y = statistic / 2
    assert report["p_value"] == pytest.approx(math.exp(-y) * (1 + y + y * y / 2))
    passed = float(report["p_value"]) >= float(report["alpha"])  # type: ignore[arg-type]
    assert report["ok"] is passed
    assert code == (ExitCode.OK if passed else ExitCode.CHECK_FAILED)


def test_the_report_as_json(run: Run) -> None:
    result = run("rng-report", "--draws", "7000", "--json")
    report = json.loads(result.out)
    assert report["draws"] == 7000 and report["positions"] == 7 and report["alpha"] == 0.001
    assert "secrets.randbelow" in report["generator"]
    _consistent(report, result.code)


def test_the_report_as_text(run: Run) -> None:
    result = run("rng-report", "--draws", "700", "--alpha", "0.000001")
    lines = result.out.splitlines()
    assert lines[0].startswith("generator  shoe_controller.procedure.start.draw_rng")
    assert lines[1] == "draws      700"
    header = lines.index("position  count  expected  deviation")
    rows = [line.split() for line in lines[header + 1 : header + 8]]
    assert [row[0] for row in rows] == [str(p) for p in range(1, 8)]
    assert sum(int(row[1]) for row in rows) == 700
    assert all(row[2] == "100.0" for row in rows)
    shown = dict(line.split(None, 1) for line in lines[header + 9 :])
    assert shown["chi-square"].endswith("(6 degrees of freedom)")
    assert shown["threshold"] == "1e-06"
    p = float(shown["p-value"])
    if p >= 1e-6:
        assert result.code == ExitCode.OK and shown["result"].startswith("uniform")
    else:  # once in a million runs
        assert result.code == ExitCode.CHECK_FAILED and shown["result"].startswith("FAILED")


def test_the_report_in_a_process_of_its_own() -> None:
    result = run_process("rng-report", "--draws", "3500", "--json")
    _consistent(json.loads(result.out), result.code)


def test_too_few_draws_for_the_test_end_in_one_line(run: Run) -> None:
    result = run("rng-report", "--draws", "34")
    assert result.code == ExitCode.CONFIG
    assert "--draws 34 is not a number of draws the test can judge: give 35 to" in (
        result.error_line
    )


@pytest.mark.parametrize("draws", ["0", "-5"])
def test_no_draws_at_all_gets_the_same_one_line(run: Run, draws: str) -> None:
    """Zero or a negative number is refused with the floor the test needs (35), as 34 is,
    not with a bare "1 or more" that would still be refused."""
    result = run("rng-report", "--draws", draws)
    assert result.code == ExitCode.CONFIG
    assert f"--draws {draws} is not a number of draws the test can judge: give 35 to" in (
        result.error_line
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--draws", "many"), "is not a whole number"),
        (("--alpha", "0"), "must be a probability above 0 and below 1"),
        (("--alpha", "x"), "is not a probability"),
    ],
)
def test_malformed_options_are_usage_errors(
    run: Run, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], says: str
) -> None:
    with pytest.raises(SystemExit) as stopped:
        run("rng-report", *args)
    assert stopped.value.code == ExitCode.USAGE
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("shoe-diag rng-report: error: ") and says in line
