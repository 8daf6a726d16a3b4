"""MkDocs hook: fill the generated parts of the Reference pages.

* ``reference/glossary.md``: ``<!-- glossary-terms -->`` becomes a definition list built from
  ``includes/abbreviations.md``, the same file that gives every page its hover definitions
  (:func:`on_config` hands it to every Markdown conversion), so the glossary and the tooltips
  can never disagree.
* The API reference: one page per public module of ``src/twofour``
  (``reference/api/<module>.md``, generated), whose entries mkdocstrings renders from the
  docstrings (``::: twofour.structure``; its options are in ``mkdocs.yml``). The pages are grouped
  like the package: the toolkit first, by the stage of the answer each module serves, then the
  command line, then the course helpers (:data:`API_GROUPS`). ``reference/api.md`` is the
  overview: ``<!-- twofour-api -->`` becomes the most-used functions and every group with its
  modules. The pages go into the nav under "Toolkit API" (:func:`on_config`), and carry a low
  search boost so a chapter that explains a term outranks the signature that uses it. A new
  module appears without editing anything, at the end of its room; a module mkdocstrings cannot
  read fails the strict build with its name.

``make serve``'s quick first build (:mod:`quick`) renders no entries: the overview and every
module page are there, titled and in the nav, each saying that its entries come with the next
build.
"""

from __future__ import annotations

import ast
import functools
import importlib
import pkgutil
import re
import sys
from pathlib import Path

from mkdocs.structure.files import File

import quick

ROOT = Path(__file__).resolve().parent.parent
ABBREVIATIONS = ROOT / "includes" / "abbreviations.md"
_ABBR = re.compile(r"^\*\[(?P<term>[^\]]+)\]:\s*(?P<text>.+)$", re.MULTILINE)


def glossary_terms() -> list[tuple[str, str]]:
    """(term, definition) pairs from includes/abbreviations.md, sorted case-insensitively."""
    pairs = [(m["term"], m["text"].strip()) for m in _ABBR.finditer(ABBREVIATIONS.read_text())]
    return sorted(pairs, key=lambda pair: pair[0].lower())


def glossary_markdown() -> str:
    """One entry per definition; terms sharing a definition (SM, SMs) are listed together."""
    grouped: dict[str, list[str]] = {}
    for term, text in glossary_terms():
        grouped.setdefault(text, []).append(term)
    entries = sorted(grouped.items(), key=lambda item: item[1][0].lower())
    return "\n\n".join(f"{', '.join(terms)}\n:   {text}" for text, terms in entries) + "\n"


_ROLE = re.compile(r":(?:func|mod|class|data|meth|attr|obj|exc|ref):`~?([^`]+)`")
_DOUBLE_TICKS = re.compile(r"``([^`]+)``")
_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Return|Yields|Raises|Note|Notes|Warning|Example|Examples|Attributes|See also)\s*:\s*$")
_BULLET = re.compile(r"^\s*[*-]\s+")


_ROLE = re.compile(r":(?:func|mod|class|data|meth|attr|obj|exc|ref):`~?([^`]+)`")
_DOUBLE_TICKS = re.compile(r"``([^`]+)``")
# Sphinx roles in docstrings (:func:`x`) reach the page as ":func:" before the code: drop the role.
_ROLE_HTML = re.compile(r":(?:func|mod|class|data|meth|attr|obj|exc|ref):(<code[^>]*>)~?")


def _inline(text: str) -> str:
    """RST-ish inline markup as Markdown: ``x`` and :func:`x` become `x`; a bare < is escaped."""
    text = _ROLE.sub(lambda m: f"`{m.group(1)}`", text)
    text = _DOUBLE_TICKS.sub(lambda m: f"`{m.group(1)}`", text)
    pieces = re.split(r"(`[^`]*`)", text)
    return "".join(p if p.startswith("`") else p.replace("<", "&lt;") for p in pieces)


# The API page in the package's order: (room, group heading, what the group is for, modules).
# Toolkit first, by stage of the answer; then the command line; then the course.
TOOLKIT, CLI, COURSE = "Toolkit", "Command line", "Course"
API_GROUPS: list[tuple[str, str, str, list[str]]] = [
    (TOOLKIT, "Stages 1-2: structure and representation",
     "Is the weight 2:4 along K, and is it stored packed? `twofour.check`, `prune`, `pack` and "
     "`to_cutlass` are re-exported at the top of the package.",
     ["twofour.structure", "twofour.packing"]),
    (TOOLKIT, "Stage 3: dispatch", "Which kernel will run, which one did (in a profile you take or a trace "
     "someone recorded), and a whole checkpoint audited.",
     ["twofour.dispatch", "twofour.checkpoint"]),
    (TOOLKIT, "Stage 4: kernel speed", "GPU peaks, the kernel model of one GEMM (tiles, split-K, busy SMs), and measuring it.",
     ["twofour.hardware", "twofour.roofline", "twofour.bench"]),
    (TOOLKIT, "Stage 5: quality", "What pruning cost a small language model, and what recovery gives back.",
     ["twofour.quality"]),
    (TOOLKIT, "Stage 6: Amdahl", "From the GEMM speedup to the request: model shapes, request time, the funnel, "
     "and whole decode steps measured dense vs 2:4.",
     ["twofour.models", "twofour.request", "twofour.amdahl", "twofour.funnel", "twofour.serve"]),
    (TOOLKIT, "Environment and vocabulary", "The one device helper every GPU cell goes through, and the one "
     "definition of each backend, dtype, timing mode, call scenario and phase.",
     ["twofour.device", "twofour.vocabulary"]),
    (CLI, "the `twofour` command", "The console script and one module per subcommand; each calls the toolkit.",
     ["twofour.cli", "twofour.cli.main", "twofour.cli.audit", "twofour.cli.convert", "twofour.cli.trace", "twofour.cli.bench", "twofour.cli.calibrate",
      "twofour.cli.quality"]),
    (COURSE, "Figures and tables",
     "The chapters' figures and tables in one house style; they show numbers the toolkit computed.",
     ["twofour.course.plotting", "twofour.course.tables", "twofour.course.figures.layouts",
      "twofour.course.figures.dispatch_path",
      "twofour.course.figures.kernel_speed", "twofour.course.figures.kernel_launch", "twofour.course.measured_rows",
      "twofour.course.figures.quality",
      "twofour.course.figures.funnel"]),
    (COURSE, "Chapter material", "Example weights, the measurements the chapters make on them, chapter 7's worked "
     "deployment and verdict range, and the dated status box.",
     ["twofour.course.examples", "twofour.course.damage", "twofour.course.meta_layout", "twofour.course.deployment",
      "twofour.course.answer", "twofour.course.call_paths", "twofour.course.decode_loss", "twofour.course.gemm_chain", "twofour.course.kernel_model",
      "twofour.course.status"]),
    (COURSE, "Widgets, practice and labs", "Notebook calculators, the practice bank and the lab checkers.",
     ["twofour.course.widgets", "twofour.course.practice", "twofour.course.labs"]),
]


def _room_of(name: str) -> str:
    if name == "twofour.cli" or name.startswith("twofour.cli."):
        return CLI
    if name == "twofour.course" or name.startswith("twofour.course."):
        return COURSE
    return TOOLKIT


PACKAGE_DIR = ROOT / "src" / "twofour"


def _walk_modules(folder: Path, prefix: str):
    """Every module and package under ``folder``, as :func:`pkgutil.walk_packages` lists them,
    without importing any (``make serve``'s quick build imports none)."""
    for info in pkgutil.iter_modules([str(folder)], prefix):
        yield info.name
        if info.ispkg:
            yield from _walk_modules(folder / info.name.rsplit(".", 1)[1], info.name + ".")


@functools.lru_cache(maxsize=1)  # a build is one process; api_groups() asks once per page
def _documented_modules() -> tuple[str, ...]:
    """Public modules the page must cover: the top level, and the modules of cli/ and course/."""
    names: list[str] = []
    for name in _walk_modules(PACKAGE_DIR, "twofour."):
        parts = name.split(".")
        if any(p.startswith("_") for p in parts):
            continue
        depth = len(parts) - 1  # twofour.x: 1
        # Toolkit packages (dispatch, quality) document their re-exported API, not each file;
        # the rooms list their modules, and course/figures/ its figure modules.
        if depth == 1 or (_room_of(name) != TOOLKIT and (depth == 2 or parts[2] == "figures")):
            if name not in ("twofour.course", "twofour.course.figures"):  # rooms, not modules
                names.append(name)
    return tuple(names)


def api_groups() -> list[tuple[str, str, str, list[str]]]:
    """:data:`API_GROUPS`, plus a group per room for public modules it does not list yet."""
    listed = {m for *_, modules in API_GROUPS for m in modules}
    groups = list(API_GROUPS)
    documented = _documented_modules()
    for room in (TOOLKIT, CLI, COURSE):
        extra = [m for m in documented if m not in listed and _room_of(m) == room]
        if extra:
            last = max(i for i, g in enumerate(groups) if g[0] == room)
            groups.insert(last + 1, (room, "Other modules", "", extra))
    return groups


# The functions most readers come for, in the order of the answer: (module, name, what it answers).
MOST_USED: list[tuple[str, str, str]] = [
    ("twofour.structure", "check", "is this weight 2:4 along K?"),
    ("twofour.structure", "prune", "make a weight 2:4 (magnitude, or your scores)"),
    ("twofour.packing", "pack", "store it packed: values + 2-bit metadata"),
    ("twofour.dispatch", "audit.audit", "which kernel will each layer of a checkpoint run?"),
    ("twofour.roofline", "predict", "how fast can the sparse GEMM be, and why?"),
    ("twofour.request", "estimate", "what does it do to a whole request?"),
]
# Search ranking: guides (chapters, labs, practice) above the signatures that use their words.
# Material's search weighs a match in a title 1000 times a match in text, and every function
# of an API page is a title, so the boost must be small for a chapter's text to win.
API_SEARCH_BOOST = 0.001
ROOM_TITLES = {TOOLKIT: "Toolkit", CLI: "Command line", COURSE: "Course helpers"}


def module_src(name: str) -> str:
    """Source path of a module's generated page, e.g. ``reference/api/twofour.structure.md``."""
    return f"reference/api/{name}.md"


def module_file(name: str) -> Path:
    """The source file of a module or package, e.g. ``src/twofour/packing/__init__.py``."""
    path = PACKAGE_DIR.parent.joinpath(*name.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def summary(name: str) -> str:
    """The first paragraph of a module's docstring as one line of Markdown, read without importing it."""
    doc = ast.get_docstring(ast.parse(module_file(name).read_text(encoding="utf-8"))) or ""
    return _inline(" ".join(doc.split("\n\n")[0].split()))


def unseen_reexports(name: str) -> list[str]:
    """Where the re-exported names of package ``name`` that mkdocstrings does not list are defined.

    mkdocstrings reads a package from its files: a name imported on first use (PEP 562,
    ``twofour.course.practice``) is not there, and one that is also a submodule's name
    (``twofour.dispatch.audit``, the function and the module) shows as the module, and so does one
    imported under another name (``analyze as analyze_trace``). Each gets its own entry, read from
    the module that defines it (found by importing the package).
    """
    if module_file(name).name != "__init__.py":
        return []
    package = importlib.import_module(name)
    lazy = "__getattr__" in vars(package)
    paths = []
    for member in getattr(package, "__all__", ()):
        obj = getattr(package, member)
        if (callable(obj) and getattr(obj, "__name__", member) != member  # imported under another name
                and obj.__module__.rsplit(".", 1)[-1] == obj.__name__):  # ... from a module of its name
            paths.append(f"{obj.__module__}.{obj.__qualname__}")
            continue
        if not (lazy or (module_file(name).parent / f"{member}.py").is_file()):
            continue
        defined_in = getattr(obj, "__module__", None) if getattr(obj, "__qualname__", None) == member else None
        owner = defined_in or next((m for m, mod in sorted(sys.modules.items()) if m.startswith(name + ".")
                      and mod is not None and vars(mod).get(member) is obj), None)
        if owner is None:
            raise LookupError(f"API page of {name}: cannot tell which module defines {member!r}")
        paths.append(f"{owner}.{member}")
    return paths


DEFERRED = "the toolkit API reference (each module's functions, generated from its docstrings)"


def api_markdown() -> str:
    """The overview: the most-used functions, then each group with its modules (links, one line each).

    In a quick build: the note that the entries come with the next build, then each group with
    links to its modules' pages (no anchors: the entries are not there yet).
    """
    if quick.quick_mode():
        parts = [quick.deferred_html(DEFERRED)]
        for _room, title, _blurb, modules in api_groups():
            parts += ["", f"### {title}", ""] + [f"- [`{name}`](api/{name}.md)" for name in modules]
        return "\n".join(parts) + "\n"
    parts = ["## Most used", ""]
    for module, member, what in MOST_USED:
        parts.append(f"- [`{module}.{member}`](api/{module}.md#{module}.{member}): {what}")
    current_room = None
    for room, title, blurb, modules in api_groups():
        if room != current_room:
            parts += ["", f"## {ROOM_TITLES[room]}"]
            current_room = room
        parts += ["", f"### {title}", ""] + ([blurb, ""] if blurb else [])
        parts += [f"- [`{name}`](api/{name}.md): {summary(name)}" for name in modules]
    return "\n".join(parts) + "\n"


def module_page_markdown(name: str) -> str:
    """One module's page: front matter (search boost), title, where it sits, then mkdocstrings'
    ``::: name`` (the module's docstring and every public name).

    In a quick build: the title and the note that the rest comes with the next build.
    """
    room, title = next(((r, t) for r, t, _, ms in api_groups() if name in ms), (_room_of(name), ""))
    front = f"---\nsearch:\n  boost: {API_SEARCH_BOOST}\n---\n\n"
    where = f"*{ROOM_TITLES[room]}" + (f" · {title}" if title else "") + "* · [all modules](../api.md)"
    body = quick.deferred_html(DEFERRED) if quick.quick_mode() else f"::: {name}"
    if not quick.quick_mode():
        body += "".join(f"\n\n::: {path}\n    options:\n      show_root_heading: true\n      show_root_full_path: false"
                        for path in unseen_reexports(name))
    return "\n\n".join([f"{front}# `{name}`", where, body]) + "\n"


def api_nav() -> list:
    """The "Toolkit API" nav section: the overview, then one sub-section per room."""
    nav: list = [{"Overview": "reference/api.md"}]
    rooms: dict[str, list] = {}
    for room, _title, _blurb, modules in api_groups():
        rooms.setdefault(room, []).extend({name: module_src(name)} for name in modules)
    for room in (TOOLKIT, CLI, COURSE):
        if rooms.get(room):
            nav.append({ROOM_TITLES[room]: rooms[room]})
    return nav


def _replace_api_entry(node):
    """Swap the nav entry whose page is reference/api.md for the :func:`api_nav` section."""
    if isinstance(node, list):
        return [_replace_api_entry(item) for item in node]
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            out[key] = api_nav() if value == "reference/api.md" else _replace_api_entry(value)
        return out
    return node


def on_config(config):
    if config.nav:
        config.nav = _replace_api_entry(config.nav)
    # Every Markdown conversion knows the glossary (abbr's ``glossary`` option): the pages and
    # each docstring mkdocstrings converts. Appended to every text instead (pymdownx.snippets'
    # auto_append), the file's definitions were parsed again, line by line, in each of the
    # build's conversions (one per page and one per docstring section).
    config.mdx_configs.setdefault("abbr", {})["glossary"] = dict(glossary_terms())
    return config


def on_files(files, config):
    for name in [m for *_, modules in api_groups() for m in modules]:
        files.append(File.generated(config, module_src(name), content=module_page_markdown(name)))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    if "<!-- glossary-terms -->" in markdown:
        markdown = markdown.replace("<!-- glossary-terms -->", glossary_markdown())
    if "<!-- twofour-api -->" in markdown:
        markdown = markdown.replace("<!-- twofour-api -->", api_markdown())
    return markdown


def on_page_content(html: str, page, config, files) -> str:
    if page.file.src_uri.startswith("reference/api/"):
        html = _ROLE_HTML.sub(r"\1", html)
    return html
