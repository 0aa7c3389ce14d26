"""``shoe-diag rng-report``: the start-position generator's chi-square report (rule B1)."""

from __future__ import annotations

from shoe_controller.cli.diag_common import Context, key_values
from shoe_controller.cli.output import Styled
from shoe_controller.errors import ExitCode, ShoeControllerError
from shoe_controller.service.rng_report import GENERATOR, RngReport, rng_report


class RngCheckFailed(ShoeControllerError):
    exit_code = ExitCode.CHECK_FAILED


def report(ctx: Context) -> int:
    positions = ctx.config().table.positions
    out = ctx.out
    try:
        result = rng_report(
            ctx.option("draws"),
            positions=positions,
            alpha=ctx.option("alpha"),
            progress=lambda done, total: out.progress(done, total, "draws"),
        )
    finally:
        out.progress_done()
    if ctx.json:
        out.json(
            {
                "generator": GENERATOR,
                "draws": result.draws,
                "positions": result.positions,
                "counts": {str(p): n for p, n in enumerate(result.counts, start=1)},
                "expected": result.expected,
                "chi_square": result.chi_square,
                "degrees_of_freedom": result.degrees_of_freedom,
                "p_value": result.p_value,
                "alpha": result.alpha,
                "ok": result.passed,
            }
        )
    else:
        _show(ctx, result)
    if not result.passed:
        raise RngCheckFailed(
            f"the start-position generator failed the chi-square test: p = "
            f"{result.p_value:.3g} < {result.alpha:g} over {result.draws} draws; run the "
            "report again (a sound generator fails one run in 1/alpha), and take a "
            "generator that fails again out of service"
        )
    return int(ExitCode.OK)


def _show(ctx: Context, result: RngReport) -> None:
    out = ctx.out
    key_values(out, [("generator", GENERATOR), ("draws", str(result.draws))])
    out.line()
    expected = result.expected
    out.table(
        ("position", "count", "expected", "deviation"),
        (
            (str(position), str(count), f"{expected:.1f}", f"{(count - expected) / expected:+.2%}")
            for position, count in enumerate(result.counts, start=1)
        ),
    )
    out.line()
    verdict = (
        Styled(f"uniform: no evidence against it (p >= {result.alpha:g})", ("green",))
        if result.passed
        else Styled(f"FAILED: not uniform at p < {result.alpha:g}", ("red", "bold"))
    )
    key_values(
        out,
        [
            (
                "chi-square",
                f"{result.chi_square:.3f} ({result.degrees_of_freedom} degrees of freedom)",
            ),
            ("p-value", f"{result.p_value:.4g}"),
            ("threshold", f"{result.alpha:g}"),
            ("result", verdict.text),
        ],
        {"result": verdict.styles},
    )
