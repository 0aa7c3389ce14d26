"""Write the wire format's test vectors again, and the examples of the specification.

    python -m tools.protocol_vectors                        # firmware_protocol/vectors.json
    python -m tools.protocol_vectors --doc docs/protocol.md # and the specification's examples
    python -m tools.protocol_vectors --check [--doc ...]    # write nothing; fail when stale

The vectors come from :mod:`firmware_protocol.vectors`, the reference implementation; this
script only decides what to write where. Exit status 0 when everything is (or now is) up to
date, 1 with ``--check`` when something is not.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from firmware_protocol.vectors import VECTORS_PATH, build, dumps, generate, update_document

PROG = "python -m tools.protocol_vectors"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Write the test vectors file (and the specification's examples).",
    )
    parser.add_argument("--doc", type=Path, help="also rewrite the examples in this document")
    parser.add_argument(
        "--check", action="store_true", help="write nothing; fail if anything is out of date"
    )
    args = parser.parse_args(argv)
    outputs = {VECTORS_PATH: dumps(generate())}
    if args.doc is not None:
        try:
            text = args.doc.read_text(encoding="utf-8")
        except OSError as exc:
            parser.error(f"cannot read {args.doc}: {exc.strerror or exc}")
        outputs[args.doc] = update_document(text, build())
    stale = [p for p, t in outputs.items() if not p.exists() or p.read_text("utf-8") != t]
    if args.check:
        if stale:
            names = ", ".join(map(str, stale))
            print(f"out of date: {names}; run {PROG} to update", file=sys.stderr)
            return 1
        return 0
    for path in stale:
        path.write_text(outputs[path], encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
