"""Write the table's inputs into the API's OpenRPC document from their declarations
(shoe_controller/procedure/declarations.py), in the package's schema.json and in the copy
docs/api.md shows.

    python tools/openrpc.py --write     rewrite both
    python tools/openrpc.py --check     exit 1 when either is stale
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from shoe_controller.api.openrpc import dumps, with_inputs

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "shoe_controller" / "api" / "schema.json"
DOC = ROOT / "docs" / "api.md"
BLOCK = re.compile(r"(<!-- schema:start -->\n```json\n)(.*?)(```\n<!-- schema:end -->)", re.S)


def made() -> str:
    return dumps(with_inputs(json.loads(SCHEMA.read_text(encoding="utf-8"))))


def doc_with(schema: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    if not BLOCK.search(text):
        raise SystemExit(f"{DOC}: no schema block between its markers")
    return BLOCK.sub(lambda m: m.group(1) + schema + m.group(3), text, count=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true")
    action.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    schema = made()
    doc = doc_with(schema)
    stale = [
        path
        for path, text in ((SCHEMA, schema), (DOC, doc))
        if path.read_text(encoding="utf-8") != text
    ]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is stale: run python tools/openrpc.py --write")
        return 1 if stale else 0
    for path, text in ((SCHEMA, schema), (DOC, doc)):
        if path in stale:
            path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
