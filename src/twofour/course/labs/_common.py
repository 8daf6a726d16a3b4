"""What every lab checker shares: the "not done yet" convention and the failure type.

Convention (documented for learners in ``labs/README.md``):

* An exercise cell starts as a stub whose body is ``# YOUR CODE HERE`` and
  ``raise NotImplementedError``.
* The check cell below it calls a ``check_...`` function of ``twofour.course.labs.labN`` with the
  learner's function. If the function still raises ``NotImplementedError``, the checker prints
  ``not done yet: ...`` and returns ``False``, so an untouched notebook runs top to bottom.
* A wrong answer raises :class:`CheckFailed` (an ``AssertionError``) whose message points at
  the mistake (which case, which group) without printing the expected answer.
* A right answer prints a line starting with ``passed:`` and returns ``True``.
"""

from __future__ import annotations

import functools
from typing import Callable

__all__ = ["CheckFailed", "exercise_check"]


class CheckFailed(AssertionError):
    """The learner's answer is wrong; the message is a hint, never the answer."""


def exercise_check(exercise: str) -> Callable:
    """Decorator for a checker ``check(fn, ...) -> str`` (the success message).

    The wrapped checker validates that ``fn`` is callable, turns a ``NotImplementedError`` from
    the learner's code into "not done yet", and prints the success message.

    >>> @exercise_check("double")
    ... def check_double(fn):
    ...     if fn(2) != 4:
    ...         raise CheckFailed("double(2) should be twice 2")
    ...     return "double works"
    >>> def double(x):
    ...     raise NotImplementedError
    >>> check_double(double)
    not done yet: `double` still raises NotImplementedError. Write it in the cell above, run that cell, then run this one again.
    False
    >>> check_double(lambda x: 2 * x)
    passed: double works
    True
    """

    def decorate(check: Callable[..., str]) -> Callable[..., bool]:
        @functools.wraps(check)
        def run(fn, *args, **kwargs) -> bool:
            if not callable(fn):
                raise TypeError(f"pass your function `{exercise}` itself (without calling it), got {type(fn).__name__}")
            try:
                message = check(fn, *args, **kwargs)
            except NotImplementedError:
                print(
                    f"not done yet: `{exercise}` still raises NotImplementedError. Write it in the cell above, "
                    "run that cell, then run this one again."
                )
                return False
            print(f"passed: {message}")
            return True

        return run

    return decorate
