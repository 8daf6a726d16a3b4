"""MkDocs hook: fill the generated parts of the Reference pages.

* ``reference/glossary.md``: ``<!-- glossary-terms -->`` becomes a definition list built from
  ``includes/abbreviations.md``, the same file that gives every page its hover definitions,
  so the glossary and the tooltips can never disagree.
* The API reference: one page per public module of ``src/twofour``
  (``reference/api/<module>.md``, generated; signature + docstring of each public name),
  grouped like the package: the toolkit first, by the stage of the answer each module serves,
  then the command line, then the course helpers (:data:`API_GROUPS`). ``reference/api.md`` is
  the overview: ``<!-- twofour-api -->`` becomes the most-used functions and every group with
  its modules. The pages go into the nav under "Toolkit API" (:func:`on_config`), and carry a
  low search boost so a chapter that explains a term outranks the signature that uses it. A new
  module appears without editing anything, at the end of its room; a module that fails to
  import fails the strict build with its name.

``make serve``'s quick first build (:mod:`quick`) imports no module: the overview and every
module page are there, titled and in the nav, each saying that its entries come with the next
build (importing the package, PyTorch and matplotlib included, and rendering 40 pages of
signatures is about a fifth of a full build's CPU time).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import logging
import pkgutil
import re
from pathlib import Path

from mkdocs.structure.files import File

import quick

log = logging.getLogger("mkdocs.hooks.reference")

ROOT = Path(__file__).resolve().parent.parent
ABBREVIATIONS = ROOT / "includes" / "abbreviations.md"
_ABBR = re.compile(r"^\*\[(?P<term>[^\]]+)\]:\s*(?P<text>.+)$", re.MULTILINE)
_DOCTEST = re.compile(r"^\s*(>>>|\.\.\.)")


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


def _inline(text: str) -> str:
    """RST-ish inline markup as Markdown: ``x`` and :func:`x` become `x`; a bare < is escaped."""
    text = _ROLE.sub(lambda m: f"`{m.group(1)}`", text)
    text = _DOUBLE_TICKS.sub(lambda m: f"`{m.group(1)}`", text)
    pieces = re.split(r"(`[^`]*`)", text)
    return "".join(p if p.startswith("`") else p.replace("<", "&lt;") for p in pieces)


def _items(lines: list[str]) -> list[str]:
    """Lines of an indented list ("name: what", continuation lines deeper) as one string per item."""
    base = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    items: list[str] = []
    for line in lines:
        if not line.strip():
            continue
        if len(line) - len(line.lstrip()) == base or not items:
            items.append(line.strip())
        else:
            items[-1] += " " + line.strip()
    return items


_ARGUMENT = re.compile(r"^(\*{0,2}[A-Za-z_][\w]*(?:,\s*\*{0,2}[A-Za-z_][\w]*)*)(\s*\([^)]*\))?:\s+(.*)$")


def _argument(item: str) -> str:
    """ "name (type): what" as "`name` (type): what"; anything else as inline prose."""
    match = _ARGUMENT.match(item)
    if not match:
        return _inline(item)
    names = ", ".join(f"`{n.strip()}`" for n in match.group(1).split(","))
    return f"{names}{match.group(2) or ''}: {_inline(match.group(3))}"


def _prose(text: str) -> list[str]:
    """A docstring's text (no examples) as Markdown: paragraphs joined into prose, bullet lists
    and "Args:"-style sections as lists; anything laid out by hand (a table, a diagram) stays
    verbatim in a text block that wraps."""
    parts: list[str] = []
    for para in re.split(r"\n\s*\n", text.strip("\n")):
        lines = para.splitlines()
        if not lines:
            continue
        head = _SECTION.match(lines[0].strip())
        if head and len(lines) > 1:
            name = head.group(1)
            label = "Example" if name in ("Example", "Examples") else name
            parts.append(f"**{label}**")
            parts.append("\n".join(f"- {_argument(item)}" for item in _items(lines[1:])))
            continue
        if head:
            parts.append(f"**{head.group(1)}**")
            continue
        indents = {len(line) - len(line.lstrip()) for line in lines if line.strip()}
        if _BULLET.match(lines[0]) and all(_BULLET.match(l) or (len(l) - len(l.lstrip())) > 0 for l in lines if l.strip()):
            items = []
            for line in lines:
                if _BULLET.match(line):
                    items.append(_BULLET.sub("", line).strip())
                else:
                    items[-1] += " " + line.strip()
            parts.append("\n".join(f"- {_inline(item)}" for item in items))
        elif indents == {0} and not any(re.search(r"\s{3,}\S", l.strip()) or "|" in l for l in lines):
            parts.append(_inline(" ".join(line.strip() for line in lines)))
        else:
            parts.append(f"```{{.text .htw-doc}}\n{para}\n```")
    return parts


def _docstring_markdown(doc: str | None) -> str:
    """Summary and prose as Markdown paragraphs and lists; examples as highlighted code."""
    if not doc:
        return "*No docstring.*"
    lines = inspect.cleandoc(doc).splitlines()
    blank = lines.index("") if "" in lines else len(lines)
    summary, rest = _inline(" ".join(lines[:blank])), lines[blank + 1 :]
    blocks: list[tuple[str, list[str]]] = []  # (lang, lines), consecutive runs
    for line in rest:
        lang = "pycon" if _DOCTEST.match(line) or (blocks and blocks[-1][0] == "pycon" and line.strip()) else "text"
        if blocks and blocks[-1][0] == lang:
            blocks[-1][1].append(line)
        else:
            blocks.append((lang, [line]))
    parts = [summary]
    for lang, body in blocks:
        text = inspect.cleandoc("\n".join(body))
        if not text.strip():
            continue
        if lang == "pycon":
            parts.append(f"```pycon\n{text}\n```")
        else:
            parts += _prose(text)
    return "\n\n".join(parts)


def _public_members(module) -> list[tuple[str, object]]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [
            n for n, obj in vars(module).items()
            if not n.startswith("_") and (inspect.isfunction(obj) or inspect.isclass(obj))
            and getattr(obj, "__module__", None) == module.__name__
        ]
    return [(n, getattr(module, n)) for n in names]


class _Annotation:
    """Shows a string annotation (``from __future__ import annotations``) without quotes."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _signature(obj) -> str:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return "(...)"
    unquote = lambda a: _Annotation(a) if isinstance(a, str) else a  # noqa: E731
    params = [p.replace(annotation=unquote(p.annotation)) for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=unquote(sig.return_annotation)))


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
     ["twofour.dispatch"]),
    (TOOLKIT, "Stage 4: kernel speed", "GPU peaks, the kernel model of one GEMM (tiles, split-K, busy SMs), and measuring it.",
     ["twofour.hardware", "twofour.roofline", "twofour.bench"]),
    (TOOLKIT, "Stage 5: quality", "What pruning cost a small language model, and what recovery gives back.",
     ["twofour.quality"]),
    (TOOLKIT, "Stage 6: Amdahl", "From the GEMM speedup to the request: model shapes, request time, the funnel, "
     "and whole decode steps measured dense vs 2:4.",
     ["twofour.models", "twofour.request", "twofour.amdahl", "twofour.funnel", "twofour.serve"]),
    (TOOLKIT, "Environment", "The one device helper every GPU cell goes through.",
     ["twofour.device"]),
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
      "twofour.course.answer", "twofour.course.call_paths", "twofour.course.decode_loss", "twofour.course.kernel_model",
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
    ("twofour.dispatch", "audit", "which kernel will each layer of a checkpoint run?"),
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


def _summary(module) -> str:
    return _docstring_markdown(module.__doc__).split("\n\n")[0]


def _import(name: str):
    try:
        return importlib.import_module(name)
    except Exception as err:  # any import failure: say which module (strict build fails on the warning)
        log.warning("API page: cannot import %s: %s: %s", name, type(err).__name__, err)
        return None


DEFERRED = "the toolkit API reference (each module's functions, generated from its docstrings)"


def api_markdown() -> str:
    """The overview: the most-used functions, then each group with its modules (links, one line each).

    In a quick build: the note that the entries come with the next build, then each group with
    links to its modules' pages (imports nothing).
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
        for name in modules:
            module = _import(name)
            if module is None:
                continue
            parts.append(f"- [`{name}`](api/{name}.md): {_summary(module)}")
    return "\n".join(parts) + "\n"


def module_page_markdown(name: str) -> str | None:
    """One module's page: front matter (search boost), title, docstring, then every public name.

    In a quick build: the title and the note that the rest comes with the next build.
    """
    deferred = quick.quick_mode()
    module = None if deferred else _import(name)
    if module is None and not deferred:
        return None
    room, title = next(((r, t) for r, t, _, ms in api_groups() if name in ms), (_room_of(name), ""))
    front = f"---\nsearch:\n  boost: {API_SEARCH_BOOST}\n---\n\n"
    where = f"*{ROOM_TITLES[room]}" + (f" · {title}" if title else "") + "* · [all modules](../api.md)"
    if deferred:
        return "\n\n".join([f"{front}# `{name}`", where, quick.deferred_html(DEFERRED)]) + "\n"
    parts = [f"{front}# `{name}`", where, _docstring_markdown(module.__doc__)]
    parts += _module_markdown(name, module)
    return "\n\n".join(parts) + "\n"


def _module_markdown(name: str, module) -> list[str]:
    parts: list[str] = []
    for member, obj in _public_members(module):
        if inspect.isfunction(obj) or inspect.isclass(obj):
            kind = "class " if inspect.isclass(obj) else ""
            parts.append(
                f"## `{member}` {{#{name}.{member}}}\n\n"
                f"```python\n{kind}{member}{_signature(obj)}\n```\n\n{_docstring_markdown(obj.__doc__)}"
            )
        else:
            value = repr(obj) if len(repr(obj)) <= 120 else repr(obj)[:117] + "..."
            parts.append(f"## `{member}` {{#{name}.{member}}}\n\nConstant: `{value}`")
    return parts


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
    return config


def on_files(files, config):
    for name in [m for *_, modules in api_groups() for m in modules]:
        content = module_page_markdown(name)
        if content is not None:
            files.append(File.generated(config, module_src(name), content=content))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    if "<!-- glossary-terms -->" in markdown:
        markdown = markdown.replace("<!-- glossary-terms -->", glossary_markdown())
    if "<!-- twofour-api -->" in markdown:
        markdown = markdown.replace("<!-- twofour-api -->", api_markdown())
    return markdown
