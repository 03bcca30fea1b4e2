"""Imports only point down (issue 16): every module under src/redthread, parsed with `ast`, imports
redthread modules from its own package or from a lower band, never from a higher band nor from
another package of its own band. Every import counts, the ones inside functions too.

| band | packages            | what sits there                                                           |
|------|---------------------|---------------------------------------------------------------------------|
| 0    | errors, words       | RedthreadError and its kinds; plurals and articles for messages           |
| 1    | files, fonts, plotting | atomic writes, output-path and disk checks; a CJK font for figures; pyplot drawing to files or inline |
| 2    | lang                | the language a person reads (English or Chinese), the glossary's terms, the CJK font for Chinese figures |
| 3    | layers, data        | attention, blocks, caches; corpora, tokenizers, data sets, image files    |
| 4    | models              | one file per rung: built from layers, fed data's types                    |
| 5    | train, generate,    | the likelihoods, the one loop, checkpoints; the sampler; Hugging Face     |
|      | interop             | conversion: each works on models, none on the others                      |
| 6    | viz                 | recording attention, the explorer, figures, the inspector, head ranking   |
| 7    | experiments         | one claim of the essay each, with a computed verdict                       |
| 8    | serve               | the web app                                                               |
| 9    | commands            | one module per subcommand (`redthread serve` starts the app)              |
| 10   | cli                 | wiring only                                                               |
| 11   | __main__            | `python -m redthread`: the cli                                            |

`data` sits beside `layers`, not above `models` as the issue's sketch has it: it imports no layer
and no model, while models read its types (`RegressionData`, the captioner's BOS/EOS) and
`train.checkpoint` its tokenizers. `redthread/__init__.py` re-exports the public API from every
band and is not checked; no module may import the bare `redthread` package (it pulls in all).

KNOWN_VIOLATIONS would list the upward imports that remain, each with its reason; it is empty (the
last, a deprecated alias, went with issue 26). The test fails on any import not in the list and on
any entry that no longer happens, so the list can only stay empty.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "redthread"

BANDS = [
    ("errors", "words"),
    ("files", "fonts", "plotting"),
    ("lang",),
    ("layers", "data"),
    ("models",),
    ("train", "generate", "interop"),
    ("viz",),
    ("experiments",),
    ("serve",),
    ("commands",),
    ("cli",),
    ("__main__",),
]
BAND = {package: i for i, packages in enumerate(BANDS) for package in packages}
ROOT = ""  # the package `redthread` itself: its __init__ re-exports everything

KNOWN_VIOLATIONS: dict[tuple[str, str], str] = {}  # (module, what it imports): why, and when it goes; none left


def package_of(module: str) -> str:
    """The band's unit a dotted module name belongs to: redthread.viz.record -> viz, redthread.cli -> cli."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ROOT


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def redthread_imports(module: str, source: str, is_package: bool = False) -> dict[str, int]:
    """Every redthread module the source imports, at any depth, relative imports resolved: name -> first line."""
    found: dict[str, int] = {}
    here = module.split(".") if is_package else module.split(".")[:-1]  # the package a relative import starts from
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            names = [".".join(base + ([node.module] if node.module else []))]
        else:
            continue
        for name in names:
            if name == "redthread" or name.startswith("redthread."):
                found.setdefault(name, node.lineno)
    return found


def violations(module: str, imported) -> list[str]:
    """What `module` imports from its own band or above, outside its own package."""
    own = package_of(module)
    if own == ROOT:
        return []
    return [name for name in imported
            if package_of(name) != own and BAND.get(package_of(name), len(BANDS)) >= BAND[own]]


def source_modules() -> dict[str, tuple[Path, str]]:
    return {module_name(p): (p, p.read_text(encoding="utf-8")) for p in sorted(SRC.rglob("*.py"))}


def all_imports() -> dict[str, dict[str, int]]:
    return {m: redthread_imports(m, text, p.name == "__init__.py") for m, (p, text) in source_modules().items()}


def test_every_package_has_a_band():
    packages = {package_of(m) for m in source_modules()} - {ROOT}
    assert packages <= set(BAND), f"place these in BANDS: {sorted(packages - set(BAND))}"


def test_imports_only_point_down():
    paths = {m: p.relative_to(SRC.parent) for m, (p, _) in source_modules().items()}
    found = {(m, name): lines[name] for m, lines in all_imports().items() for name in violations(m, lines)}
    new = [f"{paths[m]}:{line} imports {name}" for (m, name), line in sorted(found.items())
           if (m, name) not in KNOWN_VIOLATIONS]
    gone = [f"{m} -> {name}" for m, name in KNOWN_VIOLATIONS if (m, name) not in found]
    assert not new, "imports that point up or sideways (see the bands in this file's docstring):\n" + "\n".join(new)
    assert not gone, "fixed, so take them out of KNOWN_VIOLATIONS:\n" + "\n".join(gone)


def test_only_the_cli_imports_the_commands_and_only_the_serve_command_the_app():
    reach = {(m, package_of(name)) for m, lines in all_imports().items() for name in lines}
    assert {m for m, p in reach if p == "commands" and package_of(m) != "commands"} == {"redthread.cli"}
    assert {m for m, p in reach if p == "serve" and package_of(m) != "serve"} == {"redthread.commands.serve"}


def test_the_commands_are_front_ends_that_do_not_use_each_other():
    """A command needed by another is library code: it lives in a lower band (train.language_model,
    files.check_report_folder), and cli.py does the dispatch between a command's variants."""
    uses = sorted(f"{m} -> {name}" for m, lines in all_imports().items() for name in lines
                  if package_of(m) == "commands" and package_of(name) == "commands")
    assert not uses, "\n".join(uses)


# --- the checker itself, on modules written here -----------------------------------------------------

UPWARD = '''
from redthread.errors import RedthreadError          # band 0: fine
from redthread.viz.record import record_attention    # own package: fine
from . import explorer                               # own package, relative: fine
import redthread.models.vit as vit                   # lower: fine

def page():
    from redthread.commands.images import vit_config  # up, inside a function
    import redthread.serve.app                        # up
    from ..experiments import ffn                     # up, relative
    from redthread import cli                         # the bare package
'''


def test_the_checker_finds_upward_imports_at_any_depth():
    imported = redthread_imports("redthread.viz.fake", UPWARD)
    assert imported["redthread.commands.images"] == 8 and imported["redthread.viz"] == 4
    assert sorted(violations("redthread.viz.fake", imported)) == [
        "redthread", "redthread.commands.images", "redthread.experiments", "redthread.serve.app"]


@pytest.mark.parametrize("module,imports,bad", [
    ("redthread.train.loop", "from redthread.interop.huggingface import x", True),  # sideways in band 4
    ("redthread.data.captions", "from redthread.models.likelihoods import IGNORE_INDEX", True),
    ("redthread.layers.blocks", "from redthread.data.tokenizers import x", True),  # sideways in band 2
    ("redthread.models.captioner", "from redthread.data.captions import BOS", False),
    ("redthread.commands.serve", "from redthread.serve.app import create_app", False),
    ("redthread.serve.app", "from redthread.commands.images import x", True),
    ("redthread.files", "from redthread.errors import RedthreadError", False),
    ("redthread.errors", "from redthread.files import atomic_write", True),
    ("redthread.viz.new", "from redthread.newpackage import x", True),  # not in the table: counted as the top
])
def test_the_checker_on_single_imports(module, imports, bad):
    assert bool(violations(module, redthread_imports(module, imports))) == bad
