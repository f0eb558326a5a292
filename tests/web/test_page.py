"""The web page in real headless Chromium against a live server over the demo knowledge base."""

from __future__ import annotations

import io
import json
import re

from tests.live_server import start_server

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


def test_citation_click_expands_the_full_chunk_with_the_cited_sentence_marked(page, live_server):
    open_page(page, live_server)
    ask(page, LCA_QUESTION)
    wait_answer(page)
    source = page.locator("#src-1")
    assert source.locator(".chunk-text").is_hidden()
    page.click("#answer a.cite[data-n='1']")
    full = source.locator(".chunk-text")
    full.wait_for(state="visible")
    assert source.locator("button.expand").get_attribute("aria-expanded") == "true"
    marked = full.locator("mark").all_inner_texts()
    assert marked, full.inner_text()
    answer = " ".join(page.inner_text("#answer").split())
    assert " ".join(marked[0].split())[:40] in answer
    assert len(full.inner_text()) > len(source.locator(".snippet").inner_text())


def test_empty_question_is_refused_in_the_page(page, live_server):
    open_page(page, live_server)
    ask(page, LCA_QUESTION)
    wait_answer(page)
    queries = []
    page.on("request", lambda r: queries.append(r.url) if "/v1/query" in r.url else None)
    ask(page, "   ")
    error = page.locator("#error")
    error.wait_for(state="visible")
    assert error.inner_text() == "Type a question first."
    assert page.is_hidden("#result") and page.inner_text("#answer") == ""
    page.fill("#q", "anything")
    page.fill("#k", "50")  # the field says max 20; the page refuses, the API is not asked
    page.click("#ask-button")
    assert "from 1 to 20" in error.inner_text()
    assert queries == []


def test_http_errors_and_a_stopped_server_are_shown_as_errors(page, demo_kb):
    """A second real server whose body limit is tiny answers 413; then it is stopped."""
    from kgrag.server.app import create_app

    server = demo_kb.settings.server.model_copy(update={"max_request_bytes": 64})
    app = create_app(demo_kb.settings.model_copy(update={"server": server}), demo_kb, warm=False)
    live = start_server(app, io.StringIO())
    try:
        open_page(page, live)
        ask(page, "How is the lowest common ancestor of two nodes computed in a rooted tree?")
        error = page.locator("#error")
        error.wait_for(state="visible")
        assert re.match(r"Error 413: request body is larger than 64 bytes", error.inner_text()), error.inner_text()
        assert error.get_attribute("role") == "alert"
        assert page.is_hidden("#result") and page.is_enabled("#ask-button")
    finally:
        live.stop()
    ask(page, "Is anyone there?")
    page.wait_for_function("document.querySelector('#error').textContent.startsWith('Cannot reach the server')")
    assert page.is_enabled("#ask-button") and page.inner_text("#status") == ""


def test_no_horizontal_overflow_at_375px(page_factory, live_server):
    page = page_factory(width=375, height=740)
    open_page(page, live_server)
    ask(page, TWO_HOP)
    wait_answer(page)
    page.click("#answer a.cite[data-n='1']")
    page.click("#trace-box summary")
    page.click("button.open-path >> nth=0")
    page.wait_for_selector("#entity-view:not([hidden])")
    widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1] == 375, widths
    wide = page.evaluate("""[...document.querySelectorAll('body *')]
        .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
        .map(e => e.tagName + '.' + e.className)""")
    assert wide == [], wide


def test_graph_explorer_opens_an_entity_by_alias_and_clicks_to_a_neighbour(page, live_server):
    open_page(page, live_server)
    page.fill("#entity-q", "最近公共祖先")
    page.click("#entity-search button")
    view = page.locator("#entity-view")
    view.wait_for(state="visible")
    assert view.get_attribute("data-key") == "lowest common ancestor"
    assert "最近公共祖先" in view.locator("ul.aliases").inner_text()
    assert view.locator("ul.entity-chunks li").count() >= 1
    neighbour = view.locator("button.neighbour").first
    target = neighbour.get_attribute("data-key")
    neighbour.click()
    page.wait_for_function(f"document.querySelector('#entity-view').dataset.key === {json.dumps(target)}")
    assert page.locator("#entity-view h3").inner_text().strip()


def test_an_answers_graph_path_opens_in_the_explorer(page, live_server):
    open_page(page, live_server)
    ask(page, TWO_HOP)
    wait_answer(page)
    page.click("#trace-box summary")
    item = page.locator("ol.hits > li", has_text="Maret Kuusik").first
    assert "placed as the bridge of Glass Harbor: page of maret kuusik" in item.inner_text()
    item.locator("button.open-path").first.click()
    chain = page.locator("#entity-path .chain")
    chain.wait_for(state="visible")
    nodes = chain.locator("button.entity-link").all_inner_texts()
    assert nodes[0] == "glass harbor" and "maret kuusik" in nodes
    page.wait_for_function("document.querySelector('#entity-view').dataset.key === " + json.dumps(nodes[-1]))


def test_feedback_is_stored_with_the_answer_and_the_marked_source(page, live_server, demo_kb):
    from kgrag.feedback import FeedbackStore

    open_page(page, live_server)
    ask(page, LCA_QUESTION)
    wait_answer(page)
    chunk = page.get_attribute("#src-1", "data-chunk")
    page.check("#src-1 input.mark-right")
    page.click("#feedback button[data-rating=helpful]")
    page.fill("#feedback textarea", "clear and cited")
    page.click("#feedback button.fb-send")
    page.wait_for_function("document.querySelector('#feedback').dataset.sent === 'true'")
    assert page.inner_text("#feedback .fb-status") == "Thank you: feedback stored."
    store = FeedbackStore(demo_kb.settings.data_dir)
    try:
        stored = [f for f in store.list() if f.comment == "clear and cited"]
    finally:
        store.close()
    assert len(stored) == 1
    item = stored[0]
    assert item.rating == "helpful" and item.question == LCA_QUESTION
    assert [r.chunk_id for r in item.relevant] == [chunk]
    assert item.citations and item.trace_id and re.fullmatch(r"[0-9a-f]{32}", item.trace_id)
    assert f'"request_id": "{item.trace_id}"' in live_server.log.getvalue()


def test_chinese_browser_gets_the_chinese_ui_and_no_request_fails(page_factory, live_server):
    page = page_factory(locale="zh-CN")
    failed = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    open_page(page, live_server)
    assert page.get_attribute("html", "lang") == "zh-CN"
    assert page.inner_text("#ask-button") == "提问"
    ask(page, "最近公共祖先是什么？")
    wait_answer(page)
    assert "最近公共祖先" in page.inner_text("#answer")
    assert page.inner_text("#sources li.source button.expand >> nth=0") == "展开全文"
    icon = page.request.get(live_server.url + "/favicon.ico")
    assert icon.status == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    assert failed == [], failed


def _cited_in_stream(events: str) -> list[str]:
    """The chunk ids the answer event of a /v1/query event stream cites, in citation order."""
    for block in events.split("\n\n"):
        if block.startswith("event: answer"):
            answer = json.loads(block.split("data: ", 1)[1])["answer"]
            return list(dict.fromkeys(c["chunk_id"] for c in answer["citations"]))
    raise AssertionError("no answer event in the stream")


def test_a_thread_keeps_earlier_turns_sends_them_as_history_and_new_conversation_clears_it(page, live_server):
    first = "Which manuscripts are known as the Books of Clanranald?"
    open_page(page, live_server)
    with page.expect_response(lambda r: r.url.endswith("/v1/query")) as info:
        ask(page, first)
    assert "history" not in json.loads(info.value.request.post_data)  # nothing earlier yet
    wait_answer(page)
    first_answer = page.inner_text("#answer")
    cited = _cited_in_stream(info.value.text())
    assert cited, "the first answer must cite a source"
    assert page.is_hidden("#thread")

    with page.expect_response(lambda r: r.url.endswith("/v1/query")) as info:
        ask(page, "And who kept them?")
    sent = json.loads(info.value.request.post_data)
    # The chunks the answer cited go with it: "and the next one?" means the neighbour of the first.
    assert sent["history"] == [{"question": first, "answer": first_answer, "cited_chunk_ids": cited}]
    wait_answer(page)
    turns = page.eval_on_selector_all("#thread li.turn .turn-q", "els => els.map(e => e.textContent)")
    assert turns == [first]  # the earlier question stays on the page, with its answer
    assert page.inner_text("#thread li.turn .turn-a") == first_answer
    assert page.inner_text("#sources li.source b").startswith("Books of Clanranald")
    page.click("#trace-box summary")
    assert first in page.inner_text("#trace dl")  # the trace shows the completed follow-up
    second_cited = _cited_in_stream(info.value.text())

    # "And the next one?" opens with what the last answer cited, and the trace says so.
    ask(page, "And the next one?")
    wait_answer(page)
    page.eval_on_selector("#trace-box", "box => { box.open = true; }")  # it may be open already
    head = page.locator("ol.hits > li").first
    assert second_cited[0] in head.inner_text() and "cited by the previous answer" in head.inner_text()

    page.click("#new-conversation")
    assert page.is_hidden("#thread") and page.is_hidden("#result")
    with page.expect_response(lambda r: r.url.endswith("/v1/query")) as info:
        ask(page, LCA_QUESTION)
    assert "history" not in json.loads(info.value.request.post_data)
    wait_answer(page)
    assert not [c for c in page.kgrag_console if c.startswith(("error", "pageerror"))], page.kgrag_console


def test_the_page_shows_the_warnings_of_options_run_degraded(page, live_server):
    """The page sends no LLM options itself: the request is given one on its way, and the real
    server's warning must reach the screen."""
    def with_llm_driver(route):
        body = json.loads(route.request.post_data)
        route.continue_(post_data=json.dumps({**body, "iterate_driver": "llm"}))

    open_page(page, live_server)
    page.route("**/v1/query", with_llm_driver)
    ask(page, LCA_QUESTION)
    wait_answer(page)
    warnings = page.locator("#warnings")
    assert warnings.is_visible()
    assert "iterate_driver 'llm' needs an LLM" in warnings.inner_text() and "KGRAG_LLM__MODEL" in warnings.inner_text()
    page.unroute("**/v1/query")
    ask(page, LCA_QUESTION)  # a request without it: no warning left on screen
    wait_answer(page)
    assert warnings.is_hidden()
