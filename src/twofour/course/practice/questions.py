"""The bank's data model: a question, its numbers, its quick check and grading signals, and the bank."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from .expressions import evaluate_expression, format_value
from .terms import LEVELS, TEXT_FIELDS, TOPICS, BankError, _PLACEHOLDER


@dataclass(frozen=True)
class Number:
    """One number a question uses: ``name`` (used as ``{{name}}`` in text), how it is obtained, how it is shown.

    Attributes:
        name: lower_snake_case identifier.
        expr: expression on the toolkit and earlier numbers (see :func:`evaluate_expression`).
        fmt: ``str.format`` template, e.g. ``"{:.3f}x"``.
        label: what the number is, for the numbers table.
        source: a citation, for numbers that come from a published table (the expression then
            reads the toolkit's cited copy of it) or that are given inputs (``"given"``).
    """

    name: str
    expr: str
    fmt: str
    label: str
    source: str | None = None


@dataclass(frozen=True)
class QuickCheck:
    """A numeric self-test: the reader types a value; it is right within ``tolerance`` (relative).

    ``answer`` names one of the question's numbers; ``scale`` converts it to the unit asked for
    (100 for a percentage); ``derivation`` is shown after an attempt; ``basis`` (a key of
    :data:`BASES`) says what the answer key is; ``unit`` is a key of :data:`UNITS`.
    """

    ask: str
    answer: str
    unit: str
    tolerance: float
    derivation: str
    scale: float = 1.0
    basis: str = "first principles"


@dataclass(frozen=True)
class Signals:
    """What a grader listens for: signs of a strong, an acceptable and a weak answer."""

    strong: tuple[str, ...]
    acceptable: tuple[str, ...]
    weak: tuple[str, ...]

    def texts(self) -> list[str]:
        return [*self.strong, *self.acceptable, *self.weak]


@dataclass(frozen=True)
class Question:
    """One practice question. See the module docstring and ``data/practice.yaml``."""

    id: str
    level: str
    topic: str
    title: str
    prompt: str
    rubric: tuple[str, ...]
    answer: str
    mistakes: tuple[str, ...]
    follow_ups: tuple[str, ...]
    connects: str
    numbers: tuple[Number, ...] = ()
    quick_check: QuickCheck | None = None
    chapter: str | None = None
    sources: tuple[str, ...] = field(default_factory=tuple)
    signals: Signals | None = None

    def evaluate(self) -> dict[str, object]:
        """Every number of the question, in order (each may use the ones before it)."""
        return dict(_evaluate_numbers(self))

    def formatted(self) -> dict[str, str]:
        """Every number as the text shows it."""
        values = self.evaluate()
        return {n.name: format_value(values[n.name], n.fmt) for n in self.numbers}

    def placeholders(self) -> set[str]:
        """Names used as ``{{name}}`` anywhere in the question's text."""
        used: set[str] = set()
        for text in self._texts():
            used.update(_PLACEHOLDER.findall(text))
        return used

    def _texts(self) -> list[str]:
        texts = [self.title, self.prompt, self.answer, self.connects, *self.rubric, *self.mistakes, *self.follow_ups]
        if self.quick_check:
            texts += [self.quick_check.ask, self.quick_check.derivation]
        if self.signals:
            texts += self.signals.texts()
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

        return _PLACEHOLDER.sub(sub, text)

    def quick_check_expected(self) -> float:
        """The quick check's right answer in the unit asked for."""
        if self.quick_check is None:
            raise BankError(f"question {self.id!r} has no quick check")
        return float(self.evaluate()[self.quick_check.answer]) * self.quick_check.scale


@functools.lru_cache(maxsize=None)
def _evaluate_cached(question: Question) -> tuple[tuple[str, object], ...]:
    values: dict[str, object] = {}
    for n in question.numbers:
        try:
            values[n.name] = evaluate_expression(n.expr, values)
        except BankError as err:
            raise BankError(f"question {question.id!r}, number {n.name!r}: {err}") from None
        except Exception as err:  # a toolkit error: say where it came from
            raise BankError(f"question {question.id!r}, number {n.name!r}: {n.expr!r} raised {type(err).__name__}: {err}") from err
    return tuple(values.items())


def _evaluate_numbers(question: Question):
    return _evaluate_cached(question)


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

    def by_level(self, level: str) -> list[Question]:
        if level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
        return [q for q in self.questions if q.level == level]

    def by_topic(self, topic: str) -> list[Question]:
        if topic not in TOPICS:
            raise ValueError(f"topic must be one of {sorted(TOPICS)}, got {topic!r}")
        return [q for q in self.questions if q.topic == topic]
