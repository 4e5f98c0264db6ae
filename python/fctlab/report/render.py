"""A small document model rendered to self-contained HTML or to Markdown.

A report is built once as a list of blocks (headings, paragraphs, tables,
images) and then rendered in the requested format, so both formats always
carry the same content.
"""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass
from typing import Union

__all__ = ["Heading", "Paragraph", "Table", "Image", "Bullets", "Block", "render_html", "render_markdown"]


@dataclass
class Heading:
    text: str
    level: int = 2


@dataclass
class Paragraph:
    text: str
    note: bool = False
    """Rendered in a muted style (for "no data" remarks)."""


@dataclass
class Table:
    columns: list[str]
    rows: list[list[str]]
    caption: str | None = None
    text: bool = False
    """All columns are text (left-aligned); otherwise the first is a label and the rest numbers."""


@dataclass
class Image:
    filename: str
    """Name of the PNG file beside the report."""
    png: bytes
    alt: str


@dataclass
class Bullets:
    items: list[str]


Block = Union[Heading, Paragraph, Table, Image, Bullets]

# Inline markup that text may carry in both formats: **bold**, *italic*, `code`. Markdown
# keeps it as written; HTML renders it (after escaping the text).
_INLINE = [
    (re.compile(r"\*\*(.+?)\*\*"), r"<strong>\1</strong>"),
    (re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])"), r"<em>\1</em>"),
    (re.compile(r"`([^`]+)`"), r"<code>\1</code>"),
]


def _inline(text: str) -> str:
    t = html.escape(text, quote=False)
    for rx, rep in _INLINE:
        t = rx.sub(rep, t)
    return t


_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #222; line-height: 1.4; }
h1 { border-bottom: 2px solid #ddd; padding-bottom: .3em; }
h2 { margin-top: 2em; border-bottom: 1px solid #eee; padding-bottom: .2em; }
table { border-collapse: collapse; margin: .8em 0 1.2em; font-size: .9em; }
caption { text-align: left; font-weight: 600; padding-bottom: .3em; }
th, td { border: 1px solid #ccc; padding: .25em .6em; }
th { background: #f4f4f4; }
td { text-align: right; font-variant-numeric: tabular-nums; }
code { background: #f4f4f4; padding: 0 3px; }
td:first-child, table.text td { text-align: left; }
img { max-width: 100%; height: auto; display: block; margin: .5em 0 1.5em; }
p.note { color: #777; font-style: italic; }
""".strip()


def render_html(title: str, blocks: list[Block]) -> str:
    """Render `blocks` as one self-contained HTML page (images as data URIs)."""
    esc = html.escape
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>{esc(title)}</title>",
        f"<style>\n{_CSS}\n</style>",
        "</head>",
        "<body>",
        f"<h1>{esc(title)}</h1>",
    ]
    for b in blocks:
        if isinstance(b, Heading):
            level = min(max(b.level, 2), 6)
            out.append(f"<h{level}>{esc(b.text)}</h{level}>")
        elif isinstance(b, Paragraph):
            cls = ' class="note"' if b.note else ""
            out.append(f"<p{cls}>{_inline(b.text)}</p>")
        elif isinstance(b, Table):
            out.append('<table class="text">' if b.text else "<table>")
            if b.caption:
                out.append(f"<caption>{esc(b.caption)}</caption>")
            out.append("<thead><tr>" + "".join(f"<th>{esc(c)}</th>" for c in b.columns) + "</tr></thead>")
            out.append("<tbody>")
            for row in b.rows:
                out.append("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>")
            out.append("</tbody></table>")
        elif isinstance(b, Image):
            data = base64.b64encode(b.png).decode("ascii")
            out.append(f'<img src="data:image/png;base64,{data}" alt="{esc(b.alt)}" title="{esc(b.filename)}">')
        elif isinstance(b, Bullets):
            out.append("<ul>" + "".join(f"<li>{_inline(x)}</li>" for x in b.items) + "</ul>")
        else:  # pragma: no cover - all block types are handled above
            raise TypeError(f"unknown block {b!r}")
    out += ["</body>", "</html>", ""]
    return "\n".join(out)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(title: str, blocks: list[Block]) -> str:
    """Render `blocks` as Markdown; images link to the PNG files beside it."""
    out = [f"# {title}", ""]
    for b in blocks:
        if isinstance(b, Heading):
            out += ["#" * min(max(b.level, 2), 6) + " " + b.text, ""]
        elif isinstance(b, Paragraph):
            out += [f"*{b.text}*" if b.note else b.text, ""]
        elif isinstance(b, Table):
            if b.caption:
                out += [f"**{b.caption}**", ""]
            out.append("| " + " | ".join(_md_cell(c) for c in b.columns) + " |")
            rest = ":---" if b.text else "---:"
            out.append("|" + "|".join([":---"] + [rest] * (len(b.columns) - 1)) + "|")
            for row in b.rows:
                out.append("| " + " | ".join(_md_cell(c) for c in row) + " |")
            out.append("")
        elif isinstance(b, Image):
            out += [f"![{b.alt}]({b.filename})", ""]
        elif isinstance(b, Bullets):
            out += [f"- {x}" for x in b.items] + [""]
        else:  # pragma: no cover
            raise TypeError(f"unknown block {b!r}")
    return "\n".join(out)
