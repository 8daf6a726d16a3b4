"""A question as Markdown for the site (the hook ``site_hooks/practice.py`` calls :func:`render_markdown`)."""

from __future__ import annotations

import html

from .questions import Question
from .terms import BASES, GRADES, KINDS, LEVELS, NEIGHBOUR_TOPICS, TOPICS, UNITS

# The page of the questions on the 2:4 question's neighbours, at every level (page_of).
NEIGHBOURS_PAGE = "neighbours"


def page_of(q: Question) -> str:
    """The practice page a question's card is on: its level, or :data:`NEIGHBOURS_PAGE` for the
    :data:`~twofour.course.practice.terms.NEIGHBOUR_TOPICS`.

    >>> from twofour.course.practice import load_bank
    >>> bank = load_bank()
    >>> page_of(bank.get("what-is-two-four")), page_of(bank.get("one-wave-too-many"))
    ('fundamentals', 'neighbours')
    """
    return NEIGHBOURS_PAGE if q.topic in NEIGHBOUR_TOPICS else q.level


def _numbers_table(q: Question) -> str:
    shown = q.formatted()
    values = q.evaluate()
    rows = ["| quantity | value | how it is obtained |", "|---|---|---|"]
    for n in q.numbers:
        if not isinstance(values[n.name], (int, float, str, tuple)):
            continue  # an intermediate object (an estimate, a prediction), not a number to show
        how = f"`{n.expr}`" + (f" ({n.source})" if n.source else "")
        rows.append(f"| {n.label} | {shown[n.name]} | {how.replace('|', '&#124;')} |")
    return "\n".join(rows)


def _accepts_phrase(q: Question) -> str:
    """``; accepts 1.78 (1/0.5625 from memory)`` for each approximation the tolerance admits."""
    unit = q.quick_check.unit
    unit = ("" if unit in ("x", "%") else " ") + unit if unit else ""
    parts = [f"{v:,.3g}{unit} ({q.fill(why)})" if abs(v) < 1000 else f"{v:,.0f}{unit} ({q.fill(why)})"
             for v, why in q.quick_check_accepted()]
    return f"; accepts {' or '.join(parts)}" if parts else ""


def _follow_ups(q: Question) -> list[str]:
    """The follow-up chain, in order: each ask, the answer expected, what a strong one adds."""
    lines = ['<div class="practice-follow-ups" markdown="1">', "", "**Follow-ups**, in the order an interviewer asks them", ""]
    for i, f in enumerate(q.follow_ups, 1):
        lines.append(f"{i}. *{q.fill(f.ask)}*")
        if f.answer:
            lines += ["", f"    **Expected:** {q.fill(f.answer)}"]
        if f.strong:
            lines += ["", f"    **A strong answer adds:** {q.fill(f.strong)}"]
        lines.append("")
    return lines + ["</div>", ""]


def _div(css: str, heading: str, items: list[str]) -> list[str]:
    """A ``practice-<css>`` block: its bold heading, then its items."""
    return [f'<div class="practice-{css}" markdown="1">', "", heading, "", *items, "", "</div>", ""]


def _details(css: str, summary: str, items: list[str]) -> list[str]:
    """A collapsible ``practice-<css>`` block: its summary, then its items."""
    return [f'<details class="practice-{css}" markdown="1">', f"<summary>{summary}</summary>", "", *items,
            "</details>", ""]


def render_markdown(q: Question, *, heading_level: int = 2, chapter_prefix: str = "../") -> str:
    """One question as a Markdown card (``md_in_html``) with the ``data-*`` attributes the practice script
    reads; without JavaScript a readable page, the rubric and the worked answer collapsible ``<details>``."""
    answer = [q.fill(q.answer), ""]
    if q.design:
        answer += _div("design", "**Assumptions**", [*(f"- {q.fill(a)}" for a in q.design.assumptions), "",
                                                      "**What would change the decision**", "",
                                                      *(f"- {q.fill(c)}" for c in q.design.changes)])
    if q.numbers:
        answer += ["**The numbers**, computed by `twofour` at build time:", "", _numbers_table(q), ""]
    answer += ["**Common mistakes**", ""] + [f"- {q.fill(m)}" for m in q.mistakes] + [""]
    answer += _follow_ups(q)
    answer += [f"**How it connects to the question.** {q.fill(q.connects)}", ""]
    if q.chapter:
        answer += [f"Read more: [the chapter]({chapter_prefix}{q.chapter}).", ""]
    if q.sources:
        answer += ["Sources: " + "; ".join(q.fill(s) for s in q.sources), ""]
    h = "#" * heading_level
    lines = [
        f'<article class="practice-q" id="q-{q.id}" data-qid="{q.id}" data-level="{q.level}" '
        f'data-topic="{q.topic}" data-kind="{q.kind}" markdown="1">',
        "",
        # a short anchor: the title's slug was written four times (heading, permalink, two tables of contents)
        f"{h} {q.fill(q.title)} {{: .practice-title #t-{q.id} }}",
        "",
        f'<p class="practice-meta"><span class="practice-tag">{LEVELS.index(q.level) + 1} · {q.level}</span> '
        f'<span class="practice-tag">{html.escape(TOPICS[q.topic])}</span> '
        f'<span class="practice-tag practice-tag--kind">{html.escape(KINDS[q.kind])}</span></p>',
        "",
        q.fill(q.prompt),
        "",
        *([f"[Open the calculator in this state]({chapter_prefix}calculator/index.md?{q.calculator_query()})"
           "{: .practice-calc-link }", ""] if q.calculator else []),
        *_details("rubric", "How it is graded: must-haves, signals, levels", [
            *_div("must", "**Must-haves.** Missing any one fails the answer.",
                  [f"1. {q.fill(p)}" for p in q.rubric.must]),
            *_div("strong", "**Strong signals**", [f"- {q.fill(p)}" for p in q.rubric.strong]),
            *_div("flags", "**Red flags**", [f"- {q.fill(p)}" for p in q.rubric.red_flags]),
            *_div("levels", "**What a pass looks like**",
                  [f"- **{GRADES[g]}:** {q.fill(t)}" for g, t in q.levels])]),
        *_details("answer", "Worked answer", answer),
    ]
    if q.quick_check:
        c = q.quick_check
        expected, unit = q.quick_check_expected(), UNITS.get(c.unit, c.unit)
        lines += [
            f'<div class="practice-check" data-expected="{expected!r}" data-tolerance="{c.tolerance!r}" '
            f'data-unit="{html.escape(c.unit)}" markdown="1">',
            "",
            f'<p class="practice-check-ask" id="check-{q.id}-ask"><strong>Quick check.</strong> '
            f'{html.escape(q.fill(c.ask))}'
            # the tolerance as the page's checker reports it: a whole percent of the computed value
            f" ({html.escape(unit) + ', ' if unit else ''}within ±{round(c.tolerance * 100)}% of the "
            "computed value"
            f"{html.escape(_accepts_phrase(q))}; graded against {BASES[c.basis]})</p>",
            "",
            *_details("derivation", "Derivation", [q.fill(c.derivation), ""]),
            "</div>",
            "",
        ]
    lines += ["</article>", ""]
    return "\n".join(lines)
