"""Match a ``re:`` pattern from a file in time linear in the name: no backtracking, ever.

compressed-tensors' configs name modules with ``"re:<regex>"``, matched like ``re.match``.
Python's ``re`` backtracks, so ``re:(a+)+$`` against ``"a" * 40 + "!"`` runs for hours, and the
pattern comes from the file. Here the pattern is parsed by Python's own parser (the syntax is
exactly ``re``'s) and run as a Thompson automaton, one character at a time: the work is at most
(name length) x (automaton size, capped by :data:`MAX_STATES`). Steps taken are cached (a DFA
built lazily, as RE2 does). Back-references, look-arounds, conditionals and atomic groups have
no such automaton and are refused with one line (:class:`PatternError`).

>>> m = compile_pattern(r"(a+)+$")
>>> m("a" * 40 + "!"), m("aaa")
(False, True)
>>> compile_pattern(r".*mlp\\.gate$")("model.layers.0.mlp.gate"), compile_pattern("lm_head")("lm_head_2")
(True, True)
"""

from __future__ import annotations

import functools
import re
import warnings

try:  # Python 3.11+
    from re import _constants as C, _parser as P
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as C  # type: ignore[no-redef]
    import sre_parse as P  # type: ignore[no-redef]

__all__ = ["PatternError", "compile_pattern", "MAX_STATES", "MAX_WORK"]

MAX_STATES = 20_000  # a 200-character pattern with counted repeats ({1,100}) stays far below this
MAX_WORK = 1_500_000  # states visited outside the cache, over all names: a few seconds at worst; real patterns use far less
_MAX_MEMO = 50_000  # cached steps of the lazily built DFA, per pattern


class PatternError(ValueError):
    """A pattern this matcher cannot run (or cannot run within its bound); the message is one line."""


_WORD = re.compile(r"\w")


_CATEGORY_TEXT = {
    C.CATEGORY_DIGIT: r"\d", C.CATEGORY_NOT_DIGIT: r"\D", C.CATEGORY_SPACE: r"\s",
    C.CATEGORY_NOT_SPACE: r"\S", C.CATEGORY_WORD: r"\w", C.CATEGORY_NOT_WORD: r"\W",
}


def _category_text(cat) -> str:
    if cat not in _CATEGORY_TEXT:
        raise PatternError(f"the character category {cat} is not supported")
    return _CATEGORY_TEXT[cat]


class _Builder:
    def __init__(self, ignore_case: bool, dotall: bool):
        self.dotall = dotall
        self.kind: list[str] = []  # "char", "split", "at", "match"
        self.arg: list = []
        self.outs: list[list[int]] = []
        self.fold = ignore_case
        self.classes: dict = {}  # regex text of a character class -> its compiled fullmatch

    def node(self, kind: str, arg=None, outs=()) -> int:
        if len(self.kind) >= MAX_STATES:
            raise PatternError(f"it needs more than {MAX_STATES:,} automaton states (counted repeats too large)")
        self.kind.append(kind)
        self.arg.append(arg)
        self.outs.append(list(outs))
        return len(self.kind) - 1

    def char(self, text: str, nxt: int) -> int:
        """A node for one character class, given as regex text: tested by ``re`` itself on one character,
        so case folding (``(?i)``, with its special cases such as ``ſ`` and ``s``) and ``\\d`` are exactly ``re``'s."""
        if text not in self.classes:  # one test per distinct class: ``(.?){1,400}`` has 400 nodes and one class
            self.classes[text] = re.compile(text, (re.IGNORECASE if self.fold else 0) | re.DOTALL).fullmatch
        return self.node("char", text, [nxt])

    def seq(self, items, nxt: int) -> int:
        for op, av in reversed(list(items)):
            nxt = self.item(op, av, nxt)
        return nxt

    def item(self, op, av, nxt: int) -> int:
        if op is C.LITERAL:
            return self.char(re.escape(chr(av)), nxt)
        if op is C.NOT_LITERAL:
            return self.char(f"[^{re.escape(chr(av))}]", nxt)
        if op is C.ANY:
            return self.char("." if self.dotall else "[^\n]", nxt)
        if op is C.IN:
            return self.char(self._set(av), nxt)
        if op is C.CATEGORY:
            return self.char(_category_text(av), nxt)
        if op is C.BRANCH:
            return self.node("split", None, [self.seq(alt, nxt) for alt in av[1]])
        if op is C.SUBPATTERN:
            group, add, remove, body = av
            if add or remove:
                raise PatternError("inline flags inside a group are not supported")
            return self.seq(body, nxt)
        if op in (C.MAX_REPEAT, C.MIN_REPEAT):
            lo, hi, body = av
            tail = nxt
            if hi == C.MAXREPEAT:
                loop = self.node("split")
                self.outs[loop] = [self.seq(body, loop), nxt]
                tail = loop
            else:
                for _ in range(hi - lo):
                    tail = self.node("split", None, [self.seq(body, tail), nxt])
            for _ in range(lo):
                tail = self.seq(body, tail)
            return tail
        if op is C.AT:
            if av not in (C.AT_BEGINNING, C.AT_BEGINNING_STRING, C.AT_END, C.AT_END_STRING,
                          C.AT_BOUNDARY, C.AT_NON_BOUNDARY):
                raise PatternError(f"the anchor {av} is not supported")
            return self.node("at", av, [nxt])
        name = str(op).lower().replace("_", " ")
        raise PatternError(f"{name} (back-references, look-arounds, conditionals, atomic groups and possessive "
                           "repeats) cannot be matched without backtracking; write the pattern without it")

    def _set(self, items) -> str:
        parts = []
        for op, av in items:
            if op is C.NEGATE:
                parts.insert(0, "^")
            elif op is C.LITERAL:
                parts.append(re.escape(chr(av)))
            elif op is C.RANGE:
                parts.append(f"{re.escape(chr(av[0]))}-{re.escape(chr(av[1]))}")
            elif op is C.CATEGORY:
                parts.append(_category_text(av))
            else:
                raise PatternError(f"{str(op).lower()} inside a character set is not supported")
        return "[" + "".join(parts) + "]"


def _at(code, s: str, i: int) -> bool:
    if code in (C.AT_BEGINNING, C.AT_BEGINNING_STRING):
        return i == 0
    if code == C.AT_END_STRING:
        return i == len(s)
    if code == C.AT_END:
        return i == len(s) or (i == len(s) - 1 and s[-1] == "\n")
    if code == C.AT_NON_BOUNDARY and not s:
        return False  # as in re: \B never holds in an empty string
    before = i > 0 and bool(_WORD.match(s[i - 1]))
    after = i < len(s) and bool(_WORD.match(s[i]))
    return (before != after) if code == C.AT_BOUNDARY else (before == after)


@functools.lru_cache(maxsize=256)
def compile_pattern(pattern: str):
    """A function ``name -> bool`` that answers ``re.match(pattern, name) is not None`` in linear time;
    :class:`PatternError` for a pattern it cannot run that way, ``re.error`` for one that is no regex."""
    with warnings.catch_warnings():  # re's FutureWarning ("Possible nested set") would print a source line
        warnings.simplefilter("ignore")
        parsed = P.parse(pattern)
    flags = parsed.state.flags
    if flags & ~(re.IGNORECASE | re.UNICODE | re.DOTALL):
        raise PatternError("flags other than (?i) and (?s) are not supported")
    b = _Builder(bool(flags & re.IGNORECASE), bool(flags & re.DOTALL))
    accept = b.node("match")
    start = b.seq(parsed, accept)
    kind, arg, outs = b.kind, b.arg, b.outs

    work = [0]  # automaton states visited outside the cache, over every name this pattern has seen

    def closure(states, s: str, i: int) -> frozenset[int]:
        seen: set[int] = set()
        stack = list(states)
        while stack:
            q = stack.pop()
            if q in seen:
                continue
            seen.add(q)
            k = kind[q]
            if k == "split":
                stack.extend(outs[q])
            elif k == "at":
                if _at(arg[q], s, i):
                    stack.extend(outs[q])
        work[0] += len(seen)
        if work[0] > MAX_WORK:
            raise PatternError(f"matching it took more than {MAX_WORK:,} automaton steps (a pattern of counted repeats "
                               "against many long names); write it with fewer repeats")
        return frozenset(seen)

    memo: dict = {}  # (state set, character, what follows) -> next state set: a DFA built as it is used (as RE2 does)

    def match(s: str) -> bool:
        current = closure([start], s, 0)
        n = len(s)
        for i, ch in enumerate(s):
            if accept in current:
                return True
            # The anchors after this step (^ $ \A \Z \b \B at i + 1) see only ch, the next character's class
            # and whether the end is near, so those, with the set and ch, decide the next set: one look-up.
            j = i + 1
            after = 0 if j == n else (1 if j == n - 1 and s[j] == "\n" else 2 + bool(_WORD.match(s[j])))
            key = (current, ch, after)
            nxt = memo.get(key)
            if nxt is None:
                if len(memo) >= _MAX_MEMO:
                    memo.clear()
                work[0] += len(current)
                hits = {text: test(ch) is not None for text, test in b.classes.items()}
                nxt = [o for q in current if kind[q] == "char" and hits[arg[q]] for o in outs[q]]
                nxt = memo[key] = closure(nxt, s, j) if nxt else frozenset()
            if not nxt:
                return False
            current = nxt
        return accept in current

    return match
