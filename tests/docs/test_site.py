"""The docs site: `mkdocs build --strict` passes, and the site holds what it promises.

Each chapter in English and in Chinese with the outputs of its one execution, the API page of a module,
the CLI page with every subcommand, links to source files turned into the site's pages, MathJax served by the
site itself, headings and tables of contents without TeX that lead to their sections, search hits under each
chapter's own sections in both languages; and a copy of the docs with broken links fails the strict build,
naming each one.
"""

import json
import re
import shutil
from urllib.parse import unquote

import nbformat
import yaml

from redthread.cli import build_parser
from tests.docs.conftest import CHAPTERS, DOCS, EXAMPLE, REPO, build_site, build_tour


def page(site, path: str) -> str:
    return (site / path / "index.html").read_text(encoding="utf-8")


def test_every_chapter_has_an_english_and_a_chinese_page_with_its_outputs(site, executed_tour):
    for chapter in CHAPTERS:
        nb = nbformat.read(executed_tour.notebooks(chapter)["en"], as_version=4)
        figures = sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.outputs)
        en, zh = page(site, f"tour/{chapter.stem}"), page(site, f"zh/tour/{chapter.stem}")
        for html, lang in ((en, "en"), (zh, "zh")):
            assert "jp-OutputArea-output" in html, f"{chapter.name} ({lang}): no output cell"
            assert html.count("<img") >= figures, f"{chapter.name} ({lang}): not every figure is on the page"
        assert en.count("<img") == zh.count("<img"), f"{chapter.name}: the two languages show different figures"
        assert "## Try this" in chapter.read_text(encoding="utf-8")
        assert "Try this" in en and "试一试" not in en
        assert "试一试" in zh and "Try this" not in zh
    assert 'href="00-example/"' in page(site, "tour") and 'href="00-example/"' in page(site, "zh/tour")


def test_the_fixture_chapters_printed_numbers_and_links_are_on_both_pages(site, executed_tour):
    for lang, path in (("en", "tour/00-example"), ("zh", "zh/tour/00-example")):
        nb = nbformat.read(executed_tour.notebooks(EXAMPLE)[lang], as_version=4)
        printed = [o.text.strip() for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "stream"]
        assert printed and ("均值：" in printed[0]) == (lang == "zh")  # each page its own language's output
        html = page(site, path)
        assert all(text in html for text in printed), path
        assert 'href="../../claims/"' in html  # ../claims.md, as the site's URL


def test_the_site_has_the_api_page_of_a_module(site):
    html = page(site, "api/layers/attention")
    assert 'id="redthread.layers.attention.MultiHeadAttention"' in html
    assert 'id="redthread.layers.attention.scaled_dot_product_attention"' in html
    index = page(site, "api")
    assert 'href="../api/layers/attention/#redthread.layers.attention.MultiHeadAttention"' in index or \
        'href="layers/attention/#redthread.layers.attention.MultiHeadAttention"' in index
    assert page(site, "zh/api/layers/attention").count('id="redthread.layers.attention.MultiHeadAttention"') == 1


def test_the_cli_page_lists_every_subcommand_and_its_flags(site):
    html = page(site, "cli")
    parser = build_parser()
    (subparsers,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    assert len(subparsers.choices) >= 5
    for name, sub in subparsers.choices.items():
        assert f"<code>redthread {name}</code>" in html, name
        for action in sub._actions:
            for flag in action.option_strings:
                assert flag in html, f"redthread {name} {flag}"


def test_links_to_source_files_become_the_sites_pages(site):
    claims = page(site, "claims")
    assert 'href="../api/layers/attention/"' in claims
    assert "src/redthread" not in re.sub(r"<pre.*?</pre>", "", claims, flags=re.S)
    assert not [p for p in site.rglob("*") if p.suffix in (".py", ".ipynb")], "a source file was copied as a page"


def test_the_site_serves_its_own_mathjax(site):
    for path in ("", "zh/", "tour/00-example/", "zh/tour/00-example/"):
        scripts = re.findall(r'<script src="([^"]+)"', page(site, path.rstrip("/")))
        assert not [s for s in scripts if s.startswith(("http:", "https:", "//"))], f"{path}: a script from the network"
        assert any(s.endswith("javascripts/mathjax/tex-mml-chtml.js") for s in scripts), path
    mathjax = site / "javascripts" / "mathjax"
    assert (mathjax / "LICENSE").is_file() and list((mathjax / "output" / "chtml" / "fonts" / "woff-v2").glob("*.woff"))
    assert "fonts.googleapis.com" not in page(site, "")  # the theme's web fonts would be asked for on every page


def chapter_pages(site):
    for chapter in CHAPTERS:
        for path in (f"tour/{chapter.stem}", f"zh/tour/{chapter.stem}"):
            yield path, page(site, path)


def test_headings_and_tables_of_contents_have_no_tex_and_lead_to_their_sections(site):
    pages = [*chapter_pages(site), *((p, page(site, p)) for p in ("", "zh", "claims", "attention"))]
    for path, html in pages:
        article = html[html.index("<article"):html.index("</article>")]
        headings = [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<h[1-6][^>]*>(.*?)</h[1-6]>", article, re.S)]
        toc = html[html.index('md-nav--secondary'):] if "md-nav--secondary" in html else ""
        toc = toc[:toc.index("</nav>")] if toc else ""
        entries = re.findall(r'<a href="#([^"]*)" class="md-nav__link">\s*<span class="md-ellipsis">\s*(.*?)\s*</span>', toc, re.S)
        for text in headings + [name for _, name in entries]:
            assert "$" not in text and "\\" not in text, f"{path}: TeX in a heading: {text!r}"
        ids = {unquote(i) for i in re.findall(r'<h[1-6] id="([^"]+)"', article)}
        assert [a for a, _ in entries if unquote(a) not in ids] == [], f"{path}: table of contents entries lead nowhere"
        assert entries, f"{path}: no table of contents found"


def test_search_finds_each_chapters_sections_under_its_title_in_both_languages(site):
    docs = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))["docs"]
    for path, html in chapter_pages(site):
        title = re.sub(r"<[^>]+>", "", re.search(r"<h1[^>]*>(.*?)</h1>", html, re.S).group(1)).strip()
        entries = [d for d in docs if d["location"].split("#")[0] == path + "/"]
        locations = [d["location"] for d in entries]
        assert len(locations) >= 3 and len(set(locations)) == len(locations), f"{path}: sections share a location"
        (whole,) = [d for d in entries if "#" not in d["location"]]
        assert whole["title"] == title.rstrip("¶"), path  # a hit is listed under the chapter's own name
        assert not [d["title"] for d in entries if "¶" in d["title"]], path


def test_a_broken_link_fails_the_strict_build_and_is_named(tmp_path, executed_tour):
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs, ignore=shutil.ignore_patterns("__pycache__", "tour"))
    (docs / "tour").mkdir()
    with open(docs / "architecture.md", "a", encoding="utf-8") as f:
        f.write("\n[a page](no-such-page.md), [a module](../src/redthread/no_such_module.py), "
                "[an anchor](claims.md#no-such-anchor), [an object][redthread.no_such_object]\n")
    # a chapter with a broken link, executed; and one never executed
    chapter = docs / "tour" / "00-example.py"
    chapter.write_text(EXAMPLE.read_text(encoding="utf-8").replace("(../claims.md)", "(../claim.md)"), encoding="utf-8")
    shutil.copy(EXAMPLE, docs / "tour" / "01-stale.py")
    tour = tmp_path / "tour"
    build_tour.write(build_tour.execute(chapter), chapter, tour)

    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    config["docs_dir"] = str(docs)
    config["hooks"] = [str(DOCS / "hooks.py")]
    plugins = {next(iter(p)) if isinstance(p, dict) else p: p for p in config["plugins"]}
    plugins["mkdocstrings"]["mkdocstrings"]["handlers"]["python"]["paths"] = [str(REPO / "src")]
    for language in plugins["i18n"]["i18n"]["languages"][1:]:
        language["build"] = False  # one language is enough to see the failures
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")

    done = build_site.mkdocs("build", tmp_path / "site", tour=tour, config=tmp_path / "mkdocs.yml",
                             capture_output=True, text=True)
    log = done.stdout + done.stderr
    assert done.returncode != 0
    assert "Aborted with" in log and "strict mode" in log
    assert "no-such-page.md" in log
    assert "no_such_module.py" in log
    assert "no-such-anchor" in log
    assert "redthread.no_such_object" in log  # a cross-reference to the API that leads nowhere
    assert "'../claim.md'" in log  # the notebook's link
    assert "tour/01-stale.py has not been executed" in log


LIVE_CHAPTERS = {  # the chapters issue 29 names, and the runs each one's live page shows
    "03-counting": {"tang300-mlp", "tang300-gru", "tang300-transformer"},
    "06-attention": {"shakespeare-transformer"},
    "07-transformer": {"shakespeare-transformer", "tang300-transformer"},  # the walk-through; the explorer on a 律诗
    "08-training-and-sampling": {"names-bigram", "names-mlp", "names-lstm", "names-transformer", "tang300-transformer"},
}


def test_the_chapters_embed_the_live_page_and_the_site_serves_it(site):
    live = site / "live"
    assert (live / "index.html").is_file() and list((live / "ort").glob("*.wasm")), "live/ lacks its page or runtime"
    found = re.search(r'<script type="application/json" id="manifest">(.*?)</script>',
                      (live / "index.html").read_text(encoding="utf-8"), re.S)
    served = {run["name"] for run in json.loads(found.group(1))["runs"]}
    size = sum(f.stat().st_size for f in live.rglob("*") if f.is_file())
    assert size < 30e6, f"the live page adds {size / 1e6:.1f} MB to the site (aim: at most 30 MB)"
    for chapter, runs in LIVE_CHAPTERS.items():
        for path, lang in ((f"tour/{chapter}", "en"), (f"zh/tour/{chapter}", "zh")):
            frames = re.findall(r'<iframe\b[^>]*\bsrc="([^"]+)"', page(site, path))  # the notebook's HTML may reorder attributes
            assert frames, f"{path}: no live page"
            named = set()
            for src in frames:
                target, _, query = src.replace("&amp;", "&").partition("?")
                assert (site / path / unquote(target)).resolve() == (live / "index.html").resolve(), f"{path}: {src}"
                fields = dict(part.split("=", 1) for part in query.split("&"))
                assert fields["lang"] == lang, f"{path}: {src}"
                named |= set(unquote(fields["runs"]).split(","))
            assert named == runs, f"{path}: the live page shows {sorted(named)}, not {sorted(runs)}"
            assert named <= served, f"{path}: {sorted(named - served)} are not in live/"
