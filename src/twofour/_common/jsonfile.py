"""Read a JSON data file and say which file, where in it and what went wrong.

Every shipped JSON data file (bench results, the kernel fit, kernel tables...) is read with the
same clear errors, naming the kind of file; its structure is a JSON Schema (Draft 2020-12)
next to its reader, instead of a chain of ``if``s.

Example:
    >>> import tempfile, pathlib, json
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.json"
    >>> read_json(p, "results file")
    Traceback (most recent call last):
    ...
    FileNotFoundError: results file '...x.json' does not exist
    >>> _ = p.write_text(json.dumps({"points": [{"M": 0}]}))
    >>> schema = {"type": "object", "properties": {"points": {"type": "array", "items": {
    ...     "type": "object", "required": ["M", "N"], "properties": {"M": {"type": "integer", "minimum": 1}}}}}}
    >>> read_json(p, "results file", schema=schema)
    Traceback (most recent call last):
    ...
    ValueError: results file '...x.json': points/0 lacks fields ['N']
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema


def read_json(path, what: str, hint: str = "", schema: dict | None = None):
    """``json.loads`` of ``path``; a missing file, bad JSON or a ``schema`` miss raises one line naming ``what``."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} {str(path)!r} does not exist{hint}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{what} {str(path)!r} is not valid JSON: {exc}") from None
    if schema is not None:
        check_schema(data, schema, f"{what} {str(path)!r}")
    return data


def check_schema(data, schema: dict, where: str) -> None:
    """Raise ``ValueError`` naming ``where``, the place in ``data`` and what is wrong, if ``data`` misses ``schema``.

    Missing fields are listed together (all of them at that place, not only the first); any
    other miss is jsonschema's own sentence, e.g. ``points/3/M: 0 is less than the minimum of 1``.

    Example:
        >>> check_schema({"M": "1"}, {"properties": {"M": {"type": "integer"}}}, "results file 'r.json'")
        Traceback (most recent call last):
        ...
        ValueError: results file 'r.json': M: '1' is not of type 'integer'
    """
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(data))
    if not errors:
        return
    error = jsonschema.exceptions.best_match(errors)
    place = "/".join(str(p) for p in error.absolute_path)
    if error.validator == "required":
        missing = sorted(f for f in error.validator_value if isinstance(error.instance, dict) and f not in error.instance)
        raise ValueError(f"{where}: {place or 'the top level'} lacks fields {missing}")
    raise ValueError(f"{where}: {place or 'the top level'}: {error.message}")
