"""Loading a bank: the YAML read, validated against the schema, and turned into questions."""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from ..._common.text import printable, show_path
from .expressions import check_expression, check_format
from .questions import Accept, Bank, Design, FollowUp, Number, Question, QuickCheck, Rubric
from .schema import require, validate
from .terms import CALCULATOR_MUSTS, DEFAULT_BANK, GRADES, MAX_DRILLS, RUBRIC_FIELDS, SLUG, BankError


def parse_question(raw, index: int, source: str | None = None) -> Question:
    """One question from its YAML mapping, its structure checked against :data:`QUESTION_SCHEMA`, what
    relates fields here; a :class:`BankError` names the file, question, path, what is wrong and valid."""
    prefix = f"{source}: " if source else ""
    qid = raw.get("id") if isinstance(raw, Mapping) else None
    ok_id = isinstance(qid, str) and bool(SLUG.match(qid))
    where = prefix + (f"question {qid!r}" if ok_id else f"question #{index + 1}")
    validate(raw, "question", where)
    numbers = tuple(_number(n, i, where, raw["numbers"][:i]) for i, n in enumerate(raw.get("numbers") or []))
    names = [n.name for n in numbers]
    require(len(names) == len(set(names)), where, f"number names must be unique, got {names}")
    quick_check = None
    if raw.get("quick_check") is not None:
        qc = raw["quick_check"]
        answer, tol = qc["answer"], qc.get("tolerance", 0.01)  # the schema checked answer is in names
        # The page's checker reports the tolerance in whole percent; a finer one would read "within 0%".
        require(abs(tol * 100 - round(tol * 100)) < 1e-9, where + " (at quick_check.tolerance)",
                 f"quick_check.tolerance must be a whole percent (0.01, 0.02, ...), as the page reports it, got {tol!r}")
        accepts = tuple(Accept(a["number"], a["why"].strip()) for a in qc.get("accepts") or [])
        quick_check = QuickCheck(qc["ask"].strip(), answer, qc.get("unit", ""), float(tol), qc["derivation"].strip(),
                                 float(qc.get("scale", 1.0)), qc["basis"], accepts)
    rubric, levels = raw["rubric"], raw["levels"]
    design = raw.get("design")
    q = Question(
        id=qid,
        **{key: raw[key] for key in ("level", "topic", "kind", "skill", "setting")},
        **{key: raw[key].strip() for key in ("title", "prompt", "answer", "connects")},
        rubric=Rubric(*(tuple(t.strip() for t in rubric[key]) for key in RUBRIC_FIELDS)),
        levels=tuple((grade, levels[grade].strip()) for grade in GRADES),
        mistakes=tuple(t.strip() for t in raw["mistakes"]),
        follow_ups=tuple(FollowUp(f.strip()) if isinstance(f, str)
                         else FollowUp(f["ask"].strip(), f["answer"].strip(), (f.get("strong") or "").strip())
                         for f in raw["follow_ups"]),
        numbers=numbers,
        quick_check=quick_check,
        chapter=raw.get("chapter"),
        sources=tuple(s.strip() for s in raw.get("sources") or []),
        design=Design(tuple(t.strip() for t in design["assumptions"]), tuple(t.strip() for t in design["changes"]))
        if design else None,
        drills=tuple(raw.get("drills") or ()),
        calculator=tuple((key, str(value)) for key, value in (raw.get("calculator") or {}).items()),
    )
    if q.calculator:  # a calculator task grades what its result establishes and what it leaves open
        for opening in CALCULATOR_MUSTS:
            require(any(m.startswith(opening) for m in q.rubric.must), where + " (at rubric.must)",
                     f"a calculator task needs a must-have that opens with {opening!r}")
    missing = q.placeholders() - set(names)
    require(not missing, where, f"text uses {{{{...}}}} names that are not numbers of the question: {sorted(missing)}")
    return q


# A bank is shared data: bounded before it is parsed, far above the shipped bank's size. yaml.safe_dump
# writes aliases for shared objects, so a few are allowed, but no file may expand past MAX_BANK_NODES.
MAX_BANK_BYTES = 4 << 20
MAX_BANK_DEPTH = 16
MAX_BANK_ALIASES = 1_000
MAX_BANK_NODES = 1_000_000


def _number(n, i: int, where: str, earlier) -> Number:
    """One number, its expression and format refused now if not allowed (nothing runs here)."""
    expr = (repr(n["expr"]) if not isinstance(n["expr"], str) else n["expr"]).strip()
    fmt = n.get("fmt", "{}")
    for key, check in (("expr", lambda: check_expression(expr, [m["name"] for m in earlier])),
                       ("fmt", lambda: check_format(fmt))):
        try:
            check()
        except BankError as err:
            raise BankError(f"{where} (at numbers[{i}].{key}): number {n['name']!r}: {err}") from None
    return Number(n["name"], expr, fmt, n["label"].strip(), n["source"].strip() if n.get("source") else None)


def _bank_text(path) -> tuple[str, str]:
    if path is None:
        ref = resources.files("twofour.course") / "data" / DEFAULT_BANK
        return _decode(ref.read_bytes(), f"twofour/course/data/{DEFAULT_BANK}"), f"twofour/course/data/{DEFAULT_BANK}"
    path = Path(path)
    shown = show_path(path)
    if not os.path.isfile(path):  # a FIFO would block, a device never end
        raise FileNotFoundError(f"path {shown!r} is not a file; expected a practice bank in YAML")
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BANK_BYTES + 1)
    except OSError as err:  # /proc/self/mem is a "regular file" that cannot be read
        raise BankError(f"{shown}: cannot be read ({err.strerror or err}); expected a practice bank in YAML") from None
    if len(data) > MAX_BANK_BYTES:
        raise BankError(f"{shown}: more than {MAX_BANK_BYTES:,} bytes; a practice bank is at most that")
    return _decode(data, shown), shown


def _decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BankError(f"{source}: not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start:,}); "
                        "save the bank as UTF-8") from None


def _parse_yaml(text: str, source: str):
    """The YAML's data, refusing more than :data:`MAX_BANK_DEPTH` levels, :data:`MAX_BANK_ALIASES` aliases
    or :data:`MAX_BANK_NODES` nodes on the event stream (PyYAML's parser is iterative, its composer
    recurses), before any object is built. libyaml reads the bank when present (ten times faster); a bank
    it refuses is read again by PyYAML, whose error says why."""
    import yaml

    fast = getattr(yaml, "CSafeLoader", None)
    if fast is not None:
        try:
            return _parse_checked(text, source, fast)
        except BankError:
            pass
    return _parse_checked(text, source, yaml.SafeLoader)


def _parse_checked(text: str, source: str, loader):
    """:func:`_parse_yaml` with one PyYAML ``loader`` (its parser, then its constructor)."""
    import yaml

    def where(event, mark: str = "start_mark") -> str:
        at = getattr(event, mark, None)
        return f" (line {at.line + 1}, column {at.column + 1})" if at is not None else ""

    try:
        sizes: dict[str, int] = {}  # anchor -> expanded node count
        open_nodes: list[list] = [[None, 0]]  # [anchor, count] per open collection; the bottom one is the stream
        aliases = 0
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.AliasEvent):
                aliases += 1
                if aliases > MAX_BANK_ALIASES:
                    raise BankError(f"{source}: more than {MAX_BANK_ALIASES:,} YAML aliases{where(event)}; "
                                    "write the values out")
                if event.anchor not in sizes:  # names a node still open: a recursive structure
                    raise BankError(f"{source}: the alias *{printable(event.anchor, 40)} refers to a node that "
                                    f"contains it{where(event)}; not a practice bank")
                open_nodes[-1][1] += sizes[event.anchor]
            elif isinstance(event, yaml.ScalarEvent):
                open_nodes[-1][1] += 1
                if event.anchor is not None:
                    sizes[event.anchor] = 1
            elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                open_nodes.append([event.anchor, 1])
                if len(open_nodes) - 1 > MAX_BANK_DEPTH:
                    raise BankError(f"{source}: nested deeper than {MAX_BANK_DEPTH} levels{where(event)}; "
                                    "not a practice bank")
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                anchor, count = open_nodes.pop()
                if anchor is not None:
                    sizes[anchor] = count
                open_nodes[-1][1] += count
            if sum(n for _, n in open_nodes) > MAX_BANK_NODES:  # every node read so far, once
                raise BankError(f"{source}: expands to more than {MAX_BANK_NODES:,} YAML nodes{where(event)} "
                                "(aliases repeating aliases?); not a practice bank")
        return yaml.load(text, Loader=loader)  # noqa: S506 (loader is a safe loader)
    except yaml.YAMLError as err:
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        at = where(err, "problem_mark")
        raise BankError(f"{source}: not valid YAML{at}: {printable(str(problem), 200)}") from None
    except RecursionError:
        raise BankError(f"{source}: nested too deeply to read; not a practice bank") from None
    except BankError:
        raise
    except (ValueError, OverflowError) as err:  # e.g. an integer of 5,000 digits (Python's int-from-string limit)
        raise BankError(f"{source}: a value cannot be read: {printable(str(err), 200)}") from None


def load_bank(path=None) -> Bank:
    """Load and validate the bank (default: the shipped one, at most :data:`MAX_BANK_BYTES` of UTF-8); each
    problem is one :class:`BankError` line. Numbers are computed lazily by :meth:`Question.evaluate`."""
    return _bank(*_bank_text(path))


@functools.lru_cache(maxsize=4)
def _bank(text: str, source: str) -> Bank:
    # Kept by text (a changed file is new text): a bank is frozen, and reading one costs about 0.7 s.
    data = _parse_yaml(text, source)
    validate(data, "bank", source)
    questions = tuple(parse_question(raw, i, source) for i, raw in enumerate(data["questions"]))
    ids = [q.id for q in questions]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise BankError(f"{source}: question ids must be unique, repeated: {dupes}")
    # Two questions that test the same skill in the same setting are one question asked twice.
    seen: dict[tuple[str, str], str] = {}
    for q in questions:
        first = seen.setdefault((q.skill, q.setting), q.id)  # ids are unique
        if first != q.id:
            raise BankError(f"{source}: questions {first!r} and {q.id!r} both test skill {q.skill!r} in "
                            f"setting {q.setting!r}; merge them or change what one asks")
    for formula in sorted({f for q in questions for f in q.drills}):
        drilling = [q.id for q in questions if formula in q.drills]
        if len(drilling) > MAX_DRILLS:
            raise BankError(f"{source}: {len(drilling)} questions drill {formula!r} ({', '.join(drilling)}); at most "
                            f"{MAX_DRILLS} may")
    return Bank(questions, source)
