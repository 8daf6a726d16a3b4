"""MkDocs hook: the site carries its toolkit.

Every build puts a wheel of ``twofour`` into the site, at
``downloads/twofour-<version>-py3-none-any.whl`` (built and cached by :mod:`toolkit_wheel`), so
that a reader with only the deployed site can install the toolkit: each notebook page's
"Download notebook" copy names the wheel's URL in its set-up cell (``site_hooks/notebooks.py``),
and ``<!-- twofour-wheel-url -->`` in any page's Markdown becomes that URL (the install lines on
the home, labs and API pages).

The URL is absolute, made from ``site_url`` (``TWOFOUR_SITE_URL``), because a downloaded
notebook no longer knows where it came from. The wheel is built in ``on_config``, before any
notebook runs, so a failing build stops the site at once, with pip's output, rather than
publishing pages that link to a wheel that is not there; the built site holds only the current
wheel (``build/wheel/`` keeps only it, and ``on_post_build`` removes any other that an earlier
``--dirty`` build left).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

import toolkit_wheel

log = logging.getLogger("mkdocs.hooks.toolkit")

MARKER = re.compile(r"<!--\s*twofour-wheel-url\s*-->")


def site_wheel(config) -> tuple[Path, str | None]:
    """(the wheel's path on this machine, its URL on the built site or None without site_url)."""
    try:
        path = toolkit_wheel.build()
    except toolkit_wheel.WheelBuildError as err:
        raise PluginError(str(err)) from None
    return path, toolkit_wheel.wheel_url(config.site_url, path.name)


def on_config(config):
    _path, url = site_wheel(config)
    if url is None:
        # A warning fails the strict build: the downloadable notebooks could not name the wheel.
        log.warning("site_url is not set in mkdocs.yml, so the notebooks' set-up cells cannot name the site's "
                    "twofour wheel: set site_url (or TWOFOUR_SITE_URL) to where the site will be served")
    return config


def on_files(files: Files, config) -> Files:
    path, _url = site_wheel(config)
    files.append(File.generated(config, f"{toolkit_wheel.DOWNLOADS}/{path.name}", abs_src_path=str(path)))
    return files


def on_post_build(config) -> None:
    # `mkdocs build --dirty` keeps what an earlier build wrote: a previous version's wheel must
    # not stay in the site beside the current one.
    current = site_wheel(config)[0].name
    for stale in (Path(config.site_dir) / toolkit_wheel.DOWNLOADS).glob("twofour-*.whl"):
        if stale.name != current:
            log.info("removed %s, left by an earlier build", stale.name)
            stale.unlink()


def on_page_markdown(markdown: str, page, config, files) -> str:
    if not MARKER.search(markdown):
        return markdown
    path, url = site_wheel(config)
    return MARKER.sub(lambda m: url or f"{toolkit_wheel.DOWNLOADS}/{path.name}", markdown)
