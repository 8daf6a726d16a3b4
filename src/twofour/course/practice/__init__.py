"""Interview practice questions as data: load the bank, compute every number in it, render it.

The bank (``twofour/course/data/practice.yaml``) is a list of questions. Each has a prompt, a
rubric two interviewers grade alike (must-haves, without any of which an answer fails; strong
signals; red flags), what a pass looks like for a mid-level, a senior and a staff engineer, a
worked answer, common mistakes and follow-ups; a design question adds its assumptions and what
would change the decision. Its ``kind`` says what thinking it asks for (fundamentals ask for a
concept or one calculation; deep questions for several steps, a diagnosis or a design), and
``skill`` and ``setting`` name what it tests where: no two questions share both. Every
number a question states is **not typed into the text**: it is a named entry of the question's
``numbers`` list, computed by a short expression on the toolkit (``amdahl.speedup(0.87, 1.78)``)
or taken from a cited table in the toolkit, and the text refers to it as ``{{name}}``. So when a
model, a GPU table or a formula changes, the worked answers change with it, and a typo in an
expression fails the tests (``tests/course/practice/test_practice.py`` evaluates every one).

A quick check asks for one number and says what it is graded against (``basis``): first-principles
arithmetic, a published measurement, or the project's own GPU measurement, never a model's
prediction. Its unit is one the site's calculators show (MB and MiB told apart), and its
tolerance a whole percent, shown the way the page's checker reports it; a tolerance of 2% or
more lists the standard approximations it accepts (each tested to land inside it).

A bank is data, and so are its expressions: they are parsed with :mod:`ast` and interpreted
(:mod:`.expressions`), never ``eval``-ed, over an explicit registry (:mod:`.registry`): numbers
and arithmetic, the values and functions registered for banks, namespaces that list each name
they hold (``amdahl.speedup``, never a module object), and the fields and methods of registered
result types (``est.decode.p``). Anything else is refused with the question, the expression
and the offending part. The YAML is bounded too: size, nesting, UTF-8, no anchors or aliases.

One file per stage of the data: :mod:`.terms` (levels, topics, units) -> :mod:`.load` (the
YAML, validated by :mod:`.schema`) -> :mod:`.questions` (the data model; numbers computed by
:mod:`.expressions` over :mod:`.registry`) -> :mod:`.render` (Markdown for the site). This
package re-exports their public names.

>>> from twofour.course.practice import load_bank
>>> bank = load_bank()
>>> len(bank) >= 85
True
>>> q = bank.get("amdahl-bs1-decode")
>>> values = q.evaluate()
>>> round(values["bs1_speedup"], 3)
1.364
>>> "{{" in q.render("answer")
False
"""

from ..._common.lazy import lazy_exports

# Imported on first use: the site's hooks read LEVELS and TOPICS without the expression registry
# (which imports PyTorch and every toolkit module a bank may name).
__getattr__, __dir__ = lazy_exports(__name__, {
    **dict.fromkeys(("NAMESPACE", "check_expression", "check_format", "evaluate_expression", "format_value"), ".expressions"),
    **dict.fromkeys(("compute_bound_m", "cost_per_token_ratio", "first_torch_pinning", "funnel_step", "measured_crossover_m",
                      "measured_gemm", "measured_phase_speedup", "published_speedup", "published_value", "tokens_per_second",
                      "transposable_patterns", "wave_count"),
                    ".helpers"),
    **dict.fromkeys(("load_bank", "parse_question"), ".load"),
    **dict.fromkeys(("Accept", "Bank", "Design", "FollowUp", "Levels", "Number", "Question", "QuickCheck", "Rubric"), ".questions"),
    **dict.fromkeys(("NEIGHBOURS_PAGE", "page_of", "render_markdown"), ".render"),
    **dict.fromkeys(("BANK_SCHEMA", "QUESTION_SCHEMA"), ".schema"),
    **dict.fromkeys(("BASES", "DEFAULT_BANK", "FORMULAS", "GRADES", "KINDS", "KINDS_BY_LEVEL", "LEVELS", "MAX_DRILLS",
                      "NEIGHBOUR_TOPICS", "TEXT_FIELDS", "TOPICS", "UNITS", "BankError"),
                    ".terms"),
})

# Every name in the map above, none of them imported yet.
__all__ = sorted(set(__dir__()) - set(globals()))
