"""A distribution installed for one test: a site directory with a package, its
``.dist-info`` and a ``RECORD`` as pip writes it, on ``sys.path`` and imported."""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from shoe_controller.service import manifest


@dataclass(frozen=True)
class Installed:
    site: Path
    name: str
    module: str
    version: str

    @property
    def dist_info(self) -> Path:
        return self.site / f"{self.module}-{self.version}.dist-info"

    @property
    def source(self) -> Path:
        return self.site / self.module / "__init__.py"

    @property
    def record(self) -> Path:
        return self.dist_info / "RECORD"

    def write_record(self) -> None:
        """A RECORD listing every file with its digest and size, as an installer writes."""
        rows = []
        for path in sorted(p for p in self.site.rglob("*") if p.is_file()):
            if path == self.record or "__pycache__" in path.parts:
                continue
            data = path.read_bytes()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            rows.append(
                [path.relative_to(self.site).as_posix(), f"sha256={digest.decode()}", len(data)]
            )
        rows.append([self.record.relative_to(self.site).as_posix(), "", ""])
        with self.record.open("w", newline="") as handle:
            csv.writer(handle, lineterminator="\n").writerows(rows)


def install(site: Path, name: str = "Fake_Evidence", version: str = "1.0") -> Installed:
    module = "fake_evidence"
    installed = Installed(site, name, module, version)
    installed.source.parent.mkdir(parents=True)
    installed.source.write_text("VALUE = 1\n")
    installed.dist_info.mkdir()
    (installed.dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    )
    (installed.dist_info / "top_level.txt").write_text(f"{module}\n")
    installed.write_record()
    return installed


@pytest.fixture(name="installed")
def installed_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Installed]:
    """``fake-evidence`` 1.0, installed in a site directory of this test and imported."""
    dist = install(tmp_path / "site")
    monkeypatch.syspath_prepend(str(dist.site))
    importlib.invalidate_caches()
    manifest._top_level_providers.cache_clear()
    importlib.import_module(dist.module)
    try:
        yield dist
    finally:
        sys.modules.pop(dist.module, None)
        manifest._top_level_providers.cache_clear()
