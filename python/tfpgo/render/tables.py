"""Tables and page pieces shared by the Markdown and HTML documents tfpgo writes
(the flow's report, profile_diff's diff): one rendering of a table per format."""

from __future__ import annotations

import html

PAGE_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; font-size: 0.9em; }
th { background: #f3f3f3; }
img, figure svg { max-width: 100%; height: auto; border: 1px solid #ddd; margin: 0.5em 0; }
code { background: #f6f6f6; }
"""


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    return "\n".join([line(header), line(["---"] * len(header)), *map(line, rows)])


def html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(cell)}</th>" for cell in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _svg_element(document: str) -> str:
    """The <svg> element of an SVG file, for embedding in HTML (no XML prolog)."""
    return document[document.index("<svg") :]


def figure(caption: str, name: str, svg: str | None) -> str:
    """A captioned picture: the SVG inline when given (tooltips work), else a link."""
    esc = html.escape
    picture = _svg_element(svg) if svg else f"<img src='{esc(name)}' alt='{esc(caption)}'>"
    return f"<figure>{picture}<figcaption>{esc(caption)}</figcaption></figure>"
