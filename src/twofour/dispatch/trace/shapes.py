"""Operand shapes of operators, as ``torch.profiler.profile(record_shapes=True)`` writes them.

Each ``cpu_op`` event of such a trace carries ``args["Input Dims"]`` (one entry per input: a
tensor's sizes, ``[]`` for a scalar or ``None``, a list of sizes for a tensor list) and
``args["Input type"]`` (``"float"``, ``"c10::Half"``, ``"Scalar"``, ``""`` ...). :mod:`.read`
keeps the pair as one *signature*, stored once however many operators share it; :mod:`.compare`
uses them to check that two runs issued their GEMMs with the same operands.

>>> sig = signature([[8, 128], [64, 128], []], ["c10::Half", "c10::Half", ""])
>>> sig
(((8, 128), (64, 128), ()), ('c10::Half', 'c10::Half', ''))
>>> describe(sig)
'[8, 128] c10::Half, [64, 128] c10::Half, []'
>>> signature([[8, -1]], None)
Traceback (most recent call last):
    ...
ValueError: "Input Dims" holds -1, not a size (an int >= 0)
"""

from __future__ import annotations

from itertools import zip_longest

from ..._common.text import printable

_MAX_DEPTH = 3  # a tensor's sizes (1), a tensor list (2), a list of those (3: never seen, allowed)
_MAX_ITEMS = 1 << 16  # numbers in one event's dims: a foreach over a large model's parameters stays under it
_MAX_TYPE = 200  # characters of one type name
_MAX_SIZE = 1 << 62


def signature(dims, types) -> tuple:
    """The hashable ``(dims, types)`` of one operator's inputs; :class:`ValueError` (one line) when malformed.

    Either may be None (absent). Sizes must be ints in [0, 2^62]; types strings of at most 200 characters.
    """
    count = [0]

    def walk(value, depth: int):
        if type(value) is int and depth > 1:  # a size inside an input's entry; the entry itself is a list
            if not 0 <= value <= _MAX_SIZE:
                raise ValueError(f'"Input Dims" holds {value if abs(value) < 10**20 else "a huge number"}, not a size '
                                 "(an int >= 0)")
            count[0] += 1
            if count[0] > _MAX_ITEMS:
                raise ValueError(f'"Input Dims" holds more than {_MAX_ITEMS:,} sizes')
            return value
        if type(value) is list and depth < _MAX_DEPTH:
            return tuple(walk(v, depth + 1) for v in value)
        what = "a list nested too deep" if type(value) is list else type(value).__name__
        raise ValueError(f'"Input Dims" holds {what} ({printable(repr(value), 40)}), not a list of sizes')

    if dims is None:
        out_dims = ()
    elif type(dims) is not list:
        raise ValueError(f'"Input Dims" must be a list (one entry per input), got {type(dims).__name__}')
    else:
        if len(dims) > _MAX_ITEMS:
            raise ValueError(f'"Input Dims" has more than {_MAX_ITEMS:,} inputs')
        out_dims = tuple(walk(d, 1) for d in dims)
    if types is None:
        out_types = ()
    elif type(types) is not list or len(types) > _MAX_ITEMS or not all(type(t) is str and len(t) <= _MAX_TYPE
                                                                        for t in types):
        raise ValueError('"Input type" must be a list of type names (strings of at most 200 characters)')
    else:
        out_types = tuple(printable(t, _MAX_TYPE) for t in types)
    if out_dims and out_types and len(out_dims) != len(out_types):
        raise ValueError(f'"Input Dims" has {len(out_dims)} inputs and "Input type" {len(out_types)}')
    return out_dims, out_types


def describe(sig: tuple, limit: int = 160) -> str:
    """A signature as a reader sees it: each input's sizes and type, shortened to ``limit`` characters."""
    dims, types = sig

    def show(d) -> str:
        return "[" + ", ".join(show(x) if isinstance(x, tuple) else str(x) for x in d) + "]"

    parts = [f"{'?' if d is None else show(d)} {t or ''}".strip() for d, t in zip_longest(dims, types)]
    text = ", ".join(parts) or "no inputs"
    return text if len(text) <= limit else text[: limit - 3] + "..."
