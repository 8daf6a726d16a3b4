"""Each calculator task of the practice bank opens the calculator in the state it states.

The task's link (rendered on its level page) carries the calculator's URL state; opened in a
browser, the calculator must show exactly that state: every field the task names holds its value,
no input problem is reported, and the address bar, which the calculator rewrites from what is on
screen, still names the same values.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urljoin, urlsplit

import pytest

from twofour.course.practice import load_bank, page_of

pytestmark = pytest.mark.browser

TASKS = [q for q in load_bank() if q.calculator]
# URL key -> the form field it fills (docs/js/calc/ui/request-calc.js URL_KEYS)
FIELD = {"gpu": "gpu", "backend": "backend", "dtype": "dtype", "model": "model", "batch": "batch", "prompt": "prompt_len",
         "output": "output_len", "chunk": "prefill_chunk_tokens", "s_prefill": "speedup_prefill",
         "s_decode": "speedup_decode", "step_ms": "step_overhead_ms", "request_ms": "request_overhead_ms",
         "attn_eff": "attention_efficiency", "mem_eff": "memory_efficiency", "layers": "layers", "hidden": "hidden",
         "intermediate": "intermediate", "heads": "heads", "kv_heads": "kv_heads", "vocab": "vocab"}


def test_there_are_at_least_twelve_tasks():
    assert len(TASKS) >= 12


@pytest.mark.parametrize("qid", [q.id for q in TASKS])
def test_a_calculator_task_opens_the_calculator_in_its_state(watched, base_url, qid):
    q = next(t for t in TASKS if t.id == qid)
    page = watched.page
    page.goto(f"{base_url}/practice/{page_of(q)}/", wait_until="load")
    link = page.locator(f"#q-{q.id} a.practice-calc-link")
    assert link.count() == 1 and link.inner_text() == "Open the calculator in this state"
    href = link.get_attribute("href")
    assert "/calculator/?" in href, href
    page.goto(urljoin(page.url, href), wait_until="load")
    page.wait_for_function("() => document.querySelector('[data-calc=request]')?.dataset.calcReady === 'true'")
    calc = page.locator("[data-calc=request]")
    state = dict(q.calculator)
    for key, value in state.items():
        if key in FIELD:
            field = calc.locator(f"[data-field={FIELD[key]}] :is(input, select)").first
            assert field.input_value() == value, (qid, key)
    scenario = calc.locator("input[type=radio][name$='-scenario']:checked")
    assert scenario.get_attribute("value") == state.get("scenario", "cached"), qid
    assert calc.locator("input[type=radio][name=gemm]:checked").get_attribute("value") == state["gemm"], qid
    pruned = {b.get_attribute("value") for b in calc.locator("input[type=checkbox][name=pruned]:checked").all()}
    assert pruned == set(state["pruned"].split(",")), qid
    problems = [m for m in calc.locator(".calc-msg").all_inner_texts() if m.strip()]
    assert not problems, (qid, problems)
    # The address bar is rewritten from the screen a moment after: it still names the task's state.
    page.wait_for_timeout(400)
    shown = {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}
    assert {k: shown.get(k) for k in state} == state, qid
    assert not watched.console_errors and not watched.external_requests
