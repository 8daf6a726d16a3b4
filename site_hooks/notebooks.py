"""MkDocs hook: chapter notebooks (``notebooks/``) and labs (``labs/``) become site pages.

The notebooks stay where they are in the repository; nothing is copied into ``docs/``. For
each ``<folder>/<name>.ipynb`` the build gets

* a page at ``<folder>/<name>/``, whose source path in ``nav`` is ``<folder>/<name>.ipynb``;
* the notebook itself next to it (``<folder>/<name>/<name>.ipynb``) for the download link, its
  set-up cell naming the site's wheel of ``twofour`` (below);
* the notebook's figures as PNG files next to it (smaller pages than inline base64).

Execution (with its cache) lives in :mod:`nb_execute`, conversion in :mod:`nb_render`.

``mkdocs build`` (``make site``, the site tests) executes every notebook missing from the
cache before it writes a page, and a failing cell stops the build with the notebook name and
traceback. With ``TWOFOUR_NOTEBOOKS=pending`` (the builds of ``make serve``, scripts/serve.py)
nothing is executed: a notebook missing from the cache becomes a page of its code with an
"outputs are being computed" note, or with the error its run left (:func:`nb_execute.failure`),
while ``make serve`` runs the notebooks in a process of their own and rebuilds when each lands.

Each page offers "Download notebook": the notebook as committed, except that its set-up cell
names the site's own wheel of ``twofour`` (``TWOFOUR_WHEEL = "<site_url>downloads/twofour-...whl"``,
see site_hooks/toolkit.py), so the downloaded copy installs the toolkit from the site it came
from, in Colab (uploaded) or in any Jupyter. "Open in Colab" and "View source" need the
repository: they are built from ``extra.repo`` and ``extra.branch`` in mkdocs.yml, the one place
the repository URL is written down, and left out when ``extra.repo`` is empty (Colab opens
notebooks from GitHub only).
"""

from __future__ import annotations

import html
import json
import logging
import os
import re
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

# nbformat validates with jsonschema, which imports its optional checker of the "iri" format
# (rfc3987_syntax, there when JupyterLab's jsonschema[format-nongpl] is installed) if it can:
# compiling that grammar is 1.4 s of CPU per build, a tenth of `make serve`'s first one, and no
# notebook schema uses the format. So a build goes without it (the processes that import this hook: mkdocs', the hook tests').
sys.modules.setdefault("rfc3987_syntax", None)

import nb_execute  # noqa: E402 (after the line above)
import nb_links  # noqa: E402
import nb_render  # noqa: E402
import quick  # noqa: E402
import toolkit_wheel  # noqa: E402

log = logging.getLogger("mkdocs.hooks.notebooks")

ROOT = nb_execute.ROOT
_outputs: dict[str, list[str]] = {}  # page src_uri -> output HTML fragments
# Search ranking (Material's `search.boost`): the chapters explain, so they come first; the
# API pages are boosted down in reference.py.
SEARCH_BOOST = {"notebooks": 2, "labs": 1.5, "solutions": 1}


class NotebookPageFile(File):
    """A generated Markdown page whose source path is the ``.ipynb`` it was made from."""

    def is_documentation_page(self) -> bool:
        return True


def _repo(config) -> tuple[str | None, str]:
    """(``extra.repo`` without a trailing slash, or None when it is empty; ``extra.branch``)."""
    extra = config.extra
    repo, branch = extra.get("repo"), extra.get("branch") or "main"
    if not repo:
        return None, str(branch)
    if not isinstance(repo, str) or not re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+/?", repo):
        raise PluginError(
            f"extra.repo in mkdocs.yml must be empty or the project's https://github.com/<owner>/<name> URL "
            f"(Colab opens notebooks from GitHub only), got {repo!r}"
        )
    return repo.rstrip("/"), str(branch)


def actions_html(rel_path: str, repo: str | None, branch: str) -> str:
    """The buttons under a notebook page's title. ``rel_path`` is e.g. ``notebooks/00-x.ipynb``.

    Without a repository (``repo`` None) there is no "Open in Colab" and no "View source".
    """
    name = html.escape(Path(rel_path).name)
    download = f'<a class="md-button{"" if repo else " md-button--primary"}" href="{name}" download>Download notebook</a>'
    if not repo:
        return f'<div class="nb-actions">{download}</div>'
    colab = f"https://colab.research.google.com/github/{repo.removeprefix('https://github.com/')}/blob/{branch}/{rel_path}"
    source = f"{repo}/blob/{branch}/{rel_path}"
    return (
        '<div class="nb-actions">'
        f'<a class="md-button md-button--primary" href="{html.escape(colab)}">Open in Colab</a>'
        f"{download}"
        f'<a class="nb-actions__source" href="{html.escape(source)}">View source</a>'
        "</div>"
    )


def pending_html(error: str | None = None) -> str:
    """The note on a notebook page whose outputs are not there yet (``mkdocs serve`` only)."""
    if error:
        lines = error.strip().splitlines()
        tail = html.escape("\n".join(lines[-25:]))
        return (
            '<div class="admonition failure nb-pending" role="status">'
            '<p class="admonition-title">Running this notebook failed</p>'
            "<p>The code is shown without its outputs. The error (the strict build, "
            "<code>make site</code>, stops on it):</p>"
            f'<pre class="nb-pending__error">{tail}</pre></div>'
        )
    return (
        '<div class="admonition info nb-pending" role="status">'
        '<p class="admonition-title">Outputs are being computed</p>'
        "<p>This page shows the notebook's code now. Its outputs (printouts, tables, figures) "
        "are being computed in the background and appear here by themselves when they are ready, "
        "usually within a few minutes; the page reloads on its own. The deployed site always has them.</p>"
        "</div>"
    )


def _pending_mode() -> bool:
    """Whether missing notebooks become placeholder pages instead of being executed (make serve)."""
    return os.environ.get("TWOFOUR_NOTEBOOKS") == "pending"


def download_copy(path: Path, wheel_url: str | None, repo: str | None = None) -> str:
    """The ``.ipynb`` text a page offers for download: its set-up cell names the site's wheel.

    The committed set-up cell must name ``repo`` (``extra.repo``) too: it is what Colab runs
    when "Open in Colab" opens the notebook from GitHub.
    """
    text = path.read_text(encoding="utf-8")
    where = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
    cells = json.loads(text).get("cells", [])
    setup = "".join(next((c["source"] for c in cells if c.get("cell_type") == "code"), []))
    if f"\nTWOFOUR_REPO = {json.dumps(repo or '')}\n" not in setup:
        raise PluginError(f"{where}: its set-up cell does not name extra.repo of mkdocs.yml ({repo or 'empty'}); "
                          "run `.venv/bin/python scripts/install_cell.py` to rewrite it")
    if wheel_url is None:  # no site_url: toolkit.py's warning fails the strict build
        return text
    try:
        text = toolkit_wheel.with_wheel_url(text, wheel_url)
    except ValueError as err:
        raise PluginError(f"{where}: {err}") from None
    # Its links to other pages point at the site: a copy in Colab has no pages beside it.
    return nb_links.absolute_links(text, where, wheel_url.rsplit("downloads/", 1)[0])


def on_files(files: Files, config) -> Files:
    repo, branch = _repo(config)
    try:
        # Built (or found) by toolkit.py's on_config already; a quick build (quick.py) names it
        # without building it, and the next build has it.
        name = toolkit_wheel.wheel_name() if quick.quick_mode() else toolkit_wheel.build().name
    except toolkit_wheel.WheelBuildError as err:
        raise PluginError(str(err)) from None
    wheel_url = toolkit_wheel.wheel_url(config.site_url, name)
    paths = nb_execute.find_notebooks()
    notes: dict = {}
    if _pending_mode():
        done, missing = nb_execute.lookup(paths)
        executed = []
        for path in paths:
            if path in done:
                executed.append(done[path])
                continue
            out = missing[path]
            notes[path] = pending_html(nb_execute.failure(out))
            executed.append(nb_execute.Executed(path, nb_execute.nbformat.read(path, as_version=4), False))
    else:
        try:
            executed = nb_execute.execute_notebooks(paths)
        except nb_execute.NotebookExecutionError as err:
            raise PluginError(str(err)) from None
    _outputs.clear()
    for item in executed:
        rel = item.path.relative_to(ROOT).as_posix()  # notebooks/00-environment.ipynb
        page_dir = rel.removesuffix(".ipynb")  # notebooks/00-environment
        stem = item.path.stem
        actions = actions_html(rel, repo, branch) + notes.get(item.path, "")
        rendered = nb_render.render(item.nb, stem=stem, actions_html=actions)
        _outputs[rel] = rendered.outputs
        boost = SEARCH_BOOST.get(rel.split("/", 1)[0] if "/solutions/" not in rel else "solutions", 1)
        front = f"---\nsearch:\n  boost: {boost}\n---\n\n" if boost != 1 else ""
        files.append(NotebookPageFile.generated(config, rel, content=front + rendered.markdown))
        files.append(File.generated(config, f"{page_dir}/{stem}.ipynb", content=download_copy(item.path, wheel_url, repo)))
        for filename, data in rendered.images.items():
            files.append(File.generated(config, f"{page_dir}/{filename}", content=data))
        state = "pending" if item.path in notes else "cached" if item.from_cache else "executed"
        log.info("notebook %s (%s)", rel, state)
    return files


def on_page_content(html_text: str, page, config, files) -> str:
    outputs = _outputs.get(page.file.src_uri)
    return html_text if outputs is None else nb_render.fill_outputs(html_text, outputs)
