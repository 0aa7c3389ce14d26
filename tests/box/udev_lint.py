"""A small linter for udev rules files: the syntax udev(7) describes, key by key.

It reads a rules file into rules (one per logical line, continuations joined) of
``KEY[{attr}] OP "value"`` items, and reports what udev would reject or silently misread:
unknown keys, an operator the key does not take, a missing or unexpected ``{attr}``,
unquoted values, stray continuations, a GOTO without its LABEL.
"""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

MATCH_OPS = frozenset({"==", "!="})
ASSIGN_OPS = frozenset({"=", "+=", "-=", ":="})


@dataclass(frozen=True)
class KeySpec:
    ops: frozenset[str]
    #: "required", "optional" or "forbidden".
    attr: str = "forbidden"


def _spec(ops: AbstractSet[str], attr: str = "forbidden") -> KeySpec:
    return KeySpec(frozenset(ops), attr)


# From udev(7), systemd 252..256.
KEYS: dict[str, KeySpec] = {
    "ACTION": _spec(MATCH_OPS),
    "DEVPATH": _spec(MATCH_OPS),
    "KERNEL": _spec(MATCH_OPS),
    "KERNELS": _spec(MATCH_OPS),
    "SUBSYSTEM": _spec(MATCH_OPS),
    "SUBSYSTEMS": _spec(MATCH_OPS),
    "DRIVER": _spec(MATCH_OPS),
    "DRIVERS": _spec(MATCH_OPS),
    "ATTRS": _spec(MATCH_OPS, "required"),
    "TAGS": _spec(MATCH_OPS),
    "CONST": _spec(MATCH_OPS, "required"),
    "TEST": _spec(MATCH_OPS, "optional"),
    "PROGRAM": _spec(MATCH_OPS),
    "RESULT": _spec(MATCH_OPS),
    "NAME": _spec(MATCH_OPS | {"=", ":="}),
    "SYMLINK": _spec(MATCH_OPS | ASSIGN_OPS),
    "TAG": _spec(MATCH_OPS | ASSIGN_OPS),
    "ATTR": _spec(MATCH_OPS | {"=", ":="}, "required"),
    "SYSCTL": _spec(MATCH_OPS | {"=", ":="}, "required"),
    "ENV": _spec(MATCH_OPS | {"=", "+=", ":="}, "required"),
    "IMPORT": _spec(MATCH_OPS | {"="}, "required"),
    "OWNER": _spec({"=", ":="}),
    "GROUP": _spec({"=", ":="}),
    "MODE": _spec({"=", ":="}),
    "SECLABEL": _spec({"=", "+=", ":="}, "required"),
    "RUN": _spec({"=", "+=", ":="}, "optional"),
    "OPTIONS": _spec({"=", "+="}),
    "LABEL": _spec({"="}),
    "GOTO": _spec({"="}),
}

_ITEM = re.compile(
    r"""
    (?P<key>[A-Z_]+)
    (?:\{(?P<attr>[^{}"]*)\})?
    \s*(?P<op>==|!=|\+=|-=|:=|=)\s*
    "(?P<value>(?:[^"\\]|\\.)*)"
    """,
    re.VERBOSE,
)
_SEPARATOR = re.compile(r"\s*,\s*|\s+")
_MODE = re.compile(r"0?[0-7]{3}")


@dataclass(frozen=True)
class Item:
    key: str
    attr: str | None
    op: str
    value: str


@dataclass(frozen=True)
class Rule:
    #: The physical line on which the rule starts.
    line: int
    items: tuple[Item, ...]

    def get(self, key: str, attr: str | None = None) -> list[Item]:
        return [i for i in self.items if i.key == key and (attr is None or i.attr == attr)]


@dataclass(frozen=True)
class Parsed:
    rules: tuple[Rule, ...]
    problems: tuple[str, ...]


def _logical_lines(text: str) -> tuple[list[tuple[int, str]], list[str]]:
    lines: list[tuple[int, str]] = []
    problems: list[str] = []
    start: int | None = None
    pending = ""
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if start is not None and (not stripped or stripped.startswith("#")):
            problems.append(f"line {number}: a continuation from line {start} ends in a blank")
            start, pending = None, ""
        if start is None and (not stripped or stripped.startswith("#")):
            continue
        if raw != raw.rstrip() and raw.rstrip().endswith("\\"):
            problems.append(f"line {number}: whitespace after the continuation backslash")
        if start is None:
            start = number
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        lines.append((start, pending + raw))
        start, pending = None, ""
    if start is not None:
        problems.append(f"line {start}: the file ends inside a continued line")
    return lines, problems


def _check_item(line: int, item: Item) -> list[str]:
    spec = KEYS.get(item.key)
    where = f"line {line}: {item.key}"
    if spec is None:
        return [f"{where}: unknown key"]
    problems = []
    if item.op not in spec.ops:
        problems.append(f"{where}: operator {item.op} is not valid for this key")
    if spec.attr == "required" and not item.attr:
        problems.append(f"{where}: needs {{attribute}}")
    if spec.attr == "forbidden" and item.attr is not None:
        problems.append(f"{where}: takes no {{attribute}}")
    if item.key == "MODE" and not _MODE.fullmatch(item.value):
        problems.append(f"{where}: {item.value!r} is not an octal mode")
    if item.key in {"LABEL", "GOTO"} and not item.value:
        problems.append(f"{where}: empty label")
    return problems


def parse(text: str) -> Parsed:
    logical, problems = _logical_lines(text)
    rules: list[Rule] = []
    for line, content in logical:
        items: list[Item] = []
        position = 0
        body = content.strip()
        while position < len(body):
            match = _ITEM.match(body, position)
            if match is None:
                problems.append(f"line {line}: cannot read {body[position : position + 30]!r}")
                break
            item = Item(match["key"], match["attr"], match["op"], match["value"])
            items.append(item)
            problems.extend(_check_item(line, item))
            position = match.end()
            if position == len(body):
                break
            separator = _SEPARATOR.match(body, position)
            if separator is None or "," not in separator.group():
                problems.append(f"line {line}: items must be separated by commas")
                break
            position = separator.end()
            if position == len(body):
                problems.append(f"line {line}: trailing comma")
        if items:
            rules.append(Rule(line, tuple(items)))
    labels = {i.value for r in rules for i in r.get("LABEL")}
    for rule in rules:
        for goto in rule.get("GOTO"):
            if goto.value not in labels:
                problems.append(f"line {rule.line}: GOTO {goto.value!r} has no LABEL")
    return Parsed(tuple(rules), tuple(problems))


def world_accessible(mode: str) -> bool:
    """True when the octal ``mode`` grants anything to others."""
    return int(mode, 8) & 0o007 != 0
