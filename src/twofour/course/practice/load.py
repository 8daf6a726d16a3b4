"""Loading a bank: the YAML read, validated against the schema, and turned into questions."""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from .questions import Bank, Number, Question, QuickCheck, Signals
from .schema import _SIGNAL_KEYS, _require, _validate
from .terms import DEFAULT_BANK, BankError, _ID


def parse_question(raw, index: int, source: str | None = None) -> Question:
    """One question from its YAML mapping; :class:`BankError` names what is wrong.

    The structure is checked against :data:`QUESTION_SCHEMA` (JSON Schema); what relates one
    field to another is checked here. The error names the file (``source``, when given), the
    question, the path inside it, what was wrong and what is valid.
    """
    prefix = f"{source}: " if source else ""
    qid = raw.get("id") if isinstance(raw, Mapping) else None
    ok_id = isinstance(qid, str) and bool(_ID.match(qid))
    where = prefix + (f"question {qid!r}" if ok_id else f"question #{index + 1}")
    _validate(raw, "question", where)
    numbers = tuple(
        Number(n["name"], (repr(n["expr"]) if not isinstance(n["expr"], str) else n["expr"]).strip(), n.get("fmt", "{}"),
               n["label"].strip(), n["source"].strip() if n.get("source") else None)
        for n in raw.get("numbers") or []
    )
    names = [n.name for n in numbers]
    _require(len(names) == len(set(names)), where, f"number names must be unique, got {names}")
    quick_check = None
    if raw.get("quick_check") is not None:
        qc = raw["quick_check"]
        answer, tol = qc["answer"], qc.get("tolerance", 0.01)  # the schema checked answer is in names
        # The page's checker reports the tolerance in whole percent; a finer one would read "within 0%".
        _require(abs(tol * 100 - round(tol * 100)) < 1e-9, where + " (at quick_check.tolerance)",
                 f"quick_check.tolerance must be a whole percent (0.01, 0.02, ...), as the page reports it, got {tol!r}")
        quick_check = QuickCheck(qc["ask"].strip(), answer, qc.get("unit", ""), float(tol), qc["derivation"].strip(),
                                 float(qc.get("scale", 1.0)), qc["basis"])
    signals = raw["signals"]
    q = Question(
        id=qid,
        level=raw["level"],
        topic=raw["topic"],
        title=raw["title"].strip(),
        prompt=raw["prompt"].strip(),
        rubric=tuple(t.strip() for t in raw["rubric"]),
        answer=raw["answer"].strip(),
        mistakes=tuple(t.strip() for t in raw["mistakes"]),
        follow_ups=tuple(t.strip() for t in raw["follow_ups"]),
        connects=raw["connects"].strip(),
        numbers=numbers,
        quick_check=quick_check,
        chapter=raw.get("chapter"),
        sources=tuple(s.strip() for s in raw.get("sources") or []),
        signals=Signals(*(tuple(t.strip() for t in signals[key]) for key in _SIGNAL_KEYS)),
    )
    missing = q.placeholders() - set(names)
    _require(not missing, where, f"text uses {{{{...}}}} names that are not numbers of the question: {sorted(missing)}")
    return q


def _bank_text(path) -> tuple[str, str]:
    if path is None:
        ref = resources.files("twofour.course") / "data" / DEFAULT_BANK
        return ref.read_text(encoding="utf-8"), f"twofour/course/data/{DEFAULT_BANK}"
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path {str(path)!r} is not a file; expected a practice bank in YAML")
    return path.read_text(encoding="utf-8"), str(path)


def load_bank(path=None) -> Bank:
    """Load and validate the bank (default: the one shipped in ``twofour/course/data``).

    Validation is structural (fields, levels, topics, placeholders); numbers are computed
    lazily by :meth:`Question.evaluate`, which the tests call for every question.
    """
    import yaml

    text, source = _bank_text(path)
    data = yaml.safe_load(text)
    _validate(data, "bank", source)
    questions = tuple(parse_question(raw, i, source) for i, raw in enumerate(data["questions"]))
    ids = [q.id for q in questions]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise BankError(f"{source}: question ids must be unique, repeated: {dupes}")
    return Bank(questions, source)
