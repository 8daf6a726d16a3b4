"""Interview practice questions as data: load the bank, compute every number in it, render it.

No number is typed into the bank's text (``twofour/course/data/practice.yaml``): each is a named
``numbers`` entry, computed by an expression on the toolkit (``amdahl.speedup(0.87, 1.78)``) and
referred to as ``{{name}}``, so the answers follow the toolkit.

Stages: :mod:`.terms` (vocabulary) -> :mod:`.load` (the bounded YAML, validated by :mod:`.schema`) ->
:mod:`.questions` (the data model; numbers interpreted by :mod:`.expressions` over :mod:`.registry`,
never ``eval``-ed) -> :mod:`.render` (Markdown for the site). This package re-exports their public names.

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
    **dict.fromkeys(("Accept", "Bank", "Design", "FollowUp", "Number", "Question", "QuickCheck", "Rubric"), ".questions"),
    **dict.fromkeys(("NEIGHBOURS_PAGE", "page_of", "render_markdown"), ".render"),
    **dict.fromkeys(("BANK_SCHEMA", "QUESTION_SCHEMA"), ".schema"),
    **dict.fromkeys(("BASES", "DEFAULT_BANK", "FORMULAS", "GRADES", "KINDS", "KINDS_BY_LEVEL", "LEVELS", "MAX_DRILLS",
                      "NEIGHBOUR_TOPICS", "TEXT_FIELDS", "TOPICS", "UNITS", "BankError"),
                    ".terms"),
})

# Every name in the map above, none of them imported yet.
__all__ = sorted(set(__dir__()) - set(globals()))
