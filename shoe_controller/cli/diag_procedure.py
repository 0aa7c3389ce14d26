"""``shoe-diag diagram`` and ``shoe-diag rules``: the dealing procedure, as reviewers see it."""

from __future__ import annotations

from shoe_controller.cli.diag_common import Context
from shoe_controller.errors import ExitCode


def diagram(ctx: Context) -> int:
    from shoe_controller.procedure import procedure_diagram

    text = procedure_diagram()
    out = ctx.out
    if ctx.json:
        out.json({"format": "mermaid", "diagram": text})
    else:
        out.stream.write(text)
        out.stream.flush()
    return int(ExitCode.OK)
