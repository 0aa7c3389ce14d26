"""``shoe-diag verify-install``: the installation read again and compared with the software
manifest of the service's latest start (rule A1: software identity)."""

from __future__ import annotations

from shoe_controller.box.installation import system_files
from shoe_controller.cli.diag_audit import journal_path
from shoe_controller.cli.diag_common import Context, key_values
from shoe_controller.errors import ExitCode, ShoeControllerError
from shoe_controller.service.install_check import check_installation, latest_manifest


class InstallationDiffers(ShoeControllerError):
    exit_code = ExitCode.CHECK_FAILED


def verify_install(ctx: Context) -> int:
    journal = journal_path(ctx)
    journaled = latest_manifest(journal)
    check = check_installation(journaled.manifest, system_files())
    out = ctx.out
    started = f"record {journaled.started_seq}, service started {journaled.started_at}"
    if ctx.json:
        out.json(
            {
                "journal": str(journal),
                "started_seq": journaled.started_seq,
                "started_at": journaled.started_at,
                "manifest_seq": journaled.manifest_seq,
                "manifest_sha256": journaled.sha256,
                "distributions": check.distributions,
                "record_files": check.record_files,
                "packages": check.packages,
                "system_files": check.system_files,
                "ok": check.ok,
                "differences": [f.line() for f in check.findings],
                "notes": check.notes,
            }
        )
    else:
        key_values(
            out,
            [
                ("journal", str(journal)),
                ("manifest", started),
                ("manifest sha256", journaled.sha256),
                (
                    "distributions",
                    f"{check.distributions}, {check.record_files} files checked against their "
                    "RECORD",
                ),
                ("packages", str(check.packages)),
                ("system files", str(check.system_files)),
            ],
        )
        for note in check.notes:
            out.line(f"note: {note}", "dim")
        for finding in check.findings:
            out.line(f"differs: {finding.line()}", "red")
        result = (
            "matches the manifest"
            if check.ok
            else f"DIFFERS in {len(check.findings)} way{'s' if len(check.findings) != 1 else ''}"
        )
        # Aligned with the rows above it, after the lines that say what differs.
        label = "result".ljust(len("manifest sha256"))
        key_values(out, [(label, result)], {label: ("green",) if check.ok else ("red", "bold")})
    if not check.ok:
        raise InstallationDiffers(
            f"the installation differs from the manifest of the start at "
            f"{journaled.started_at} (journal record {journaled.started_seq}) in "
            f"{len(check.findings)} way(s), each listed above: reinstall the approved release; "
            "after an approved change, restart the service so that it journals the new manifest"
        )
    return int(ExitCode.OK)
