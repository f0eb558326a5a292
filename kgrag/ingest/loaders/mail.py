"""E-mail messages (.eml, RFC 5322) through the standard library's parser.

A team's decisions often live in mail: each message is a document titled by its subject, dated
by its ``Date`` header (the document's date facet: "the emails from last month"), opening with
who wrote to whom, then its body — the plain-text part, else the HTML part rewritten as
Markdown. Attachments are listed by name, not read (ingest them as files of their own).
"""

from __future__ import annotations

import email
import email.policy
from email.message import EmailMessage
from email.utils import getaddresses, parsedate_to_datetime
from pathlib import Path

from bs4 import BeautifulSoup

from kgrag.ingest.loaders.base import LoadError, file_document, normalize_newlines, read_bytes
from kgrag.ingest.loaders.html import html_to_markdown
from kgrag.types import Document

_PEOPLE = ("From", "To", "Cc")


def load_eml(path: Path, file_id: str | None = None) -> list[Document]:
    data = read_bytes(path)
    message = email.message_from_bytes(data, policy=email.policy.default)
    if not isinstance(message, EmailMessage) or not (message.keys() or message.get_payload()):
        raise LoadError(path, "not an e-mail message (no headers)")
    subject = " ".join(str(message.get("Subject", "")).split())
    body = _body(message)
    head = [f"{name}: {_people(message, name)}" for name in _PEOPLE if message.get(name)]
    attachments = [name for part in message.iter_attachments() if (name := part.get_filename())]
    if attachments:
        head.append(f"Attachments: {', '.join(attachments)}")
    text = "\n\n".join(part for part in ("\n".join(head), body) if part)
    metadata = {}
    if (sent := _sent(message)) is not None:
        metadata["date"] = sent
    return [file_document(path, file_id, subject or path.stem, text, "eml", metadata=metadata)]


def _body(message: EmailMessage) -> str:
    """The plain-text part, else the HTML part as Markdown ("" when the message has neither)."""
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    try:
        content = part.get_content()
    except (LookupError, ValueError):  # an unknown charset or a broken transfer encoding
        payload = part.get_payload(decode=True)
        content = payload.decode("utf-8", errors="replace") if isinstance(payload, bytes) else ""
    if part.get_content_subtype() == "html":
        return html_to_markdown(BeautifulSoup(content, "lxml"))
    return normalize_newlines(content).strip()


def _people(message: EmailMessage, header: str) -> str:
    """"Ana Lima <ana@example.com>, bo@example.com": names where given, addresses always."""
    people = getaddresses([str(value) for value in message.get_all(header, [])])
    return ", ".join(f"{name} <{address}>" if name else address for name, address in people if name or address)


def _sent(message: EmailMessage) -> str | None:
    """The ``Date`` header as an ISO date, or None (absent or unreadable)."""
    value = message.get("Date")
    if not value:
        return None
    try:
        return parsedate_to_datetime(str(value)).date().isoformat()
    except (TypeError, ValueError):
        return None
