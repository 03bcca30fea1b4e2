"""The docs site in Chromium: a chapter's page draws its figure, switches to its Chinese page, and its links lead
to the site's pages, with no script error. Offline: requests that leave 127.0.0.1 (MathJax's CDN, web fonts)
are refused, as a reader without a network would see it."""

import functools
import http.server
import threading
from urllib.parse import urljoin

import pytest


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def served(site):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()


@pytest.fixture
def page(browser, served):
    page = browser.new_page()
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(served) else route.abort())
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    yield page
    page.close()


def figure_drawn(page) -> bool:
    return page.locator(".jp-OutputArea-output img").first.evaluate("img => img.complete && img.naturalWidth > 0")


def test_a_chapter_page_draws_its_figure_and_switches_language(page, served):
    page.goto(served + "tour/00-example/")
    assert page.locator("h1").first.inner_text().startswith("0 · An example chapter")
    assert figure_drawn(page)
    page.goto(urljoin(page.url, page.locator('a[hreflang="zh"]').get_attribute("href")))
    assert page.url == served + "zh/tour/00-example/"
    assert page.locator("h1").first.inner_text().startswith("第 0 章 · 示例章节")
    assert figure_drawn(page)
    page.locator(".jp-MarkdownOutput a", has_text="论点").click()
    page.wait_for_url(served + "zh/claims/")
    assert "C14" in page.locator("article").inner_text()
    assert page.errors == []


def test_the_tour_index_leads_to_each_chapter_in_its_language(page, served):
    for index, title in (("tour/", "0 · An example chapter"), ("zh/tour/", "第 0 章 · 示例章节")):
        page.goto(served + index)
        page.locator("article a", has_text=title).click()
        page.wait_for_url(served + index + "00-example/")
    assert page.errors == []
