"""The links of a notebook offered for download, made absolute.

On the site a notebook's Markdown links point at other pages by their source paths
(``01-structure.ipynb``, ``../calculator/index.md#x``, ``solutions/lab1-solutions.ipynb``), which
MkDocs turns into page URLs. A downloaded copy opened in Colab or Jupyter has no site around it,
so those links would break: :func:`absolute_links` points each at its page on the site instead.
"""

from __future__ import annotations

import json
import posixpath
import re

# A Markdown link's target, ``](target)`` or ``](target "title")``, and an HTML href.
_MD_LINK = re.compile(r"(\]\()([^)\s]+)((?:\s+\"[^\"]*\")?\))")
_HREF = re.compile(r"(href=\")([^\"]+)(\")")
_EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|#|/)", re.I)


def page_url(target: str, here: str, site_url: str) -> str:
    """The site URL of a link ``target`` written in the source file ``here`` (a docs path).

    >>> page_url("01-structure.ipynb#the-idea", "notebooks/07-the-answer.ipynb", "https://x.io/s/")
    'https://x.io/s/notebooks/01-structure/#the-idea'
    >>> page_url("../calculator/index.md", "notebooks/07-the-answer.ipynb", "https://x.io/s/")
    'https://x.io/s/calculator/'
    >>> page_url("https://github.com/pytorch/pytorch", "notebooks/01-structure.ipynb", "https://x.io/s/")
    'https://github.com/pytorch/pytorch'
    """
    if _EXTERNAL.match(target):
        return target
    path, _, anchor = target.partition("#")
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(here), path))
    if resolved.endswith("/index.md") or resolved == "index.md":
        resolved = resolved[: -len("index.md")]
    elif resolved.endswith((".md", ".ipynb")):
        resolved = resolved.rsplit(".", 1)[0] + "/"
    url = site_url.rstrip("/") + "/" + resolved.lstrip("./") if resolved not in (".", "") else site_url
    return url + (f"#{anchor}" if anchor else "")


def absolute_links(text: str, here: str, site_url: str) -> str:
    """A notebook's JSON text with every relative link in its Markdown cells pointing at the site.

    Code cells are left alone (a path in code is a file, not a page).
    """
    nb = json.loads(text)
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "markdown":
            continue
        src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        fix = lambda m: m.group(1) + page_url(m.group(2), here, site_url) + m.group(3)  # noqa: E731
        new = _HREF.sub(fix, _MD_LINK.sub(fix, src))
        if new != src:
            cell["source"] = new.splitlines(keepends=True)
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
