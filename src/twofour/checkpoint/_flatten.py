"""Name every tensor of a loaded checkpoint, with bounds a hostile file cannot get past.

A few kilobytes of pickle can nest ten thousand dicts, make a dict contain itself, or reference
one dict from two keys at every level (40 levels: 2**40 paths), and two entries can flatten to
the same dotted name (``{"a.b": x, "a": {"b": y}}``). So the walk is iterative, refuses a
cycle, stops past ``MAX_DEPTH`` levels or ``MAX_ENTRIES`` visited entries, and gives a colliding
name a ``#2`` suffix with a note, never dropping either tensor.

>>> import torch
>>> t, skipped, notes = flatten_state_dict({"a.b": torch.zeros(1), "a": {"b": torch.ones(1)}})
>>> list(t), notes
(['a.b', 'a.b#2'], ["2 entries flatten to the name 'a.b': listed as 'a.b' and 'a.b#2'"])
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from .._common.text import printable

__all__ = ["flatten_state_dict", "FlattenError", "unique_name", "MAX_DEPTH", "MAX_ENTRIES"]

MAX_DEPTH = 64  # real checkpoints nest a handful of levels (model / layers / i / ...)
MAX_ENTRIES = 1_000_000  # entries visited, shared references counted each time they are reached


class FlattenError(ValueError):
    """The loaded object is too deep, too large, or contains itself; the message is one line."""


def unique_name(name: str, taken: dict, tried: dict) -> str:
    """``name``, or ``name#2``, ``name#3``... whichever ``taken`` does not hold yet; ``tried`` (one dict per
    walk) remembers the last suffix given to each name, so n collisions cost O(n), not O(n**2).

    >>> taken, tried = {}, {}
    >>> for _ in range(3):
    ...     taken[unique_name("a", taken, tried)] = 1
    >>> list(taken)
    ['a', 'a#2', 'a#3']
    """
    if name not in taken:
        return name
    i = tried.get(name, 1) + 1
    while f"{name}#{i}" in taken:
        i += 1
    tried[name] = i
    return f"{name}#{i}"


def flatten_state_dict(obj, prefix: str = "") -> tuple[dict, list[tuple[str, str]], list[str]]:
    """``(tensors, skipped, notes)`` of a (possibly nested) checkpoint object.

    ``tensors`` maps dotted names to tensors; ``skipped`` holds ``(name, why)`` for every entry
    that is not a tensor (step counters, config strings); ``notes`` says which names collided
    and what they became. Raises :class:`FlattenError` past the bounds or on a cycle.

    >>> t, skipped, notes = flatten_state_dict({"model": {"fc.weight": torch.zeros(2, 4)}, "epoch": 3})
    >>> list(t), skipped, notes
    (['model.fc.weight'], [('epoch', 'not a tensor (int)')], [])
    """
    tensors: dict = {}
    skipped: list[tuple[str, str]] = []
    collisions: dict[str, list[str]] = {}
    tried: dict[str, int] = {}
    visited = 0
    # Depth-first, children in file order: a stack of (name, value, depth, ancestors' ids).
    stack = [(prefix, obj, 0, frozenset())]
    while stack:
        name, value, depth, ancestors = stack.pop()
        visited += 1
        if visited > MAX_ENTRIES:
            raise FlattenError(
                f"more than {MAX_ENTRIES:,} entries (a small file can reference the same container from many "
                "places); refusing to expand it further"
            )
        if isinstance(value, torch.Tensor):
            final = unique_name(name, tensors, tried)
            if final != name:
                collisions.setdefault(name, [name]).append(final)
            tensors[final] = value
        elif isinstance(value, Mapping) or (isinstance(value, (list, tuple)) and any(
                isinstance(v, (torch.Tensor, Mapping, list, tuple)) for v in value)):
            if id(value) in ancestors:
                raise FlattenError(f"entry {printable(name or '<top level>', 80)!r} contains itself (a cycle)")
            if depth >= MAX_DEPTH:
                raise FlattenError(f"nested more than {MAX_DEPTH} levels deep (at {printable(name, 80)!r})")
            inner = ancestors | {id(value)}
            pairs = value.items() if isinstance(value, Mapping) else enumerate(value)
            children = [(f"{name}.{key}" if name else str(key), sub) for key, sub in pairs]
            stack.extend((sub_name, sub, depth + 1, inner) for sub_name, sub in reversed(children))
        else:
            skipped.append((name or "<top level>", f"not a tensor ({type(value).__name__})"))
    notes = [
        f"{len(names)} entries flatten to the name '{printable(name, 80)}': listed as "
        + " and ".join(f"'{printable(n, 80)}'" for n in names[:3])
        + (f" ... '{printable(names[-1], 80)}'" if len(names) > 3 else "")
        for name, names in collisions.items()
    ]
    return tensors, skipped, notes
