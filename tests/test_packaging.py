"""The newcomer's path: the README's test command installs everything the tests import,
and CI runs exactly that command in an environment holding only what it installs."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
README = (ROOT / "README.md").read_text(encoding="utf-8")
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
#: Packages of this source tree, importable from it without installing anything.
OURS = {"shoe_controller", "firmware_protocol", "tests", "benchmarks", "tools"}
README_TEST = (
    "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && "
    ".venv/bin/python -m pytest -q"
)


def _optional(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Inside ``try: ... except ImportError`` whose handler carries on without it (not one
    that exits or raises: that import is needed)."""
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.Try):
            for handler in node.handlers:
                names = ast.unparse(handler.type) if handler.type else ""
                if "ImportError" not in names and "ModuleNotFoundError" not in names:
                    continue
                body = ast.unparse(ast.Module(body=handler.body, type_ignores=[]))
                return "raise" not in body and "exit(" not in body
    return False


def imported_distributions_needed() -> dict[str, set[str]]:
    """Third-party modules imported unconditionally by tests/ and benchmarks/, with the
    files importing each."""
    needed: dict[str, set[str]] = {}
    local = {p.stem for p in (ROOT / "benchmarks").glob("*.py")}
    for directory in ("tests", "benchmarks"):
        for path in (ROOT / directory).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            parents = {
                child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)
            }
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                if _optional(node, parents):
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top in sys.stdlib_module_names or top in OURS or top in local:
                        continue
                    needed.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return needed


def requirement_closure(extra: str) -> set[str]:
    """The normalised names of every distribution ``pip install '.[extra]'`` installs."""
    wanted = [Requirement(r) for r in PYPROJECT["project"]["dependencies"]]
    wanted += [Requirement(r) for r in PYPROJECT["project"]["optional-dependencies"][extra]]
    seen: set[str] = set()
    while wanted:
        requirement = wanted.pop()
        name = _normal(requirement.name)
        if name in seen:
            continue
        seen.add(name)
        extras = requirement.extras or {""}
        for text in importlib.metadata.requires(requirement.name) or []:
            nested = Requirement(text)
            marker = nested.marker
            if marker is None or any(marker.evaluate({"extra": e}) for e in extras):
                wanted.append(nested)
    return seen


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_the_test_extra_installs_everything_the_tests_import() -> None:
    provided = requirement_closure("test")
    providers = importlib.metadata.packages_distributions()
    missing = {
        module: files
        for module, files in imported_distributions_needed().items()
        if not {_normal(d) for d in providers.get(module, [])} & provided
    }
    assert missing == {}, f"imported by tests but not installed by '.[test]': {missing}"


def test_the_readme_says_the_test_command() -> None:
    assert f"\n    {README_TEST}\n" in README


def test_ci_runs_the_readme_command_in_its_own_environment() -> None:
    # The command is taken from the README itself, and run as it is, last.
    assert 'test_cmd=$(grep -E "^    python3 -m venv .venv && .*pytest" README.md' in CI
    assert CI.rstrip().endswith('bash -c "$test_cmd"')
    # Nothing else installs into .venv: the linters have an environment of their own.
    assert re.search(r"\.venv/bin/pip install", CI) is None
    assert ".venv-lint/bin/pip install -q -e '.[test,dev,bench]'" in CI
    for tool in ("ruff check .", "ruff format --check .", "mypy", "lint-imports"):
        assert f".venv-lint/bin/{tool}" in CI
    # A .venv already there is never removed (it is not CI's), nor used.
    assert "rm -rf .venv" not in CI
    # Only apt-get installs anything system-wide, and only what is missing.
    installs = [line.strip() for line in CI.splitlines() if "pip install" in line]
    assert installs and all(line.startswith(".venv-lint/bin/") for line in installs), installs
    # Every real part is installed, and a test that misses one fails rather than skips.
    assert "packages=$(python3 tools/real_parts.py --packages)" in CI
    assert 'read -r -a missing <<<"$packages"' in CI
    assert 'apt-get install -y -q "${missing[@]}"' in CI
    assert CI.index("export SHOE_REAL_PARTS=required") > CI.index("== tests")
