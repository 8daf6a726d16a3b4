"""What every lab checker shares: the failure types, the result, and :func:`exercise_check`, which
implements the convention that ``labs/README.md`` documents for learners.
"""

from __future__ import annotations

import functools
import textwrap
import traceback
from pathlib import Path
from typing import Callable

__all__ = ["CheckFailed", "CheckResult", "NotAFunction", "exercise_check", "MAX_HINT_LINES"]

MAX_HINT_LINES = 12  # what a wrong answer may show in a notebook, at most
_WIDTH = 88
_PACKAGE = Path(__file__).resolve().parents[2]  # src/twofour: frames in here are the checker's


def _wrap(text: str, first: str, rest: str = "  ") -> list[str]:
    lines: list[str] = []
    for i, paragraph in enumerate(str(text).splitlines() or [""]):
        lines += textwrap.wrap(paragraph, _WIDTH, initial_indent=first if i == 0 else rest,
                               subsequent_indent=rest, break_on_hyphens=False) or [rest.rstrip()]
    return lines


def _clip(lines: list[str], limit: int = MAX_HINT_LINES) -> list[str]:
    return lines if len(lines) <= limit else lines[: limit - 1] + ["  (...)"]


def _yours(frame: traceback.FrameSummary) -> bool:
    """Whether a frame is the learner's code (anything outside src/twofour), not the checker's."""
    return not Path(frame.filename).resolve().is_relative_to(_PACKAGE)


class _ShortTraceback:
    """Mixin: IPython (Jupyter, Colab) shows :meth:`_render_traceback_` instead of a traceback."""

    exercise: str | None = None
    head = "✗ {name}is not right yet: "
    footer = "Fix the function in the cell above, run that cell, then run this check again."

    def _render_traceback_(self) -> list[str]:  # IPython's hook; a plain Python shows the usual traceback
        head = self.head.format(name=f"`{self.exercise}` " if self.exercise else "")
        return _clip(_wrap(str(self), head) + _wrap(self.footer, "  "))


class CheckFailed(_ShortTraceback, AssertionError):
    """The learner's answer is wrong; the message is a hint, never the answer.

    In a notebook it shows as a short hint instead of a traceback:

    >>> err = CheckFailed("group (12, 7) has 3 non-zeros")
    >>> err.exercise = "find_bad_groups"
    >>> print("\\n".join(err._render_traceback_()))
    ✗ `find_bad_groups` is not right yet: group (12, 7) has 3 non-zeros
      Fix the function in the cell above, run that cell, then run this check again.
    """


class NotAFunction(_ShortTraceback, TypeError):
    """A check was given something other than the learner's function (e.g. its result)."""

    head = "✗ "
    footer = "Pass the function's name without parentheses, e.g. check_x(x), not check_x(x(...))."


class _RaisedInYourCode(_ShortTraceback, Exception):
    """The learner's function raised: show the learner's own lines, not the checker's."""

    def __init__(self, exercise: str, err: BaseException):
        super().__init__(f"{type(err).__name__}: {err}")
        self.exercise = exercise
        self.original = err

    def _render_traceback_(self) -> list[str]:
        frames = [f for f in traceback.extract_tb(self.original.__traceback__) if _yours(f)][-3:]
        lines = [f"✗ `{self.exercise}` raised {type(self.original).__name__} while being checked:"]
        for f in frames:
            where = "your cell" if f.filename.startswith("<") or "ipykernel" in f.filename else Path(f.filename).name
            lines.append(f"  {where}, line {f.lineno}, in {f.name}")
            if f.line:
                lines.append(f"    {f.line.strip()}")
        lines += _wrap(f"{type(self.original).__name__}: {self.original}", "  ")
        return _clip(lines + _wrap(self.footer, "  "))


class CheckResult:
    """What a checker returns: true if the answer passed, false if the exercise is not done yet.

    It compares equal to ``True``/``False``; in a notebook it displays nothing.

    >>> CheckResult(True) == True, bool(CheckResult(False)), CheckResult(False).passed
    (True, False, False)
    """

    __slots__ = ("passed",)

    def __init__(self, passed: bool):
        self.passed = bool(passed)

    def __bool__(self) -> bool:
        return self.passed

    def __eq__(self, other) -> bool:
        return self.passed == bool(other) if isinstance(other, (CheckResult, bool)) else NotImplemented

    def __hash__(self) -> int:
        return hash(self.passed)

    def __repr__(self) -> str:
        return f"CheckResult(passed={self.passed})"

    def _ipython_display_(self) -> None:
        """Nothing to show: the checker printed "passed: ..." or "not done yet: ..." already."""


def exercise_check(exercise: str) -> Callable:
    """Decorator for a checker ``check(fn, ...) -> str`` (the success message).

    The wrapped checker refuses a ``fn`` that is not callable, reports a ``NotImplementedError`` as
    "not done yet" and tags a :class:`CheckFailed` with the exercise's name.

    >>> @exercise_check("double")
    ... def check_double(fn):
    ...     if fn(2) != 4:
    ...         raise CheckFailed("double(2) should be twice 2")
    ...     return "double works"
    >>> def double(x):
    ...     raise NotImplementedError
    >>> check_double(double).passed
    not done yet: `double` still raises NotImplementedError.
      Write it in the cell above, run that cell, then run this one again.
    False
    >>> check_double(lambda x: 2 * x).passed
    passed: double works
    True
    """

    def decorate(check: Callable[..., str]) -> Callable[..., CheckResult]:
        @functools.wraps(check)
        def run(fn, *args, **kwargs) -> CheckResult:
            if not callable(fn):
                raise NotAFunction(
                    f"pass your function `{exercise}` itself (without calling it), got {type(fn).__name__}"
                )
            try:
                message = check(fn, *args, **kwargs)
            except NotImplementedError:
                print(
                    f"not done yet: `{exercise}` still raises NotImplementedError.\n"
                    "  Write it in the cell above, run that cell, then run this one again."
                )
                return CheckResult(False)
            except CheckFailed as err:
                err.exercise = err.exercise or exercise
                raise
            except Exception as err:  # the learner's code raised: show their lines, not ours
                if any(map(_yours, traceback.extract_tb(err.__traceback__)[1:])):
                    raise _RaisedInYourCode(exercise, err) from err
                raise
            print(f"passed: {message}")
            return CheckResult(True)

        return run

    return decorate
