"""Cut a document into passages that an embedding model reads whole and a reply can cite.

Blocks (blocks.py) are packed into chunks of at most `max_tokens`: a heading starts a new chunk and
its path ("Mapping Types › Dictionary view objects") heads every chunk under it, so a passage says
where it comes from; a code block or a table is never split while it fits in one chunk (alone if
need be); a longer paragraph is cut at sentence ends; consecutive chunks of one section share up to
`overlap` tokens, so a sentence at a cut is read in its context on both sides. Pages (a PDF's) are
kept, so a source can say "p. 12".

Tokens are counted by the caller's `count` (the embedding model's tokenizer: `Embedder.count_tokens`),
by default an estimate from words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from .blocks import Block, parse

Count = Callable[[str], int]
HEADING_JOIN = " › "
_SENTENCE = re.compile(r"(?<=[.!?;])\s+(?=\S)")


def estimate_tokens(text: str) -> int:
    """A rough count (4 tokens per 3 words) for when no tokenizer is given."""
    return (len(text.split()) * 4 + 2) // 3


@dataclass(frozen=True)
class Chunk:
    """One passage: what is embedded, indexed and shown as a source."""

    text: str
    """The heading path (if any), a blank line, then the passage itself."""
    body: str
    """The passage alone, as it stands in the document (blocks joined by blank lines)."""
    headings: tuple[str, ...]
    start: int
    """Offset of the passage's first block in the document (in the page's text for `chunk_pages`)."""
    page: Optional[int] = None
    """1-based page of the passage's first block, for documents given as pages."""
    last_page: Optional[int] = None
    """The page of its last block (a passage may run onto the next page)."""
    tokens: int = 0


def chunk_text(text: str, max_tokens: int = 200, overlap: int = 32, count: Count = estimate_tokens) -> list[Chunk]:
    """The chunks of one text (Markdown, reStructuredText or plain)."""
    return _pack([(b, None) for b in parse(text)], max_tokens, overlap, count)


def chunk_pages(pages: Sequence[str], max_tokens: int = 200, overlap: int = 32,
                count: Count = estimate_tokens) -> list[Chunk]:
    """The chunks of a paged document (a PDF's text page by page); a chunk may run onto the next page,
    and its `page` is where it starts."""
    return _pack([(b, n) for n, page in enumerate(pages, 1) for b in parse(page)], max_tokens, overlap, count)


def _pack(blocks: list[tuple[Block, Optional[int]]], max_tokens: int, overlap: int, count: Count) -> list[Chunk]:
    if max_tokens < 16 or not 0 <= overlap < max_tokens // 2:
        raise ValueError(f"max_tokens must be at least 16 and overlap under half of it (got {max_tokens}, {overlap})")
    packer = _Packer(max_tokens, overlap, count)
    for block, page in blocks:
        if block.kind == "heading":
            packer.heading(block)
        else:
            # a paragraph's pieces leave room for the overlap carried in front of them
            room = packer.room_for_body() - (overlap if block.kind == "paragraph" else 0)
            for piece in _pieces(block, room, count):
                packer.add(piece, page)
    packer.flush()
    return packer.chunks


def _pieces(block: Block, limit: int, count: Count) -> list[Block]:
    """The block itself when it fits in a chunk; else cut: a paragraph at sentence ends (words if a
    sentence is too long), a code block or table at line ends; a unit longer than a chunk (a word
    with no spaces, a minified line) in slices, so that nothing is dropped and every chunk fits."""
    if count(block.text) <= limit:
        return [block]
    if block.kind == "paragraph":
        units, joiner = [u for u in _SENTENCE.split(block.text) if u], " "
        if any(count(u) > limit for u in units):
            units = block.text.split()
    else:
        units, joiner = block.text.split("\n"), "\n"
    units = [part for unit in units for part in _fit(unit, limit, count)]
    return _group(block, units, joiner, limit, count)


def _fit(unit: str, limit: int, count: Count) -> list[str]:
    """`unit` alone when it fits; else slices of it, as long as fit."""
    if count(unit) <= limit:
        return [unit]
    size = max(limit, 1)
    while size > 1 and any(count(unit[i:i + size]) > limit for i in range(0, len(unit), size)):
        size //= 2
    return [unit[i:i + size] for i in range(0, len(unit), size)]


def _group(block: Block, units: list[str], joiner: str, limit: int, count: Count) -> list[Block]:
    pieces, current = [], []
    for unit in units:
        if current and count(joiner.join([*current, unit])) > limit:
            pieces.append(joiner.join(current))
            current = []
        current.append(unit)
    if current:
        pieces.append(joiner.join(current))
    return [Block(block.kind, p, block.start + max(block.text.find(p[:40]), 0)) for p in pieces]


class _Packer:
    """Fills one chunk at a time with whole blocks; a heading or a full chunk closes it."""

    def __init__(self, max_tokens: int, overlap: int, count: Count) -> None:
        self.max_tokens, self.overlap, self.count = max_tokens, overlap, count
        self.path: list[tuple[int, str]] = []
        self.blocks: list[tuple[Block, Optional[int]]] = []
        self.carried = 0  # how many of self.blocks came from the previous chunk (the overlap)
        self.chunks: list[Chunk] = []

    def _prefix(self) -> str:
        return HEADING_JOIN.join(title for _, title in self.path)

    def room_for_body(self) -> int:
        prefix = self._prefix()
        return self.max_tokens - (self.count(prefix) + 1 if prefix else 0)

    def heading(self, block: Block) -> None:
        self.flush()
        self.blocks, self.carried = [], 0
        self.path = [(lvl, t) for lvl, t in self.path if lvl < block.level] + [(block.level, block.text)]

    def add(self, block: Block, page: Optional[int]) -> None:
        if self.blocks and self.count(self._body([*self.blocks, (block, page)])) > self.room_for_body():
            carried = self._overlap(block)
            self.flush()
            self.blocks, self.carried = carried, len(carried)
        self.blocks.append((block, page))

    def _overlap(self, following: Block) -> list[tuple[Block, Optional[int]]]:
        """The previous chunk's last blocks (or sentences) that fit in `overlap` tokens beside `following`."""
        room = min(self.overlap, self.room_for_body() - self.count(following.text))
        kept: list[tuple[Block, Optional[int]]] = []
        for block, page in reversed(self.blocks):
            if self.count(self._body([(block, page), *kept])) <= room:
                kept.insert(0, (block, page))
                continue
            if block.kind == "paragraph" and not kept:  # the tail of a long paragraph
                tail = ""
                for sentence in reversed(_SENTENCE.split(block.text)):
                    if self.count(f"{sentence} {tail}".strip()) > room:
                        break
                    tail = f"{sentence} {tail}".strip()
                if tail:
                    kept.insert(0, (Block("paragraph", tail, block.start + block.text.rfind(tail)), page))
            break
        return kept

    @staticmethod
    def _body(blocks: list[tuple[Block, Optional[int]]]) -> str:
        return "\n\n".join(b.text for b, _ in blocks)

    def flush(self) -> None:
        if len(self.blocks) <= self.carried:  # nothing new since the overlap was carried
            return
        body = self._body(self.blocks)
        prefix = self._prefix()
        text = f"{prefix}\n\n{body}" if prefix else body
        (first, page), last_page = self.blocks[0], self.blocks[-1][1]
        self.chunks.append(Chunk(text, body, tuple(t for _, t in self.path), first.start, page, last_page,
                                 self.count(text)))
        self.blocks, self.carried = [], 0
