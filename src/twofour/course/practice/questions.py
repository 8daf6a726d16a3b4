"""The bank's data model: a question, its numbers, its quick check and grading signals, and the bank."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from .expressions import evaluate_expression, format_value
from .terms import KINDS, LEVELS, TEXT_FIELDS, TOPICS, BankError, PLACEHOLDER


@dataclass(frozen=True)
class Number:
    """One number a question uses as ``{{name}}``: ``expr`` on the toolkit and earlier numbers, ``fmt``
    (``"{:.3f}x"``), ``label`` for the numbers table, ``source`` (a citation, or ``"given"``)."""

    name: str
    expr: str
    fmt: str
    label: str
    source: str | None = None


@dataclass(frozen=True)
class Accept:
    """An approximation a quick check accepts: ``number`` (one of the question's numbers, in the
    quick check's unit before ``scale``) and ``why`` (which standard approximation it is)."""

    number: str
    why: str


@dataclass(frozen=True)
class QuickCheck:
    """A numeric self-test, right within ``tolerance`` (relative) of the number ``answer`` names times
    ``scale`` (100 for a percent); ``basis``: a key of :data:`BASES`, ``unit``: of :data:`UNITS`."""

    ask: str
    answer: str
    unit: str
    tolerance: float
    derivation: str
    scale: float = 1.0
    basis: str = "first principles"
    accepts: tuple[Accept, ...] = ()


@dataclass(frozen=True)
class Rubric:
    """How two interviewers grade alike: ``must`` (missing any one fails), ``strong``, ``red_flags``."""

    must: tuple[str, ...]
    strong: tuple[str, ...]
    red_flags: tuple[str, ...]


@dataclass(frozen=True)
class FollowUp:
    """What the interviewer asks next: ``ask``, the ``answer`` expected and what a ``strong`` answer adds.

    >>> FollowUp("Why?", "Because the tile is 256 wide.").answered
    True
    """

    ask: str
    answer: str = ""
    strong: str = ""

    @property
    def answered(self) -> bool:
        return bool(self.answer)


@dataclass(frozen=True)
class Design:
    """An open-ended question's frame: what the worked answer assumes, and what would change the decision."""

    assumptions: tuple[str, ...]
    changes: tuple[str, ...]


@dataclass(frozen=True)
class Question:
    """One practice question. See the module docstring and ``data/practice.yaml``."""

    id: str
    level: str
    topic: str
    kind: str
    skill: str
    setting: str
    title: str
    prompt: str
    rubric: Rubric
    levels: tuple[tuple[str, str], ...]  # (grade, what a pass looks like), for each of GRADES
    answer: str
    mistakes: tuple[str, ...]
    follow_ups: tuple[FollowUp, ...]
    connects: str
    numbers: tuple[Number, ...] = ()
    quick_check: QuickCheck | None = None
    chapter: str | None = None
    sources: tuple[str, ...] = field(default_factory=tuple)
    design: Design | None = None
    drills: tuple[str, ...] = ()
    calculator: tuple[tuple[str, str], ...] = ()

    def calculator_query(self) -> str:
        """The calculator's URL query for a calculator task (``gpu=H100&batch=8...``), or ``""``.

        >>> Question("t", "applied", "capacity", "calculation", "s", "x", "T", "P", Rubric((), (), ()),
        ...          (), "A", (), (), "C", calculator=(("gpu", "H100"), ("batch", "8"))).calculator_query()
        'gpu=H100&batch=8'
        """
        from urllib.parse import urlencode

        return urlencode(self.calculator, safe=",:")

    def evaluate(self) -> dict[str, object]:
        """Every number of the question, in order (each may use the ones before it)."""
        return dict(_evaluate_cached(self))

    def formatted(self) -> dict[str, str]:
        """Every number as the text shows it."""
        values = self.evaluate()
        return {n.name: format_value(values[n.name], n.fmt) for n in self.numbers}

    def placeholders(self) -> set[str]:
        """Names used as ``{{name}}`` anywhere in the question's text."""
        return {name for text in self._texts() for name in PLACEHOLDER.findall(text)}

    def grading_texts(self) -> list[str]:
        """What a grader reads: the rubric and the level expectations."""
        r = self.rubric
        return [*r.must, *r.strong, *r.red_flags, *(text for _, text in self.levels)]

    def _texts(self) -> list[str]:
        texts = [self.title, self.prompt, self.answer, self.connects, *self.grading_texts(), *self.mistakes,
                 *(t for f in self.follow_ups for t in (f.ask, f.answer, f.strong) if t)]
        if self.quick_check:
            texts += [self.quick_check.ask, self.quick_check.derivation, *(a.why for a in self.quick_check.accepts)]
        if self.design:
            texts += [*self.design.assumptions, *self.design.changes]
        return texts

    def render(self, field_name: str) -> str:
        """One text field (``prompt``, ``answer``, ``connects``, ``title``) with every ``{{name}}`` filled in."""
        if field_name not in TEXT_FIELDS + ("title",):
            raise ValueError(f"field_name must be one of {TEXT_FIELDS + ('title',)}, got {field_name!r}")
        return self.fill(getattr(self, field_name))

    def fill(self, text: str) -> str:
        """``text`` with every ``{{name}}`` replaced by the question's computed, formatted number."""
        shown = self.formatted()

        def sub(m: re.Match) -> str:
            if m.group(1) not in shown:
                raise BankError(f"question {self.id!r}: {{{{{m.group(1)}}}}} is not one of its numbers {sorted(shown)}")
            return shown[m.group(1)]

        return PLACEHOLDER.sub(sub, text)

    def quick_check_expected(self) -> float:
        """The quick check's right answer in the unit asked for."""
        if self.quick_check is None:
            raise BankError(f"question {self.id!r} has no quick check")
        return float(self.evaluate()[self.quick_check.answer]) * self.quick_check.scale

    def quick_check_accepted(self) -> list[tuple[float, str]]:
        """Each approximation the quick check accepts, in the unit asked for, with why."""
        if self.quick_check is None:
            raise BankError(f"question {self.id!r} has no quick check")
        values = self.evaluate()
        return [(float(values[a.number]) * self.quick_check.scale, a.why) for a in self.quick_check.accepts]


@functools.lru_cache(maxsize=None)
def _evaluate_cached(question: Question) -> tuple[tuple[str, object], ...]:
    values: dict[str, object] = {}
    for n in question.numbers:
        try:
            values[n.name] = evaluate_expression(n.expr, values)
        except BankError as err:  # evaluate_expression turns every error into one, naming the expression
            raise BankError(f"question {question.id!r}, number {n.name!r}: {err}") from None
    return tuple(values.items())


@dataclass(frozen=True)
class Bank:
    """The questions, in file order, with lookups by id, level and topic."""

    questions: tuple[Question, ...]
    source: str

    def __len__(self) -> int:
        return len(self.questions)

    def __iter__(self):
        return iter(self.questions)

    def get(self, qid: str) -> Question:
        for q in self.questions:
            if q.id == qid:
                return q
        raise KeyError(f"no question with id {qid!r} in {self.source}")

    def _where(self, field_name: str, value: str, valid) -> list[Question]:
        if value not in valid:
            raise ValueError(f"{field_name} must be one of {valid}, got {value!r}")
        return [q for q in self.questions if getattr(q, field_name) == value]

    def by_level(self, level: str) -> list[Question]:
        return self._where("level", level, LEVELS)

    def by_kind(self, kind: str) -> list[Question]:
        return self._where("kind", kind, list(KINDS))

    def by_topic(self, topic: str) -> list[Question]:
        return self._where("topic", topic, sorted(TOPICS))
