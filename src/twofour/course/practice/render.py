"""A question as Markdown for the site (the hook ``site_hooks/practice.py`` calls :func:`render_markdown`)."""

from __future__ import annotations

import html

from .questions import Question
from .terms import BASES, LEVELS, TOPICS, UNITS


def _attr(text: str) -> str:
    return html.escape(text, quote=True)


def _shown_in_table(value) -> bool:
    """Numbers, text and small tuples are shown; intermediate objects (an estimate, a prediction) are not."""
    return isinstance(value, (int, float, str, tuple))


def _numbers_table(q: Question) -> str:
    shown = q.formatted()
    values = q.evaluate()
    rows = ["| quantity | value | how it is obtained |", "|---|---|---|"]
    for n in q.numbers:
        if not _shown_in_table(values[n.name]):
            continue
        how = f"`{n.expr}`"
        if n.source:
            how += f" ({n.source})"
        rows.append(f"| {n.label} | {shown[n.name]} | {how.replace('|', '&#124;')} |")
    return "\n".join(rows)


def _unit_phrase(unit: str) -> str:
    return f"{_attr(UNITS.get(unit, unit))}, " if UNITS.get(unit, unit) else ""


def _tolerance_phrase(tol: float) -> str:
    """The tolerance as the page's checker reports it: a whole percent of the computed value."""
    return f"within ±{round(tol * 100)}% of the computed value"


def render_markdown(q: Question, *, heading_level: int = 2, chapter_prefix: str = "../") -> str:
    """One question as a Markdown card (``md_in_html``), the same on the level pages and in practice mode.

    The card carries ``data-*`` attributes the practice script reads; without JavaScript it is a
    readable page: the rubric and the worked answer are collapsible ``<details>``.
    """
    h = "#" * heading_level
    lines = [
        f'<article class="practice-q" id="q-{q.id}" data-qid="{q.id}" data-level="{q.level}" '
        f'data-topic="{q.topic}" markdown="1">',
        "",
        f"{h} {q.fill(q.title)} {{: .practice-title }}",
        "",
        f'<p class="practice-meta"><span class="practice-tag">{LEVELS.index(q.level) + 1} · {q.level}</span> '
        f'<span class="practice-tag">{_attr(TOPICS[q.topic])}</span></p>',
        "",
        q.fill(q.prompt),
        "",
        f'<div class="practice-notes" data-qid="{q.id}"></div>',
        "",
        '<details class="practice-rubric" markdown="1">',
        "<summary>What a strong answer contains</summary>",
        "",
    ]
    lines += [f"1. {q.fill(point)}" for point in q.rubric]
    lines += ["", "</details>", "", '<details class="practice-answer" markdown="1">', "<summary>Worked answer</summary>", ""]
    lines += [q.fill(q.answer), ""]
    if q.signals:
        lines += ['<details class="practice-signals" markdown="1">',
                  "<summary>For a grader: strong, acceptable and weak signals</summary>", ""]
        for label, items in (("Strong", q.signals.strong), ("Acceptable", q.signals.acceptable),
                             ("Weak", q.signals.weak)):
            lines += [f"**{label}**", ""] + [f"- {q.fill(s)}" for s in items] + [""]
        lines += ["</details>", ""]
    if q.numbers:
        lines += ["**The numbers**, computed by `twofour` when this page was built:", "", _numbers_table(q), ""]
    lines += ["**Common mistakes**", ""] + [f"- {q.fill(m)}" for m in q.mistakes] + [""]
    lines += ["**Follow-ups**", ""] + [f"- {q.fill(f)}" for f in q.follow_ups] + [""]
    lines += [f"**How it connects to the question.** {q.fill(q.connects)}", ""]
    if q.chapter:
        page = q.chapter
        lines += [f"Read more: [the chapter]({chapter_prefix}{page}).", ""]
    if q.sources:
        lines += ["Sources: " + "; ".join(q.fill(s) for s in q.sources), ""]
    lines += ["</details>", ""]
    if q.quick_check:
        c = q.quick_check
        expected = q.quick_check_expected()
        lines += [
            f'<div class="practice-check" data-expected="{expected!r}" data-tolerance="{c.tolerance!r}" '
            f'data-unit="{_attr(c.unit)}" markdown="1">',
            "",
            f'<p class="practice-check-ask" id="check-{q.id}-ask"><strong>Quick check.</strong> {_attr(q.fill(c.ask))}'
            + f" ({_unit_phrase(c.unit)}{_tolerance_phrase(c.tolerance)}; graded against {BASES[c.basis]})"
            + "</p>",
            "",
            '<details class="practice-derivation" markdown="1">',
            "<summary>Derivation</summary>",
            "",
            q.fill(c.derivation),
            "",
            "</details>",
            "",
            "</div>",
            "",
        ]
    lines += ["</article>", ""]
    return "\n".join(lines)
