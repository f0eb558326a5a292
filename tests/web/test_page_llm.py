"""The page streams a real LLM's answer token by token (SmolLM2-135M served by llama-cpp-python,
tests/llm_server.py): the answer box grows while the stream runs, then shows the checked text."""

from __future__ import annotations

import io

import pytest

from tests.live_server import start_server
from tests.llm_server import llm_settings  # noqa: F401  (session fixture: the running server)

pytestmark = pytest.mark.llm


def test_the_page_shows_llm_tokens_as_they_stream(page, demo_kb, embedder, recognizer, llm_settings):  # noqa: F811
    from kgrag.components import Components
    from kgrag.server.app import create_app

    # One source and a short answer: prompt evaluation on 2 CPU cores is what takes the time.
    settings = demo_kb.settings.model_copy(update={"llm": llm_settings.model_copy(update={"max_tokens": 48})})
    components = Components(settings, embedder=embedder, recognizer=recognizer)  # same knowledge base files
    live = start_server(create_app(settings, components, warm=False), io.StringIO())
    try:
        page.goto(live.url + "/")
        page.wait_for_selector("body[data-ready=true]")
        page.evaluate("""() => {
            window.kgragLengths = [];
            const box = document.querySelector('#answer');
            new MutationObserver(() => {
                if (box.classList.contains('streaming')) window.kgragLengths.push(box.textContent.length);
            }).observe(box, {childList: true, subtree: true, characterData: true});
        }""")
        page.fill("#q", "What is the lowest common ancestor of two nodes in a tree?")
        page.fill("#k", "1")
        page.click("#ask-button")
        page.wait_for_selector("#answer:not(.streaming)", state="attached", timeout=120_000)
        page.wait_for_function("!document.querySelector('#ask-button').disabled", timeout=120_000)
        lengths = page.evaluate("window.kgragLengths")
        growing = sorted(set(lengths))
        assert len(growing) >= 3, lengths  # several token renders, not one final paint
        assert page.inner_text("#answer").strip()
        assert page.is_hidden("#error")
    finally:
        live.stop()
        components.close()
