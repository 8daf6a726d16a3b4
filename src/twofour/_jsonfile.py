"""Read a JSON data file and say which file and what kind of file went wrong.

The toolkit ships several JSON data files (bench results, published measurements, the kernel
fit, kernel tables); each reader wants the same two clear errors, naming the kind of file.

Example:
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.json"
    >>> read_json(p, "results file")
    Traceback (most recent call last):
    ...
    FileNotFoundError: results file '...x.json' does not exist
"""

from __future__ import annotations

import json
from pathlib import Path


def read_json(path, what: str, hint: str = ""):
    """``json.loads`` of ``path``; a missing file or bad JSON raises one line naming ``what``."""
    path = Path(path)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} {str(path)!r} does not exist{hint}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what} {str(path)!r} is not valid JSON: {exc}") from None
