"""The request calculator's states, driven like a reader: Reset brings back every field and table,
a choice that cannot change the result is switched off with its reason, a switch between typed-in
and predicted GEMM speedups is said where it happens, and no table is ever shown empty."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

CALC = "/calculator/"

# Every form control of the calculator and every shown output, as a reader could see them.
_SNAPSHOT = """r => ({
  controls: [...r.querySelectorAll('input, select')].map(e => [e.id || e.name, e.type === 'radio' || e.type === 'checkbox'
    ? e.checked : e.value, e.disabled, e.closest('[hidden]') === null]),
  outputs: Object.fromEntries([...r.querySelectorAll('[data-out]')].filter(e => e.dataset.out !== 'copy_status')
    .map(e => [e.dataset.out, [e.textContent, e.closest('[hidden]') === null]])),
  tables: [...r.querySelectorAll('table')].map(t => [t.caption?.textContent, t.offsetParent !== null,
    [...t.querySelectorAll('td')].map(c => c.textContent)]),
  headline: r.querySelector("[data-headline='box']").textContent,
  funnel: [...r.querySelectorAll('svg [data-value]')].map(e => e.textContent),
})"""

# Tables a reader can see, with any header or data cell that is empty.
_EMPTY_CELLS = """r => [...r.querySelectorAll('table')].filter(t => t.offsetParent !== null && t.getClientRects().length)
  .map(t => [t.caption ? t.caption.textContent : '(no caption)',
             [...t.querySelectorAll('th, td')].filter(c => !c.textContent.trim()).length,
             t.querySelectorAll('td').length])"""


def _open(watched, base_url: str, query: str = ""):
    page = watched.page
    page.goto(base_url + CALC + query, wait_until="load")
    page.wait_for_function("() => document.querySelector('[data-calc=request]')?.dataset.calcReady === 'true'")
    return page, page.locator("[data-calc='request']").first


def _out(root, name: str) -> str:
    return root.locator(f"[data-out='{name}']").first.text_content()


def _shown(root, name: str) -> bool:
    return root.locator(f"[data-out='{name}']").first.evaluate("e => e.closest('[hidden]') === null && !!e.textContent.trim()")


def _assert_no_empty_table(root, state: str) -> None:
    tables = root.evaluate(_EMPTY_CELLS)
    assert tables, f"{state}: no table shown at all"
    for caption, empty, data in tables:
        assert data and not empty, f"{state}: table {caption!r} is shown with {empty} empty cells"


def test_reset_restores_every_field_and_table(watched, base_url):
    page, root = _open(watched, base_url)
    before = root.evaluate(_SNAPSHOT)
    # Change a bit of everything, the predicted range table included.
    root.get_by_label("GPU", exact=True).select_option("A100")
    root.get_by_label("2:4 backend").select_option("CUTLASS")
    root.get_by_label("batch", exact=True).fill("8")
    root.get_by_label("eager PyTorch", exact=True).check()
    root.get_by_label("lm_head").check()
    root.get_by_label("model", exact=True).select_option("custom")
    root.get_by_label("layers", exact=True).fill("40")
    root.locator("summary", has_text="More assumptions").click()
    root.get_by_label("fixed cost per step (ms)").fill("0.2")
    root.get_by_label("decode (per token)").check()
    changed = root.evaluate(_SNAPSHOT)
    assert changed["tables"] != before["tables"] and changed["headline"] != before["headline"]
    assert any(shown and any(cells) for caption, shown, cells in changed["tables"] if "each scenario" in (caption or ""))
    root.get_by_role("button", name="Reset to the defaults").click()
    after = root.evaluate(_SNAPSHOT)
    for part in ("controls", "outputs", "tables", "headline", "funnel"):
        assert after[part] == before[part], f"after Reset, {part} differ from the page as it opened"
    assert not watched.console_errors


def test_a_choice_that_cannot_change_the_result_is_off_with_its_reason(watched, base_url):
    page, root = _open(watched, base_url)
    backend = root.get_by_label("2:4 backend")
    # The H200 has one 2:4 backend in PyTorch: nothing to choose.
    assert backend.is_disabled() and "only 2:4 backend" in _out(root, "backend_note")
    assert backend.get_attribute("aria-describedby").split()[-1] == root.locator("[data-out='backend_note']").get_attribute("id")
    # On the A100 there are two; with predicted speedups the choice matters.
    root.get_by_label("GPU", exact=True).select_option("A100")
    root.get_by_label("predicted by the roofline model").check()
    assert backend.is_enabled() and not _shown(root, "backend_note") and not _shown(root, "scenario_note")
    predicted = {}
    for name in ("cuSPARSELt", "CUTLASS"):
        backend.select_option(name)
        predicted[name] = _out(root, "total_sparse_s")
    assert predicted["cuSPARSELt"] != predicted["CUTLASS"]
    # With typed-in speedups it cannot change anything: off, and the line says why.
    root.get_by_label("typed in from a measurement").check()
    assert backend.is_disabled() and "typed in" in _out(root, "backend_note")
    # ...which is true: the same inputs with either backend, from a link, show the same numbers.
    shown = {}
    for name in ("cuSPARSELt", "CUTLASS"):
        _, other = _open(watched, base_url, f"?gpu=A100&backend={name}&gemm=measured&s_prefill=1.2&s_decode=0.8")
        shown[name] = {k: v for k, v in other.evaluate(_SNAPSHOT)["outputs"].items() if k not in ("fit", "measure")}
    assert shown["cuSPARSELt"] == shown["CUTLASS"]
    # The scenario still sets the dense times with typed-in speedups, so it stays on, and says so.
    _, root = _open(watched, base_url, "?gpu=A100&gemm=measured&s_prefill=1.2&s_decode=0.8&scenario=eager")
    assert root.get_by_label("eager PyTorch", exact=True).is_enabled() and _shown(root, "scenario_note")
    eager = _out(root, "tpot_dense_s")
    root.get_by_label("kernel only", exact=True).check()
    assert _out(root, "tpot_dense_s") != eager, "the scenario note says it sets the dense times: it must"
    assert not watched.console_errors


@pytest.mark.parametrize("field, how", [("batch", "8"), ("gpu", "A100"), ("preset", "chat decode, batch 1")])
def test_a_switch_from_typed_in_to_predicted_is_said_at_the_field_that_caused_it(watched, base_url, field, how):
    page, root = _open(watched, base_url)
    assert root.get_by_label("typed in from a measurement").is_checked()
    if field == "batch":
        root.get_by_label("batch", exact=True).fill(how)
    elif field == "gpu":
        root.get_by_label("GPU", exact=True).select_option(how)
    else:
        root.get_by_label("start from a workload").select_option(how)
    assert root.get_by_label("predicted by the roofline model").is_checked()
    note = root.locator(f"[data-field='{field}'] [data-out='switch_note']")
    assert note.count() == 1 and note.is_visible(), f"no switch note under {field}"
    assert "typed in" in note.text_content() and "predicted" in note.text_content()
    assert _shown(root, "gemm_note")  # and at the GEMM source itself
    # The next change is the reader's own: the note under the field goes, the GEMM box keeps its line.
    root.get_by_label("output tokens", exact=True).fill("300")
    assert not root.locator("[data-out='switch_note']").is_visible()
    assert not watched.console_errors


def test_no_table_is_shown_empty_in_any_state(watched, base_url):
    page, root = _open(watched, base_url)
    _assert_no_empty_table(root, "as it opens (typed-in speedups)")
    # With typed-in speedups there is no predicted range: its table is not shown, its note says why.
    assert root.evaluate("r => [...r.querySelectorAll('table')].filter(t => t.offsetParent !== null).length") == 1
    assert "No range over the scenarios" in _out(root, "range_note")
    root.get_by_label("predicted by the roofline model").check()
    _assert_no_empty_table(root, "predicted")
    root.get_by_label("GPU", exact=True).select_option("A100")
    root.get_by_label("typed in from a measurement").check()
    _assert_no_empty_table(root, "typed in on the A100")
    root.get_by_label("batch", exact=True).fill("-3")  # an input error keeps the last valid result
    _assert_no_empty_table(root, "with an input error")
    root.get_by_role("button", name="Reset to the defaults").click()
    _assert_no_empty_table(root, "after Reset")
    assert not watched.console_errors


def test_each_scenario_says_what_it_gives_and_eager_is_never_called_cuda_graphs(watched, base_url):
    """At the opening state every scenario radio shows the per-token and request speedups choosing it
    gives; the measured speedups are CUDA-graph timings, so choosing eager leaves them for the prediction."""
    page, root = _open(watched, base_url)
    gives = {sc: _out(root, f"gives_{sc}") for sc in ("eager", "cached", "kernel")}
    assert all("per output token" in g and "whole request" in g for g in gives.values()), gives
    head = root.locator("[data-headline='box']").text_content()
    assert gives["cached"].startswith("gives:") and "CUDA graphs" in head
    per_token = gives["eager"].split("per output token ")[1].split(",")[0]
    root.get_by_label("eager PyTorch", exact=True).check()
    head = root.locator("[data-headline='box']").text_content()
    assert "CUDA graphs" not in head and "eager PyTorch" in head, head
    assert f"per output token {per_token}" in head  # what the radio said it would give
    assert root.get_by_label("predicted by the roofline model").is_checked()
    assert "worked deployment" in _out(root, "gemm_note")
    assert not watched.console_errors


@pytest.mark.parametrize("query,fields", [("?gemm=measured&s_prefill=100&s_decode=100", ("speedup_prefill", "speedup_decode")),
                                          ("?gemm=measured&s_prefill=1.2&s_decode=1.9", ("speedup_decode",))])
def test_a_typed_speedup_past_the_physical_ceiling_is_refused_on_its_field(watched, base_url, query, fields):
    """A 2:4 GEMM is at most 2x faster (half the math), and 1.78x where the dense GEMM reads its weight:
    a typed speedup past that is a timing error, said on the field, and never headlined."""
    page, root = _open(watched, base_url, query)
    for name in fields:
        message = root.locator(f"[data-field='{name}'] .calc-msg").inner_text()
        assert "past what a 2:4 GEMM can give" in message and ("1.78x" in message or "2x" in message), message
    head = root.locator("[data-headline='box']").text_content()
    assert "19.13x" not in head and "last valid result" in head, head
    assert not watched.console_errors


def test_the_predicted_decode_loss_is_told_by_the_kernels_token_tile(watched, base_url):
    """The verdict under a predicted loss names the mechanism (the 256-token tile's padded math), not
    "padding and a larger per-call cost"."""
    page, root = _open(watched, base_url, "?gemm=roofline")
    text = root.locator("[data-out='establish']").inner_text()
    assert "256-token-wide tile" in text and "padded math" in text, text
    assert "larger per-call cost" not in text
    assert not watched.console_errors
