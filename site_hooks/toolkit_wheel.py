"""The toolkit's wheel, built for the site, so that a reader with only the site can install ``twofour``.

Every site build (``make site``, ``make serve``, the site tests) puts a wheel of the package at
``downloads/twofour-<version>-py3-none-any.whl`` (the hook in :mod:`toolkit`), and the copy of
each notebook that a page offers for download names that wheel's URL in its set-up cell
(:func:`with_wheel_url`; the cell itself is written by ``scripts/install_cell.py``).

The wheel is built offline (``pip wheel --no-deps --no-build-isolation --no-index``, about 4 s;
setuptools comes from the ``site`` extra) from a copy of the sources in a temporary folder, so
the build leaves nothing in the repository (no ``build/lib``, no egg-info). It is cached in
``build/wheel/<hash>/`` under a hash of everything that goes into it (``pyproject.toml``,
``README.md``, ``src/twofour``): an unchanged toolkit is not built again, and only the current
wheel is kept. ``SOURCE_DATE_EPOCH`` fixes the timestamps in the zip, so the same sources give
the same bytes. A wheel that lacks a file of ``src/twofour`` (a data file missing from
``[tool.setuptools.package-data]``) fails the build: installed from it, the toolkit would break.

Run standalone, it builds (or finds) the wheel and prints its path:

    .venv/bin/python site_hooks/toolkit_wheel.py
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# TWOFOUR_WHEEL_CACHE moves the cache (benchmarks/site_speed.py starts `make serve` without one).
CACHE_DIR = Path(os.environ.get("TWOFOUR_WHEEL_CACHE") or ROOT / "build" / "wheel")
DOWNLOADS = "downloads"  # the wheel's folder in the built site
# What the wheel is made of: these files and the package folder (relative to the root).
SOURCE_FILES = ("pyproject.toml", "README.md")
PACKAGE = "src/twofour"
BUILD_TIMEOUT_S = 300
# 1980-01-01, the earliest time a zip can hold: the wheel's bytes depend on the sources only.
SOURCE_DATE_EPOCH = "315532800"
# The set-up cell's line that the site's copy of a notebook fills in (scripts/install_cell.py).
WHEEL_LINE = re.compile(r'^TWOFOUR_WHEEL = .*$', re.M)

_built: dict[tuple[str, str], Path] = {}  # (cache folder, source hash) -> wheel, for this process


class WheelBuildError(RuntimeError):
    """The wheel could not be built, or came out without a file the toolkit needs."""


def _package_files(root: Path) -> list[Path]:
    package = root / PACKAGE
    return sorted(p for p in package.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")


def source_digest(root: Path = ROOT) -> str:
    """Hash of everything the wheel is built from (file names and bytes)."""
    digest = hashlib.sha256(SOURCE_DATE_EPOCH.encode())
    for path in [root / name for name in SOURCE_FILES] + _package_files(root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:20]


_VERSION = re.compile(r'^version\s*=\s*"([^"]+)"\s*$', re.M)


def wheel_name(root: Path = ROOT) -> str:
    """The file name the wheel of the sources under ``root`` gets, without building it.

    ``make serve``'s quick first build (site_hooks/quick.py) names the wheel's URL before the
    wheel exists; :func:`build` checks that the wheel it builds has this name.

    >>> wheel_name()  # doctest: +ELLIPSIS
    'twofour-...-py3-none-any.whl'
    """
    project = (root / "pyproject.toml").read_text(encoding="utf-8").split("[project]", 1)[-1].split("\n[", 1)[0]
    found = _VERSION.search(project)
    if found is None:
        raise WheelBuildError(f"{root / 'pyproject.toml'}: no `version = \"...\"` line in [project]")
    return f"twofour-{found.group(1)}-py3-none-any.whl"


def cached(root: Path = ROOT, cache_dir: Path = CACHE_DIR) -> Path | None:
    """The wheel of the sources under ``root`` if it is in the cache already, else None (builds nothing)."""
    found = sorted((cache_dir / source_digest(root)).glob("*.whl"))
    return found[0] if len(found) == 1 else None


def _copy_sources(root: Path, dest: Path) -> None:
    for name in SOURCE_FILES:
        shutil.copy2(root / name, dest / name)
    for path in _package_files(root):
        target = dest / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)


def missing_from(wheel: Path, root: Path = ROOT) -> list[str]:
    """Files of ``src/twofour`` that the wheel does not contain, e.g. ``twofour/data/x.json``."""
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    src = root / PACKAGE
    return [p.relative_to(src.parent).as_posix() for p in _package_files(root)
            if p.relative_to(src.parent).as_posix() not in names]


def build(root: Path = ROOT, cache_dir: Path = CACHE_DIR, python: str = sys.executable) -> Path:
    """The wheel of the sources under ``root``: from the cache if they have not changed, else built.

    Raises :class:`WheelBuildError` (with pip's output and the command to run it yourself) when
    pip fails, or when the wheel lacks a file of ``src/twofour``.
    """
    digest = source_digest(root)
    key = (str(cache_dir), digest)
    if key in _built and _built[key].is_file():
        return _built[key]
    cache_dir.mkdir(parents=True, exist_ok=True)
    with _locked(cache_dir):
        _built[key] = _build_locked(root, cache_dir, python, digest)
    return _built[key]


@contextlib.contextmanager
def _locked(cache_dir: Path):
    """Hold the cache folder's lock: two builds at once build the wheel once, the second waits and
    finds it (two site builds at once, or a build beside ``toolkit_wheel.py`` run by hand)."""
    fd = os.open(cache_dir, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _build_locked(root: Path, cache_dir: Path, python: str, digest: str) -> Path:
    cached = sorted((cache_dir / digest).glob("*.whl"))
    if len(cached) == 1:
        return cached[0]
    work = Path(tempfile.mkdtemp(prefix=".tmp-", dir=cache_dir))  # same file system: the rename is atomic
    try:
        src, out = work / "src-copy", work / "out"
        src.mkdir()
        _copy_sources(root, src)
        cmd = [python, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
               "--disable-pip-version-check", "-q", "-w", str(out), str(src)]
        env = {**os.environ, "SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH, "PIP_NO_INPUT": "1"}
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise WheelBuildError(f"building the twofour wheel took over {BUILD_TIMEOUT_S} s and was stopped; "
                                  f"run it yourself to see why: pip wheel --no-deps --no-build-isolation {root}") from None
        wheels = sorted(out.glob("*.whl"))
        if proc.returncode != 0 or len(wheels) != 1:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
            raise WheelBuildError(
                f"building the twofour wheel for the site failed (pip exit {proc.returncode}, "
                f"{len(wheels)} wheel(s)); run it yourself to see why: "
                f"{python} -m pip wheel --no-deps --no-build-isolation -w /tmp/wheel {root}"
                f" (needs setuptools>=70.1 in that Python: the `site` extra)\n{tail}")
        if wheels[0].name != wheel_name(root):
            raise WheelBuildError(
                f"the twofour wheel came out as {wheels[0].name}, not {wheel_name(root)} as wheel_name() reads "
                "pyproject.toml: make wheel_name() agree (make serve's first build links the wheel by that name)")
        lacking = missing_from(wheels[0], root)
        if lacking:
            raise WheelBuildError(
                f"the twofour wheel lacks {len(lacking)} file(s) of src/twofour, e.g. {lacking[0]}: "
                "add their patterns to [tool.setuptools.package-data] in pyproject.toml "
                "(installed from this wheel, the toolkit would fail where it reads them)")
        final_dir = cache_dir / digest
        final_dir.mkdir(exist_ok=True)
        final = final_dir / wheels[0].name
        os.replace(wheels[0], final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _prune(cache_dir, keep=digest)
    return final


def _prune(cache_dir: Path, keep: str) -> None:
    """Only the current wheel stays (an old version's wheel must never reach a site)."""
    for entry in cache_dir.iterdir():
        if entry.name == keep or entry.name.startswith(".tmp-"):
            continue
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def wheel_url(site_url: str | None, name: str) -> str | None:
    """Where the built site serves the wheel ``name``; None when the site has no ``site_url``.

    >>> wheel_url("https://example.org/twofour/", "twofour-0.1.0-py3-none-any.whl")
    'https://example.org/twofour/downloads/twofour-0.1.0-py3-none-any.whl'
    >>> wheel_url("http://127.0.0.1:8000", "w.whl")  # with or without the trailing slash
    'http://127.0.0.1:8000/downloads/w.whl'
    """
    if not site_url:
        return None
    return f"{site_url.rstrip('/')}/{DOWNLOADS}/{name}"


def with_wheel_url(notebook_json: str, url: str) -> str:
    """The notebook (its ``.ipynb`` text) with ``TWOFOUR_WHEEL = "<url>"`` in its set-up cell.

    Raises ValueError when the first code cell has no ``TWOFOUR_WHEEL = ...`` line (a set-up
    cell older than the site's wheel: run ``scripts/install_cell.py``).
    """
    nb = json.loads(notebook_json)
    cell = next((c for c in nb.get("cells", []) if c.get("cell_type") == "code"), None)
    source = "".join(cell["source"]) if cell else ""
    if not WHEEL_LINE.search(source):
        raise ValueError("its set-up cell (the first code cell) has no `TWOFOUR_WHEEL = ...` line; "
                         "run `.venv/bin/python scripts/install_cell.py` to rewrite it")
    # json.dumps of a URL is a valid Python string literal (double quotes, backslash escapes).
    source = WHEEL_LINE.sub(lambda m: f"TWOFOUR_WHEEL = {json.dumps(url)}", source, count=1)
    cell["source"] = source.splitlines(keepends=True)
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    try:
        print(build())
    except WheelBuildError as err:
        sys.exit(str(err))
