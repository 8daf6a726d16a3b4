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

``make serve``'s quick first build (:mod:`quick`) builds no wheel: it takes the cached one, and
without one (a fresh clone) it names the wheel's URL all the same (:func:`toolkit_wheel.wheel_name`)
and lists the file as left for the next build, which builds it.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

import quick
import toolkit_wheel

log = logging.getLogger("mkdocs.hooks.toolkit")

MARKER = re.compile(r"<!--\s*twofour-wheel-url\s*-->")


def site_wheel(config) -> tuple[Path | None, str, str | None]:
    """(the wheel's path on this machine, or None when a quick build left it out; its file name;
    its URL on the built site, or None without site_url)."""
    try:
        path = toolkit_wheel.cached() if quick.quick_mode() else toolkit_wheel.build()
        name = path.name if path is not None else toolkit_wheel.wheel_name()
    except toolkit_wheel.WheelBuildError as err:
        raise PluginError(str(err)) from None
    return path, name, toolkit_wheel.wheel_url(config.site_url, name)


def on_config(config):
    _path, _name, url = site_wheel(config)
    if url is None:
        # A warning fails the strict build: the downloadable notebooks could not name the wheel.
        log.warning("site_url is not set in mkdocs.yml, so the notebooks' set-up cells cannot name the site's "
                    "twofour wheel: set site_url (or TWOFOUR_SITE_URL) to where the site will be served")
    return config


def on_files(files: Files, config) -> Files:
    path, name, _url = site_wheel(config)
    if path is not None:
        files.append(File.generated(config, f"{toolkit_wheel.DOWNLOADS}/{name}", abs_src_path=str(path)))
    return files


def on_post_build(config) -> None:
    path, current, _url = site_wheel(config)
    if path is None:  # a quick build without a cached wheel: the server says it is coming
        quick.write_manifest(config.site_dir, [f"{toolkit_wheel.DOWNLOADS}/{current}"])
    # `mkdocs build --dirty` keeps what an earlier build wrote: a previous version's wheel must
    # not stay in the site beside the current one.
    for stale in (Path(config.site_dir) / toolkit_wheel.DOWNLOADS).glob("twofour-*.whl"):
        if stale.name != current:
            log.info("removed %s, left by an earlier build", stale.name)
            stale.unlink()


def on_page_markdown(markdown: str, page, config, files) -> str:
    if not MARKER.search(markdown):
        return markdown
    _path, name, url = site_wheel(config)
    return MARKER.sub(lambda m: url or f"{toolkit_wheel.DOWNLOADS}/{name}", markdown)
