"""``shoe-diag diagram`` and ``shoe-diag rules``: the dealing procedure, as reviewers see it."""

from __future__ import annotations

from pathlib import Path

from shoe_controller.cli.diag_common import Context
from shoe_controller.errors import ConfigError, ExitCode


def diagram(ctx: Context) -> int:
    from shoe_controller.procedure import procedure_diagram

    text = procedure_diagram()
    out = ctx.out
    if ctx.json:
        out.json({"format": "mermaid", "diagram": text})
    else:
        out.text(text)
    return int(ExitCode.OK)


def rules(ctx: Context) -> int:
    """The rule -> tests matrix, read from the test sources; it fails when a rule has no
    test, a test names an unknown rule, or a marker cannot be read."""
    from shoe_controller.procedure import RULES
    from shoe_controller.traceability import format_matrix, rule_matrix

    tests = _tests_directory(ctx.option("tests"))
    matrix = rule_matrix(tests, base=tests.parent)
    out = ctx.out
    if ctx.json:
        for rule, ids in matrix.tests.items():
            out.json({"rule": rule, "title": RULES[rule].title, "known": True, "tests": list(ids)})
        for rule, ids in matrix.unknown.items():
            out.json({"rule": rule, "title": None, "known": False, "tests": list(ids)})
        for problem in matrix.problems:
            out.json({"rule": None, "location": problem.location, "problem": problem.message})
    else:
        out.text(format_matrix(matrix))
    if matrix.complete:
        return int(ExitCode.OK)
    wrong = []
    if matrix.uncovered:
        wrong.append(f"no test for rule(s) {', '.join(matrix.uncovered)}")
    if matrix.unknown:
        wrong.append(f"tests name unknown rule(s) {', '.join(matrix.unknown)}")
    if matrix.problems:
        wrong.append(f"{len(matrix.problems)} marker(s) cannot be read")
    out.warn(
        f"shoe-diag: error: the matrix is incomplete: {'; '.join(wrong)}: give every rule a "
        'test marked @pytest.mark.rule("ID") with an id of the matrix above'
    )
    return int(ExitCode.CHECK_FAILED)


def _tests_directory(given: Path | None) -> Path:
    """--tests, else the tests/ of the source tree this package runs from."""
    if given is not None:
        if not given.is_dir():
            raise ConfigError(f"--tests {given} is not a directory: name the tests/ directory")
        return given
    import shoe_controller

    beside = Path(shoe_controller.__file__).resolve().parents[1] / "tests"
    if not beside.is_dir():
        raise ConfigError(
            "no tests/ directory beside the installed package (a release ships none): pass "
            "--tests DIR naming the source tree's tests/"
        )
    return beside
