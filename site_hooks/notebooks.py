"""MkDocs hook: chapter notebooks (``notebooks/``) and labs (``labs/``) become site pages.

The notebooks stay where they are in the repository; nothing is copied into ``docs/``. For
each ``<folder>/<name>.ipynb`` the build gets

* a page at ``<folder>/<name>/``, whose source path in ``nav`` is ``<folder>/<name>.ipynb``;
* the notebook itself next to it (``<folder>/<name>/<name>.ipynb``) for the download link;
* the notebook's figures as PNG files next to it (smaller pages than inline base64).

Execution (with its cache) lives in :mod:`nb_execute`, conversion in :mod:`nb_render`.
A failing cell stops the build with the notebook name and traceback.

The "Open in Colab" and "Download notebook" links are built from ``extra.repo`` and
``extra.branch`` in mkdocs.yml, the one place the repository URL is written down.
"""

from __future__ import annotations

import html
import logging
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

import nb_execute
import nb_render

log = logging.getLogger("mkdocs.hooks.notebooks")

ROOT = nb_execute.ROOT
_outputs: dict[str, list[str]] = {}  # page src_uri -> output HTML fragments


class NotebookPageFile(File):
    """A generated Markdown page whose source path is the ``.ipynb`` it was made from."""

    def is_documentation_page(self) -> bool:
        return True


def _repo(config) -> tuple[str, str]:
    extra = config.extra
    repo, branch = extra.get("repo"), extra.get("branch", "main")
    if not repo or not str(repo).startswith("https://github.com/"):
        raise PluginError(
            f"extra.repo in mkdocs.yml must be the project's https://github.com/<owner>/<name> URL "
            f"(used for the Colab links), got {repo!r}"
        )
    return str(repo).rstrip("/"), str(branch)


def actions_html(rel_path: str, repo: str, branch: str) -> str:
    """The buttons under a notebook page's title. ``rel_path`` is e.g. ``notebooks/00-x.ipynb``."""
    colab = f"https://colab.research.google.com/github/{repo.removeprefix('https://github.com/')}/blob/{branch}/{rel_path}"
    source = f"{repo}/blob/{branch}/{rel_path}"
    name = html.escape(Path(rel_path).name)
    return (
        '<div class="nb-actions">'
        f'<a class="md-button md-button--primary" href="{html.escape(colab)}">Open in Colab</a>'
        f'<a class="md-button" href="{name}" download>Download notebook</a>'
        f'<a class="nb-actions__source" href="{html.escape(source)}">View source</a>'
        "</div>"
    )


def on_files(files: Files, config) -> Files:
    repo, branch = _repo(config)
    paths = nb_execute.find_notebooks()
    try:
        executed = nb_execute.execute_notebooks(paths)
    except nb_execute.NotebookExecutionError as err:
        raise PluginError(str(err)) from None
    _outputs.clear()
    for item in executed:
        rel = item.path.relative_to(ROOT).as_posix()  # notebooks/00-environment.ipynb
        page_dir = rel.removesuffix(".ipynb")  # notebooks/00-environment
        stem = item.path.stem
        rendered = nb_render.render(item.nb, stem=stem, actions_html=actions_html(rel, repo, branch))
        _outputs[rel] = rendered.outputs
        files.append(NotebookPageFile.generated(config, rel, content=rendered.markdown))
        files.append(File.generated(config, f"{page_dir}/{stem}.ipynb", abs_src_path=str(item.path)))
        for filename, data in rendered.images.items():
            files.append(File.generated(config, f"{page_dir}/{filename}", content=data))
        log.info("notebook %s (%s)", rel, "cached" if item.from_cache else "executed")
    return files


def on_page_content(html_text: str, page, config, files) -> str:
    outputs = _outputs.get(page.file.src_uri)
    return html_text if outputs is None else nb_render.fill_outputs(html_text, outputs)
