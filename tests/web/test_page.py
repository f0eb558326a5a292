"""The web page in real headless Chromium against a live server over the demo knowledge base."""

from __future__ import annotations

import io
import json
import re

import pytest

from tests.web.conftest import start_server

LCA_QUESTION = "What is the LCA of two nodes in a tree?"
TWO_HOP = "In which city was the director of Glass Harbor born?"


def ask(page, question: str):
    page.fill("#q", question)
    page.click("#ask-button")


def wait_answer(page):
    page.wait_for_selector("#answer:not(.streaming)", state="attached")
    page.wait_for_function("document.querySelector('#sources').children.length > 0")
    page.wait_for_function("!document.querySelector('#ask-button').disabled")


def open_page(page, live_server):
    page.goto(live_server.url + "/")
    page.wait_for_selector("body[data-ready=true]")


def test_ask_streams_the_answer_and_numbers_sources_by_first_citation(page, live_server):
    open_page(page, live_server)
    with page.expect_response(lambda r: r.url.endswith("/v1/query")) as info:
        ask(page, LCA_QUESTION)
    response = info.value
    assert json.loads(response.request.post_data)["stream"] is True
    assert response.headers["content-type"].startswith("text/event-stream")
    wait_answer(page)
    answer = page.inner_text("#answer")
    assert "lowest common ancestor" in answer.lower()
    cited = list(dict.fromkeys(page.eval_on_selector_all("#answer a.cite", "els => els.map(e => e.textContent)")))
    assert cited == [f"[{i}]" for i in range(1, len(cited) + 1)], cited
    ids = page.eval_on_selector_all("#sources li.source", "els => els.map(e => e.id)")
    assert ids == [f"src-{i}" for i in range(1, len(ids) + 1)] and len(ids) >= len(cited)
    assert page.is_visible("#sources li.source .where")
    assert not [c for c in page.kgrag_console if c.startswith(("error", "pageerror"))], page.kgrag_console
