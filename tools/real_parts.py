"""The real parts the test suite and the benchmarks drive: system programs from Debian
packages (a browser, a broker, a database, udev, systemd, strace, openssl).

A test that needs one is marked ``@pytest.mark.needs("mosquitto")``: where the part is
missing it is skipped and the run ends with one line naming what is missing and the
``apt-get install`` line that brings it all; with ``SHOE_REAL_PARTS=required`` (CI) it
fails instead.

Programs are looked up on ``PATH``, then in the directories of ``SHOE_PART_DIRS`` (by
default the system's ``sbin`` directories, which a user's ``PATH`` lacks, and PostgreSQL's
version directories, newest first). Setting ``SHOE_PART_DIRS`` to nothing and ``PATH`` to
a directory without the parts is a machine without them.

    python3 tools/real_parts.py             what is missing, and the line that installs it
    python3 tools/real_parts.py --packages  only the missing packages' names (for scripts)

Standard library only: CI runs it before any virtual environment exists.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

#: Where a missing part fails the run instead of skipping its tests: "required".
MODE_VARIABLE = "SHOE_REAL_PARTS"
#: Directories searched after PATH (":"-separated, glob patterns allowed).
DIRS_VARIABLE = "SHOE_PART_DIRS"
DEFAULT_DIRS = "/usr/local/sbin:/usr/sbin:/sbin:/usr/lib/postgresql/*/bin"


@dataclass(frozen=True, slots=True)
class Part:
    """One real part: the name tests are marked with, the Debian package that brings it,
    and the programs the tests run from it."""

    name: str
    package: str
    programs: tuple[str, ...]

    def missing_programs(self) -> list[str]:
        return [program for program in self.programs if find_program(program) is None]

    def is_missing(self) -> bool:
        return bool(self.missing_programs())

    def __str__(self) -> str:
        return (
            self.name
            if self.programs == (self.name,)
            else f"{self.name} ({', '.join(self.programs)})"
        )


PARTS: dict[str, Part] = {
    part.name: part
    for part in (
        # The console's browser tests: Debian's chromium, never a browser Playwright fetches.
        Part("chromium", "chromium", ("chromium",)),
        # The floor: a real broker and a real database.
        Part("mosquitto", "mosquitto", ("mosquitto",)),
        Part("postgresql", "postgresql", ("initdb", "postgres")),
        # The box: its udev rules, its unit (and installing it into an image), its system
        # calls, and the API's TLS certificate.
        Part("udev", "udev", ("udevadm",)),
        Part("systemd", "systemd", ("systemd-analyze", "systemctl", "systemd-sysusers")),
        Part("strace", "strace", ("strace",)),
        Part("openssl", "openssl", ("openssl",)),
    )
}


def required() -> bool:
    """Whether a missing part fails the run (CI) rather than skipping its tests."""
    return os.environ.get(MODE_VARIABLE, "").strip().lower() == "required"


def _version_key(directory: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", directory))


def search_path() -> list[str]:
    """The directories a part's programs are looked for in, in order."""
    directories = [d for d in os.environ.get("PATH", os.defpath).split(os.pathsep) if d]
    for pattern in os.environ.get(DIRS_VARIABLE, DEFAULT_DIRS).split(os.pathsep):
        if not pattern:
            continue
        # PostgreSQL's versions side by side: the newest first.
        directories += sorted(glob.glob(pattern), key=_version_key, reverse=True)
    return directories


def find_program(name: str) -> Path | None:
    """The program ``name`` where the parts are looked for, or None."""
    found = shutil.which(name, path=os.pathsep.join(search_path()))
    return Path(found) if found is not None else None


class MissingPart(LookupError):
    """A program of a real part is not where the parts are looked for."""


def program(name: str) -> str:
    """The path of the program ``name`` (to run it by); raises :class:`MissingPart`."""
    found = find_program(name)
    if found is None:
        owners = [p for p in PARTS.values() if name in p.programs]
        install = f": {apt_line(owners)}" if owners else ""
        raise MissingPart(f"{name} is not installed{install}")
    return str(found)


def part(name: str) -> Part:
    try:
        return PARTS[name]
    except KeyError:
        raise ValueError(f"no real part {name!r}; the parts are {', '.join(PARTS)}") from None


def missing(parts: Iterable[Part] | None = None) -> list[Part]:
    """The parts (all by default) this machine lacks."""
    return [p for p in (PARTS.values() if parts is None else parts) if p.is_missing()]


def apt_line(parts: Iterable[Part]) -> str:
    """The one command that installs ``parts``."""
    packages = sorted({p.package for p in parts})
    return f"apt-get install {' '.join(packages)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--packages",
        action="store_true",
        help="print only the missing packages' names, space-separated (nothing when none)",
    )
    args = parser.parse_args(argv)
    lacking = missing()
    if args.packages:
        print(" ".join(sorted({p.package for p in lacking})))
    elif lacking:
        print(f"missing: {', '.join(str(p) for p in lacking)}; to install: {apt_line(lacking)}")
    else:
        print("every real part is here")
    return 0


if __name__ == "__main__":
    sys.exit(main())
