"""HTML through BeautifulSoup + lxml, rewritten as light Markdown.

Headings become ``#`` headings and ``<pre>`` becomes fenced code so that the Markdown chunker
records ``section_path`` and keeps code whole for HTML exactly as for Markdown files.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from bs4 import BeautifulSoup, Comment, Declaration, Doctype, NavigableString, ProcessingInstruction, Tag

from kgrag.ingest.loaders.base import file_document, read_bytes
from kgrag.text.markdown_tables import markdown_table
from kgrag.types import Document

# Never content: code, styling, site navigation, embedded graphics.
_DROPPED = frozenset({"script", "style", "nav", "noscript", "template", "svg", "canvas", "head", "iframe"})
_NOT_TEXT = (Comment, Declaration, Doctype, ProcessingInstruction)
_BLOCKS = frozenset(
    {
        *("p", "div", "section", "article", "header", "footer", "main", "aside", "blockquote"),
        *("ul", "ol", "dl", "dt", "dd", "figure", "figcaption", "hr", "address", "details"),
        *("summary", "body", "html", "form", "fieldset", "center"),
    }
)
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
# Real pages nest a few dozen elements deep; deeper than this is read as plain text, so a
# hostile page (500 nested <div>s overflowed the recursive walk) costs one get_text().
MAX_DEPTH = 100
_SPACES = re.compile(r"\s+")
# A block (or list item) opening with bold words followed by more text is a glossary entry,
# "**Tenant**: …", which the term extractor reads as a defined term; longer bold is emphasis.
MAX_BOLD_TERM = 60
_BOLD_ALONE = re.compile(r"^(- )?\*\*(.*)\*\*$", re.S)
_AROUND_NEWLINE = re.compile(r" *\n *")


def _plain(node: Tag) -> str:
    return _SPACES.sub(" ", node.get_text(" ")).strip()


def table_markdown(table: Tag) -> str:
    """An HTML table as a Markdown table (``markdown_table``): the first row is a header when it
    is all ``<th>`` cells or the table's ``<thead>``."""
    rows = table.find_all("tr")
    cells = [tr.find_all(["td", "th"], recursive=False) for tr in rows]
    header = bool(cells) and bool(cells[0]) and (
        all(cell.name == "th" for cell in cells[0]) or rows[0].find_parent("thead") is not None)
    return markdown_table([[_plain(cell) for cell in row] for row in cells], header)


_HTML_TABLE = re.compile(r"<table\b.*?</table\s*>", re.IGNORECASE | re.DOTALL)


def html_tables_as_markdown(text: str, code: Sequence[tuple[int, int]] = ()) -> str:
    """A Markdown text with the raw HTML tables it embeds (handbooks write wide or merged-cell
    tables so) as Markdown tables, which every table reader reads; a table inside ``code``
    (fenced blocks' character spans), or holding a nested table, is left as written."""
    if "<table" not in text.lower():
        return text

    def as_markdown(m: re.Match[str]) -> str:
        if any(s <= m.start() < e for s, e in code) or "<table" in m.group(0)[6:].lower():
            return m.group(0)
        table = BeautifulSoup(m.group(0), "lxml").find("table")
        converted = table_markdown(table) if isinstance(table, Tag) else ""
        if not converted:
            return m.group(0)
        before = text[max(0, m.start() - 2): m.start()]  # a blank line each side, no more
        after = text[m.end(): m.end() + 2]
        lead = 2 - (len(before) - len(before.rstrip("\n")))
        trail = 2 - (len(after) - len(after.lstrip("\n")))
        return "\n" * lead + converted + "\n" * trail

    return _HTML_TABLE.sub(as_markdown, text)


def _definitions(dl: Tag) -> list[tuple[str, list[str]]]:
    """A definition list's terms, each with the descriptions that follow it (``<dt>`` /
    ``<dd>``), written as a bold term and its definition ("**SSO**: single sign-on …"): the
    shape a glossary takes in Markdown, which the term extractor reads as a defined term."""
    pairs: list[tuple[str, list[str]]] = []
    for child in dl.find_all(["dt", "dd"]):
        if child.find_parent("dl") is not dl:
            continue  # a nested list's own entries
        text = _plain(child)
        if child.name == "dt" and text:
            pairs.append((text, []))
        elif child.name == "dd" and text:
            if pairs:
                pairs[-1][1].append(text)
            else:
                pairs.append((text, []))
    return pairs


def _code_language(pre: Tag) -> str:
    for tag in (pre, pre.find("code")):
        if isinstance(tag, Tag):
            for cls in tag.get("class") or []:
                if cls.startswith(("language-", "lang-")):
                    return cls.split("-", 1)[1]
    return ""


class _MarkdownWriter:
    """Collects blocks (paragraphs, headings, fences, tables); inline text joins the open block."""

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self._inline: list[str] = []

    def text(self, s: str) -> None:
        self._inline.append(s)

    def end_block(self) -> None:
        text = _AROUND_NEWLINE.sub("\n", "".join(self._inline)).strip()
        self._inline = []
        if (bold := _BOLD_ALONE.match(text)) is not None:
            text = (bold.group(1) or "") + bold.group(2)  # bold with nothing after it defines nothing
        if text:
            self.blocks.append(text)

    def _opening(self) -> bool:
        """Whether the open block holds no words yet (a list item's "- " aside)."""
        return not "".join(self._inline).strip(" -\n")

    def block(self, text: str) -> None:
        self.end_block()
        if text:
            self.blocks.append(text)

    def walk(self, node: Tag, depth: int = 0) -> None:
        for child in node.children:
            if isinstance(child, NavigableString):
                if not isinstance(child, _NOT_TEXT):
                    self.text(_SPACES.sub(" ", str(child)))
            elif isinstance(child, Tag):
                self.element(child, depth + 1)

    def element(self, tag: Tag, depth: int) -> None:
        name = tag.name
        if name in _DROPPED:
            return
        if depth > MAX_DEPTH:  # bs4's get_text walks iteratively: no recursion limit to hit
            self.block(_plain(tag))
            return
        if name in _HEADINGS:
            heading = _plain(tag)
            self.block(f"{'#' * _HEADINGS[name]} {heading}" if heading else "")
        elif name == "pre":
            code = tag.get_text().strip("\n")
            fence = "````" if "```" in code else "```"
            self.block(f"{fence}{_code_language(tag)}\n{code}\n{fence}")
        elif name == "code":
            self.text(f"`{tag.get_text()}`")
        elif name in ("b", "strong") and self._opening() and 0 < len(term := _plain(tag)) <= MAX_BOLD_TERM:
            self.text(f"**{term}**")  # "<b>Tenant</b>: an isolated …": a glossary entry's term
        elif name == "br":
            self.text("\n")
        elif name == "li":
            self.end_block()
            self.text("- ")
            self.walk(tag, depth)
            self.end_block()
        elif name == "table":
            self.block(table_markdown(tag))
        elif name == "dl":
            self.end_block()
            for term, definitions in _definitions(tag):
                self.block(f"**{term}**: {' '.join(definitions)}" if definitions else term)
        elif name in _BLOCKS:
            self.end_block()
            self.walk(tag, depth)
            self.end_block()
        else:
            self.walk(tag, depth)


def html_to_markdown(soup: BeautifulSoup) -> str:
    writer = _MarkdownWriter()
    writer.walk(soup)
    writer.end_block()
    return "\n\n".join(writer.blocks)


def load_html(path: Path, file_id: str | None = None) -> list[Document]:
    # Bytes, not str: BeautifulSoup honours <meta charset> and sniffs the encoding itself.
    soup = BeautifulSoup(read_bytes(path), "lxml")
    title_tag = soup.find("title")
    title = _plain(title_tag) if isinstance(title_tag, Tag) else ""
    if not title:
        h1 = soup.find("h1")
        title = (_plain(h1) if isinstance(h1, Tag) else "") or path.stem
    return [file_document(path, file_id, title, html_to_markdown(soup), "html")]
