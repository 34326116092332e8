"""A document's text as structural blocks: headings, paragraphs, list items, code blocks, tables.

Recognised: Markdown (ATX `#` headings, fenced ``` / ~~~ code, pipe tables), reStructuredText and
plain-text manuals (underlined headings, grid tables, an indented block after a line ending in ':'
as code, as Python's own documentation writes it). What matches nothing is a paragraph, so any text
splits somewhere sensible. Pure functions, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Kind = Literal["heading", "paragraph", "code", "table"]

_ATX = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_UNDERLINE = re.compile(r"^([=\-*~^#+])\1{2,}\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_TABLE_ROW = re.compile(r"^\s*(\|.*\||\+[-=+:]+\+)\s*$")
_LIST_ITEM = re.compile(r"^\s*([-*+•]|\d+[.)]|[a-zA-Z][.)])\s+")
_LEVELS = {"#": 1, "*": 1, "=": 1, "-": 2, "~": 3, "^": 3, "+": 4}


@dataclass(frozen=True)
class Block:
    """One unit of a document: chunking never splits a code block or a table that fits."""

    kind: Kind
    text: str
    start: int
    """Character offset of the block in the text it was read from."""
    level: int = 0
    """A heading's depth (1 = title); 0 for other blocks."""


def parse(text: str) -> list[Block]:
    """The blocks of `text`, in order, with their offsets."""
    lines = text.splitlines(keepends=True)
    offsets, at = [], 0
    for line in lines:
        offsets.append(at)
        at += len(line)
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        line = lines[i].rstrip("\r\n")
        if not line.strip():
            i += 1
            continue
        end, block = _read_one(lines, i, blocks)
        blocks.append(Block(block[0], "".join(lines[i:end]).strip("\n") if block[0] != "heading" else block[1],
                            offsets[i], block[2]))
        i = end
    return blocks


def _read_one(lines: list[str], i: int, before: list[Block]) -> tuple[int, tuple[Kind, str, int]]:
    """(index after the block starting at line i, (kind, heading title, heading level))."""
    line = lines[i].rstrip("\r\n")
    if (m := _ATX.match(line)) is not None:
        return i + 1, ("heading", m.group(2), len(m.group(1)))
    if i + 1 < len(lines) and (u := _UNDERLINE.match(lines[i + 1].rstrip("\r\n"))) and not _indent(line) \
            and len(lines[i + 1].strip()) >= max(3, len(line.strip()) // 2):
        return i + 2, ("heading", line.strip(), _LEVELS.get(u.group(1), 2))
    if (fence := _FENCE.match(line)) is not None:
        j = i + 1
        while j < len(lines) and not lines[j].lstrip().startswith(fence.group(1)):
            j += 1
        return min(j + 1, len(lines)), ("code", "", 0)
    if _TABLE_ROW.match(line):
        j = i
        while j < len(lines) and _TABLE_ROW.match(lines[j].rstrip("\r\n")):
            j += 1
        return j, ("table", "", 0)
    if _indent(line) >= 3 and before and before[-1].kind == "paragraph" and before[-1].text.rstrip().endswith(":") \
            and not _LIST_ITEM.match(line):
        return _indented_end(lines, i, _indent(line)), ("code", "", 0)
    return _paragraph_end(lines, i), ("paragraph", "", 0)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _indented_end(lines: list[str], i: int, indent: int) -> int:
    """An indented block runs on across blank lines while the next text is still as indented."""
    j, last = i, i
    while j < len(lines):
        if lines[j].strip():
            if _indent(lines[j]) < indent:
                break
            last = j
        j += 1
    return last + 1


def _paragraph_end(lines: list[str], i: int) -> int:
    """A paragraph ends at a blank line, or where a list item, heading, fence or table starts."""
    j = i + 1
    while j < len(lines):
        line = lines[j].rstrip("\r\n")
        if not line.strip() or _LIST_ITEM.match(line) or _ATX.match(line) or _FENCE.match(line) \
                or _TABLE_ROW.match(line):
            break
        if j + 1 < len(lines) and _UNDERLINE.match(lines[j + 1].rstrip("\r\n")) and lines[j + 1].strip() \
                and len(lines[j + 1].strip()) >= max(3, len(line.strip()) // 2):
            break  # the next line is a title with its underline
        j += 1
    return j
