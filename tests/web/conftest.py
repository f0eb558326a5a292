"""Browser tests in real headless Chromium (Debian's ``chromium`` at /usr/bin/chromium, driven by
Playwright's Python package; no browser is ever downloaded).

One live server (``live_server`` in tests/conftest.py: the session's demo knowledge base) and
one browser serve every test; each test gets a fresh browser context. Without Chromium or
Playwright the tests skip and say why; ``KGRAG_REQUIRE_BROWSER=1`` (set by .ci/run) turns that
skip into a failure. A failing test leaves a screenshot in a temp dir (its path is printed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.backend_cache import unavailable

CHROMIUM = os.environ.get("KGRAG_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
SCREENSHOTS = Path(tempfile.gettempdir()) / "kgrag-browser-screenshots"
REQUIRED = "KGRAG_REQUIRE_BROWSER"  # set to 1: no browser fails the tests instead of skipping them


def cjk_fonts() -> list[str]:
    """The system's fonts that cover Chinese (fontconfig), [] when none or no fc-list."""
    if shutil.which("fc-list") is None:
        return []
    listed = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True, timeout=60)
    return [line for line in listed.stdout.splitlines() if line.strip()]


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).is_file():
        unavailable(f"no Chromium at {CHROMIUM} (apt-get install -y chromium)", REQUIRED)
    if not cjk_fonts() and os.environ.get(REQUIRED) == "1":
        # the tests would pass, but every screenshot shows Chinese as boxes (docs/install.md)
        pytest.fail("KGRAG_REQUIRE_BROWSER=1 but no font covers Chinese (apt-get install -y fonts-noto-cjk)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as e:
        unavailable(f"the playwright package is not installed ({e})", REQUIRED)
    with sync_playwright() as p:
        try:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        except Exception as e:  # a Chromium that cannot start here: the reason is the message
            unavailable(f"Chromium at {CHROMIUM} does not start: {str(e).splitlines()[0]}", REQUIRED)
        yield browser
        browser.close()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.kgrag_failed = report.failed
    return report


@pytest.fixture
def page_factory(browser, request):
    """``page_factory(width=1024, locale="en-US")``: a fresh context and page; every page made is
    screenshotted when the test fails."""
    contexts = []

    def make(width: int = 1024, height: int = 800, locale: str = "en-US"):
        context = browser.new_context(viewport={"width": width, "height": height}, locale=locale)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.kgrag_console = []
        page.on("console", lambda m: page.kgrag_console.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: page.kgrag_console.append(f"pageerror: {e}"))
        return page

    yield make
    if getattr(request.node, "kgrag_failed", False):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        for i, context in enumerate(contexts):
            for j, page in enumerate(context.pages):
                path = SCREENSHOTS / f"{request.node.name}-{i}-{j}.png"
                try:
                    page.screenshot(path=str(path), full_page=True)
                    print(f"screenshot of the failing page: {path}\nconsole: {page.kgrag_console}")
                except Exception as e:  # a crashed page has nothing to show
                    print(f"no screenshot for {request.node.name}: {e}")
    for context in contexts:
        context.close()


@pytest.fixture
def page(page_factory):
    return page_factory()

