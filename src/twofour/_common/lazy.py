"""A package's re-exported names, imported on first use (PEP 562), so importing it stays cheap.

Code that needs only a table of numbers should not pay a second to import PyTorch.
:func:`lazy_exports` gives a package ``__getattr__`` and ``__dir__`` functions that import the
submodule holding a name when it is first read, and keep it in the package's namespace.

>>> getattr_, dir_ = lazy_exports("json", {"JSONDecoder": ".decoder"})
>>> getattr_("JSONDecoder").__name__, "JSONDecoder" in dir_()
('JSONDecoder', True)
>>> getattr_("nope")
Traceback (most recent call last):
...
AttributeError: module 'json' has no attribute 'nope'
"""

from __future__ import annotations

import importlib
import sys
from typing import Callable, Mapping


def lazy_exports(package: str, names: Mapping[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``names`` maps each re-exported name to its
    submodule, relative to the package (``".structure"``)."""

    def __getattr__(name: str) -> object:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(names[name], package), name)
        setattr(sys.modules[package], name, value)  # the next read finds it without this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__
