"""The README's list of the documentation names every page of docs/, and nothing else."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_lists_every_page_of_the_documentation() -> None:
    listed = README.split("\n## Documentation\n", 1)[1].split("\n## ", 1)[0]
    linked = set(re.findall(r"\]\((docs/[^)#]+)\)", listed))
    pages = {
        f"docs/{page.name}"
        for page in (ROOT / "docs").iterdir()
        if page.is_file() and page.suffix in (".md", ".toml")
    }
    assert len(pages) > 15
    assert linked == pages


def test_every_link_of_the_readme_leads_to_a_file() -> None:
    targets = re.findall(r"\]\(([^)#]+)\)", README)
    assert targets
    assert [target for target in targets if not (ROOT / target).is_file()] == []
