"""The graph explorer's drawing (kgrag/server/static/js/graph.js, cytoscape.js vendored under
/static/vendor) in real headless Chromium over the demo knowledge base: an entity's
neighbourhood is drawn, a click on a drawn node opens it, a click on a drawn edge lists the
chunks that evidence it, at desktop width and at 375 px. A failing test leaves a screenshot
(tests/web/conftest.py)."""

from __future__ import annotations

import json

import pytest

from tests.web.test_page import open_page

ENTITY_ALIAS = "最近公共祖先"
ENTITY_KEY = "lowest common ancestor"


def _open_drawing(page, live_server):
    open_page(page, live_server)
    page.fill("#entity-q", ENTITY_ALIAS)
    page.click("#entity-search button")
    page.wait_for_function(f"document.querySelector('#entity-view')?.dataset.key === {json.dumps(ENTITY_KEY)}")
    page.wait_for_selector("#entity-graph canvas")
    page.wait_for_function("document.querySelector('#entity-graph').cy?.nodes().length > 1")


def _screen_point(page, selector_js: str) -> dict:
    """Where the drawn element lies on the screen (its rendered position inside the canvas)."""
    return page.evaluate(f"""() => {{
        const box = document.querySelector('#entity-graph');
        const item = {selector_js};
        const at = item.isNode() ? item.renderedPosition() : item.renderedMidpoint();
        const r = box.getBoundingClientRect();
        return {{x: r.left + at.x, y: r.top + at.y, id: item.id(), data: item.data()}};
    }}""")


@pytest.mark.parametrize("width", [1024, 375])
def test_a_click_on_a_drawn_neighbour_opens_it(page_factory, live_server, width):
    page = page_factory(width=width, height=800)
    _open_drawing(page, live_server)
    drawn = page.evaluate("""() => {
        const cy = document.querySelector('#entity-graph').cy;
        return {nodes: cy.nodes().map(n => [n.id(), n.data('hops'), n.data('colour')]),
                widths: cy.edges().map(e => [e.data('weight'), e.numericStyle('width')])};
    }""")
    api = page.evaluate(f"fetch('/v1/entities/' + encodeURIComponent({json.dumps(ENTITY_KEY)}) + '?hops=2&limit=20')"
                        ".then(r => r.json())")
    # every neighbour the API lists is drawn, two hops deep, the entity itself in the centre
    assert {n["key"] for n in api["neighbours"]} | {ENTITY_KEY} == {key for key, _, _ in drawn["nodes"]}
    assert {hops for _, hops, _ in drawn["nodes"]} >= {0, 1}
    # a heavier edge is drawn wider
    widths = sorted(drawn["widths"])
    assert widths[0][1] <= widths[-1][1] and (widths[0][0] == widths[-1][0] or widths[0][1] < widths[-1][1])
    if width == 375:
        sizes = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth, "
                              "document.querySelector('#entity-graph').getBoundingClientRect().right]")
        assert sizes[0] <= sizes[1] == 375 and sizes[2] <= 375, sizes
    page.locator("#entity-graph").scroll_into_view_if_needed()
    target = _screen_point(page, "box.cy.nodes().filter(n => n.data('hops') === 1)[0]")
    page.mouse.click(target["x"], target["y"])
    page.wait_for_function(f"document.querySelector('#entity-view').dataset.key === {json.dumps(target['id'])}")
    assert page.locator("#entity-view h3").inner_text().strip() == target["data"]["label"]
    assert not [c for c in page.kgrag_console if c.startswith(("error", "pageerror"))], page.kgrag_console


def test_a_click_on_a_drawn_edge_lists_the_chunks_that_evidence_it(page, live_server):
    _open_drawing(page, live_server)
    page.locator("#entity-graph").scroll_into_view_if_needed()
    edge = _screen_point(page, "box.cy.edges().sort((a, b) => b.data('weight') - a.data('weight'))[0]")
    with page.expect_response(lambda r: "/v1/relations?" in r.url) as info:
        page.mouse.click(edge["x"], edge["y"])
    relation = info.value.json()
    assert {relation["a"], relation["b"]} == {edge["data"]["source"], edge["data"]["target"]}
    box = page.locator("#edge-evidence")
    box.wait_for(state="visible")
    assert relation["chunks"] and box.locator("ul.entity-chunks li").count() == len(relation["chunks"])
    box.locator("ul.entity-chunks li button").first.click()  # the chunk's text opens
    assert box.locator(".chunk-text").first.is_visible()
