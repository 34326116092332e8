"""Markdown of a message → HTML for Qt's rich text (the QTextDocument subset of HTML and CSS).

    html = render_markdown("Try:\\n```python\\nprint(1)\\n```", dark=False)
    code_blocks("Try:\\n```python\\nprint(1)\\n```")   # ["print(1)"]: what copy-code:0 copies

Why these choices:
- Raw HTML in the Markdown is shown as text, never interpreted: model output must not inject markup.
  Images become links, so a reply cannot make the view load a local file.
- A newline the user typed is a line break (`breaks`), as in any chat box.
- QTextDocument ignores most CSS, so code blocks are tables (a cell background is what it paints reliably),
  with `white-space: pre-wrap` so long lines wrap instead of widening the view.
- Half-written Markdown while streaming is fine: an unclosed ``` fence is a code block to the end.
"""

from __future__ import annotations

import html
import re
from functools import lru_cache
from typing import Any, Sequence

from markdown_it import MarkdownIt
from markdown_it.token import Token
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import TextLexer, get_lexer_by_name
from pygments.token import Token as PygmentsToken
from pygments.util import ClassNotFound

COPY_SCHEME = "copy-code"
"""Links `copy-code:N` ask the view to copy the N-th code block of the message."""
LIGHT_STYLE = "default"
DARK_STYLE = "github-dark"
HEADING_SIZES = {"h1": "x-large", "h2": "large", "h3": "medium"}
"""Headings a step smaller than Qt's defaults, which are sized for documents, not chat messages."""
COPIED_TEXT = "Copied ✓"
"""What a code block's Copy link says for a moment after it copied."""
CODE_TYPES = ("fence", "code_block")
"""Token types shown as code blocks (and copied by their Copy link), in document order."""


def render_markdown(text: str, *, dark: bool = False, copied: int | None = None) -> str:
    """HTML for `text`; code blocks highlighted in the light or dark style, each with a Copy link
    (block number `copied` says "Copied" instead, right after a click)."""
    env: dict[str, Any] = {"dark": dark, "code_index": 0, "copied": copied}
    return _markdown().render(text, env).rstrip()  # Qt shows a trailing newline as a space


def code_blocks(text: str) -> list[str]:
    """The raw code of each code block of `text`, in order: block N is what `copy-code:N` copies.

    The block's last newline is left out, so pasting a one-line command into a terminal does not
    run it at once."""
    return [t.content.removesuffix("\n") for t in _markdown().parse(text) if t.type in CODE_TYPES]


def copy_index(href: str) -> int | None:
    """N for a `copy-code:N` link, else None (any other link)."""
    scheme, _, rest = href.partition(":")
    return int(rest) if scheme == COPY_SCHEME and rest.isdigit() else None


@lru_cache(maxsize=1024)
def plain_title(text: str) -> str:
    """`text` (one line, as a title) with its Markdown marks removed: `**Fix** the `bug`` →
    "Fix the bug". Only inline Markdown counts; a leading "# " or "- " is dropped too."""
    line = " ".join(text.split())
    line = re.sub(r"^(#{1,6}|[-*+>])\s+", "", line)
    tokens = _markdown().parseInline(line)
    parts: list[str] = []
    for token in tokens[0].children or [] if tokens else []:
        if token.type in ("text", "code_inline"):
            parts.append(token.content)
        elif token.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif token.type == "image":
            parts.append("".join(c.content for c in token.children or []))
    return " ".join("".join(parts).split())


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "breaks": True}).enable(["table", "strikethrough"])
    md.add_render_rule("fence", _render_code)
    md.add_render_rule("code_block", _render_code)
    md.add_render_rule("code_inline", _render_code_inline)
    md.add_render_rule("table_open", _render_table_open)
    md.add_render_rule("image", _render_image)
    md.add_render_rule("heading_open", _render_heading_open)
    md.add_render_rule("link_open", _render_link_open)
    md.add_render_rule("blockquote_open", _render_blockquote_open)
    md.add_render_rule("blockquote_close", _render_blockquote_close)
    return md


# -- render rules (called as methods of the renderer: `self` is markdown-it's RendererHTML) -------
def _render_code(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: dict) -> str:
    token = tokens[idx]
    index = env.get("code_index", 0)
    env["code_index"] = index + 1
    language = token.info.strip().split(maxsplit=1)[0] if token.info.strip() else ""
    colors = _colors(bool(env.get("dark")))
    code = _highlight(token.content, language, bool(env.get("dark")))
    label = html.escape(language) or "&nbsp;"
    link = COPIED_TEXT if index == env.get("copied") else "Copy"
    return (
        f'<table width="100%" cellspacing="0" cellpadding="6" bgcolor="{colors["code_bg"]}"'
        f' style="margin-top: 4px; margin-bottom: 8px;">'
        f'<tr><td><span style="color: {colors["faint"]}; font-size: small;">{label}</span></td>'
        f'<td align="right"><a href="{COPY_SCHEME}:{index}" title="Copy this code"'
        f' style="color: {colors["link"]}; font-size: small; text-decoration: none;">{link}</a></td></tr>'
        f'<tr><td colspan="2"><pre style="margin: 0; white-space: pre-wrap; color: {colors["code_fg"]};">'
        f"{code}</pre></td></tr></table>\n"
    )


def _render_code_inline(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: dict) -> str:
    bg = _colors(bool(env.get("dark")))["inline_bg"]
    return f'<code style="background-color: {bg};">{html.escape(tokens[idx].content)}</code>'


def _render_table_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: dict) -> str:
    border = _colors(bool(env.get("dark")))["border"]
    return (f'<table border="1" cellspacing="0" cellpadding="4"'
            f' style="border-collapse: collapse; border-style: solid; border-color: {border};'
            f' margin-bottom: 8px;">\n')


def _render_link_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: dict) -> str:
    """Links in the theme's link color, readable whatever palette the window has."""
    tokens[idx].attrSet("style", f'color: {_colors(bool(env.get("dark")))["link"]};')
    return self.renderToken(tokens, idx, options, env)


def _render_heading_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: dict) -> str:
    tag = tokens[idx].tag
    return f'<{tag} style="font-size: {HEADING_SIZES.get(tag, "medium")};">'


def _render_blockquote_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: dict) -> str:
    """A quote as a two-cell table: a thin colored bar, then the quoted text (Qt draws no
    left border on a block)."""
    colors = _colors(bool(env.get("dark")))
    return (f'<table cellspacing="0" cellpadding="0" style="margin-top: 4px; margin-bottom: 8px;"><tr>'
            f'<td width="3" bgcolor="{colors["border"]}"></td>'
            f'<td style="padding-left: 8px; color: {colors["faint"]};">\n')


def _render_blockquote_close(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: dict) -> str:
    return "</td></tr></table>\n"


def _render_image(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: dict) -> str:
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env) or "image"
    src = html.escape(str(token.attrGet("src") or ""), quote=True)
    return f'<a href="{src}">[{html.escape(alt)}]</a>'


# -- highlighting -------------------------------------------------------------------------------
@lru_cache(maxsize=256)
def _highlight(code: str, language: str, dark: bool) -> str:
    """Highlighted HTML of one block, cached: while a reply streams, the blocks before the last
    one are the same at every re-render, and highlighting is the slow part of rendering."""
    return highlight(code, _lexer(language), _formatter(dark)).rstrip("\n")


@lru_cache(maxsize=64)
def _lexer(language: str) -> Lexer:
    """The lexer named by a fence's language; plain text when none or unknown (never guessed)."""
    if not language:
        return TextLexer()
    try:
        return get_lexer_by_name(language, stripnl=False)
    except ClassNotFound:
        return TextLexer()


@lru_cache(maxsize=2)
def _formatter(dark: bool) -> HtmlFormatter:
    return HtmlFormatter(style=DARK_STYLE if dark else LIGHT_STYLE, noclasses=True, nowrap=True)


@lru_cache(maxsize=2)
def _colors(dark: bool) -> dict[str, str]:
    """Colors around the highlighted code, matched to the pygments style of each theme."""
    style = _formatter(dark).style
    fg = style.style_for_token(PygmentsToken.Text)["color"]
    return {
        "code_bg": style.background_color,
        "code_fg": f"#{fg}" if fg else ("#e6edf3" if dark else "#1f2328"),
        "inline_bg": "#3a3f47" if dark else "#eef0f2",
        "faint": "#8b949e" if dark else "#6e7781",
        "link": "#58a6ff" if dark else "#0969da",
        "border": "#555b63" if dark else "#c8ccd0",
    }
