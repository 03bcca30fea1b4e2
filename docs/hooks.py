"""MkDocs hooks of the redthread site (mkdocs.yml `hooks:`): the pages made at build time, and links out of docs/.

MkDocs reads one folder, and mkdocs-static-i18n localises only the files inside it (it drops mkdocs-gen-files'
virtual files: ultrabug/mkdocs-static-i18n#263). So on_config assembles a staging folder and points docs_dir at it:

- docs/ itself, without its Python files and notebooks (the tour's chapter sources, these scripts and a chapter
  opened in Jupyter are not pages);
- the executed tour that docs/build_tour.py writes (build/tour, or $REDTHREAD_TOUR_BUILD): NN-slug.ipynb and
  NN-slug.zh.ipynb per chapter, and the tour's index in both languages; a chapter of docs/tour whose executed
  notebooks are missing or older than it is a warning, so --strict refuses to show stale outputs;
- the API reference, a page per module of src/redthread, and the CLI reference (reference.py);
- a page showing each repository file outside docs/ that a page links to (benchmarks/*.py, tests/...);
- MathJax 3, from the django-static-mathjax package that `setup.sh --test` installs, as javascripts/mathjax/: the
  site typesets its formulas with no network (a classroom projector, a laptop on a train).

The live page (viz/page.py): a chapter's markdown cell may hold a line `<!-- live-page runs="NAME,NAME" view="V"
text="TEXT" -->`, NAME a shipped reference model (`rt.shipped_models()`), V walk, explorer, compare or about. One
page folder holding every run that the chapters name is written once per build, with the page writer's Python API,
and copied into the site as live/ (not through docs_dir: mkdocs-static-i18n would copy it, and ONNX Runtime Web's
14.8 MB of WebAssembly, again under zh/); each marker becomes an iframe of live/index.html whose address chooses
its runs, view, text and the chapter's language, with a link to open it in a tab of its own. Without ONNX Runtime
Web (the npm package that setup.sh installs) the marker becomes a note saying so, and the build still passes.

Links from docs/ to ../src/redthread/<module>.py become links to that module's API page, and links to other
repository files become links to their source pages; docs/ itself is untouched, so it reads the same on GitHub.
A link to a file that does not exist is left as it is, for MkDocs's validation to report (a warning, which
--strict makes a failure). The tour's notebooks are rendered by nbconvert, outside MkDocs's link handling, so
their links are checked and turned into the site's URLs here.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import logging
import os
import posixpath
import re
import shutil
import sys
import tempfile
from pathlib import Path
from html import escape as html_escape
from urllib.parse import quote, unquote, urlencode, urlsplit

import build_tour
import markdown
import mkdocs_jupyter.convert
import mkdocs_jupyter.plugin
import nbformat
import reference
from markdown.extensions.toc import TocExtension, slugify_unicode
from mkdocs import utils
from mkdocs.structure.files import File

log = logging.getLogger("mkdocs.hooks.redthread")
REPO = Path(__file__).resolve().parent.parent
LINK = re.compile(r"(\]\()([^)\s]+)")  # the target of a markdown link or image: [text](target "title")
HEADING_ID = re.compile(r'(^<h[1-6][^>]* id=")([^"]*)')
ANCHOR = re.compile(r'<a class="anchor-link" href="#([^"]*)"')
ATX_HEADING = re.compile(r"^#{1,6} .*$", re.M)

# mkdocs-static-i18n rebuilds every File, dropping mkdocs-jupyter's wrapper that makes a notebook a page; with .ipynb
# among MkDocs's page extensions a notebook is a page to both, and its .zh twin becomes the Chinese page
if ".ipynb" not in utils.markdown_extensions:
    utils.markdown_extensions = (*utils.markdown_extensions, ".ipynb")


# mkdocs-jupyter gives a notebook's headings ASCII-only ids: a Chinese chapter's are "" or "6", its table of contents
# leads nowhere, and every search hit lands on the page's own entry, titled with its last heading ("试一试¶"). Its
# headings get Unicode ids instead, the same in the page and in its table of contents, and their "¶" the theme's
# headerlink class, which the search index leaves out of a section's title.
def heading_id(text: str, separator: str = "-") -> str:
    return slugify_unicode(text, separator)


def notebook_heading(html: str, anchor_link_text: str = "¶") -> str:
    html = _notebook_heading(html, anchor_link_text)  # <hN id="ID">text<a class="anchor-link" href="#ID">¶</a></hN>
    html = HEADING_ID.sub(lambda m: m.group(1) + unquote(m.group(2)), html, count=1)  # nbconvert percent-encodes it
    return ANCHOR.sub(lambda m: f'<a class="headerlink" href="#{unquote(m.group(1))}"', html, count=1)


def notebook_toc(path: str, toc_depth: int) -> tuple[list, str | None]:
    """A notebook's table of contents and title, from its markdown cells as written (the plugin's goes through
    nbconvert's markdown, which drops a heading's `code`), with the ids that its page's headings get."""
    nb = nbformat.read(path, as_version=4)
    source = "\n\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    source = ATX_HEADING.sub(lambda m: m.group(0).replace("`", ""), source)  # as the page's id sees a heading
    md = markdown.Markdown(extensions=["fenced_code", TocExtension(toc_depth=toc_depth, slugify=heading_id)])
    md.convert(source)
    return md.toc_tokens, next((token["name"] for token in md.toc_tokens if token["level"] == 1), None)


# the plugin's own renderer, kept once: MkDocs imports these hooks again on each reload of `mkdocs serve`
_notebook_heading = vars(mkdocs_jupyter.convert).setdefault("unpatched_heading", mkdocs_jupyter.convert.add_anchor_lower_id)
mkdocs_jupyter.convert.slugify = heading_id  # both are looked up when a heading is rendered
mkdocs_jupyter.convert.add_anchor_lower_id = notebook_heading
mkdocs_jupyter.plugin._get_nb_toc_tokens = notebook_toc

MATHJAX = "javascripts/mathjax"  # where the site serves MathJax from: mkdocs.yml's extra_javascript names its bundle
MATHJAX_BUNDLE = "tex-mml-chtml.js"
_source: dict = {}  # docs_dir and nav as mkdocs.yml gives them (the Chinese build sees the staged ones)
_made: dict = {}  # the reference pages and the live page, made once for both languages
LIVE = "live"  # where the site serves the live page from: one folder for every chapter that embeds it
LIVE_MARK = re.compile(r"<!--\s*live-page\b(.*?)-->", re.S)
LIVE_ATTR = re.compile(r'\s*([a-z]+)="([^"]*)"')
LIVE_ATTRS = ("runs", "view", "text")
LIVE_VIEWS = ("walk", "explorer", "compare", "about")
LIVE_HEIGHT = 780  # pixels: the text, the settings and twelve candidates fit, and the walk-through's first layer
LIVE_WORDS = {
    "en": {"title": "the live page: {runs}, running in this browser",
           "open": "open it in a tab of its own",
           "size": "{mb:.1f} MB downloaded the first time (ONNX Runtime Web's WebAssembly and the models), then cached; "
                   "it runs in this tab, and nothing leaves it",
           "missing": "The live page would be here, running {runs} in your browser, but this build of the site was made "
                      "without ONNX Runtime Web (the npm package onnxruntime-web, which <code>bash setup.sh</code> "
                      "installs). From a checkout: <code>redthread page {args} --out page</code>, then "
                      "<code>python -m http.server --directory page</code>."},
    "zh": {"title": "在线页面：{runs}，在本浏览器里运行",
           "open": "在单独的标签页中打开",
           "size": "第一次打开时下载 {mb:.1f} MB（ONNX Runtime Web 的 WebAssembly 和模型），之后从缓存读取；"
                   "它在这个标签页里运行，不向外发送任何东西",
           "missing": "这里本应是在线页面，在你的浏览器里运行 {runs}；但构建本站时没有安装 ONNX Runtime Web"
                      "（npm 包 onnxruntime-web，<code>bash setup.sh</code> 会安装它）。在仓库里可以运行："
                      "<code>redthread page {args} --out page</code>，然后 "
                      "<code>python -m http.server --directory page</code>。"},
}

TOUR_INDEX = {
    "en": ("# The guided tour\n\n"
           "One chapter per rung of the ladder, in the essay's order. Each chapter explains its rung with the maths, "
           "runs it with the public API (`import redthread as rt`), and shows the real outputs and figures of that "
           "run, then ends with a few exercises. A chapter is a notebook kept as text, `docs/tour/NN-slug.py` in "
           "the repository: open it in Jupyter (jupytext) or run it as a script.\n\n"),
    "zh": ("# 导览\n\n"
           "沿着模型的阶梯，每一级一章，顺序与文章相同。每章先用数学讲清这一级模型，再用公开 API（`import redthread as rt`）"
           "把它跑起来，页面上是这次运行的真实输出和图，最后是几道练习。每章都是以文本保存的 notebook，即仓库中的 "
           "`docs/tour/NN-slug.py`：可以用 Jupyter（jupytext）打开，也可以直接当脚本运行。\n\n"),
}


def on_config(config):
    if not _source:
        _source.update(docs_dir=Path(config.docs_dir), nav=copy.deepcopy(config.nav))
        sys.path.insert(0, str(REPO / "src"))  # the checkout's redthread, for its docstrings and its parser
    if not _made:
        _made["api"], _made["api_nav"] = reference.api_pages()
        _made["cli"] = reference.cli_page()
    staging = staging_dir(config.site_dir)
    executed = Path(os.environ.get("REDTHREAD_TOUR_BUILD") or REPO / "build" / "tour")
    chapters = assemble(_source["docs_dir"], staging, executed, config.use_directory_urls)
    config.docs_dir = str(staging)
    reports = sorted(p.relative_to(staging).as_posix() for p in (staging / "experiments").glob("*/report.md"))
    config.nav = fill_nav(_source["nav"], {
        "tour/index.md": ["tour/index.md", *chapters],
        "experiments/index.md": ["experiments/index.md", "replication.md", *reports],  # the two runs compared, then each report
        "api/index.md": _made["api_nav"],
    })
    return config


def on_serve(server, config, builder):
    """Watch the sources, not the staging folder that every build rewrites."""
    server.unwatch(config.docs_dir)
    for path in (_source["docs_dir"], REPO / "src", REPO / "benchmarks"):
        server.watch(str(path))
    return server


def on_post_build(config):
    """The live page into the site, once: the Chinese build writes into the same site folder."""
    folder = _made.get("live", {}).get("folder")
    dest = Path(config.site_dir) / LIVE
    if folder is not None and not dest.exists():
        shutil.copytree(folder, dest)


def on_shutdown():
    if _source.get("staging"):
        shutil.rmtree(_source["staging"], ignore_errors=True)
        shutil.rmtree(live_cache(), ignore_errors=True)


def staging_dir(site_dir: str) -> Path:
    """One staging folder per site folder, outside the repository."""
    key = hashlib.sha256(str(Path(site_dir).resolve()).encode()).hexdigest()[:12]
    _source["staging"] = Path(tempfile.gettempdir()) / f"redthread-docs-{key}"
    return _source["staging"]


def fill_nav(nav: list, fill: dict) -> list:
    """mkdocs.yml's nav with each section whose first entry is a key of `fill` replaced by its value."""
    out = []
    for item in nav:
        if isinstance(item, dict):
            ((title, value),) = item.items()
            if isinstance(value, list):
                value = fill.get(value[0], value) if value and isinstance(value[0], str) else fill_nav(value, fill)
            item = {title: value}
        out.append(item)
    return out


def assemble(docs: Path, staging: Path, executed: Path, use_directory_urls: bool) -> list[str]:
    """Write the staging folder; the staged chapters' English pages, in order."""
    if staging.exists():
        shutil.rmtree(staging)
    shutil.copytree(docs, staging, ignore=shutil.ignore_patterns("*.py", "*.ipynb", "__pycache__"))
    stage_mathjax(staging / MATHJAX)
    for path, text in {**_made["api"], "cli.md": _made["cli"]}.items():
        write(staging / path, text)
    for page in sorted(staging.rglob("*.md")):
        uri = page.relative_to(staging).as_posix()
        text = page.read_text(encoding="utf-8")
        new = LINK.sub(lambda m, uri=uri: m.group(1) + (repo_link(uri, m.group(2), staging) or m.group(2)), text)
        if new != text:
            page.write_text(new, encoding="utf-8")
    return stage_tour(docs / "tour", executed, staging, use_directory_urls)


def mathjax_source() -> Path | None:
    """MathJax 3's es5 folder as the django-static-mathjax package ships it (MathJax 3.2.2), or None."""
    spec = importlib.util.find_spec("mathjax")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        es5 = Path(folder) / "static" / "mathjax" / "es5"
        if (es5 / MATHJAX_BUNDLE).is_file():
            return es5
    return None


def stage_mathjax(dest: Path) -> None:
    """MathJax into the site: the one bundle the pages load, and every component it may load later.

    The bundle fetches its fonts (output/chtml/fonts), TeX packages that it autoloads (\\boldsymbol, \\color, ...)
    and whatever the formula menu switches on (a11y/, sre/, the SVG output) from the folder it was loaded from;
    MathJax's other combined bundles are left out (19 MB of the 24).
    """
    es5 = mathjax_source()
    if es5 is None:
        log.warning("MathJax is not installed, so the site's formulas would show as raw TeX: "
                    "pip install django-static-mathjax (bash setup.sh --test installs it)")
        return

    def skip(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if Path(folder) == es5 and n.endswith(".js") and n != MATHJAX_BUNDLE]

    shutil.copytree(es5, dest, ignore=skip)
    shutil.copy(es5.parent / "LICENSE", dest / "LICENSE")  # Apache-2.0: its copies carry it


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def repo_link(page: str, url: str, staging: Path) -> str | None:
    """For a link from docs/<page> to a repository file outside docs/: the link to its page on the site, or None."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or not parts.path:
        return None
    path = posixpath.normpath(posixpath.join("docs", posixpath.dirname(page), unquote(parts.path)))
    if path == "docs" or path.startswith(("docs/", "../")) or not (REPO / path).is_file():
        return None
    module = reference.module_of_file(path)
    if module:
        target = reference.page_of(module)
    else:
        target = f"source/{path}.md"
        if not (staging / target).is_file():
            write(staging / target, source_page(path))
    return posixpath.relpath(target, posixpath.dirname(page) or ".")


def source_page(path: str) -> str:
    """A page showing a repository file: its path and its text."""
    text = (REPO / path).read_text(encoding="utf-8")
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    language = {".py": "python", ".toml": "toml", ".sh": "bash", ".json": "json", ".md": "markdown"}.get(Path(path).suffix, "text")
    return f"# `{path}`\n\n{fence}{language}\n{text.rstrip()}\n{fence}\n"


def stage_tour(sources: Path, executed: Path, staging: Path, use_directory_urls: bool) -> list[str]:
    """Copy the executed chapters in, their links made the site's own; write the tour's index in both languages."""
    for chapter in build_tour.chapters(sources):
        for name in build_tour.notebook_names(chapter).values():
            nb = executed / name
            made_from = nbformat.read(nb, as_version=4).metadata.get("redthread", {}) if nb.is_file() else {}
            if made_from.get("source_sha256") != build_tour.source_hash(chapter):
                log.warning(f"tour/{chapter.name} has not been executed since it changed (no current {nb}): "
                            "run `python docs/build.py`")
    chapters, titles, notebooks = [], {"en": [], "zh": []}, []
    for en in sorted(executed.glob("*.ipynb")) if executed.is_dir() else []:
        if not build_tour.CHAPTER.match(en.stem + ".py"):
            continue
        for lang, name in build_tour.notebook_names(en.with_suffix(".py")).items():
            if not (executed / name).is_file():
                log.warning(f"tour: {name} is missing from {executed}")
                continue
            nb = nbformat.read(executed / name, as_version=4)
            notebooks.append((f"tour/{name}", lang, nb))
            titles[lang].append((heading(nb), name))
        chapters.append(f"tour/{en.name}")
    marks = {uri: live_marks(uri, nb) for uri, _, nb in notebooks}
    wanted = list(dict.fromkeys(run for found in marks.values() for attrs in found for run in attrs["runs"]))
    live = live_page(wanted) if wanted else {}
    for uri, lang, nb in notebooks:
        page_dir = posixpath.dirname(File(re.sub(r"(\.zh)?\.ipynb$", ".md", uri), str(staging), str(staging),
                                          use_directory_urls).dest_path)
        page_dir = posixpath.join("zh", page_dir) if lang == "zh" else page_dir  # mkdocs-static-i18n's folder
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                cell.source = LINK.sub(lambda m, uri=uri: m.group(1) + notebook_link(uri, m.group(2), staging, use_directory_urls), cell.source)
                cell.source = LIVE_MARK.sub(lambda m: live_embed(parse_mark(m.group(1)), lang, page_dir, live), cell.source)
        write(staging / uri, nbformat.writes(nb))
    for lang, suffix in (("en", ""), ("zh", ".zh")):
        rows = "".join(f"- [{title}]({name})\n" for title, name in titles[lang])
        write(staging / f"tour/index{suffix}.md", TOUR_INDEX[lang] + rows)
    return chapters


def heading(nb: nbformat.NotebookNode) -> str:
    """A chapter's title: its first markdown heading."""
    for cell in nb.cells:
        for line in cell.source.splitlines() if cell.cell_type == "markdown" else []:
            if line.startswith("# "):
                return line[2:].strip()
    return "(untitled)"


def notebook_link(page: str, url: str, staging: Path, use_directory_urls: bool) -> str:
    """A notebook's link as a URL of the site, relative to the notebook's page; a warning when it leads nowhere."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or not parts.path:
        return url
    target = posixpath.normpath(posixpath.join(posixpath.dirname(page), repo_link(page, url, staging) or unquote(parts.path)))
    if target.startswith("../") or not (staging / target).is_file():
        log.warning(f"Doc file '{page}' contains a link '{url}', but the target is not found among documentation files.")
        return url

    def as_page(uri: str) -> File:  # the notebooks' pages sit where .md pages of the same (unlocalised) name would
        uri = re.sub(r"(\.zh)?\.ipynb$", ".md", uri)
        return File(uri, str(staging), str(staging), use_directory_urls)

    return as_page(target).url_relative_to(as_page(page)) + (f"#{parts.fragment}" if parts.fragment else "")


# ---- the live page -------------------------------------------------------------------------------------------------


def parse_mark(text: str) -> dict | None:
    """A live-page marker's attributes ({"runs": [...], "view": ..., "text": ...}), or None where it is malformed."""
    attrs, rest = {}, text
    while rest.strip():
        m = LIVE_ATTR.match(rest)
        if not m or m.group(1) not in LIVE_ATTRS or m.group(1) in attrs:
            return None
        attrs[m.group(1)] = m.group(2)
        rest = rest[m.end():]
    runs = [r.strip() for r in attrs.get("runs", "").split(",") if r.strip()]
    if not runs or attrs.get("view", "walk") not in LIVE_VIEWS:
        return None
    return {"runs": runs, "view": attrs.get("view", "walk"), "text": attrs.get("text")}


def live_marks(uri: str, nb: nbformat.NotebookNode) -> list[dict]:
    """A notebook's live-page markers, each checked: a malformed one, or one naming no shipped model, is a warning."""
    from redthread.data.shipped_models import shipped_models

    found = []
    for cell in nb.cells:
        for m in LIVE_MARK.finditer(cell.source) if cell.cell_type == "markdown" else []:
            attrs = parse_mark(m.group(1))
            if attrs is None:
                log.warning(f"{uri}: a live-page marker wants runs=\"NAME,NAME\" and may have view= (one of "
                            f"{', '.join(LIVE_VIEWS)}) and text=, each once: {m.group(0)!r}")
                continue
            unknown = [r for r in attrs["runs"] if r not in shipped_models()]
            if unknown:
                log.warning(f"{uri}: the live page names {', '.join(unknown)}, not among the shipped models "
                            f"({', '.join(shipped_models())})")
                continue
            found.append(attrs)
    return found


def live_cache() -> Path:
    return _source["staging"].with_name(_source["staging"].name + "-live")


def live_page(runs: list[str]) -> dict:
    """The page folder holding `runs` (shipped models, by name), written once per build beside the staging folder:
    {"folder", "manifest", "runtime_bytes"}, or {"missing": True} where ONNX Runtime Web is not installed (or the
    folder could not be written, which is a warning)."""
    if _made.get("live", {}).get("runs") == runs:
        return _made["live"]
    from redthread.errors import RedthreadError
    from redthread.train.checkpoint import pretrained
    from redthread.viz.page import RUNTIME_FILES, PageRun, runtime_folder, write_page

    try:
        runtime = runtime_folder()
    except RedthreadError as e:
        log.info(f"the tour's live page is left out of this build, each chapter saying so in its place: {e}")
        _made["live"] = {"runs": runs, "missing": True}
        return _made["live"]
    folder = live_cache() / LIVE
    shutil.rmtree(live_cache(), ignore_errors=True)
    try:
        manifest = write_page([PageRun(name, *pretrained(name)) for name in runs], folder, runtime=runtime,
                              title="redthread · the tour")
    except RedthreadError as e:
        log.warning(f"the tour's live page could not be written: {e}")  # a failure of --strict
        _made["live"] = {"runs": runs, "missing": True}
        return _made["live"]
    runtime_bytes = sum((folder / "ort" / name).stat().st_size for name in RUNTIME_FILES)
    _made["live"] = {"runs": runs, "folder": folder, "manifest": manifest, "runtime_bytes": runtime_bytes}
    return _made["live"]


def live_embed(attrs: dict | None, lang: str, page_dir: str, live: dict) -> str:
    """The HTML that stands for a marker: the live page in an iframe with a link to it, or the note saying why not."""
    if attrs is None or not live:  # malformed or naming no shipped model: live_marks has warned
        return ""
    words = LIVE_WORDS[lang]
    names = ", ".join(attrs["runs"])
    if "folder" not in live:
        return ('<p class="live-page-missing"><em>'
                + words["missing"].format(runs=html_escape(names), args=html_escape(" ".join(attrs["runs"])))
                + "</em></p>")
    query = {"runs": ",".join(attrs["runs"]), "view": attrs["view"], "lang": lang}
    if attrs["text"] is not None:
        query["text"] = attrs["text"]
    src = posixpath.relpath(f"{LIVE}/index.html", page_dir or ".") + "?" + urlencode(query, quote_via=quote)
    onnx = {r["name"]: r["onnx_bytes"] for r in live["manifest"]["runs"]}
    mb = (live["runtime_bytes"] + sum(onnx[r] for r in attrs["runs"])) / 1e6
    src, title = html_escape(src), html_escape(words["title"].format(runs=names))
    return (f'<div class="live-page"><iframe src="{src}" title="{title}" loading="lazy" '
            f'style="width: 100%; height: {LIVE_HEIGHT}px; border: 1px solid #ddd; border-radius: 4px"></iframe>'
            f'<p class="live-page-open" style="font-size: 0.75em; margin-top: 0.2em">'
            f'<a href="{src}" target="_blank" rel="noopener">{words["open"]}</a> · {html_escape(words["size"].format(mb=mb))}'
            "</p></div>")
