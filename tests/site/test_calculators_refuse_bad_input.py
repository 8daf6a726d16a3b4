"""The calculators' JS mirror refuses what the Python refuses, with the Python's message, in a real browser.

``packedRatio("__proto__")`` returned NaN (a lookup reached Object.prototype), a peak lookup by
``"constructor"`` returned a function, unknown ``gemmSpeedup`` keys were ignored where Python
refuses them, and ``speedup(1, 1e-320)`` returned 0. Each is now the Python's refusal, with the
Python's message where Python has the same function (the golden vectors check Amdahl's).
"""

from __future__ import annotations

import pytest

from twofour import request
from twofour.models import LLAMA_3_8B

CALC = "/calculator/"
MODULES = "/js/calc/"


def _open(watched, base_url: str, path: str):
    """The page at ``path`` once every calculator on it is ready (as tests/site/test_calculators.py opens it)."""
    page = watched.page
    page.goto(base_url + path, wait_until="load")
    page.wait_for_function("p => document.documentElement.dataset.htwPage === p", arg=path.split("?")[0])
    page.wait_for_function("() => [...document.querySelectorAll('[data-calc]')].every(e => e.dataset.calcReady === 'true')")
    return page


def _import(page, module: str) -> None:
    page.evaluate(
        "async ([base, name]) => { window.__m = window.__m || {}; window.__m[name] = await import(base + name + '.js'); }",
        [MODULES, module],
    )

KEYS = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf", "__defineGetter__"]


def test_prototype_names_are_not_formats_gpus_or_phases(watched, base_url):
    page = _open(watched, base_url, CALC)
    for module in ("packing", "hardware", "request", "amdahl"):
        _import(page, module)
    result = page.evaluate(
        """keys => {
          const {packing: P, hardware: H, request: R, amdahl: A} = window.__m;
          const outcome = fn => { try { return "returned " + String(fn()); } catch (e) { return e.name + ": " + e.message; } };
          const w = {model: {layers: 2, hidden: 64, intermediate: 128, heads: 4, kv_heads: 4, vocab: 100},
                     batch: 1, prompt_len: 8, output_len: 4, dtype: "fp16", pruned: ["q_proj"]};
          const out = {};
          for (const k of keys) {
            out["packedRatio " + k] = outcome(() => P.packedRatio(k));
            out["denseBytes " + k] = outcome(() => P.denseBytes([4, 4], k));
            out["peakTflops " + k] = outcome(() => H.peakTflops(H.getGpu("H100"), k));
            out["gemmSpeedup " + k] = outcome(() => R.estimate(w, "H100", {gemmSpeedup: JSON.parse(`{"${k}": 2}`)}));
            out["assumptions " + k] = outcome(() => R.estimate(w, "H100", {assumptions: JSON.parse(`{"${k}": 2}`)}));
          }
          out["speedup 1e-320"] = outcome(() => A.speedup(1, 1e-320));
          out["gemmSpeedup 1e-320"] = outcome(() => R.estimate(w, "H100", {gemmSpeedup: 1e-320}));
          return out;
        }""",
        KEYS,
    )
    for what, got in result.items():
        assert got.startswith("InputError: "), (what, got)
    assert result["packedRatio __proto__"].startswith("InputError: dtype must be one of fp16, bf16")
    python = None
    try:
        request.estimate(request.Workload(LLAMA_3_8B, 1, 8, 4), "H100", gemm_speedup={"__proto__": 2})
    except ValueError as exc:
        python = str(exc)
    assert result["gemmSpeedup __proto__"] == "InputError: " + python
    assert "smallest normal double" in result["speedup 1e-320"] and "smallest normal double" in result["gemmSpeedup 1e-320"]
    assert not watched.console_errors


@pytest.mark.parametrize("query,field", [("batch=1000000&prompt=100000000&gemm=measured&s_prefill=1e-300&s_decode=0.9",
                                          "speedup_prefill")])
def test_an_estimate_that_overflows_is_blamed_on_its_cause(watched, base_url, query, field):
    """request.js now refuses an estimate with infinite times; the page still names the field that caused it."""
    page = _open(watched, base_url, CALC + "?" + query)
    root = page.locator("[data-calc='request']").first
    message = root.locator(f"[data-field='{field}'] .calc-msg").inner_text()
    assert "out of range" in message, message
    assert not watched.console_errors


def test_unknown_lookups_and_non_finite_numbers_are_refused_by_name(watched, base_url):
    """``ceilings("__proto__")`` used ``in``, ``indexBits(NaN)`` and ``regimeOf(NaN)`` answered, and
    ``estimate({pruned: "q_proj"})`` threw a TypeError; each is now an InputError naming its argument."""
    page = watched.page
    page.goto(base_url + MODULES + "errors.js", wait_until="load")  # any page of the site's origin
    for module in ("packing", "roofline", "request"):
        _import(page, module)
    result = page.evaluate(
        """() => {
          const {packing: P, roofline: R, request: Q} = window.__m;
          const outcome = fn => { try { return "returned " + JSON.stringify(fn()); } catch (e) { return e.name + ": " + e.message; } };
          const w = {model: {layers: 2, hidden: 64, intermediate: 128, heads: 4, kv_heads: 4, vocab: 100},
                     batch: 1, prompt_len: 8, output_len: 4, dtype: "fp16", pruned: "q_proj"};
          return {
            ceilings: ["__proto__", "constructor", "toString"].map(k => outcome(() => R.ceilings(k))),
            indexBits: [NaN, 1, 2.5, Infinity].map(m => outcome(() => P.indexBits(m))),
            regimeOf: [NaN, -1, 0, Infinity].map(m => outcome(() => R.regimeOf(m))),
            pruned: outcome(() => Q.estimate(w, "H100")),
            dtype: outcome(() => Q.estimate({...w, pruned: ["q_proj"], dtype: "__proto__"}, "H100")),
            still: [outcome(() => R.ceilings("fp16")), outcome(() => P.indexBits(4)), outcome(() => R.regimeOf(16))],
          };
        }"""
    )
    assert all(r.startswith("InputError: dtype must be one of") for r in result["ceilings"]), result
    assert all(r.startswith("InputError: m must be an int of at least 2") for r in result["indexBits"]), result
    assert all(r.startswith("InputError: M must be a positive number") for r in result["regimeOf"]), result
    assert result["pruned"].startswith("InputError: pruned must be a list of linear kinds"), result
    assert result["dtype"].startswith("InputError: dtype must be one of"), result
    assert result["still"] == ['returned {"compute":2,"memory":1.7777777777777777}', "returned 2", 'returned "M<=16"']
