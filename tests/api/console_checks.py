"""What every screen of the console must satisfy, checked in the page itself.

- Every enabled control is inside the viewport, at least 64x64 px, and no two controls
  overlap (the position tiles overlap nothing either, enabled or not, and stay inside the
  area laid out for them).
- No text is cut or squeezed: no visible element holding text is wider or taller than its
  box, no word is broken across lines, and the page itself does not scroll.
- In Spanish, no English word of the console's own English texts (and none of the
  service's) reaches the screen.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from playwright.sync_api import Page

CONSOLE = Path(__file__).resolve().parents[2] / "shoe_controller" / "api" / "console"
MIN_CONTROL_PX = 64
#: Set to a file's path to keep a picture of a screen that fails its checks.
FAILED_SCREEN_ENV = "SHOE_CONSOLE_FAILED_SCREEN"

_GEOMETRY_JS = r"""
(min) => {
  const problems = [];
  const vw = window.innerWidth, vh = window.innerHeight;
  const visible = (el) => {
    if (el.closest('[hidden]')) return false;
    const style = getComputedStyle(el);
    if (style.display === 'none' || style.visibility === 'hidden') return false;
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0;
  };
  const tag = (el) => {
    const d = el.dataset;
    if (d.position) return `[data-position=${d.position}]`;
    if (d.key) return `[data-key=${d.key}]`;
    if (d.face) return `[face ${d.face}]`;
    if (d.user) return `[data-user=${d.user}]`;
    if (d.step) return `[step ${d.step}]`;
    return '';
  };
  const name = (el) => (el.id ? '#' + el.id : el.tagName.toLowerCase() + tag(el))
    + ` "${(el.textContent || '').trim().slice(0, 30)}"`;
  // A dialog covers the page: only its own controls count then.
  const overlay = [...document.querySelectorAll('.overlay')].find(visible);
  const scope = overlay || document.body;
  const controls = [...scope.querySelectorAll('button')].filter(visible);
  const enabled = controls.filter((b) => !b.disabled);
  const rect = (el) => el.getBoundingClientRect();
  for (const b of enabled) {
    const r = rect(b);
    if (r.left < -0.5 || r.top < -0.5 || r.right > vw + 0.5 || r.bottom > vh + 0.5) {
      problems.push(`${name(b)} is outside the ${vw}x${vh} viewport`);
    }
    if (r.width < min - 0.5 || r.height < min - 0.5) {
      problems.push(`${name(b)} is ${Math.round(r.width)}x${Math.round(r.height)} px`);
    }
  }
  const tiles = overlay ? [] : [...document.querySelectorAll('.position')].filter(visible);
  // The tiles stay inside the area laid out for them (never over the line below it).
  for (const tile of tiles) {
    const r = tile.getBoundingClientRect();
    const area = tile.parentElement.getBoundingClientRect();
    if (r.left < area.left - 0.5 || r.top < area.top - 0.5 || r.right > area.right + 0.5
        || r.bottom > area.bottom + 0.5) {
      const box = (b) => [b.left, b.top, b.right, b.bottom].map(Math.round).join(',');
      problems.push(`${name(tile)} (${box(r)}) leaves the positions' area (${box(area)})`);
    }
  }
  const boxes = [...new Set([...enabled, ...tiles])];
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const a = rect(boxes[i]), b = rect(boxes[j]);
      const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (w > 0.5 && h > 0.5) problems.push(`${name(boxes[i])} overlaps ${name(boxes[j])}`);
    }
  }
  for (const el of scope.querySelectorAll('*')) {
    if (!visible(el) || !el.textContent.trim()) continue;
    const style = getComputedStyle(el);
    if (el.scrollWidth > el.clientWidth + 1 && style.overflowX !== 'visible') {
      problems.push(`${name(el)} cuts its text across (${el.scrollWidth} > ${el.clientWidth})`);
    }
    if (el.scrollHeight > el.clientHeight + 1 && style.overflowY !== 'visible') {
      problems.push(`${name(el)} cuts its text down (${el.scrollHeight} > ${el.clientHeight})`);
    }
    const r = rect(el);
    const hasOwnText = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    const out = r.right > vw + 0.5 || r.bottom > vh + 0.5 || r.left < -0.5 || r.top < -0.5;
    if (hasOwnText && out) {
      problems.push(`${name(el)} is outside the viewport`);
    }
    // Text that spills out of a box that holds it (a tile, a button) is cut for the eye.
    if (hasOwnText) {
      const box = el.closest('button, .position') || null;
      if (box && box !== el) {
        const b = rect(box);
        const spills = r.top < b.top - 1 || r.bottom > b.bottom + 1
          || r.left < b.left - 1 || r.right > b.right + 1;
        if (spills) {
          problems.push(`${name(el)} spills out of ${name(box)}`);
        }
      }
    }
  }
  // A word broken across lines: text squeezed into a column too narrow for it.
  const walker = document.createTreeWalker(scope, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.parentElement || !visible(node.parentElement)) continue;
    for (const match of node.textContent.matchAll(/\S+/g)) {
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0)
        .map((r) => Math.round(r.bottom)));
      if (lines.size > 1) {
        problems.push(`${name(node.parentElement)} breaks "${match[0].slice(0, 30)}" across lines`);
      }
    }
  }
  const root = document.scrollingElement;
  if (root.scrollHeight > vh + 1 || root.scrollWidth > vw + 1) {
    problems.push(`the page scrolls (${root.scrollWidth}x${root.scrollHeight} in ${vw}x${vh})`);
  }
  return problems;
}
"""


def layout_problems(page: Page) -> list[str]:
    """What is wrong with the screen as shown now (empty when nothing is)."""
    problems: list[str] = page.evaluate(_GEOMETRY_JS, MIN_CONTROL_PX)
    return problems


def english_words() -> set[str]:
    """Words of the console's English texts that are not words of its Spanish ones, and
    the words the service's English messages are made of."""
    text = (CONSOLE / "i18n.js").read_text(encoding="utf-8")
    spanish, english = text.split("\n  en: {", 1)
    words = _words(english) - _words(spanish)
    service = {"the", "shoe", "jam", "dealer", "card", "cards", "round", "deck", "fault", "wrong"}
    service |= {"clear", "attendant", "stub", "misdeal", "misdealt", "position", "wager"}
    service |= {"unread", "left", "blocked", "link", "lost", "sign", "banker", "hands"}
    return (words | service) - {"supervisor", "pin", "es", "en"}


def _words(text: str) -> set[str]:
    strings = re.findall(r'"((?:[^"\\]|\\.)*)"', text)
    return {
        w.lower() for s in strings for w in re.findall(r"[A-Za-z]{2,}", re.sub(r"\{\w+\}", "", s))
    }


_ENGLISH = english_words()


def english_on_screen(page: Page) -> list[str]:
    """English words visible on the page (the language button's own "EN" aside)."""
    text: str = page.evaluate(
        "() => [...document.querySelectorAll('body *')].filter(el => {"
        "  if (el.closest('[hidden]') || el.id === 'lang') return false;"
        "  const s = getComputedStyle(el);"
        "  return s.display !== 'none' && s.visibility !== 'hidden';"
        "}).flatMap(el => [...el.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent))"
        ".join(' ')"
    )
    # Round ids and user names are not words of any language.
    text = re.sub(r"\b\d{8}T\d{6}Z-\d+\b", " ", text)
    return sorted({w for w in re.findall(r"[A-Za-z]{2,}", text) if w.lower() in _ENGLISH})


def check_screen(page: Page, *, spanish: bool = True) -> None:
    """Fail with every problem of the screen as shown now."""
    problems = layout_problems(page)
    if spanish:
        problems += [f"English on screen: {word}" for word in english_on_screen(page)]
    if problems and os.environ.get(FAILED_SCREEN_ENV):
        page.screenshot(path=os.environ[FAILED_SCREEN_ENV])
    assert problems == [], "\n".join(problems)


def errors_of(page: Page) -> list[str]:
    """Collects the page's uncaught errors and console errors into the list returned."""
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    def console_message(message: Any) -> None:
        if message.type == "error":
            errors.append(message.text)

    page.on("console", console_message)
    return errors
