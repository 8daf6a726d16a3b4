"""The static site's calculators (docs/js/calc) in a real browser, against the Python model.

* Parity: ``twofour golden`` writes its vectors into a temporary folder; the browser imports
  the JS modules from the built, served site and evaluates them on every vector. Every number
  must equal Python's to 1e-12 relative (in practice they are bit-identical).
* The JS copies of the tables (GPU peaks, roofline assumptions, padding rule, model presets,
  scenarios, packing formats) equal the Python ones.
* Each calculator is driven like a user (typing, selecting, clicking, following a shared
  link); what it displays equals the Python result written with the one rounding rule below.
* Every kind of bad input gets a message next to its field, the last valid result stays,
  and no NaN or Infinity ever reaches the page.
* An update after an input change takes under 16 ms (median over repeated changes).

The rounding rule, in both languages (docs/js/calc/format.js): round the exact binary value
half away from zero to a fixed number of decimals; speedups 3 decimals plus "x", fractions as
percent with 2 decimals (the double ``x * 100`` is rounded), times in ms below 1 s and in s
above, 3 decimals.
"""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys
from decimal import ROUND_HALF_UP, Context, Decimal, localcontext
from pathlib import Path

import pytest
import torch

from twofour import amdahl, hardware, models, packing, request, roofline
from twofour.funnel import funnel
from twofour.request import Assumptions, Workload, estimate

pytestmark = pytest.mark.browser

CALC = "/calculator/"
CHAPTER_6 = "/notebooks/06-amdahl/"
MODULES = "/js/calc/"


# ---------------------------------------------------------------------------------------------
# The rounding rule, Python side


def fixed(x: float, digits: int) -> str:
    """JavaScript's ``x.toFixed(digits)``: the exact binary value, rounded half away from zero."""
    assert math.isfinite(x)
    with localcontext(Context(prec=200)):
        return str(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def speedup_text(x: float) -> str:
    return f"{fixed(x, 3)}x"


def percent_text(fraction: float) -> str:
    return f"{fixed(fraction * 100, 2)} %"


def time_text(seconds: float) -> str:
    return f"{fixed(seconds * 1e3, 3)} ms" if seconds < 1 else f"{fixed(seconds, 3)} s"


def integer_text(n: int) -> str:
    return f"{n:,}"


def test_rounding_rule_matches_javascript_tofixed_on_ties(watched, base_url):
    # Exact binary ties, where Python's own format() (half to even) and toFixed disagree.
    cases = [(1.0625, 3), (0.125, 2), (2.5, 0), (56.25, 1), (1.0005, 3), (123456.0005, 3), (0.0, 3), (1e-9, 3)]
    page = _open(watched, base_url, CALC)
    js = page.evaluate("cases => cases.map(([x, d]) => x.toFixed(d))", cases)
    assert js == [fixed(x, d) for x, d in cases]
    assert fixed(1.0625, 3) == "1.063" and f"{1.0625:.3f}" == "1.062"  # why the rule is spelled out


# ---------------------------------------------------------------------------------------------
# Helpers


def _open(watched, base_url: str, path: str):
    page = watched.page
    page.goto(base_url + path, wait_until="load")
    page.wait_for_function("p => document.documentElement.dataset.htwPage === p", arg=path.split("?")[0])
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-calc]')].every(e => e.dataset.calcReady === 'true')"
    )
    return page


def _import(page, module: str) -> None:
    """Load one of the calculator modules from the served site into window.__m[module]."""
    page.evaluate(
        "async ([base, name]) => { window.__m = window.__m || {}; window.__m[name] = await import(base + name + '.js'); }",
        [MODULES, module],
    )


def _golden(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("golden")
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from twofour.cli import main; sys.exit(main())", "golden", "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.fixture(scope="module")
def golden(tmp_path_factory) -> dict:
    out = _golden(tmp_path_factory)
    return {name: json.loads((out / f"{name}.json").read_text()) for name in ("amdahl", "request", "funnel")}


def _count_numbers(value) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, (int, float)):
        return 1
    if isinstance(value, dict):
        return sum(_count_numbers(v) for v in value.values())
    if isinstance(value, list):
        return sum(_count_numbers(v) for v in value)
    return 0


# The comparison runs in the browser: walk the Python value, compare every leaf.
_COMPARE_JS = """() => {
window.__cmp = (where, js, py, bad, stats) => {
  if (typeof py === "number") {
    stats.n += 1;
    const e = js === py ? 0 : Math.abs(js - py) / Math.max(Math.abs(js), Math.abs(py));
    if (!(e <= 1e-12)) bad.push([where, String(js), py]);
    else stats.worst = Math.max(stats.worst, e);
  } else if (typeof py === "string" || typeof py === "boolean") {
    if (js !== py) bad.push([where, String(js), py]);
  } else if (py === undefined || py === null) {
    bad.push([where, String(js), String(py)]);
  } else {
    for (const k of Object.keys(py)) window.__cmp(where + "." + k, js === undefined || js === null ? undefined : js[k], py[k], bad, stats);
  }
};
}"""


# ---------------------------------------------------------------------------------------------
# Parity with the golden vectors


def test_js_amdahl_matches_python_golden_vectors(watched, base_url, golden):
    page = _open(watched, base_url, CALC)
    _import(page, "amdahl")
    page.evaluate(_COMPARE_JS)
    data = golden["amdahl"]
    result = page.evaluate(
        """data => {
          const A = window.__m.amdahl, bad = [], stats = {n: 0, worst: 0};
          const num = v => v === "NaN" ? NaN : v === "Infinity" ? Infinity : v === "-Infinity" ? -Infinity : v;
          for (const c of data.speedup) __cmp(`speedup(${c.p},${c.s})`, A.speedup(c.p, c.s), c.speedup, bad, stats);
          for (const c of data.max_speedup) {
            const py = num(c.max_speedup), js = A.maxSpeedup(c.p);
            if (py === Infinity) { stats.n += 1; if (js !== Infinity) bad.push(["max_speedup(1)", String(js), "inf"]); }
            else __cmp(`max_speedup(${c.p})`, js, py, bad, stats);
          }
          for (const c of data.parts) {
            __cmp("combined", A.combinedSpeedup(c.fractions, c.speedups), c.combined_speedup, bad, stats);
            __cmp("averaged", A.averagedSpeedupMistake(c.fractions, c.speedups), c.averaged_speedup_mistake, bad, stats);
          }
          const errors = [];
          for (const c of data.errors) {
            const fn = {speedup: A.speedup, combined_speedup: A.combinedSpeedup}[c.function];
            const args = c.function === "speedup" ? [num(c.input.p), num(c.input.s)] : [c.input.fractions, c.input.speedups];
            try { const v = fn(...args); errors.push([c.message, "returned " + v]); }
            catch (e) { errors.push([c.message, e.name === "InputError" ? e.message : "threw " + e]); }
          }
          return {bad, stats, errors};
        }""",
        data,
    )
    expected = len(data["speedup"]) + len(data["max_speedup"]) + 2 * len(data["parts"])
    assert result["stats"]["n"] == expected and expected > 400
    assert result["bad"] == []
    # Inputs Python rejects, JS rejects with the same message (the same argument named).
    assert len(result["errors"]) == len(data["errors"]) >= 10
    for python_message, js_message in result["errors"]:
        assert js_message == python_message


def test_js_request_model_and_funnel_match_python_golden_vectors(watched, base_url, golden):
    page = _open(watched, base_url, CALC)
    for module in ("request", "funnel"):
        _import(page, module)
    page.evaluate(_COMPARE_JS)
    cases, funnels = golden["request"]["cases"], golden["funnel"]["cases"]
    result = page.evaluate(
        """([cases, funnels]) => {
          const R = window.__m.request, F = window.__m.funnel, bad = [], stats = {n: 0, worst: 0}, ests = {};
          for (const c of cases) {
            // 1. the arithmetic on Python's flat inputs
            const est = R.evaluate(c.inputs);
            ests[c.id] = est;
            __cmp(`case ${c.id} output`, R.toDict(est), c.output, bad, stats);
            // 2. the inputs themselves, rebuilt from the workload: GPU table, roofline, padding, packing
            const x = c.context;
            const w = {model: x.model, batch: x.batch, prompt_len: x.prompt_len, output_len: x.output_len, dtype: x.dtype, pruned: x.pruned};
            const inputs = R.buildInputs(w, x.gpu, {assumptions: x.assumptions, gemmSpeedup: x.gemm_speedup, backend: x.roofline_backend});
            __cmp(`case ${c.id} inputs`, inputs, c.inputs, bad, stats);
          }
          for (const f of funnels) __cmp(`funnel ${f.request_case} ${f.scope}`, F.funnel(ests[f.request_case], f.scope), f.stages, bad, stats);
          return {bad: bad.slice(0, 20), nbad: bad.length, stats};
        }""",
        [cases, funnels],
    )
    expected = sum(_count_numbers(c["output"]) + _count_numbers(c["inputs"]) for c in cases)
    expected += sum(_count_numbers(f["stages"]) for f in funnels)
    assert result["nbad"] == 0, result["bad"]
    assert result["stats"]["n"] == expected > 20_000
    print(f"\nrequest/funnel parity: {expected} numbers, worst relative difference {result['stats']['worst']:.3g}")


def test_js_roofline_and_packing_match_python(watched, base_url):
    page = _open(watched, base_url, CALC)
    for module in ("roofline", "packing"):
        _import(page, module)
    shapes = [(1, 4096, 4096), (7, 1024, 4096), (16, 14336, 4096), (4096, 4096, 14336), (100_000, 128256, 8192), (333, 5000, 12)]
    points = [(s, d, g, b) for s in shapes for d, g, b in
              [("fp16", "H100", None), ("bf16", "A100", "CUTLASS"), ("int8", "L4", None), ("fp8", "B200", None),
               ("tf32", "A100", "cuSPARSELt")]]
    js = page.evaluate(
        "points => points.map(([[M, N, K], d, g, b]) => window.__m.roofline.predict(M, N, K, d, g, b))", points
    )
    for (shape, d, g, b), got in zip(points, js):
        want = roofline.predict(*shape, d, g, b)
        for field in ("dense_us", "sparse_us", "wave_eff_dense", "wave_eff_sparse"):
            assert got[field] == pytest.approx(getattr(want, field), rel=1e-12, abs=0), (shape, d, g, field)
        assert (got["M_padded"], got["bound_dense"], got["bound_sparse"], got["backend"]) == (
            want.M_padded, want.bound_dense, want.bound_sparse, want.backend)

    formats = {"fp16": torch.float16, "bf16": torch.bfloat16, "int8": torch.int8, "fp8": 8,
               "fp32": (torch.float32, 1, 2), "fp4_paired": (4, 4, 8, 1), "fp4_elementwise": 4}
    dims = [(4096, 14336), (1, 8), (3, 40), (128256, 8192), (10_000_000, 10_000_000)]
    js = page.evaluate(
        """([keys, dims]) => keys.flatMap(k => dims.map(([n, kk]) => [
             window.__m.packing.denseBytes([n, kk], k).toString(),
             window.__m.packing.packedBytes([n, kk], k).toString(),
             window.__m.packing.packedRatio(k)]))""",
        [list(formats), dims],
    )
    i = 0
    for key, spec in formats.items():
        dtype, n, m, meta = (spec + (None,) * 4)[:4] if isinstance(spec, tuple) else (spec, 2, 4, None)
        for shape in dims:
            want = (packing.dense_bytes(shape, dtype), packing.packed_bytes(shape, dtype, n, m, meta_bits_per_value=meta),
                    packing.packed_ratio(dtype, n, m, meta_bits_per_value=meta))
            assert (int(js[i][0]), int(js[i][1]), js[i][2]) == want, (key, shape)
            i += 1


def test_js_tables_equal_the_python_tables(watched, base_url):
    """GPU peaks, roofline defaults, padding rule, presets and scenarios: one source of truth, checked."""
    page = _open(watched, base_url, CALC)
    for module in ("hardware", "roofline", "request"):
        _import(page, module)
    js = page.evaluate(
        """() => ({gpus: window.__m.hardware.GPUS, eff: window.__m.roofline.DEFAULT_EFFICIENCY,
                   pad: window.__m.roofline.PAD_MULTIPLE, presets: window.__m.request.PRESETS,
                   scenarios: window.__m.request.SCENARIOS, dtypes: window.__m.request.DTYPE_BYTES})"""
    )
    unconfirmed = hardware.unconfirmed_fields()
    assert set(js["gpus"]) == set(hardware.GPUS)
    for name, spec in hardware.GPUS.items():
        g = js["gpus"][name]
        assert (g["arch"], tuple(g["capability"]), g["sms"], g["mem_bw_gbs"], tuple(g["backends"])) == (
            spec.arch, spec.capability, spec.sms, spec.mem_bw_gbs, spec.backends)
        assert g["dense_tflops"] == {d: v for d, v in spec.dense_tflops.items() if v is not None}
        assert g["sparse_tflops"] == {d: v for d, v in spec.sparse_tflops.items() if v is not None}
        assert sorted(g["unconfirmed"]) == sorted(f for gpu, f in unconfirmed if gpu == name)
    assert js["eff"] == roofline.DEFAULT_EFFICIENCY.to_dict()
    assert js["pad"] == {f"{b}/{d}": m for (b, d), m in roofline._PAD_MULTIPLE.items()}
    for backend, d in roofline._PAD_MULTIPLE:  # the installed torch's live rule agrees too
        assert roofline.pad_multiple(backend, d) == js["pad"][f"{backend}/{d}"]
    fields = ("layers", "hidden", "intermediate", "heads", "kv_heads", "vocab")
    assert set(js["presets"]) == set(models.PRESETS)
    for name, cfg in models.PRESETS.items():
        assert {f: js["presets"][name][f] for f in fields} == {f: getattr(cfg, f) for f in fields}
    assert set(js["scenarios"]) == set(request.SCENARIOS)
    for name, w in request.SCENARIOS.items():
        s = js["scenarios"][name]
        assert (s["model"], s["batch"], s["prompt_len"], s["output_len"], s["dtype"]) == (
            w.model.name, w.batch, w.prompt_len, w.output_len, w.dtype)
        assert w.pruned == request.BLOCK_LINEARS  # the page's default layer choice
    assert js["dtypes"] == request.DTYPE_BYTES


def test_the_defaults_table_on_the_page_states_the_defaults_the_code_uses(watched, base_url):
    """The Calculator page's prose names the defaults; if the code changes them, this fails."""
    page = _open(watched, base_url, CALC)
    _import(page, "ui/request-calc")
    defaults = page.evaluate("() => window.__m['ui/request-calc'].DEFAULTS")
    text = (Path(__file__).resolve().parents[2] / "docs/calculator/index.md").read_text()
    row = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| ")}
    e = roofline.DEFAULT_EFFICIENCY
    assert f"efficiencies {e.dense_compute} dense / {e.sparse_compute} sparse of peak" in row["predicted GEMM speedup"]
    assert f"{e.dense_memory:.0%} of bandwidth" in row["predicted GEMM speedup"]
    assert f"{e.dense_overhead_us:g} µs and {e.sparse_overhead_us:g} µs per call" in row["predicted GEMM speedup"]
    assert f"| {defaults['speedup_prefill']} |" in row["measured GEMM speedup, prefill"]
    assert f"| {defaults['speedup_decode']} |" in row["measured GEMM speedup, decode"]
    assert f"{1 / packing.packed_ratio(torch.bfloat16):.2f}" == str(defaults["speedup_decode"])  # the bytes ceiling
    cfg = models.PRESETS[defaults["model"]]
    assert (f"{cfg.name} ({cfg.layers} layers, hidden {cfg.hidden}, MLP {cfg.intermediate}, {cfg.heads} heads, "
            f"{cfg.kv_heads} KV heads)") in row["model shapes"]
    assert f"| {defaults['gpu']} SXM |" in row["GPU peaks and bandwidth"]
    chat = request.SCENARIOS["chat decode, batch 1"]
    assert (defaults["batch"], defaults["prompt_len"], defaults["output_len"]) == (chat.batch, chat.prompt_len, chat.output_len)
    assert f"batch {chat.batch}, {chat.prompt_len} prompt and {chat.output_len} output tokens" in row["workload"]


# ---------------------------------------------------------------------------------------------
# Driving the calculators like a user


def _wait_for_url(page, part: str) -> None:
    """The page writes its inputs to the address bar shortly after the last change."""
    page.wait_for_function("part => location.search.includes(part)", arg=part, timeout=5_000)


def _request_calc(page):
    return page.locator("[data-calc='request']").first


def _outputs(root) -> dict[str, str]:
    return root.evaluate("r => Object.fromEntries([...r.querySelectorAll('[data-out]')].map(e => [e.dataset.out, e.textContent]))")


def _funnel_values(root) -> list[str]:
    return root.evaluate("r => [...r.querySelectorAll('svg [data-value]')].map(e => e.textContent)")


def _expected_request(est, scope: str, pruned) -> dict[str, str]:
    s = est.summary()
    out = {}
    for key in ("ttft_dense_s", "ttft_sparse_s", "tpot_dense_s", "tpot_sparse_s", "total_dense_s", "total_sparse_s"):
        out[key] = time_text(s[key])
    for key in ("speedup_ttft", "speedup_tpot", "speedup_request"):
        out[key] = speedup_text(s[key])
    for key in ("p_prefill", "p_decode", "p_request"):
        out[key] = percent_text(s[key])
    shapes = models.linear_shapes(_cfg_of(est))
    total = sum(sh.params for sh in shapes)
    out["pruned_share"] = percent_text(sum(sh.params for sh in shapes if sh.name in pruned) / total)
    out["funnel"] = [speedup_text(stage.speedup) for stage in funnel(est, scope)]
    return out


def _cfg_of(est) -> models.TransformerConfig:
    r = est.inputs
    return models.TransformerConfig(name="x", layers=r.layers, hidden=r.hidden, intermediate=r.intermediate,
                                    heads=r.heads, kv_heads=r.kv_heads, vocab=r.vocab)


def _assert_shows(root, expected: dict[str, str]) -> None:
    shown = _outputs(root)
    for key, text in expected.items():
        if key == "funnel":
            assert _funnel_values(root) == text
        else:
            assert shown[key] == text, key
    _assert_no_nan_in_results(root)


def _assert_no_nan_in_results(root) -> None:
    """No displayed result (outputs, table, funnel) says NaN or Infinity. Messages may quote the input."""
    shown = " ".join(_outputs(root).values()) + " " + " ".join(_funnel_values(root))
    assert "NaN" not in shown and "Infinity" not in shown, shown


def test_request_calculator_driven_like_a_user_matches_python_and_survives_a_shared_link(watched, base_url, browser):
    page = _open(watched, base_url, CALC)
    root = _request_calc(page)

    # The defaults: Llama-3-8B on H100 in bf16, chat workload, predicted GEMM speedups.
    default = estimate(Workload(models.LLAMA_3_8B, 1, 512, 256, dtype="bf16"), "H100")
    _assert_shows(root, _expected_request(default, "request", request.BLOCK_LINEARS))

    # A user's scenario: A100, fp16, batch 8, 1024 in / 128 out, LM head pruned too, measured
    # GEMM speedups, a fixed cost per step, the decode funnel.
    root.get_by_label("GPU", exact=True).select_option("A100")
    root.get_by_label("dtype (weights and activations)").select_option("fp16")
    for label, text in (("batch", "8"), ("prompt tokens", "1024"), ("output tokens", "128")):
        field = root.get_by_label(label, exact=True)
        field.fill("")
        field.press_sequentially(text)
    root.get_by_label("lm_head").check()
    root.get_by_label("typed in from a measurement").check()
    root.get_by_label("measured prefill GEMM speedup").fill("1.4")
    root.get_by_label("measured decode GEMM speedup").fill("0.9")
    root.locator("summary", has_text="More assumptions").click()
    root.get_by_label("fixed cost per step (ms)").fill("0.2")
    root.get_by_label("decode (per token)").check()

    pruned = request.BLOCK_LINEARS + ("lm_head",)
    mine = estimate(Workload(models.LLAMA_3_8B, 8, 1024, 128, dtype="fp16", pruned=pruned), "A100",
                    gemm_speedup={"prefill": 1.4, "decode": 0.9}, assumptions=Assumptions(step_overhead_s=0.2 * 1e-3))
    expected = _expected_request(mine, "decode", pruned)
    _assert_shows(root, expected)
    assert "slower" in _outputs(root)["establish"]  # decode GEMMs at 0.9x: said in words

    # The address bar now links to this scenario; a fresh page opened from it shows the same.
    _wait_for_url(page, "scope=decode")
    shared = page.url
    assert "gpu=A100" in shared and "s_decode=0.9" in shared and "scope=decode" in shared
    other = browser.new_context()
    try:
        page2 = other.new_page()
        page2.goto(shared, wait_until="load")
        page2.wait_for_function("() => document.querySelector('[data-calc=request]')?.dataset.calcReady === 'true'")
        root2 = page2.locator("[data-calc='request']")
        _assert_shows(root2, expected)
        assert root2.get_by_label("GPU", exact=True).input_value() == "A100"
        assert root2.get_by_label("batch", exact=True).input_value() == "8"
        assert root2.get_by_label("lm_head").is_checked()
        assert root2.get_by_label("measured decode GEMM speedup").input_value() == "0.9"
    finally:
        other.close()

    # A custom shape with the roofline's predicted speedups.
    root.get_by_label("predicted by the roofline model").check()
    root.get_by_label("model", exact=True).select_option("custom")
    root.get_by_label("layers", exact=True).fill("40")
    root.get_by_label("MLP intermediate size").fill("11008")
    root.get_by_label("KV heads").fill("32")
    root.get_by_label("whole request").check()
    cfg = models.LLAMA_3_8B.with_(layers=40, intermediate=11008, kv_heads=32)
    custom = estimate(Workload(cfg, 8, 1024, 128, dtype="fp16", pruned=pruned), "A100",
                      assumptions=Assumptions(step_overhead_s=0.2 * 1e-3))
    _assert_shows(root, _expected_request(custom, "request", pruned))

    # A chapter-6 scenario from the list.
    root.get_by_label("start from a scenario").select_option("high throughput, batch 64, 8K context")
    scenario = request.SCENARIOS["high throughput, batch 64, 8K context"]
    est = estimate(Workload(scenario.model, scenario.batch, scenario.prompt_len, scenario.output_len, dtype="bf16",
                            pruned=pruned), "A100", assumptions=Assumptions(step_overhead_s=0.2 * 1e-3))
    _assert_shows(root, _expected_request(est, "request", pruned))
    assert not watched.console_errors and not watched.external_requests


def test_a_shared_link_with_bad_values_says_so_and_keeps_a_valid_result(watched, base_url):
    page = _open(watched, base_url, CALC + "?gpu=Z900&batch=-3&pruned=q_proj,attn")
    root = _request_calc(page)
    assert "Z900" in root.locator("[data-field='gpu'] .calc-msg").inner_text()
    assert "negative" in root.locator("[data-field='batch'] .calc-msg").inner_text()
    assert "attn" in root.inner_text()
    # The defaults' result is what stays on screen.
    default = estimate(Workload(models.LLAMA_3_8B, 1, 512, 256), "H100")
    assert _outputs(root)["speedup_request"] == speedup_text(default.speedup("request"))


def test_embedded_amdahl_and_packing_calculators_match_python(watched, base_url):
    page = _open(watched, base_url, CALC)
    calc = page.locator("[data-calc='amdahl']").first
    assert _outputs(calc)["speedup"] == speedup_text(amdahl.speedup(0.87, 1.78))
    calc.get_by_label("eligible fraction p").fill("0.6")
    calc.get_by_label("GEMM speedup s").fill("1.5")
    shown = _outputs(calc)
    assert shown["speedup"] == speedup_text(amdahl.speedup(0.6, 1.5))
    assert shown["bound"] == speedup_text(amdahl.max_speedup(0.6))
    assert shown["mistake"] == speedup_text(amdahl.averaged_speedup_mistake([0.6], [1.5]))
    calc.get_by_label("eligible fraction p").fill("1")
    assert _outputs(calc)["bound"] == "no limit (p = 1)"

    calc = page.locator("[data-calc='packing']").first
    calc.get_by_label("rows N (out_features)").fill("4096")
    calc.get_by_label("columns K (in_features)").fill("4096")
    calc.get_by_label("element type and pattern").select_option("int8")
    shown = _outputs(calc)
    dense, packed = packing.dense_bytes((4096, 4096), torch.int8), packing.packed_bytes((4096, 4096), torch.int8)
    assert shown["dense"].startswith(f"{integer_text(dense)} bytes (")
    assert shown["packed"] == f"{integer_text(packed)} bytes ({fixed(packed / 1048576, 1)} MiB)"
    assert shown["ratio"] == percent_text(packing.packed_ratio(torch.int8))
    assert shown["ceiling"] == speedup_text(1 / packing.packed_ratio(torch.int8))
    calc.get_by_label("element type and pattern").select_option("fp4_paired")
    assert _outputs(calc)["ratio"] == percent_text(packing.packed_ratio(4, 4, 8, meta_bits_per_value=1))
    assert not watched.console_errors


def test_embedded_gemm_calculator_matches_the_python_roofline(watched, base_url):
    page = _open(watched, base_url, CALC)
    calc = page.locator("[data-calc='gemm']").first
    for (M, N, K, dtype, gpu) in [(16, 4096, 4096, "fp16", "H100"), (1, 14336, 4096, "int8", "L4"),
                                  (8192, 4096, 14336, "bf16", "A100"), (3, 1024, 8192, "fp8", "B200")]:
        calc.get_by_label("M (tokens)").fill(str(M))
        calc.get_by_label("N (out_features)").fill(str(N))
        calc.get_by_label("K (in_features)").fill(str(K))
        calc.get_by_label("GPU", exact=True).select_option(gpu)
        calc.get_by_label("dtype", exact=True).select_option(dtype)
        p = roofline.predict(M, N, K, dtype, gpu)
        shown = _outputs(calc)
        assert shown["dense"] == f"{fixed(p.dense_us, 2)} µs" and shown["sparse"] == f"{fixed(p.sparse_us, 2)} µs"
        assert shown["speedup"] == speedup_text(p.speedup)
        assert shown["bounds"] == f"dense {p.bound_dense}, 2:4 {p.bound_sparse}"
        assert shown["padding"] == ("no padding" if p.M_padded == M else f"2:4 path pads M to {integer_text(p.M_padded)}")
        assert shown["waves"] == f"SMs busy: {percent_text(p.wave_eff_dense)}"


def test_reset_restores_the_defaults_and_the_link(watched, base_url):
    page = _open(watched, base_url, CALC + "?gpu=L4&dtype=int8&batch=32&gemm=measured&s_prefill=1.2&s_decode=0.7&scope=prefill")
    root = _request_calc(page)
    assert root.get_by_label("GPU", exact=True).input_value() == "L4"
    root.get_by_role("button", name="Reset to the defaults").click()
    default = estimate(Workload(models.LLAMA_3_8B, 1, 512, 256), "H100")
    _assert_shows(root, _expected_request(default, "request", request.BLOCK_LINEARS))
    _wait_for_url(page, "gpu=H100")
    assert "s_decode" not in page.url and "scope" not in page.url


# ---------------------------------------------------------------------------------------------
# Bad input


def _bad_input_case(root, label: str, text: str, field: str, expect: str):
    """Type ``text`` into ``label``; the field's message must contain ``expect``; results unchanged."""
    before = _outputs(root)
    svg_before = root.evaluate("r => r.querySelector('svg') ? r.querySelector('svg').innerHTML : ''")
    control = root.get_by_label(label, exact=True)
    if control.evaluate("e => e.tagName") == "SELECT":
        control.select_option(text)
    else:
        control.fill(text)
    message = root.locator(f"[data-field='{field}'] .calc-msg").inner_text()
    assert expect.lower() in message.lower(), (label, text, message)
    if control.evaluate("e => e.tagName") == "INPUT":
        assert control.get_attribute("aria-invalid") == "true"
        described = control.get_attribute("aria-describedby")
        assert root.locator(f"[data-field='{field}'] .calc-msg").get_attribute("id") in described.split()
    after = _outputs(root)
    for key, value in before.items():
        if key not in ("stale",):
            assert after[key] == value, f"{label}={text!r} changed {key}"
    assert root.evaluate("r => r.querySelector('svg') ? r.querySelector('svg').innerHTML : ''") == svg_before
    assert "showing the last valid result" in after["stale"].lower()
    _assert_no_nan_in_results(root)


AMDAHL_BAD = [
    ("eligible fraction p", "", "p", "enter a value"),
    ("eligible fraction p", "abc", "p", "not a number"),
    ("eligible fraction p", "-0.2", "p", "negative"),
    ("eligible fraction p", "1.5", "p", "from 0 to 1"),
    ("GEMM speedup s", "0", "s", "above 0"),
    ("GEMM speedup s", "-2", "s", "negative"),
    ("GEMM speedup s", "1e400", "s", "too large"),
    ("GEMM speedup s", "NaN", "s", "not a number"),
    ("GEMM speedup s", "Infinity", "s", "not a number"),
]
PACKING_BAD = [
    ("rows N (out_features)", "", "rows", "enter a value"),
    ("rows N (out_features)", "-4", "rows", "negative"),
    ("rows N (out_features)", "four", "rows", "not a number"),
    ("rows N (out_features)", "2.5", "rows", "whole number"),
    ("columns K (in_features)", "1e12", "cols", "not a real weight"),
    ("columns K (in_features)", "4097", "cols", "multiple of 4"),
]
REQUEST_BAD = [
    ("batch", "", "batch", "enter a value"),
    ("batch", "-1", "batch", "negative"),
    ("batch", "eight", "batch", "not a number"),
    ("batch", "1.5", "batch", "whole number"),
    ("batch", "1e9", "batch", "not a real batch"),
    ("prompt tokens", "0", "prompt_len", "from 1"),
    ("output tokens", "1e300", "output_len", "not a real answer"),
    ("measured prefill GEMM speedup", "0", "speedup_prefill", "above 0"),
    ("measured decode GEMM speedup", "-1.5", "speedup_decode", "negative"),
    ("measured decode GEMM speedup", "x1.5", "speedup_decode", "not a number"),
    ("fixed cost per step (ms)", "-1", "step_overhead_ms", "negative"),
    ("attention efficiency", "1.2", "attention_efficiency", "at most 1"),
    ("dtype (weights and activations)", "fp8", "dtype", "no dense tensor-core peak for dtype 'fp8'"),
    ("hidden size", "4097", "hidden", "multiple of heads"),
    ("MLP intermediate size", "14338", "intermediate", "multiple of 4"),
    ("vocabulary size", "1e12", "vocab", "from 1 to"),
]


GEMM_BAD = [
    ("M (tokens)", "0", "M", "from 1"),
    ("M (tokens)", "", "M", "enter a value"),
    ("K (in_features)", "4098", "K", "multiple of 4"),
    ("N (out_features)", "-8", "N", "negative"),
    ("N (out_features)", "1e15", "N", "not a real weight"),
    ("dtype", "fp8", "dtype", "no dense tensor-core peak for dtype 'fp8'"),  # on the A100
]


@pytest.mark.parametrize("label,text,field,expect", GEMM_BAD)
def test_gemm_bad_input_gets_a_message_not_nan(watched, base_url, label, text, field, expect):
    page = _open(watched, base_url, CALC)
    calc = page.locator("[data-calc='gemm']").first
    calc.get_by_label("GPU", exact=True).select_option("A100")
    _bad_input_case(calc, label, text, field, expect)


@pytest.mark.parametrize("label,text,field,expect", AMDAHL_BAD)
def test_amdahl_bad_input_gets_a_message_not_nan(watched, base_url, label, text, field, expect):
    page = _open(watched, base_url, CALC)
    _bad_input_case(page.locator("[data-calc='amdahl']").first, label, text, field, expect)


@pytest.mark.parametrize("label,text,field,expect", PACKING_BAD)
def test_packing_bad_input_gets_a_message_not_nan(watched, base_url, label, text, field, expect):
    page = _open(watched, base_url, CALC)
    _bad_input_case(page.locator("[data-calc='packing']").first, label, text, field, expect)


def test_request_bad_inputs_get_messages_not_nan(watched, base_url):
    page = _open(watched, base_url, CALC)
    root = _request_calc(page)
    root.get_by_label("GPU", exact=True).select_option("A100")  # no fp8 on A100
    root.get_by_label("typed in from a measurement").check()
    root.get_by_label("model", exact=True).select_option("custom")
    root.locator("summary", has_text="More assumptions").click()
    _wait_for_url(page, "model=custom")
    for label, text, field, expect in REQUEST_BAD:
        _bad_input_case(root, label, text, field, expect)
        page.reload(wait_until="load")  # the URL still holds the last valid scenario
        page.wait_for_function("() => document.querySelector('[data-calc=request]')?.dataset.calcReady === 'true'")
        root = _request_calc(page)
        root.locator("summary", has_text="More assumptions").click()
        assert root.locator(".calc-msg:not(:empty)").count() == 0
    assert not watched.console_errors


# ---------------------------------------------------------------------------------------------
# Speed, instant navigation, notebook pages


def _update_times_ms(root, label: str, values: list[str]) -> list[float]:
    """performance.now() around the synchronous update that one input event triggers."""
    return root.evaluate(
        """(r, [label, values]) => {
          const input = [...r.querySelectorAll('input')].find(i => i.labels[0] && i.labels[0].textContent.trim() === label);
          return values.map(v => {
            input.value = v;
            const t0 = performance.now();
            input.dispatchEvent(new Event('input', {bubbles: true}));
            return performance.now() - t0;
          });
        }""",
        [label, values],
    )


def test_an_update_takes_under_16_ms(watched, base_url):
    page = _open(watched, base_url, CALC)
    figures = {}
    values = [str(v) for v in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)] * 3
    figures["request (batch)"] = _update_times_ms(_request_calc(page), "batch", values)
    amdahl_values = [f"0.{i:02d}" for i in range(1, 31)]
    figures["amdahl (p)"] = _update_times_ms(page.locator("[data-calc='amdahl']").first, "eligible fraction p", amdahl_values)
    figures["packing (rows)"] = _update_times_ms(page.locator("[data-calc='packing']").first, "rows N (out_features)", values)
    print()
    for name, times in figures.items():
        print(f"update time {name}: median {statistics.median(times):.2f} ms, max {max(times):.2f} ms over {len(times)} changes")
        assert statistics.median(times) < 16.0, (name, times)


def test_calculators_mount_once_under_instant_navigation(watched, base_url):
    page = _open(watched, base_url, "/")
    page.evaluate("window.__noReload = 'still here'")
    page.locator("a.md-tabs__link", has_text="Calculator").click()
    page.wait_for_function("document.documentElement.dataset.htwPage === '/calculator/'")
    page.wait_for_function("() => document.querySelector('[data-calc=request]')?.dataset.calcReady === 'true'")
    assert page.evaluate("window.__noReload") == "still here", "navigation was not instant"
    root = _request_calc(page)
    root.get_by_label("batch", exact=True).fill("4")
    _wait_for_url(page, "batch=4")
    # Away and back: one form per placeholder, never two.
    page.locator("a.md-tabs__link", has_text="Reference").click()
    page.wait_for_function("document.documentElement.dataset.htwPage === '/reference/glossary/'")
    page.go_back()
    page.wait_for_function("() => document.querySelector('[data-calc=request]')?.dataset.calcReady === 'true'")
    assert page.evaluate("window.__noReload") == "still here"
    assert page.locator(".calc--request").count() == 1 and page.locator(".calc--small").count() == 3
    assert not watched.console_errors and not watched.external_requests


def test_chapter_pages_get_the_calculators_in_place_of_their_widget_cells(watched, base_url, site):
    html = (site / "notebooks/06-amdahl/index.html").read_text()
    assert "amdahl_calculator()" not in html and "request_calculator()" not in html  # widget cells stay hidden
    page = _open(watched, base_url, CHAPTER_6)
    calc = page.locator("[data-calc='amdahl']")
    assert calc.count() == 1
    calc.get_by_label("eligible fraction p").fill("0.5")
    calc.get_by_label("GEMM speedup s").fill("2")
    assert _outputs(calc)["speedup"] == speedup_text(amdahl.speedup(0.5, 2.0))
    req = page.locator("[data-calc='request']")
    assert req.count() == 1
    req.get_by_label("batch", exact=True).fill("16")
    page.wait_for_timeout(500)  # longer than the Calculator page's delay before it writes the URL
    # (Material's navigation.tracking may set the #section hash while scrolling; that is not ours.)
    assert page.evaluate("location.pathname + location.search") == CHAPTER_6, \
        "a calculator embedded in a chapter must leave the chapter's URL alone"
    assert not watched.console_errors
