"""The package's three rooms: the toolkit (top level), ``twofour.cli`` and ``twofour.course``.

Imports run one way: the command line and the course use the toolkit, the toolkit never
imports either of them (not even lazily inside a function), so a practitioner can read and use
it without the chapters' figures, widgets and lab checkers. Every module's imports are parsed
with ``ast``, absolute and relative, at any depth.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

import twofour

PACKAGE = Path(twofour.__file__).resolve().parent
REPO = PACKAGE.parent.parent
ROOMS = ("twofour.cli", "twofour.course")  # what the toolkit must not import
# ``python -m twofour`` is the command line's second door, so it belongs to the cli room.
ENTRY_POINTS = ("twofour.__main__",)


# Four checks below read every module; each is parsed and walked once (the results are only read).
_parse = functools.lru_cache(maxsize=None)(ast.parse)
pytestmark = pytest.mark.xdist_group("package-imports")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute name a ``from <level dots><target> import ...`` in ``module`` refers to."""
    if level == 0:
        return target or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]  # a module's relative imports start from its package
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _in_rooms(name: str) -> bool:
    return any(name == room or name.startswith(room + ".") for room in ROOMS)


@functools.lru_cache(maxsize=None)
def imported_names(source: str, module: str, is_package: bool) -> tuple[tuple[int, str], ...]:
    """(line, absolute module name) for every import in ``source``, at any depth.

    ``from X import a`` yields both ``X`` and ``X.a`` (``a`` may be a submodule), and a call
    ``importlib.import_module("...")`` / ``__import__("...")`` with a literal name counts too.
    """
    found: list[tuple[int, str]] = []
    for node in ast.walk(_parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, is_package, node.level, node.module)
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names if alias.name != "*"]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                found.append((node.lineno, node.args[0].value))
    return tuple(found)


def upward_imports(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """The imports of a toolkit module that reach into ``twofour.cli`` or ``twofour.course``.

    One entry per offending line: the shortest offending name on it.
    """
    worst: dict[int, str] = {}
    for line, name in imported_names(source, module, is_package):
        if _in_rooms(name) and (line not in worst or len(name) < len(worst[line])):
            worst[line] = name
    return sorted(worst.items())


def _package_files() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_the_toolkit_never_imports_cli_or_course():
    files = _package_files()
    toolkit = [p for p in files if not _in_rooms(_module_name(p)) and _module_name(p) not in ENTRY_POINTS]
    assert len(toolkit) >= 20 and len(toolkit) < len(files), "the walk found the wrong files"
    offenders = []
    for path in toolkit:
        for line, name in upward_imports(path.read_text(encoding="utf-8"), _module_name(path), _is_package(path)):
            offenders.append(f"{path.relative_to(REPO)}:{line}: imports {name}")
    assert not offenders, (
        "the toolkit must not import from twofour.cli or twofour.course (they use the toolkit, "
        "never the reverse); move the code into the room that uses it:\n" + "\n".join(offenders)
    )


@pytest.mark.parametrize(
    "module, is_package, source, expected",
    [
        ("twofour.funnel", False, "def f():\n    from .course.plotting import ROLES\n", [(2, "twofour.course.plotting")]),
        ("twofour.bench", False, "if __name__ == '__main__':\n    from .cli import main\n", [(2, "twofour.cli")]),
        ("twofour.dispatch.audit", False, "from ..cli import UserError\n", [(1, "twofour.cli")]),
        ("twofour.quality", True, "from .. import course\n", [(1, "twofour.course")]),
        ("twofour.quality", True, "from ..course.figures import quality\n", [(1, "twofour.course.figures")]),
        ("twofour.roofline", False, "import twofour.course.widgets as w\n", [(1, "twofour.course.widgets")]),
        ("twofour.roofline", False, "from twofour import cli\n", [(1, "twofour.cli")]),
        ("twofour.request", False, "import importlib\nimportlib.import_module('twofour.cli.trace')\n",
         [(2, "twofour.cli.trace")]),
        # what the toolkit may do
        ("twofour.quality", True, "from ..structure import check\nfrom .model import TinyLM\n", []),
        ("twofour.dispatch.probe", False, "def f():\n    from ..structure import prune\n", []),
        ("twofour.funnel", False, "from .request import RequestEstimate\nimport courses\n", []),
    ],
)
def test_the_import_check_catches_every_form(module, is_package, source, expected):
    assert upward_imports(source, module, is_package) == expected


def test_relative_imports_resolve_like_python():
    assert _resolve("twofour.course.labs.lab1", False, 3, "structure") == "twofour.structure"
    assert _resolve("twofour.course.labs", True, 2, "plotting") == "twofour.course.plotting"
    assert _resolve("twofour.cli", True, 1, "trace") == "twofour.cli.trace"
    assert _resolve("twofour.cli.trace", False, 2, None) == "twofour"


def test_every_cli_command_has_its_module():
    from twofour.cli.main import _SUBCOMMANDS

    for name, (module_path, _) in _SUBCOMMANDS.items():
        assert module_path == f"twofour.cli.{name}"
        assert (PACKAGE / "cli" / f"{name}.py").is_file(), module_path


# ---------------------------------------------------------------------------------------------
# Inside the rooms: one concern per file

# What a package __init__ may hold besides imports: its docstring and these two names.
# A lazy re-export (twofour._common.lazy) is a re-export: ``__getattr__, __dir__ = lazy_exports(...)``.
INIT_NAMES = ("__all__", "__version__", "__getattr__", "__dir__")


def init_definitions(source: str) -> list[str]:
    """What a package ``__init__`` defines beyond re-exports: ``line: kind name`` per statement."""
    found = []
    for i, node in enumerate(ast.parse(source).body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # the docstring
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.Assign) and all(
                all(isinstance(e, ast.Name) and e.id in INIT_NAMES for e in (t.elts if isinstance(t, ast.Tuple) else [t]))
                for t in node.targets):
            continue
        name = getattr(node, "name", None) or ", ".join(
            getattr(t, "id", "?") for t in getattr(node, "targets", [getattr(node, "target", None)]) if t is not None)
        found.append(f"{node.lineno}: {type(node).__name__} {name}".rstrip())
    return found


def test_a_package_init_only_re_exports():
    inits = [p for p in _package_files() if p.name == "__init__.py"]
    assert len(inits) >= 10, "the walk found the wrong files"
    offenders = []
    for path in inits:
        offenders += [f"{path.relative_to(REPO)}:{d}" for d in init_definitions(path.read_text(encoding="utf-8"))]
    assert not offenders, (
        "a package __init__ holds its docstring, imports and __all__ only; move these into a module of the package:\n"
        + "\n".join(offenders)
    )


@pytest.mark.parametrize(
    "source, expected",
    [
        ('"""Doc."""\nfrom .a import b\n__all__ = ["b"]\n__version__ = "1"\n', []),
        ("from .a import b\nX = 1\n", ["2: Assign X"]),
        ("def f():\n    pass\n", ["1: FunctionDef f"]),
        ("class C:\n    pass\n", ["1: ClassDef C"]),
        ("from .a import b\nif b:\n    import c\n", ["2: If"]),
        ('"""Doc."""\n"""Not a docstring."""\n', ["2: Expr"]),
    ],
)
def test_the_init_check_catches_definitions(source, expected):
    assert init_definitions(source) == expected


def test_the_bit_level_passes_serve_structure_and_packing_only():
    """twofour._passes is the private machinery of stages 1-2; anything else may use only its input checks."""
    allowed_elsewhere = {"twofour._passes.tensors", "twofour._passes.bits"}
    offenders = []
    for path in _package_files():
        mod = _module_name(path)
        if mod.startswith(("twofour._passes", "twofour.structure", "twofour.packing")):
            continue
        for line, name in imported_names(path.read_text(encoding="utf-8"), mod, _is_package(path)):
            if name.startswith("twofour._passes.") and not any(name == a or name.startswith(a + ".") for a in allowed_elsewhere):
                offenders.append(f"{path.relative_to(REPO)}:{line}: {name}")
    assert not offenders, "\n".join(offenders)


# ---------------------------------------------------------------------------------------------
# Between modules: no import cycles, no private names reached from another module



def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of the nodes under ``if TYPE_CHECKING:`` (imports for annotations, never run)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        test = getattr(node, "test", None)
        if isinstance(node, ast.If) and getattr(test, "id", getattr(test, "attr", None)) == "TYPE_CHECKING":
            skip |= {id(k) for stmt in node.body for k in ast.walk(stmt)}
    return skip


def module_imports(source: str, module: str, is_package: bool, modules: set[str]) -> tuple[set[str], list[str]]:
    """(the package modules ``source`` imports, at any depth; ``line: name from module`` per private name).

    ``from X import a`` is an import of ``X.a`` when that is a module, else of ``X`` (and, when
    ``a`` starts with one underscore, a private name taken from ``X``). Imports under
    ``if TYPE_CHECKING:`` do not run, so they count for neither.
    """
    tree = _parse(source)
    skip = _type_checking_only(tree)
    imported: set[str] = set()
    private: list[str] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names if alias.name in modules}
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, is_package, node.level, node.module)
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    imported.add(f"{base}.{alias.name}")
                elif base in modules:
                    imported.add(base)
                    if alias.name.startswith("_") and not alias.name.startswith("__") and base != module:
                        private.append(f"{node.lineno}: {alias.name} from {base}")
    return imported - {module}, private


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


@functools.cache
def _package_graph():
    files = _package_files()
    modules = {_module_name(p) for p in files}
    graph, private = {}, {}
    for path in files:
        name = _module_name(path)
        graph[name], private[path] = module_imports(path.read_text(encoding="utf-8"), name, _is_package(path), modules)
    return graph, private


def test_no_import_cycles_inside_the_package():
    graph, _ = _package_graph()
    assert len(graph) >= 100, "the walk found the wrong files"
    cycles = import_cycles(graph)
    assert not cycles, (
        "modules that import each other (directly or round a loop, lazy imports included): move what both need "
        "into a module of its own, or import only for annotations under `if TYPE_CHECKING:`:\n"
        + "\n".join(" <-> ".join(c) for c in cycles)
    )


def test_no_private_name_is_imported_from_another_module():
    _, private = _package_graph()
    offenders = [f"{path.relative_to(REPO)}:{entry}" for path, entries in private.items() for entry in entries]
    assert not offenders, (
        "a name with a leading underscore is private to its module; make it public where it is defined "
        "(or move it next to its one user):\n" + "\n".join(offenders)
    )


@pytest.mark.parametrize(
    "module, source, imported, private",
    [
        ("twofour.a.b", "from .c import _helper, public\n", {"twofour.a.c"}, ["1: _helper from twofour.a.c"]),
        ("twofour.a.b", "def f():\n    from . import c\n", {"twofour.a.c"}, []),  # lazy imports count
        ("twofour.a.b", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import _T\n", set(), []),
        ("twofour.a.b", "import twofour.a.c as _c\nfrom .c import public as _alias\n", {"twofour.a.c"}, []),
        ("twofour.a.b", "from .. import a\nfrom ._d import x\n", {"twofour.a", "twofour.a._d"}, []),
    ],
)
def test_the_import_walk_reads_every_form(module, source, imported, private):
    modules = {"twofour.a", "twofour.a.b", "twofour.a.c", "twofour.a._d"}
    assert module_imports(source, module, False, modules) == (imported, private)


def test_the_cycle_finder_finds_loops_and_only_loops():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set(), "c": {"b"}}) == []
