"""The site's reference pages, written at build time: the API from the package's docstrings, the CLI from its parser.

api_pages() gives a page per module of src/redthread (mkdocstrings renders the docstrings), a page per package
listing its modules, and api/index.md: the names `import redthread as rt` offers, each linked to where it is
documented. cli_page() gives every subcommand's --help, as the `redthread` command prints it.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "redthread"
# the packages in the order the API reference lists them: the public API first, then the front-ends
ORDER = ("layers", "models", "generate", "train", "data", "viz", "interop", "experiments", "commands", "serve")
HELP_WIDTH = "100"  # columns of the CLI's --help text


def modules() -> list[str]:
    """Every module of the package, dotted, `redthread.__main__` aside."""
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__main__":
            continue
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def page_of(module: str) -> str:
    """The site path of a module's page: redthread.layers.attention -> api/layers/attention.md."""
    parts = module.split(".")[1:]
    if (SRC.joinpath(*module.split(".")) / "__init__.py").is_file():
        return "/".join(["api", *parts, "index.md"])
    return "/".join(["api", *parts]) + ".md"


def module_of_file(path: str) -> str | None:
    """The module a repository path holds (src/redthread/layers/attention.py -> redthread.layers.attention), or None."""
    p = Path(path)
    if p.suffix != ".py" or p.parts[:2] != ("src", "redthread") or not (SRC.parent / p).is_file():
        return None
    parts = p.with_suffix("").parts[1:]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_page(module: str, members: bool) -> str:
    options = "" if members else "\n    options:\n      members: false"
    return f"# `{module}`\n\n::: {module}{options}\n"


def _package_page(package: str, children: list[str]) -> str:
    rows = "\n".join(f"- [`{c}`]({Path(page_of(c)).relative_to(Path(page_of(package)).parent)})" for c in children)
    return _module_page(package, members=False) + f"\n## Modules\n\n{rows}\n"


def _public_names_page() -> str:
    import redthread

    rows = []
    for name in redthread.__all__:
        obj = getattr(redthread, name)
        home = getattr(obj, "__module__", None)
        if home and home.startswith("redthread.") and hasattr(obj, "__qualname__"):
            rows.append(f"| [`rt.{name}`][{home}.{obj.__qualname__}] | [`{home}`][{home}] |")
        else:
            rows.append(f"| `rt.{name}` | |")
    table = "\n".join(["| name | documented in |", "|---|---|", *rows])
    return (_module_page("redthread", members=False)
            + "\n## What `import redthread as rt` offers\n\n" + table + "\n")


def api_pages() -> tuple[dict[str, str], list]:
    """({site path: markdown}, the nav of the API reference: a section per package)."""
    names = modules()
    packages = [m for m in names if m != "redthread" and (SRC.joinpath(*m.split(".")) / "__init__.py").is_file()]
    top_level = [m for m in names if m.count(".") == 1 and m not in packages]
    pages = {"api/index.md": _public_names_page()}
    nav: list = ["api/index.md"]
    for package in sorted(packages, key=lambda p: (ORDER.index(p.split(".")[1]) if p.split(".")[1] in ORDER else len(ORDER), p)):
        children = [m for m in names if m.rsplit(".", 1)[0] == package and m not in packages]
        pages[page_of(package)] = _package_page(package, children)
        for child in children:
            pages[page_of(child)] = _module_page(child, members=True)
        nav.append({package: [page_of(package), *({c.rsplit(".", 1)[1]: page_of(c)} for c in children)]})
    for module in top_level:
        pages[page_of(module)] = _module_page(module, members=True)
        nav.append({module: page_of(module)})
    return pages, nav


def _subcommands(parser: argparse.ArgumentParser, prefix: str) -> list[tuple[str, argparse.ArgumentParser]]:
    found = []
    for action in parser._actions:  # argparse keeps its subparsers here, and nowhere public
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append((f"{prefix} {name}", sub))
                found.extend(_subcommands(sub, f"{prefix} {name}"))
    return found


def _help(parser: argparse.ArgumentParser) -> str:
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_WIDTH  # argparse wraps at the terminal's width
    try:
        return parser.format_help().rstrip()
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def cli_page() -> str:
    """Every subcommand's usage and flags, from the parser `redthread` builds (redthread.cli.build_parser)."""
    from redthread.cli import build_parser

    parser = build_parser()
    parts = ["# Command line: `redthread`",
             "Every subcommand with its flags, as `redthread COMMAND --help` prints them (this page is written from "
             "the parser itself, so it matches the installed version).",
             f"```text\n{_help(parser)}\n```"]
    for name, sub in _subcommands(parser, "redthread"):
        parts += [f"## `{name}`", f"```text\n{_help(sub)}\n```"]
    return "\n\n".join(parts) + "\n"
