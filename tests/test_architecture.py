"""docs/architecture.md describes the house as it is: every path it gives exists, every
module, class, function or constant it names is there, and every command it gives runs a
file or module that takes the options shown."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "architecture.md"
PACKAGES = ("firmware_protocol", "floor_protocol", "shoe_controller", "shoe_floor")
#: Where a short path (``procedure/core.py``) is looked for: the repository, then each
#: package (the page names a package's files from inside it).
BASES = (ROOT, *(ROOT / package for package in PACKAGES))
#: Words in code spans that are values the page quotes, not names of the code: topics,
#: record and event names, configuration keys, options.
VALUES = frozenset(
    {"head", "status", "replay", "stub", "external_rng_signature", "run", "demo", "stopped"}
)
PATH = re.compile(r"^[\w.-]+(/[\w.-]+)*/?$")
NAME = re.compile(r"^[A-Za-z_]\w*(\.\w+)*$")


def spans() -> list[str]:
    """The page's code spans, outside its fenced blocks (the generated picture)."""
    text = re.sub(r"^```.*?^```$", "", PAGE.read_text(encoding="utf-8"), flags=re.M | re.S)
    return re.findall(r"`([^`\n]+)`", text)


def is_path(span: str) -> bool:
    return bool(PATH.match(span)) and (
        span.endswith(("/", ".py", ".toml", ".json", ".md")) or "/" in span
    )


def found(path: str) -> Path | None:
    for base in BASES:
        if (base / path.rstrip("/")).exists():
            return base / path
    return None


@cache
def modules() -> dict[str, ModuleType]:
    """Every module of our packages, imported (not ``__main__``, which would run)."""
    loaded: dict[str, ModuleType] = {}
    for package in PACKAGES:
        root = importlib.import_module(package)
        loaded[package] = root
        for info in pkgutil.walk_packages(root.__path__, f"{package}."):
            if not info.name.endswith("__main__"):
                loaded[info.name] = importlib.import_module(info.name)
    return loaded


def resolves(name: str) -> bool:
    """``name`` is a module (``shoe_controller.floor.broker``, ``hal``, ``__main__``, a
    library such as ``transitions``), or a name defined in one (``Procedure``,
    ``Procedure.recover``, ``hal.Transport``), attributes followed."""
    if found(name.replace(".", "/") + ".py"):
        return True
    parts = name.split(".")
    for module_name, module in modules().items():
        short = module_name.split(".")
        for start in range(len(short)):
            prefix = short[start:]
            if parts[: len(prefix)] == prefix and _follows(module, parts[len(prefix) :]):
                return True
        if _follows(module, parts):
            return True
    return len(parts) == 1 and importlib.util.find_spec(name) is not None


def _follows(obj: Any, attributes: list[str]) -> bool:
    if not attributes:
        return True
    value = getattr(obj, attributes[0], None)
    return value is not None and _follows(value, attributes[1:])


def commands() -> Iterator[str]:
    return (span for span in spans() if "python " in span)


def test_every_path_the_page_gives_exists() -> None:
    paths = [span for span in spans() if is_path(span) and "://" not in span]
    assert len(paths) > 80, "the page names too few paths to say anything"
    # Topics are not files: shoes/SITE/TABLE/events.
    missing = [p for p in paths if found(p) is None and not p.startswith("shoes/")]
    assert missing == []


def test_every_name_the_page_gives_is_in_the_code() -> None:
    names = [
        span.removesuffix("()")
        for span in spans()
        if NAME.match(span.removesuffix("()")) and not is_path(span) and span not in VALUES
    ]
    assert len(names) > 40, "the page names too few things to say anything"
    assert [name for name in names if not resolves(name)] == []


def test_every_command_the_page_gives_runs_something_that_takes_its_options() -> None:
    given = list(commands())
    assert len(given) >= 6
    for command in given:
        words = command.split()
        at = words.index("python")
        if words[at + 1] == "-m":
            spec = importlib.util.find_spec(words[at + 2])
            assert spec is not None and spec.origin is not None, command
            source = Path(spec.origin)
            rest = words[at + 3 :]
        else:
            located = found(words[at + 1])
            assert located is not None, command
            source = located
            rest = words[at + 2 :]
        text = source.read_text(encoding="utf-8")
        for word in rest:
            if word.startswith("--"):
                assert f'"{word}"' in text, f"{command}: {source.name} takes no {word}"
            elif word.endswith((".py", ".md")):
                assert found(word) is not None, command


@pytest.mark.parametrize("package", ["shoe_controller", "shoe_floor"])
def test_every_module_of_the_package_is_on_the_page(package: str) -> None:
    """A module added without a word here fails: the page keeps up with the house."""
    text = PAGE.read_text(encoding="utf-8")
    root = importlib.import_module(package)
    unnamed = []
    for info in pkgutil.walk_packages(root.__path__, f"{package}."):
        relative = info.name.removeprefix(f"{package}.").replace(".", "/")
        leaf = info.name.rsplit(".", 1)[-1]
        shown = (
            f"`{relative}/`" in text
            or f"`{relative}.py`" in text
            or f"`{package}/{relative}.py`" in text
            or f"`{package}/{relative}/`" in text
            or f"`{package}.{info.name.removeprefix(package + '.')}`" in text
            or leaf == "__main__"
        )
        if not shown:
            unnamed.append(info.name)
    assert unnamed == []
