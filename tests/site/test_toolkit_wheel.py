"""The site carries its toolkit (site_hooks/toolkit_wheel.py, toolkit.py, notebooks.py): the wheel
is built offline with everything the package reads, cached, reproducible, and the only one in
the site; a failing build says so; each notebook's download copy names the wheel's URL; the Colab
button appears only with a repository. The install itself: test_toolkit_install.py.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "site_hooks"))
try:
    import notebooks  # noqa: E402
    import quick  # noqa: E402
    import toolkit  # noqa: E402
    import toolkit_wheel  # noqa: E402
    from mkdocs.exceptions import PluginError  # noqa: E402
finally:
    sys.path.pop(0)

def _mkdocs_extra() -> dict:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import install_cell
    finally:
        sys.path.pop(0)
    repo, branch = install_cell.configured_repo()
    return {"repo": repo, "branch": branch}


VERSION = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
WHEEL_NAME = f"twofour-{VERSION}-py3-none-any.whl"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The repository's wheel, built into a cache of this test's own (about 4 s)."""
    return toolkit_wheel.build(cache_dir=tmp_path_factory.mktemp("wheel-cache"))


def test_the_wheel_has_every_file_of_the_package(wheel):
    assert wheel.name == WHEEL_NAME == toolkit_wheel.wheel_name()  # the name a quick build links
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        metadata = zf.read(f"twofour-{VERSION}.dist-info/METADATA").decode()
    assert toolkit_wheel.missing_from(wheel) == []
    for data in ("twofour/course/data/practice.yaml", "twofour/course/data/status.md",
                 "twofour/data/kernel-fit.json", "twofour/data/quality-sweep.json"):
        assert data in names, f"{data} is not in the wheel"
    assert any(n.startswith("twofour/data/traces/") and n.endswith(".json.gz") for n in names)
    assert f"twofour-{VERSION}.dist-info/entry_points.txt" in names  # the `twofour` command
    assert "Requires-Dist: torch>=2.3" in metadata  # a range: an installed torch is kept
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)


def test_the_wheel_is_cached_and_reproducible(wheel, tmp_path, monkeypatch):
    again = toolkit_wheel.build(cache_dir=wheel.parent.parent)
    assert again == wheel  # cached: no second build
    toolkit_wheel._built.clear()
    monkeypatch.setattr(toolkit_wheel.subprocess, "run", lambda *a, **k: pytest.fail("rebuilt a cached wheel"))
    assert toolkit_wheel.build(cache_dir=wheel.parent.parent) == wheel  # from the cache folder
    monkeypatch.undo()
    other = toolkit_wheel.build(cache_dir=tmp_path / "cache")
    assert hashlib.sha256(other.read_bytes()).digest() == hashlib.sha256(wheel.read_bytes()).digest(), \
        "the same sources must give the same bytes (SOURCE_DATE_EPOCH)"


def _tiny_project(root: Path, package_data: str = "") -> Path:
    (root / "src" / "twofour" / "data").mkdir(parents=True)
    (root / "README.md").write_text("tiny\n")
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=70.1"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "twofour"\nversion = "9.9.9"\n'
        f'[tool.setuptools.packages.find]\nwhere = ["src"]\n{package_data}')
    (root / "src" / "twofour" / "__init__.py").write_text("")
    (root / "src" / "twofour" / "data" / "x.json").write_text("{}")
    return root


def test_a_data_file_missing_from_the_wheel_fails_the_build(tmp_path):
    root = _tiny_project(tmp_path / "proj")
    with pytest.raises(toolkit_wheel.WheelBuildError, match=r"lacks 1 file.*twofour/data/x\.json.*package-data"):
        toolkit_wheel.build(root=root, cache_dir=tmp_path / "cache")
    assert not (root / "build").exists() and not list(root.rglob("*.egg-info")), "the build wrote into the sources"
    # ... and the old version's wheel is gone once the new one is built.
    old = tmp_path / "cache" / "0123456789abcdef0123" / "twofour-0.0.1-py3-none-any.whl"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"old")
    with (root / "pyproject.toml").open("a") as f:
        f.write('[tool.setuptools.package-data]\ntwofour = ["data/*.json"]\n')
    assert toolkit_wheel.cached(root, tmp_path / "cache") is None
    built = toolkit_wheel.build(root=root, cache_dir=tmp_path / "cache")
    assert built.name == "twofour-9.9.9-py3-none-any.whl" == toolkit_wheel.wheel_name(root)
    assert toolkit_wheel.cached(root, tmp_path / "cache") == built
    assert [p.name for p in (tmp_path / "cache").rglob("*.whl")] == [built.name], "an old wheel was kept"


def test_a_failing_pip_fails_the_build_and_says_what_to_run(tmp_path):
    root = _tiny_project(tmp_path / "proj")
    (root / "pyproject.toml").write_text("[project\nthis is not toml\n")
    with pytest.raises(toolkit_wheel.WheelBuildError) as err:
        toolkit_wheel.build(root=root, cache_dir=tmp_path / "cache")
    message = str(err.value)
    assert message.startswith("building the twofour wheel for the site failed")
    assert "-m pip wheel --no-deps --no-build-isolation" in message.splitlines()[0]
    assert not list((tmp_path / "cache").iterdir()), "a failed build left files in the cache"


@pytest.mark.parametrize("hook", ["toolkit.on_config", "notebooks.on_files"])
def test_the_hooks_turn_a_failed_wheel_build_into_a_build_error(monkeypatch, hook):
    def fail(**kwargs):
        raise toolkit_wheel.WheelBuildError("building the twofour wheel for the site failed (pip exit 1)")

    monkeypatch.setattr(toolkit_wheel, "build", fail)
    config = SimpleNamespace(extra={"repo": ""}, site_url="https://example.org/")
    module, name = hook.split(".")
    call = getattr(toolkit if module == "toolkit" else notebooks, name)
    with pytest.raises(PluginError, match="building the twofour wheel"):
        call(config) if name == "on_config" else call([], config)


def test_a_site_without_site_url_warns_so_the_strict_build_fails(monkeypatch, caplog):
    monkeypatch.setattr(toolkit_wheel, "build", lambda **kw: Path("/x/twofour-0.1.0-py3-none-any.whl"))
    toolkit.on_config(SimpleNamespace(site_url=None))
    assert "site_url is not set" in caplog.text


def test_a_dirty_build_loses_the_old_wheel(tmp_path, monkeypatch):
    monkeypatch.setattr(toolkit_wheel, "build", lambda **kw: Path(f"/x/{WHEEL_NAME}"))
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    for name in (WHEEL_NAME, "twofour-0.0.1-py3-none-any.whl", "other.txt"):
        (downloads / name).write_text("x")
    toolkit.on_post_build(SimpleNamespace(site_dir=str(tmp_path), site_url="https://example.org/"))
    assert sorted(p.name for p in downloads.iterdir()) == sorted([WHEEL_NAME, "other.txt"])


def test_a_quick_build_links_the_wheel_it_has_not_built_and_lists_it_as_coming(tmp_path, monkeypatch):
    monkeypatch.setenv(quick.ENV, "quick")
    monkeypatch.setattr(toolkit_wheel, "build", lambda **kw: pytest.fail("a quick build built the wheel"))
    monkeypatch.setattr(toolkit_wheel, "cached", lambda **kw: None)  # a fresh clone: none cached
    config = SimpleNamespace(site_dir=str(tmp_path), site_url="https://example.org/")
    files = []
    toolkit.on_config(config)
    assert toolkit.on_files(files, config) == [] and not files  # no wheel in this build
    page = toolkit.on_page_markdown('pip install "<!-- twofour-wheel-url -->"', None, config, None)
    assert page == f'pip install "https://example.org/downloads/{WHEEL_NAME}"'
    toolkit.on_post_build(config)
    assert quick.read_manifest(tmp_path) == [f"downloads/{WHEEL_NAME}"]  # the server answers "coming"
    monkeypatch.setattr(toolkit_wheel, "cached", lambda **kw: Path(f"/x/{WHEEL_NAME}"))  # a later start
    other = tmp_path / "other"
    other.mkdir()
    toolkit.on_post_build(SimpleNamespace(site_dir=str(other), site_url="https://example.org/"))
    assert quick.read_manifest(other) == []


@pytest.mark.parametrize("site_url, expected", [
    ("https://example.org/twofour/", "https://example.org/twofour/downloads/w.whl"),
    ("https://example.org/twofour", "https://example.org/twofour/downloads/w.whl"),  # no trailing slash
    ("https://example.org/a/b/", "https://example.org/a/b/downloads/w.whl"),
    ("http://127.0.0.1:40123/", "http://127.0.0.1:40123/downloads/w.whl"),
    ("", None),
    (None, None),
])
def test_wheel_url_from_site_url(site_url, expected):
    assert toolkit_wheel.wheel_url(site_url, "w.whl") == expected


def test_download_copy_names_the_wheel_in_the_set_up_cell_only():
    lab = ROOT / "labs" / "lab1-find-the-broken-groups.ipynb"
    url = "https://example.org/x/downloads/twofour-0.1.0-py3-none-any.whl"
    repo, _branch = notebooks._repo(SimpleNamespace(extra=_mkdocs_extra()))
    original, copy = json.loads(lab.read_text()), json.loads(notebooks.download_copy(lab, url, repo))
    first = next(i for i, c in enumerate(original["cells"]) if c["cell_type"] == "code")
    assert len(copy["cells"]) == len(original["cells"])
    # The wheel goes into the set-up cell and no other code cell; Markdown cells change only in
    # their link targets (made absolute for a copy with no site around it: site_hooks/nb_links.py).
    changed_code = [i for i, (a, b) in enumerate(zip(original["cells"], copy["cells"]))
                    if a["cell_type"] == "code" and a != b]
    assert changed_code == [first]
    targets = re.compile(r'\]\([^)\s]+|href="[^"]+"')
    for a, b in zip(original["cells"], copy["cells"]):
        if a["cell_type"] == "markdown":
            assert targets.sub("LINK", "".join(a["source"])) == targets.sub("LINK", "".join(b["source"])), a["source"][:2]
    assert f'TWOFOUR_WHEEL = "{url}"\n' in copy["cells"][first]["source"]
    assert notebooks.download_copy(lab, None, repo) == lab.read_text()


def test_a_notebook_without_the_wheel_line_fails_the_build(tmp_path, monkeypatch):
    old = tmp_path / "old.ipynb"
    old.write_text(json.dumps({"cells": [{"cell_type": "code", "source": ["# set-up\n", 'TWOFOUR_REPO = ""\n']}]}))
    monkeypatch.setattr(notebooks, "ROOT", tmp_path)
    with pytest.raises(PluginError, match=r"old\.ipynb: .*TWOFOUR_WHEEL.*scripts/install_cell\.py"):
        notebooks.download_copy(old, "https://example.org/downloads/w.whl")


def test_a_repository_the_notebooks_do_not_name_fails_the_build():
    # extra.repo set in mkdocs.yml but scripts/install_cell.py not run: Colab would open notebooks
    # whose set-up cell has nowhere to install from.
    lab = ROOT / "labs" / "lab1-find-the-broken-groups.ipynb"
    repo, _branch = notebooks._repo(SimpleNamespace(extra={"repo": "https://github.com/someone/elsewhere"}))
    with pytest.raises(PluginError, match=r"lab1-find-the-broken-groups\.ipynb: .*extra\.repo.*scripts/install_cell\.py"):
        notebooks.download_copy(lab, "https://example.org/downloads/w.whl", repo)


def test_colab_and_view_source_only_with_a_repository():
    rel = "labs/lab1-find-the-broken-groups.ipynb"
    bare = notebooks.actions_html(rel, None, "main")
    assert 'href="lab1-find-the-broken-groups.ipynb" download' in bare
    assert "colab" not in bare.lower() and "View source" not in bare
    full = notebooks.actions_html(rel, "https://github.com/someone/twofour", "dev")
    assert f'href="https://colab.research.google.com/github/someone/twofour/blob/dev/{rel}"' in full
    assert f'href="https://github.com/someone/twofour/blob/dev/{rel}"' in full
    assert 'href="lab1-find-the-broken-groups.ipynb" download' in full


@pytest.mark.parametrize("repo, expected", [
    ("", (None, "main")),
    (None, (None, "main")),
    ("https://github.com/someone/twofour/", ("https://github.com/someone/twofour", "main")),
])
def test_repo_setting(repo, expected):
    assert notebooks._repo(SimpleNamespace(extra={"repo": repo})) == expected


@pytest.mark.parametrize("repo", ["https://gitlab.com/a/b", "github.com/a/b", "https://github.com/a"])
def test_a_repo_colab_cannot_open_fails_the_build(repo):
    with pytest.raises(PluginError, match="extra.repo"):
        notebooks._repo(SimpleNamespace(extra={"repo": repo}))


# --- the built site (tests/site/conftest.py: one build per run, served on 127.0.0.1) ------------


def test_the_site_has_one_wheel_and_every_notebook_copy_names_it(site, base_url):
    wheels = sorted(p.name for p in (site / "downloads").iterdir())
    assert wheels == [WHEEL_NAME], f"exactly the current wheel, no other files: {wheels}"
    url = f"{base_url}/downloads/{WHEEL_NAME}"
    copies = sorted(site.rglob("*.ipynb"))
    assert len(copies) == len(notebooks.nb_execute.find_notebooks()), copies
    for copy in copies:
        cells = json.loads(copy.read_text())["cells"]
        setup = "".join(next(c for c in cells if c["cell_type"] == "code")["source"])
        assert f'TWOFOUR_WHEEL = "{url}"\n' in setup, f"{copy.relative_to(site)} does not name {url}"


def test_the_wheel_is_served(site, base_url):
    from urllib.request import urlopen

    with urlopen(f"{base_url}/downloads/{WHEEL_NAME}", timeout=30) as response:
        body = response.read()
    assert body == (site / "downloads" / WHEEL_NAME).read_bytes() and body[:2] == b"PK"


def test_no_page_keeps_a_wheel_marker(site):
    left = [p.relative_to(site).as_posix() for p in site.rglob("*.html") if "twofour-wheel-url" in p.read_text()]
    assert not left, f"<!-- twofour-wheel-url --> was not replaced in {left}"


def test_docstring_examples():
    import doctest

    assert doctest.testmod(toolkit_wheel).failed == 0
