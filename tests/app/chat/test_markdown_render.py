"""Markdown → Qt rich text: what a message looks like, what its Copy links copy, and that model
output can never inject markup. No Qt needed."""

from __future__ import annotations

import pytest

from app.chat.markdown_render import code_blocks, copy_index, render_markdown

REPLY = """Use `open()`:

```python
with open("a.txt") as f:
    print(f.read())
```

| Mode | Meaning |
|------|---------|
| r    | read    |

Then ~~never~~ **always** close it.

```sh
ls -l
```
"""


def test_common_markdown_becomes_html():
    html = render_markdown("# Title\n\n**bold** *it* ~~gone~~\n\n- one\n- two\n\n> quoted")
    for part in ("Title</h1>", "<strong>bold</strong>", "<em>it</em>", "<s>gone</s>", "<li>one</li>",
                 "quoted"):
        assert part in html


def test_tables_get_borders_qt_draws():
    html = render_markdown(REPLY)
    assert '<table border="1"' in html and "<th>Mode</th>" in html and "<td>read</td>" in html


def test_a_typed_newline_is_a_line_break():
    assert "first<br />" in render_markdown("first\nsecond")


def test_code_blocks_are_highlighted_with_inline_styles():
    html = render_markdown(REPLY)
    assert "class=" not in html  # Qt has no stylesheet for pygments classes
    assert '<span style="color: #008000; font-weight: bold">with</span>' in html
    assert "white-space: pre-wrap" in html  # long lines wrap instead of widening the view


def test_dark_and_light_code_colors_differ():
    light, dark = render_markdown(REPLY), render_markdown(REPLY, dark=True)
    assert 'bgcolor="#f8f8f8"' in light and 'bgcolor="#0d1117"' in dark


def test_each_code_block_has_a_copy_link_by_index():
    html = render_markdown(REPLY)
    assert html.count('href="copy-code:') == 2
    assert html.index('href="copy-code:0"') < html.index("print") < html.index('href="copy-code:1"')


def test_code_blocks_are_the_raw_code_in_order():
    assert code_blocks(REPLY) == ['with open("a.txt") as f:\n    print(f.read())', "ls -l"]
    assert code_blocks("no code, only `inline`") == []


def test_indented_code_counts_as_a_block_too():
    text = "para\n\n    indented code\n\n```\nfenced\n```"
    assert code_blocks(text) == ["indented code", "fenced"]
    assert 'href="copy-code:1"' in render_markdown(text)


@pytest.mark.parametrize("partial", ["```python\nprint(1", "```python\n", "```", "| a | b |\n|--", "**bo",
                                     "[link](http://exa", "1. one\n2."])
def test_half_written_markdown_renders(partial):
    assert isinstance(render_markdown(partial), str)


def test_an_unclosed_fence_is_a_code_block_so_far():
    text = "Here:\n```python\ndef f():\n    return 1"
    html = render_markdown(text)
    assert 'href="copy-code:0"' in html and "return" in html
    assert code_blocks(text) == ["def f():\n    return 1"]


@pytest.mark.parametrize("language", ["", "no-such-language", "text"])
def test_unknown_or_missing_language_is_plain_text(language):
    html = render_markdown(f"```{language}\na < b && c\n```")
    assert "a &lt; b &amp;&amp; c" in html


def test_language_label_is_shown_and_escaped():
    html = render_markdown('```<b>x</b>\ncode\n```')
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert ">python</span>" in render_markdown("```python\nx\n```")


@pytest.mark.parametrize("source, forbidden", [
    ("<b>bold?</b>", "<b>"),
    ("<script>alert(1)</script>", "<script"),
    ('<img src="/etc/passwd">', "<img"),
    ("![secret](/etc/passwd)", "<img"),
    ("[click](javascript:alert(1))", 'href="javascript'),
    ("`<i>code</i>`", "<i>"),
])
def test_model_output_cannot_inject_html(source, forbidden):
    assert forbidden not in render_markdown(source)


def test_an_image_becomes_a_link():
    assert '<a href="https://example.com/cat.png">[a cat]</a>' in render_markdown(
        "![a cat](https://example.com/cat.png)")


@pytest.mark.parametrize("href, index", [("copy-code:0", 0), ("copy-code:12", 12), ("copy-code:", None),
                                         ("copy-code:x", None), ("https://example.com", None)])
def test_copy_index(href, index):
    assert copy_index(href) == index
