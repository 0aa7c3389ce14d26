"""``shoe-diag check`` and ``shoe-diag install``: the box around the shoe."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from shoe_controller.box import checks, installation
from shoe_controller.cli.diag_common import Context
from shoe_controller.cli.output import Styled
from shoe_controller.errors import ConfigError, ExitCode
from shoe_controller.journal.paths import JOURNAL_NAME, default_key_path
from shoe_controller.service.config import Config, load_config
from shoe_controller.service.external_rng import ExternalRngSettings, load_verifier

_RESULTS = {True: ("ok", ("green",)), False: ("FAIL", ("red", "bold")), None: ("n/a", ("dim",))}


def check(ctx: Context) -> int:
    root: Path | None = ctx.option("root")
    box = checks.Box() if root is None else checks.Box.for_root(root)
    given: Path | None = ctx.option("config")
    config_path = given if given is not None else box.path(installation.CONFIG_FILE)
    try:
        config: Config | None = load_config(config_path)
    except ConfigError:
        config = None  # the configuration check reports it
    address: str = ctx.option("device") or (config.device if config else "auto")
    journal_file = installation.STATE_DIR / JOURNAL_NAME
    if config is not None and config.journal_path is not None:
        journal_file = config.journal_path
    journal = journal_file.parent
    key = config.journal_key if config is not None else None
    results = checks.run_checks(
        box,
        address=address,
        config=config_path,
        load_config=load_config,
        journal=journal,
        journal_owner=installation.SERVICE_USER,
        key=key or default_key_path(journal_file),
        external_rng=_external_key(config.external_rng) if config is not None else None,
    )
    if root is None:
        # The clock of this box (an image has none running).
        from shoe_controller.service.provenance import clock_state

        state = clock_state()
        required = config is not None and config.table.require_synchronized_clock
        results.append(checks.clock(state.synchronized, state.source, required=required))
    out = ctx.out
    if ctx.json:
        for result in results:
            line = {"check": result.name, "ok": result.ok, "detail": result.detail}
            line["fix"] = result.fix
            if result.notice:
                line["notice"] = True  # passed, worth saying (the clock, E3)
            out.json(line)
    else:
        _show(ctx, results)
    failed = [result.name for result in results if result.ok is False]
    if failed:
        out.warn(
            f"shoe-diag: error: {len(failed)} of {len(results)} checks failed "
            f"({', '.join(failed)}): do what each says, then run shoe-diag check again"
        )
        return int(ExitCode.CHECK_FAILED)
    if not ctx.json:
        skipped = sum(result.ok is None for result in results)
        note = f" ({skipped} not applicable)" if skipped else ""
        out.line(f"box ready: {len(results) - skipped} checks passed{note}", "green")
    return int(ExitCode.OK)


def _external_key(settings: ExternalRngSettings | None) -> checks.ExternalKey | None:
    """The configured external generator's key, read as the service reads it at start."""
    if settings is None:
        return None

    def load(path: Path) -> object:
        return load_verifier(replace(settings, key=path))

    return checks.ExternalKey(settings.device, settings.algorithm, settings.key, load)


def _show(ctx: Context, results: list[checks.CheckResult]) -> None:
    out = ctx.out
    name_width = max(len("CHECK"), *(len(r.name) for r in results))
    result_width = len("RESULT")
    indent = " " * (name_width + result_width + 4)
    out.line(f"{'CHECK'.ljust(name_width)}  {'RESULT'.ljust(result_width)}  DETAIL", "bold")
    for result in results:
        word, styles = ("NOTICE", ("yellow",)) if result.notice else _RESULTS[result.ok]
        out.parts(
            f"{result.name.ljust(name_width)}  ",
            Styled(word.ljust(result_width), styles),
            f"  {result.detail}",
        )
        if result.ok is False and result.fix:
            out.line(f"{indent}fix: {result.fix}")


def install(ctx: Context) -> int:
    prefix: Path = ctx.option("prefix")
    executable: Path | None = ctx.option("executable")
    steps = installation.plan(
        prefix,
        executable=executable or installation.DEFAULT_EXECUTABLE,
        config=ctx.option("config"),
        start=bool(ctx.option("start")),
    )
    out = ctx.out
    dry_run = bool(ctx.option("dry_run"))
    runner = None if dry_run else installation.SystemRunner.for_prefix(prefix)
    for number, step in enumerate(steps, start=1):
        if runner is not None:
            installation.apply([step], runner)
        if ctx.json:
            out.json(
                {
                    "step": number,
                    "action": step.action(),
                    "description": step.describe(),
                    "done": runner is not None,
                }
            )
        else:
            out.line(f"{number:2}. {step.describe()}" if dry_run else f"done: {step.describe()}")
    if not ctx.json:
        if dry_run:
            out.line(f"dry run: {len(steps)} steps, nothing changed")
        else:
            out.line(f"installed: {len(steps)} steps done; now run shoe-diag check", "green")
    return int(ExitCode.OK)
