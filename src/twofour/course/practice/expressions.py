"""Bank expressions: parsed with :mod:`ast` and interpreted over an explicit registry, never ``eval``.

A bank is data someone may share, so its expressions are data too. What one may contain:

* numbers, strings, lists, tuples, dicts and ``True``/``False``/``None``, within :data:`LIMITS`;
* arithmetic (``+ - * / // % **``) on numbers, comparisons, ``and``/``or``/``not``,
  ``a if c else b``, indexing of a list, tuple or dict, and ``'%d.%d' % (8, 0)`` formatting;
* names from :data:`~.registry.NAMESPACE` (values, registered functions, namespaces) and the
  question's earlier numbers; ``ns.name`` only inside a registered namespace, ``value.field``
  and ``value.method(...)`` only on a registered result type (:data:`~.registry.RESULT_TYPES`);
  calls only to registered functions and methods.

Everything else is refused before anything runs, a :class:`BankError` naming the expression and the
offending part; an integer power (``9**9**9``) is refused before it is computed.
"""

from __future__ import annotations

import ast
import itertools
import math
import operator
import re
import string
import time
from dataclasses import dataclass

from .registry import NAMESPACE, RESULT_TYPES, STR_METHODS, Function, Namespace
from .terms import BankError

__all__ = ["NAMESPACE", "evaluate_expression", "check_expression", "format_value", "check_format", "LIMITS"]

# The bounds, in one place (the error messages quote them).
LIMITS = {"chars": 1000, "depth": 40, "int_bits": 128, "items": 1000, "str_chars": 10_000, "nesting": 8, "seconds": 10.0}

_NODES = (
    ast.Expression, ast.Call, ast.Name, ast.Load, ast.Attribute, ast.Constant, ast.keyword,
    ast.BinOp, ast.UnaryOp, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
    ast.USub, ast.UAdd, ast.Tuple, ast.List, ast.Dict, ast.Subscript, ast.Compare, ast.Lt, ast.LtE,
    ast.Gt, ast.GtE, ast.Eq, ast.NotEq, ast.IfExp, ast.BoolOp, ast.And, ast.Or, ast.Not,
)
_ARITH = {ast.Add: ("+", operator.add), ast.Sub: ("-", operator.sub), ast.Mult: ("*", operator.mul),
          ast.Div: ("/", operator.truediv), ast.FloorDiv: ("//", operator.floordiv),
          ast.Mod: ("%", operator.mod), ast.Pow: ("**", operator.pow)}
_COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
            ast.Eq: operator.eq, ast.NotEq: operator.ne}
# printf directives a bank may use in "'%d.%d' % capability": no '*' widths, no mapping keys.
_PERCENT = re.compile(r"%(?:%|[-+ #0]*(?:[1-9]\d?)?(?:\.\d{1,2})?[diouxXeEfFgGrsa])")
_FORMAT_SPEC = re.compile(r"^(?:[^{}]?[<>=^])?[-+ ]?#?0?(?:[1-9]\d?)?[,_]?(?:\.\d{1,2})?[bcdeEfFgGnosxX%]?$")


class _Refused(Exception):
    def __init__(self, node, why: str):
        super().__init__(why)
        self.node, self.why = node, why


@dataclass(frozen=True, slots=True, eq=False)
class _Bound:
    """``obj.method`` of a registered result type (or ``str.join``), waiting to be called."""

    obj: object
    name: str


def _part(node) -> str:
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001 - only for the message
        text = type(node).__name__
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _is_number(v) -> bool:
    return type(v) in (int, float, bool)


def _check_value(v, node, depth: int = 0):
    """``v`` if an expression may hold it, else :class:`_Refused` (so nothing unlisted leaks through)."""
    t = type(v)
    if v is None or t is bool:
        return v
    if t is int:
        if v.bit_length() > LIMITS["int_bits"]:
            raise _Refused(node, f"gives an integer of {v.bit_length()} bits; bank integers are at most "
                                 f"{LIMITS['int_bits']} bits")
        return v
    if t is float:
        if not math.isfinite(v):
            raise _Refused(node, f"gives {v!r}; a bank number must be finite")
        return v
    if t is str:
        if len(v) > LIMITS["str_chars"]:
            raise _Refused(node, f"gives a string of {len(v):,} characters; at most {LIMITS['str_chars']:,}")
        return v
    if t in (list, tuple, dict):
        if len(v) > LIMITS["items"]:
            raise _Refused(node, f"gives a {t.__name__} of {len(v):,} items; at most {LIMITS['items']:,}")
        if depth >= LIMITS["nesting"]:
            raise _Refused(node, f"gives containers nested deeper than {LIMITS['nesting']}")
        for item in (itertools.chain.from_iterable(v.items()) if t is dict else v):  # a dict's keys and values
            _check_value(item, node, depth + 1)
        return v
    if t in RESULT_TYPES:
        return v
    if isinstance(v, (Function, _Bound)):
        raise _Refused(node, "is a function: call it, a bank expression cannot pass or keep a function")
    if isinstance(v, Namespace):
        raise _Refused(node, f"is the namespace {v.name!r}: use one of its names ({', '.join(sorted(v.members))})")
    if t is complex:
        raise _Refused(node, f"gives the complex number {v!r}; a bank number must be real")
    raise _Refused(node, f"gives a value of type {t.__name__}, which bank expressions may not hold")


def _static_checks(tree, scope) -> None:
    """Refuse disallowed syntax, private names and unknown names before anything is evaluated."""
    depth_of = {id(tree): 0}
    for node in ast.walk(tree):
        d = depth_of.get(id(node), 0)
        if d > LIMITS["depth"]:
            raise _Refused(node, f"is nested deeper than {LIMITS['depth']} levels")
        for child in ast.iter_child_nodes(node):
            depth_of[id(child)] = d + 1
        if not isinstance(node, _NODES):
            raise _Refused(node, f"uses {type(node).__name__}, which bank expressions may not use")
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            raise _Refused(node, f"reaches the private attribute {node.attr!r}")
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            ns = scope.get(node.value.id)
            if isinstance(ns, Namespace) and node.attr not in ns.members:
                raise _Refused(node, f"is not in the namespace {ns.name!r}; it holds {sorted(ns.members)}")
        if isinstance(node, ast.Name) and (node.id.startswith("_") or node.id not in scope):
            raise _Refused(node, f"uses the unknown name {node.id!r}; known: earlier numbers of the question "
                                 f"and {sorted(NAMESPACE)}")
        if isinstance(node, ast.keyword) and node.arg is None:
            raise _Refused(node, "unpacks a mapping into a call (**); name each argument")
        if isinstance(node, ast.Constant) and type(node.value) not in (int, float, str, bool, type(None)):
            raise _Refused(node, f"is a {type(node.value).__name__} literal; bank literals are numbers and strings")
        if isinstance(node, ast.Dict) and any(k is None for k in node.keys):
            raise _Refused(node, "unpacks a mapping (**) into a dict; write its items")
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            raise _Refused(node, "slices; index one item")


class _Interpreter:
    def __init__(self, scope):
        self.scope = scope
        # Each registered call bounds its own work; this bounds how many an expression chains.
        self.deadline = time.monotonic() + LIMITS["seconds"]

    def eval(self, node):
        return getattr(self, "_" + type(node).__name__)(node)  # _static_checks let only the nodes here through

    def value(self, node):
        """Evaluate a node whose result must be data (not a function or namespace)."""
        return _check_value(self.eval(node), node)

    def _Constant(self, node):
        return _check_value(node.value, node)

    def _Name(self, node):
        return self.scope[node.id]

    def _Attribute(self, node):
        base = self.eval(node.value)
        attr = node.attr
        if isinstance(base, Namespace):  # reached by its name only, whose attributes _static_checks checked
            return base.members[attr]
        if type(base) is str and attr in STR_METHODS:
            return _Bound(base, attr)
        fields, methods = RESULT_TYPES.get(type(base), (frozenset(), frozenset()))
        if attr in fields:
            return _check_value(getattr(base, attr), node)
        if attr in methods:
            return _Bound(base, attr)
        allowed = sorted(fields | methods) if type(base) in RESULT_TYPES else sorted(STR_METHODS) if type(base) is str else []
        what = f"the function {base.name}" if isinstance(base, Function) else f"a {type(base).__name__}"
        raise _Refused(node, f"reads {attr!r} of {what}, which a bank may not read"
                             + (f"; it may read {allowed}" if allowed else ""))

    def _Call(self, node):
        func = self.eval(node.func)
        if not isinstance(func, (Function, _Bound)):
            raise _Refused(node, "calls something that is not a registered function")
        args = [self.value(a) for a in node.args]
        kwargs = {k.arg: self.value(k.value) for k in node.keywords}
        if time.monotonic() > self.deadline:
            raise _Refused(node, f"is reached after more than {LIMITS['seconds']:g} s of work; a bank expression "
                                 "is computed in seconds (split it into earlier numbers)")
        if isinstance(func, Function):
            return _check_value(func.fn(*args, **kwargs), node)
        if type(func.obj) is str and not (len(args) == 1 and not kwargs and type(args[0]) in (list, tuple)
                                          and all(type(x) is str for x in args[0])):  # str.join
            raise _Refused(node, "joins something that is not a list or tuple of strings")
        return _check_value(getattr(func.obj, func.name)(*args, **kwargs), node)

    def _BinOp(self, node):
        a, b = self.value(node.left), self.value(node.right)
        op = type(node.op)
        if op is ast.Mod and type(a) is str:
            if "%" in _PERCENT.sub("", a):
                raise _Refused(node, "uses a %-format directive a bank may not use (allowed: %d, %s, "
                                     "%.2f ..., widths up to 99, no '*' or '(name)')")
            return _check_value(a % b, node)
        if not (_is_number(a) and _is_number(b)):
            raise _Refused(node, f"applies {_ARITH[op][0]} to {type(a).__name__} and {type(b).__name__}; "
                                 "arithmetic is on numbers only")
        if op is ast.Pow and type(a) is not float and type(b) is not float and b > 0 and abs(a) > 1:
            bits = math.ceil(b * math.log2(abs(a)))  # |a| ** b has about this many bits: refused before it is computed
            if bits > LIMITS["int_bits"]:
                raise _Refused(node, f"is an integer power of about {bits:,} bits; bank integers are at most "
                                     f"{LIMITS['int_bits']} bits")
        return _check_value(_ARITH[op][1](a, b), node)

    def _UnaryOp(self, node):
        v = self.value(node.operand)
        if isinstance(node.op, ast.Not):
            return not v
        if not _is_number(v):
            raise _Refused(node, f"applies a sign to a {type(v).__name__}; signs apply to numbers")
        return _check_value(-v if isinstance(node.op, ast.USub) else +v, node)

    def _Compare(self, node):
        left = self.value(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.value(right_node)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True

    def _BoolOp(self, node):
        is_and = isinstance(node.op, ast.And)
        v = None
        for item in node.values:
            v = self.value(item)
            if bool(v) != is_and:
                return v
        return v

    def _IfExp(self, node):
        return self.value(node.body) if self.value(node.test) else self.value(node.orelse)

    def _List(self, node):
        items = [self.value(e) for e in node.elts]
        return _check_value(tuple(items) if isinstance(node, ast.Tuple) else items, node)

    _Tuple = _List

    def _Dict(self, node):
        out = {}
        for k, v in zip(node.keys, node.values):
            key = self.value(k)
            if type(key) not in (str, int, float, bool):
                raise _Refused(k, "is a dict key that is not a number or a string")
            out[key] = self.value(v)
        return _check_value(out, node)

    def _Subscript(self, node):
        base, index = self.value(node.value), self.value(node.slice)
        if type(base) not in (dict, list, tuple):
            raise _Refused(node, f"indexes a {type(base).__name__}; only lists, tuples and dicts are indexed")
        if type(base) is not dict and type(index) is not int:
            raise _Refused(node, f"indexes a {type(base).__name__} with a {type(index).__name__}; use an int")
        return _check_value(base[index], node)


def evaluate_expression(expr: str, names=None):
    """Evaluate one bank expression over :data:`NAMESPACE` plus ``names`` (earlier numbers); a
    :class:`BankError` for anything not allowed, values out of bounds, or a registered function's error.

    >>> evaluate_expression("amdahl.speedup(0.5, 2.0)")
    1.3333333333333333
    >>> evaluate_expression("p * 2", {"p": 0.25})
    0.5
    >>> evaluate_expression("amdahl.os")
    Traceback (most recent call last):
    ...
    twofour.course.practice.terms.BankError: expr 'amdahl.os': 'amdahl.os' is not in the namespace 'amdahl'; it holds ['averaged_speedup_mistake', 'combined_speedup', 'max_speedup', 'speedup']
    """
    tree, scope = _parsed(expr, names)
    try:
        return _check_value(_Interpreter(scope).eval(tree.body), tree.body)
    except _Refused as r:
        raise BankError(f"expr {expr!r}: {_part(r.node)} {r.why}") from None
    except BankError:
        raise
    except RecursionError:
        raise BankError(f"expr {expr!r} is nested too deeply to evaluate") from None
    except Exception as err:  # a registered function refused its arguments: say which expression
        raise BankError(f"expr {expr!r} raised {type(err).__name__}: {err}") from err


def check_expression(expr: str, names=()) -> None:
    """Refuse ``expr`` now if its syntax or names (``names``: the question's earlier numbers) are not allowed.

    >>> check_expression("amdahl.speedup(p, 2.0)", ["p"])
    >>> check_expression("estimate.__globals__")
    Traceback (most recent call last):
    ...
    twofour.course.practice.terms.BankError: expr 'estimate.__globals__': 'estimate.__globals__' reaches the private attribute '__globals__'
    """
    _parsed(expr, {n: None for n in names})


def _parsed(expr, names):
    """(tree, scope) for ``expr`` after every static check; BankError otherwise."""
    if not isinstance(expr, str) or not expr.strip():
        raise BankError(f"expr must be a non-empty string, got {expr!r}")
    if len(expr) > LIMITS["chars"]:
        raise BankError(f"expr {expr[:60]!r}... is {len(expr):,} characters; a bank expression is at most "
                        f"{LIMITS['chars']:,} (compute parts as earlier numbers)")
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as err:
        raise BankError(f"expr {expr!r} is not a Python expression: {err.msg}") from None
    except (RecursionError, MemoryError, ValueError) as err:
        raise BankError(f"expr {expr!r} cannot be parsed ({type(err).__name__}: nested too deeply or not text)") from None
    scope = dict(NAMESPACE)
    for name, value in (names or {}).items():
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
            raise BankError(f"names must map identifiers not starting with '_' to values, got the name {name!r}")
        try:
            scope[name] = _check_value(value, None)
        except _Refused as r:
            raise BankError(f"names[{name!r}] {r.why}") from None
    try:
        _static_checks(tree, scope)
    except _Refused as r:
        raise BankError(f"expr {expr!r}: {_part(r.node)} {r.why}") from None
    return tree, scope


def check_format(fmt) -> str:
    """``fmt`` if it is a template a bank may use: text and one ``{}`` / ``{:spec}`` field, else BankError:
    no field names, attributes or indexes (``{0.__class__}``), widths and precisions of at most two
    digits (``{:999999999}`` would fill memory).

    >>> check_format("{:.3f}x")
    '{:.3f}x'
    >>> check_format("{0.__class__}")
    Traceback (most recent call last):
    ...
    twofour.course.practice.terms.BankError: format '{0.__class__}' names the field '0.__class__'; a bank format has one field, {} or {:spec}
    """
    if not isinstance(fmt, str) or len(fmt) > 200:
        raise BankError(f"format must be a string of at most 200 characters, got {fmt!r:.80}")
    try:
        parts = list(string.Formatter().parse(fmt))
    except ValueError as err:
        raise BankError(f"format {fmt!r} is not a str.format template: {err}") from None
    fields = [(name, spec, conv) for _, name, spec, conv in parts if name is not None]
    if len(fields) != 1:
        raise BankError(f"format {fmt!r} has {len(fields)} fields; a bank format has exactly one, {{}} or {{:spec}}")
    name, spec, conv = fields[0]
    if name not in ("", "0"):
        raise BankError(f"format {fmt!r} names the field {name!r}; a bank format has one field, {{}} or {{:spec}}")
    if conv is not None:
        raise BankError(f"format {fmt!r} converts with !{conv}; a bank format has one field, {{}} or {{:spec}}")
    if not _FORMAT_SPEC.match(spec or ""):
        raise BankError(f"format {fmt!r}: the spec {spec!r} is not one a bank may use (e.g. '.3f', ',.0f', '.1%'; "
                        "widths and precisions up to 99)")
    return fmt


def format_value(value, fmt: str) -> str:
    """Format a computed value with a ``str.format`` template such as ``"{:.3f}x"`` or ``"{:.2%}"``.

    >>> format_value(1.61607, "{:.3f}x"), format_value(0.5625, "{:.2%}")
    ('1.616x', '56.25%')
    """
    check_format(fmt)
    try:
        return fmt.format(value)
    except (ValueError, TypeError, IndexError, KeyError) as err:
        raise BankError(f"format {fmt!r} does not apply to value {value!r}: {err}") from None
