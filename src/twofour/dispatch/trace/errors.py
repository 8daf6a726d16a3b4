"""The one error of twofour.dispatch.trace, and how a path is shown in it.

Its own module so that every stage (read, validate, analyze) can raise it without importing
another stage: read uses validate, so validate cannot import read.
"""

from __future__ import annotations

import os

from ..._common.text import printable


class TraceError(ValueError):
    """The file is not a usable trace, or the question cannot be answered from it (one sentence)."""


def shown_path(path) -> str:
    r"""A path as it is safe to print in an error (a file name can hold escape sequences).

    >>> print(shown_path("run\x1b[2J.json"))
    run\x1b[2J.json
    """
    return printable(os.fspath(path), 200)
