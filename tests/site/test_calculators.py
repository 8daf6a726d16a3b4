"""The static site's calculators (docs/js/calc) in a real browser, against the Python model.

* Parity: ``scripts/golden.py`` writes its vectors into a temporary folder; the browser imports
  the JS modules from the built, served site and evaluates them on every vector (every GEMM
  scenario, the fitted sets of several GPUs and backends). Every number must equal Python's to
  1e-12 relative (in practice they are bit-identical).
* The tables as the JS modules hold them (GPU peaks, the fitted parameters of kernel-fit.json,
  padding rule, model presets, workloads, packing formats; most from the generated data.js)
  equal the Python ones.
* Ceilings: over a grid of inputs and every scenario, no GEMM prediction passes 2x (or
  1 / packed ratio where the weight dominates), no request passes Amdahl's bound.
* Each calculator is driven like a user (typing, selecting, clicking, following a shared
  link); what it displays equals the Python result written with the one rounding rule below.
* Every kind of bad input gets a message next to its field, the last valid result stays,
  and no NaN or Infinity ever reaches the page.

The rounding rule, in both languages (docs/js/calc/format.js): round the exact binary value
half away from zero to a fixed number of decimals; speedups 3 decimals plus "x", fractions as
percent with 2 decimals (the double ``x * 100`` is rounded), times in ms below 1 s and in s
above, 3 decimals.
"""

from __future__ import annotations

import json
import math
import sys
from decimal import ROUND_HALF_UP, Context, Decimal, localcontext
from pathlib import Path

import pytest
import torch

from twofour import amdahl, hardware, models, packing, request, roofline
from twofour.course import answer
from twofour.funnel import funnel
from twofour.request import Assumptions, Workload, build_inputs, evaluate, estimate, roofline_gemm_model

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import js_data as js_data  # noqa: E402  (scripts/js_data.py: writes docs/js/calc/data.js)
import golden as golden_script  # noqa: E402  (scripts/golden.py: the parity vectors)

sys.path.pop(0)

pytestmark = pytest.mark.browser

CALC = "/calculator/"
# The calculator opens on chapter 7's worked deployment with the H200 run's measured GEMM speedups
# (VERDICT in docs/js/calc/data.js); the roofline's own prediction is one link away.
VERDICT = answer.calculator_verdict()
MEASURED = {"prefill": round(VERDICT["speedup_prefill"], 3), "decode": round(VERDICT["speedup_decode"], 3)}
ROOFLINE = CALC + "?gemm=roofline"  # the defaults with the GEMM speedups predicted


def _worked(batch: int = 1, prompt_len: int = 512, output_len: int = 256, **kw) -> Workload:
    """The calculator's default workload (chapter 7's), with the given changes."""
    return Workload(models.LLAMA_3_8B, batch, prompt_len, output_len, dtype=VERDICT["dtype"], **kw)


def _default_estimate():
    """What the calculator shows on opening: the worked deployment with the measured GEMM speedups."""
    return estimate(_worked(), VERDICT["gpu"], gemm_speedup=MEASURED)
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
    assert golden_script.main(["--out", str(out)]) == 0  # in this process: the script is the same code
    return out


@pytest.fixture(scope="module")
def golden(tmp_path_factory) -> dict:
    out = _golden(tmp_path_factory)
    return {name: json.loads((out / f"{name}.json").read_text()) for name in ("amdahl", "request", "funnel", "roofline")}


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
  } else if (py === null) {
    if (js !== null) bad.push([where, String(js), "null"]);
  } else if (py === undefined) {
    bad.push([where, String(js), "undefined"]);
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
            const w = {model: x.model, batch: x.batch, prompt_len: x.prompt_len, output_len: x.output_len, dtype: x.dtype, pruned: x.pruned,
                       prefill_chunk_tokens: x.prefill_chunk_tokens};
            const inputs = R.buildInputs(w, x.gpu, {assumptions: x.assumptions, gemmSpeedup: x.gemm_speedup, backend: x.backend,
                                                    scenario: x.scenario});
            __cmp(`case ${c.id} inputs`, inputs, c.inputs, bad, stats);
            // the chunk is in the inputs only when set, as RequestInputs.to_dict writes them
            if (("prefill_chunk_tokens" in inputs) !== ("prefill_chunk_tokens" in c.inputs)) bad.push([`case ${c.id} inputs.prefill_chunk_tokens`, "present?", "absent?"]);
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
    assert sum("prefill_chunk_tokens" in c["inputs"] for c in cases) >= 20  # the mixed decode step is covered
    assert {s["title"] for f in funnels for s in f["stages"]} >= {"step 5: per-token speedup", "step 5: end-to-end speedup"}
    print(f"\nrequest/funnel parity: {expected} numbers, worst relative difference {result['stats']['worst']:.3g}")


def test_js_roofline_matches_python_golden_vectors(watched, base_url, golden):
    """predict over shapes x GPUs/backends x scenarios x algorithms x L2 states (fitted and given
    parameters): both kernels' tile, split-K, CTAs, waves, busy SMs, bytes, bandwidth and times,
    the guard; the fitted set per GPU/backend; the messages of the inputs it must refuse."""
    page = _open(watched, base_url, CALC)
    _import(page, "roofline")
    page.evaluate(_COMPARE_JS)
    data = golden["roofline"]
    result = page.evaluate(
        """data => {
          const R = window.__m.roofline, bad = [], stats = {n: 0, worst: 0};
          for (const c of data.cases) {
            const p = R.predict(c.M, c.N, c.K, c.dtype, c.gpu, c.backend, c.params,
                                {scenario: c.scenario, algorithm: c.algorithm, l2: c.l2});
            __cmp(`predict(${c.M},${c.N},${c.K},${c.dtype},${c.gpu},${c.backend},${c.scenario},${c.algorithm},${c.l2})`,
                  p, c.output, bad, stats);
          }
          for (const [key, want] of Object.entries(data.default_params)) {
            const [gpu, backend] = key.split("/");
            __cmp(`defaultParams(${key})`, R.defaultParams(gpu, backend ?? null), want, bad, stats);
            if (backend) __cmp(`defaultParams(${key} lower case)`, R.defaultParams(gpu.toLowerCase(), backend.toLowerCase()), want, bad, stats);
          }
          const message = (fn) => { try { fn(); return "returned"; } catch (e) { return e.name === "InputError" ? e.message : "threw " + e; } };
          const errors = data.errors.map(e => [e.message, message(() => { const x = e.input;
            const opts = {}; for (const k of ["scenario", "algorithm", "l2"]) if (x[k] !== undefined) opts[k] = x[k];
            R.predict(x.M, x.N, x.K, x.dtype, x.gpu, x.backend ?? null, null, opts); })]);
          const paramErrors = data.params_errors.map(e => [e.message, message(() => R.kernelParams(e.input))]);
          return {bad: bad.slice(0, 20), nbad: bad.length, stats, errors, paramErrors,
                  scenarios: R.SCENARIOS, def: R.DEFAULT_SCENARIO};
        }""",
        data,
    )
    assert result["nbad"] == 0, result["bad"]
    assert result["stats"]["n"] == sum(_count_numbers(c["output"]) for c in data["cases"]) + sum(
        _count_numbers(v) * (2 if "/" in k else 1) for k, v in data["default_params"].items())
    assert {c["scenario"] for c in data["cases"]} == set(roofline.SCENARIOS)
    assert {c["algorithm"] for c in data["cases"]} == {"default", "searched"} and {c["l2"] for c in data["cases"]} == {"flushed", "clean"}
    assert (result["scenarios"], result["def"]) == (list(roofline.SCENARIOS), roofline.DEFAULT_SCENARIO)
    assert len(result["errors"]) >= 11 and len(result["paramErrors"]) >= 14
    for python_message, js_message in result["errors"] + result["paramErrors"]:
        assert js_message == python_message


def test_js_roofline_and_packing_match_python(watched, base_url):
    page = _open(watched, base_url, CALC)
    for module in ("roofline", "packing"):
        _import(page, module)
    shapes = [(1, 4096, 4096), (7, 1024, 4096), (16, 14336, 4096), (4096, 4096, 14336), (100_000, 128256, 8192), (333, 5000, 12)]
    points = [(s, d, g, b) for s in shapes for d, g, b in
              [("fp16", "H100", None), ("bf16", "A100", "CUTLASS"), ("int8", "L4", None), ("fp8", "B200", None),
               ("tf32", "A100", "cuSPARSELt")]]
    points = [(*pt, sc, alg) for pt in points for sc in roofline.SCENARIOS
              for alg in (("default",) if pt[3] == "CUTLASS" else ("default", "searched"))]
    js = page.evaluate(
        "points => points.map(([[M, N, K], d, g, b, sc, alg]) => window.__m.roofline.predict(M, N, K, d, g, b, null, {scenario: sc, algorithm: alg}))",
        points,
    )
    for (shape, d, g, b, sc, alg), got in zip(points, js):
        want = roofline.predict(*shape, d, g, b, scenario=sc, algorithm=alg)
        for field in ("dense_us", "sparse_us", "speedup"):
            assert got[field] == pytest.approx(getattr(want, field), rel=1e-12, abs=0), (shape, d, g, field)
        for side in ("dense", "sparse"):
            k = getattr(want, side)
            assert [got[side][f] for f in ("tile_n", "tile_m", "split", "ctas", "waves", "busy_sms", "n_bytes")] == [
                k.tile_n, k.tile_m, k.split, k.ctas, k.waves, k.busy_sms, k.n_bytes], (shape, d, g, side)
        assert (got["M_padded"], got["bound_dense"], got["bound_sparse"], got["backend"], got["ceiling_guard"]) == (
            want.M_padded, want.bound_dense, want.bound_sparse, want.backend, want.ceiling_guard)

    formats = {"fp16": torch.float16, "bf16": torch.bfloat16, "int8": torch.int8, "fp8": 8,
               "tf32": (torch.float32, 1, 2), "fp4_paired": (4, 4, 8, 1), "fp4_elementwise": 4}
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
    """GPU peaks, fitted parameters, padding rule, presets and workloads: one source of truth, checked."""
    page = _open(watched, base_url, CALC)
    for module in ("hardware", "roofline", "request", "data"):
        _import(page, module)
    js = page.evaluate(
        """() => ({gpus: window.__m.hardware.GPUS, eff: window.__m.roofline.DEFAULT_PARAMS,
                   assumed: window.__m.roofline.ASSUMED_PARAMS, fit: window.__m.data.FIT,
                   pad: window.__m.roofline.PAD_MULTIPLE, presets: window.__m.request.PRESETS,
                   scenarios: window.__m.request.WORKLOADS, dtypes: window.__m.request.DTYPE_BYTES})"""
    )
    assert js["fit"] == js_data.fitted_subset()
    assert js["assumed"] == roofline.ASSUMED_PARAMS.to_dict()
    unconfirmed = hardware.unconfirmed_fields()
    assert set(js["gpus"]) == set(hardware.GPUS)
    for name, spec in hardware.GPUS.items():
        g = js["gpus"][name]
        assert (g["arch"], tuple(g["capability"]), g["sms"], g["mem_bw_gbs"], tuple(g["backends"])) == (
            spec.arch, spec.capability, spec.sms, spec.mem_bw_gbs, spec.backends)
        assert g["dense_tflops"] == {d: v for d, v in spec.dense_tflops.items() if v is not None}
        assert g["sparse_tflops"] == {d: v for d, v in spec.sparse_tflops.items() if v is not None}
        assert sorted(g["unconfirmed"]) == sorted(f for gpu, f in unconfirmed if gpu == name)
    assert js["eff"] == roofline.DEFAULT_PARAMS.to_dict()
    assert js["pad"] == {f"{b}/{d}": m for (b, d), m in roofline.model._PAD_MULTIPLE.items()}
    for backend, d in roofline.model._PAD_MULTIPLE:  # the installed torch's live rule agrees too
        assert roofline.pad_multiple(backend, d) == js["pad"][f"{backend}/{d}"]
    fields = ("layers", "hidden", "intermediate", "heads", "kv_heads", "vocab")
    assert set(js["presets"]) == set(models.PRESETS)
    for name, cfg in models.PRESETS.items():
        assert {f: js["presets"][name][f] for f in fields} == {f: getattr(cfg, f) for f in fields}
    assert set(js["scenarios"]) == set(request.WORKLOADS)
    for name, w in request.WORKLOADS.items():
        s = js["scenarios"][name]
        assert (s["model"], s["batch"], s["prompt_len"], s["output_len"], s["dtype"], s["prefill_chunk_tokens"]) == (
            w.model.name, w.batch, w.prompt_len, w.output_len, w.dtype, w.prefill_chunk_tokens)
        assert w.pruned == request.BLOCK_LINEARS  # the page's default layer choice
    assert js["dtypes"] == request.DTYPE_BYTES


def test_the_defaults_table_on_the_page_states_the_defaults_the_code_uses(watched, base_url):
    """The Calculator page's prose names the defaults; if the code changes them, this fails."""
    page = _open(watched, base_url, CALC)
    _import(page, "ui/request-calc")
    _import(page, "roofline")
    defaults, labels = page.evaluate(
        "() => [window.__m['ui/request-calc'].DEFAULTS, window.__m.roofline.SCENARIO_TEXT]")
    text = (Path(__file__).resolve().parents[2] / "docs/calculator/index.md").read_text()
    row = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| ")}
    assert "fitted roofline" in row["predicted GEMM speedup"] and "kernel-fit.json" in row["predicted GEMM speedup"]
    # The GEMM speedups start at the H200 run's measurement, said as such, with its software.
    assert defaults["gemm"] == "measured"
    assert (float(defaults["speedup_prefill"]), float(defaults["speedup_decode"])) == (MEASURED["prefill"], MEASURED["decode"])
    assert "| typed in from a measurement" in row["2:4 GEMM speedup"] and VERDICT["software"] in row["2:4 GEMM speedup"]
    assert f"{MEASURED['decode']:.3f}x" in row["2:4 GEMM speedup"] and f"{MEASURED['prefill']:.3f}x" in row["2:4 GEMM speedup"]
    assert defaults["dtype"] == VERDICT["dtype"] and f"| {VERDICT['dtype']} |" in row["dtype"]
    assert f"| {labels[defaults['scenario']]['label']} |" in row["how the GEMMs are run"]
    assert defaults["scenario"] == roofline.DEFAULT_SCENARIO
    assert defaults["backend"] is None and "first PyTorch backend" in row["2:4 backend"]
    cfg = models.PRESETS[defaults["model"]]
    assert (f"{cfg.name} ({cfg.layers} layers, hidden {cfg.hidden}, MLP {cfg.intermediate}, {cfg.heads} heads, "
            f"{cfg.kv_heads} KV heads)") in row["model shapes"]
    assert f"| {defaults['gpu']} SXM |" in row["GPU peaks and bandwidth"]
    chat = request.WORKLOADS["chat decode, batch 1"]
    assert (defaults["batch"], defaults["prompt_len"], defaults["output_len"]) == (chat.batch, chat.prompt_len, chat.output_len)
    assert f"batch {chat.batch}, {chat.prompt_len} prompt and {chat.output_len} output tokens" in row["workload"]
    # The prose cites the fit rather than typing its numbers: no parameter value appears in it.
    params = roofline.DEFAULT_PARAMS.to_dict()
    for value in [v for f in roofline.FAMILIES for v in params[f].values()] + list(params.values()):
        if isinstance(value, float):
            assert str(value) not in text, value
    for scenario in roofline.SCENARIOS:
        assert f"**{labels[scenario]['label']}**" in text  # each scenario explained in the prose
    assert defaults["prefill_chunk_tokens"] == 0 and "| 0: each decode step runs alone |" in row["prefill chunk tokens"]
    # The funnel has steps (the answer has stages), titled as twofour.funnel titles them.
    assert "one loss per step" in text and "per stage" not in text
    for s in funnel(_default_estimate(), "request"):
        assert f"**{s.title.split(': ', 1)[1]}**" in text, s.title
    # Measuring instead of modelling: the note points at chapter 3's section on reading a trace.
    note = page.get_by_text("Measure it instead:").locator("xpath=..")
    assert "torch.profiler" in note.inner_text() and "twofour trace FILE --compare DENSE_FILE" in note.inner_text()
    href = note.get_by_role("link").get_attribute("href")
    assert href.endswith("notebooks/03-dispatch/#someone-elses-trace-twofour-trace"), href


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

    # The defaults: chapter 7's worked deployment (Llama-3-8B fp16 on the H200, chat workload) with
    # the GEMM speedups measured there; its headline is the verdict table's number, worded as a ratio.
    _assert_shows(root, _expected_request(_default_estimate(), "request", request.BLOCK_LINEARS))
    head = root.locator("[data-headline='box']")
    assert head.locator("[data-headline='value']").inner_text() == answer.quoted_numbers()["chain-request"]
    assert head.locator("[data-headline='note']").inner_text() == "the dense speed (slower)"
    assert answer.quoted_numbers()["chain-fp16"] in head.locator("[data-headline='detail']").inner_text()  # per token
    assert "measured on the H200" in _outputs(root)["gemm_line"]

    # A user's scenario: A100, fp16, batch 8, 1024 in / 128 out, LM head pruned too, measured
    # GEMM speedups, a fixed cost per step, the decode funnel.
    root.get_by_label("GPU", exact=True).select_option("A100")
    root.get_by_label("dtype (weights and activations)").select_option("fp16")
    for label, text in (("batch", "8"), ("prompt tokens", "1024"), ("output tokens", "128")):
        field = root.get_by_label(label, exact=True)
        field.fill("")
        field.press_sequentially(text)
    root.get_by_label("lm_head").check()
    root.get_by_label("2:4 backend").select_option("CUTLASS")
    root.get_by_label("eager PyTorch", exact=True).check()
    root.get_by_label("typed in from a measurement").check()
    root.get_by_label("measured prefill GEMM speedup").fill("1.4")
    root.get_by_label("measured decode GEMM speedup").fill("0.9")
    root.locator("summary", has_text="More assumptions").click()
    root.get_by_label("fixed cost per step (ms)").fill("0.2")
    root.get_by_label("decode (per token)").check()

    pruned = request.BLOCK_LINEARS + ("lm_head",)
    mine = _estimate(Workload(models.LLAMA_3_8B, 8, 1024, 128, dtype="fp16", pruned=pruned), "A100", backend="CUTLASS",
                     scenario="eager", gemm_speedup={"prefill": 1.4, "decode": 0.9},
                     assumptions=Assumptions(step_overhead_s=0.2 * 1e-3))
    expected = _expected_request(mine, "decode", pruned)
    _assert_shows(root, expected)
    assert "slower" in _outputs(root)["establish"]  # decode GEMMs at 0.9x: said in words

    # The address bar now links to this scenario; a fresh page opened from it shows the same.
    _wait_for_url(page, "scope=decode")
    shared = page.url
    assert "gpu=A100" in shared and "s_decode=0.9" in shared and "scope=decode" in shared
    assert "backend=CUTLASS" in shared and "scenario=eager" in shared
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
        assert root2.get_by_label("2:4 backend").input_value() == "CUTLASS"
        assert root2.get_by_label("eager PyTorch", exact=True).is_checked()
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
    workload = Workload(cfg, 8, 1024, 128, dtype="fp16", pruned=pruned)
    custom = _estimate(workload, "A100", backend="CUTLASS", scenario="eager", assumptions=Assumptions(step_overhead_s=0.2 * 1e-3))
    _assert_shows(root, _expected_request(custom, "request", pruned))
    # The range over the scenarios, and the fit line of the A100's CUTLASS set.
    shown = _outputs(root)
    for sc in roofline.SCENARIOS:
        est = _estimate(workload, "A100", backend="CUTLASS", scenario=sc, assumptions=Assumptions(step_overhead_s=0.2 * 1e-3))
        for key in ("speedup_ttft", "speedup_tpot", "speedup_request"):
            assert shown[f"range_{sc}_{key}"] == speedup_text(est.summary()[key]), (sc, key)
    assert js_data.fitted_subset()["per_gpu"]["A100"]["note"] in shown["fit"]  # one set per GPU, its backends together

    # A chapter-6 scenario from the list.
    root.get_by_label("start from a workload").select_option("high throughput, batch 64, 8K context")
    scenario = request.WORKLOADS["high throughput, batch 64, 8K context"]
    est = _estimate(Workload(scenario.model, scenario.batch, scenario.prompt_len, scenario.output_len, dtype="bf16",
                             pruned=pruned), "A100", backend="CUTLASS", scenario="eager",
                    assumptions=Assumptions(step_overhead_s=0.2 * 1e-3))
    _assert_shows(root, _expected_request(est, "request", pruned))
    assert not watched.console_errors and not watched.external_requests


def _estimate(workload, gpu, *, backend=None, scenario=roofline.DEFAULT_SCENARIO, **kw):
    """twofour.request.estimate with an explicit backend (the calculator's backend choice)."""
    gemm = roofline_gemm_model(gpu, workload.dtype, backend=backend, scenario=scenario) if backend else None
    return evaluate(build_inputs(workload, gpu, gemm=gemm, scenario=scenario, **kw))


def _significant(x: float, digits: int = 3) -> str:
    """JavaScript's String(Number(x.toPrecision(digits))) for a value between 1e-6 and 1e21."""
    with localcontext(Context(prec=200)):
        d = Decimal(x)
        q = Decimal(1).scaleb(d.adjusted() - digits + 1)
        return repr(float(d.quantize(q, rounding=ROUND_HALF_UP)))


def test_measured_fields_start_at_the_prediction_never_at_a_ceiling(watched, base_url):
    page = _open(watched, base_url, CALC + "?gpu=H200&dtype=bf16&scenario=eager&batch=4&gemm=roofline")
    root = _request_calc(page)
    # The fields hold the H200 run's measurement of the worked deployment (batch 1, fp16); this is
    # another workload, so choosing "typed in" starts them at this workload's prediction instead.
    root.get_by_label("typed in from a measurement").check()
    est = estimate(Workload(models.LLAMA_3_8B, 4, 512, 256, dtype="bf16"), "H200", scenario="eager")
    s_prefill, s_decode = _significant(est.prefill.gemm_speedup), _significant(est.decode.gemm_speedup)
    assert root.get_by_label("measured prefill GEMM speedup").input_value() == s_prefill
    assert root.get_by_label("measured decode GEMM speedup").input_value() == s_decode
    ceilings = set(roofline.ceilings("bf16").values())
    assert not {float(s_prefill), float(s_decode)} & ceilings
    typed = estimate(Workload(models.LLAMA_3_8B, 4, 512, 256, dtype="bf16"), "H200", scenario="eager",
                     gemm_speedup={"prefill": float(s_prefill), "decode": float(s_decode)})
    _assert_shows(root, _expected_request(typed, "request", request.BLOCK_LINEARS))
    _wait_for_url(page, "gemm=measured")
    assert f"s_decode={s_decode}" in page.url
    # A link that asks for measured speedups without giving them starts them at the prediction too.
    page = _open(watched, base_url, CALC + "?gpu=H200&dtype=bf16&scenario=eager&batch=4&gemm=measured")
    root = _request_calc(page)
    assert root.get_by_label("measured decode GEMM speedup").input_value() == s_decode
    assert root.locator(".calc-msg:not(:empty)").count() == 0
    # A bad value that does not change the GEMM speedups (an efficiency) does not stop that.
    page = _open(watched, base_url, CALC + "?gpu=H200&dtype=bf16&scenario=eager&batch=4&gemm=measured&attn_eff=1e-320")
    root = _request_calc(page)
    assert root.get_by_label("measured decode GEMM speedup").input_value() == s_decode
    assert root.locator(".calc-msg:not(:empty)").count() == 1
    assert "out of range" in root.locator("[data-field='attention_efficiency'] .calc-msg").inner_text()


def test_a_shared_link_with_bad_values_says_so_and_keeps_a_valid_result(watched, base_url):
    page = _open(watched, base_url, CALC + "?gpu=Z900&batch=-3&pruned=q_proj,attn&scenario=fast&backend=cublas&chunk=lots")
    root = _request_calc(page)
    assert "not a number" in root.locator("[data-field='prefill_chunk_tokens'] .calc-msg").inner_text()
    assert "Z900" in root.locator("[data-field='gpu'] .calc-msg").inner_text()
    assert "fast" in root.locator("[data-field='scenario'] .calc-msg").inner_text()
    assert "cublas" in root.locator("[data-field='backend'] .calc-msg").inner_text()
    assert "negative" in root.locator("[data-field='batch'] .calc-msg").inner_text()
    assert "attn" in root.inner_text()
    # The defaults' result is what stays on screen.
    assert _outputs(root)["speedup_request"] == speedup_text(_default_estimate().speedup("request"))


def _default_decode():
    """The Amdahl card's start: decode share and measured decode GEMM speedup of the worked deployment."""
    est = _default_estimate()
    return str(float(fixed(est.decode.p, 3))), str(float(fixed(est.decode.gemm_speedup, 3)))


def test_embedded_amdahl_and_packing_calculators_match_python(watched, base_url):
    page = _open(watched, base_url, CALC)
    calc = page.locator("[data-calc='amdahl']").first
    p, s = _default_decode()
    assert calc.get_by_label("eligible fraction p").input_value() == p
    assert calc.get_by_label("GEMM speedup s").input_value() == s
    ceilings = roofline.ceilings(VERDICT["dtype"])
    assert float(s) < ceilings["memory"] and float(s) not in (ceilings["memory"], round(ceilings["memory"], 2), 2.0)
    shown = _outputs(calc)
    assert shown["speedup"] == speedup_text(amdahl.speedup(float(p), float(s)))
    assert "decode phase" in shown["origin"] and "measured on the H200" in shown["origin"]
    # one deployment, one number: the card's result is the table's speedup per output token
    per_token = _default_estimate().speedup("tpot")
    assert abs(float(shown["speedup"].rstrip("x")) - per_token) < 2e-3, (shown["speedup"], per_token)
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


def _fit_facts_expected(gpu: str, backend: str, M: int) -> list[str]:
    """Pieces the fit line under a GEMM prediction must hold, read from kernel-fit.json in Python."""
    fit = js_data.fitted_subset()
    key = f"{gpu}/{backend}" if f"{gpu}/{backend}" in fit["per_gpu"] else gpu if gpu in fit["per_gpu"] else None
    regime = "M<=16" if M <= 16 else "16<M<=256" if M <= 256 else "M>256"
    held = fit["errors"]["held_out"]
    kernel = {r["regime"]: r for r in held["by_mode"]["kernel"]}[regime]
    graph = {r["regime"]: r for r in held["by_mode"]["graph"]}[regime]
    pub = {r["regime"]: r for r in fit["errors"]["published_leave_one_source_out"]["by_regime"]}.get(regime)
    out = [f"Fitted model, {gpu} with {backend}: " + (fit["per_gpu"][key]["note"] if key else "no usable measurement"),
           f"{fixed(kernel['median'] * 100, 0)}% on {kernel['n']} kernel times, {fixed(graph['median'] * 100, 0)}% on "
           f"{graph['n']} graph replays of {held['label']}",
           f"Fitted to {fit['provenance']['n_points']} measurements from {len(fit['provenance']['sources'])} sources"]
    out.append(f"{fixed(pub['median'] * 100, 0)}% on {pub['n']} published" if pub else "no usable published measurement at this M")
    return out


def test_embedded_gemm_calculator_matches_the_python_roofline(watched, base_url):
    page = _open(watched, base_url, CALC)
    calc = page.locator("[data-calc='gemm']").first
    for (M, N, K, dtype, gpu, backend, scenario) in [
            (16, 4096, 4096, "fp16", "H100", "cuSPARSELt", "cached"), (1, 14336, 4096, "int8", "L4", "cuSPARSELt", "eager"),
            (8192, 4096, 14336, "bf16", "A100", "CUTLASS", "eager"), (8192, 4096, 14336, "bf16", "A100", "cuSPARSELt", "eager"),
            (64, 4096, 4096, "fp16", "A100", "CUTLASS", "kernel"), (3, 1024, 8192, "fp8", "B200", "cuSPARSELt", "cached"),
            (4096, 4096, 4096, "fp16", "H200", "cuSPARSELt", "eager")]:
        calc.get_by_label("M (tokens)").fill(str(M))
        calc.get_by_label("N (out_features)").fill(str(N))
        calc.get_by_label("K (in_features)").fill(str(K))
        calc.get_by_label("GPU", exact=True).select_option(gpu)
        calc.get_by_label("dtype", exact=True).select_option(dtype)
        calc.get_by_label("2:4 backend").select_option(backend)
        calc.get_by_label(JS_SCENARIO_LABELS[scenario], exact=True).check()
        for algorithm in (("default",) if backend == "CUTLASS" else ("default", "searched")):
            if backend != "CUTLASS":
                calc.get_by_label("cuSPARSELt algorithm").select_option(algorithm)
            p = roofline.predict(M, N, K, dtype, gpu, backend, scenario=scenario, algorithm=algorithm)
            shown = _outputs(calc)
            assert shown["dense"] == f"{fixed(p.dense_us, 2)} µs" and shown["sparse"] == f"{fixed(p.sparse_us, 2)} µs"
            assert shown["speedup"] == speedup_text(p.speedup)
            assert shown["bounds"] == f"dense {p.bound_dense}, 2:4 {p.bound_sparse}"
            assert shown["padding"] == ("no padding" if p.M_padded == M else f"2:4 path pads M to {integer_text(p.M_padded)}")
            sms = hardware.get_gpu(gpu).sms
            for side, lib in (("dense", "cuBLAS"), ("sparse", {"default": "cuSPARSELt alg 0", "searched": "cuSPARSELt searched"}[algorithm]
                                                               if backend != "CUTLASS" else "CUTLASS")):
                k = getattr(p, side)
                assert shown[f"kernel_{side}"].startswith(
                    f"{lib} tile {k.tile_n}×{k.tile_m}, split-K {k.split}, {integer_text(k.ctas)} CTAs on {sms} SMs "
                    f"({integer_text(k.busy_sms)} busy, {k.waves} wave"), (side, shown[f"kernel_{side}"])
            for piece in _fit_facts_expected(gpu, backend, M):
                assert piece in shown["fit"], (piece, shown["fit"])
        assert calc.get_by_label("cuSPARSELt algorithm").is_disabled() == (backend == "CUTLASS")
    # The backend list follows the GPU: the H100 has no CUTLASS 2:4 path in PyTorch.
    calc.get_by_label("GPU", exact=True).select_option("H100")
    assert calc.get_by_label("2:4 backend").evaluate("s => [...s.options].map(o => o.value)") == ["cuSPARSELt"]
    assert not watched.console_errors


# The scenario choice's labels on the page (roofline.js SCENARIO_TEXT), checked against the JS in
# test_every_scenario_is_offered_with_its_sentence.
JS_SCENARIO_LABELS = {"eager": "eager PyTorch", "cached": "cached plans or CUDA graphs", "kernel": "kernel only"}


def test_every_scenario_is_offered_with_its_sentence(watched, base_url):
    page = _open(watched, base_url, CALC)
    _import(page, "roofline")
    text = page.evaluate("() => window.__m.roofline.SCENARIO_TEXT")
    assert {k: v["label"] for k, v in text.items()} == JS_SCENARIO_LABELS
    for selector in ("[data-calc='gemm']", "[data-calc='request']"):
        calc = page.locator(selector).first
        group = calc.locator("[data-field='scenario']")
        for scenario, label in JS_SCENARIO_LABELS.items():
            radio = group.get_by_label(label, exact=True)
            assert radio.is_checked() == (scenario == roofline.DEFAULT_SCENARIO)
            help_id = radio.get_attribute("aria-describedby")
            sentence = group.locator(f"#{help_id}").inner_text()
            assert sentence == text[scenario]["help"] and sentence.endswith(".") and sentence.count(". ") == 0


def test_reset_restores_the_defaults_and_the_link(watched, base_url):
    page = _open(watched, base_url, CALC + "?gpu=L4&dtype=int8&batch=32&gemm=measured&s_prefill=1.2&s_decode=0.7&scope=prefill")
    root = _request_calc(page)
    assert root.get_by_label("GPU", exact=True).input_value() == "L4"
    root.get_by_role("button", name="Reset to the defaults").click()
    _assert_shows(root, _expected_request(_default_estimate(), "request", request.BLOCK_LINEARS))
    _wait_for_url(page, "gpu=H200")
    assert f"s_decode={MEASURED['decode']}" in page.url and "scope" not in page.url


def test_prefill_chunk_makes_the_mixed_decode_step_and_lives_in_the_link(watched, base_url, browser):
    """Chunked prefill: M = batch + chunk in decode, the chunk's work added; typed, linked, reset, preset."""
    page = _open(watched, base_url, CALC + "?gpu=H100&dtype=bf16&gemm=roofline")
    root = _request_calc(page)
    field = root.get_by_label("prefill chunk tokens", exact=True)
    assert field.input_value() == "0"
    help_id = [i for i in field.get_attribute("aria-describedby").split() if i.endswith("-help")][0]
    sentence = root.locator(f"#{help_id}").inner_text()
    assert "continuous batching with chunked prefill" in sentence and "M = batch + chunk" in sentence
    root.get_by_label("batch", exact=True).fill("8")
    field.fill("256")
    root.get_by_label("decode (per token)").check()
    mixed = estimate(Workload(models.LLAMA_3_8B, 8, 512, 256, prefill_chunk_tokens=256), "H100")
    plain = estimate(Workload(models.LLAMA_3_8B, 8, 512, 256), "H100")
    assert mixed.decode.p != plain.decode.p  # the chunk changes what is shown
    expected = _expected_request(mixed, "decode", request.BLOCK_LINEARS)
    _assert_shows(root, expected)
    assert root.evaluate("r => [...r.querySelectorAll('svg [data-title]')].map(e => e.textContent)") == [
        s.title for s in funnel(mixed, "decode")]
    shown = _outputs(root)
    assert "M = 264 (one row per sequence plus 256 prompt-chunk rows" in shown["measure"]
    assert "256-token prefill chunk" in shown["establish"]
    # A bigger chunk fills more than one 256-token tile; the verdict says why 2:4 still loses there.
    field.fill("400")
    bigger = estimate(Workload(models.LLAMA_3_8B, 8, 512, 256, prefill_chunk_tokens=400), "H100")
    assert bigger.decode.gemm_speedup < 1
    assert roofline.predict(408, 4096, 4096, "bf16", "H100").sparse.tile_m < 408
    _assert_shows(root, _expected_request(bigger, "decode", request.BLOCK_LINEARS))
    assert "at M = 408 the 2:4 kernels reach a smaller share of their peak" in _outputs(root)["establish"]
    field.fill("256")

    _wait_for_url(page, "chunk=256")
    other = browser.new_context()
    try:
        page2 = other.new_page()
        page2.goto(page.url, wait_until="load")
        page2.wait_for_function("() => document.querySelector('[data-calc=request]')?.dataset.calcReady === 'true'")
        root2 = page2.locator("[data-calc='request']")
        assert root2.get_by_label("prefill chunk tokens", exact=True).input_value() == "256"
        _assert_shows(root2, expected)
    finally:
        other.close()

    # A workload from chapter 6 runs its decode steps alone; reset does too and drops chunk= from the link.
    root.get_by_label("start from a workload").select_option("chat decode, batch 1")
    assert field.input_value() == "0"
    field.fill("64")
    root.get_by_role("button", name="Reset to the defaults").click()
    assert field.input_value() == "0"
    _assert_shows(root, _expected_request(_default_estimate(), "request", request.BLOCK_LINEARS))
    _wait_for_url(page, "gpu=H200")
    page.wait_for_function("() => !location.search.includes('chunk=')", timeout=5_000)
    assert not watched.console_errors


def test_funnel_steps_carry_the_python_titles(watched, base_url):
    """The card says 'step N: ... speedup' as twofour.funnel does, and its text description lists them."""
    page = _open(watched, base_url, CALC)
    root = _request_calc(page)
    est = _default_estimate()
    for scope, label in (("request", "whole request"), ("prefill", "prefill (TTFT)"), ("decode", "decode (per token)")):
        root.get_by_role("radio", name=label, exact=True).check()
        titles = root.evaluate("r => [...r.querySelectorAll('svg [data-title]')].map(e => e.textContent)")
        assert titles == [s.title for s in funnel(est, scope)]
        desc = root.evaluate("r => r.querySelector('svg desc').textContent")
        assert desc == "; ".join(f"{s.title}: {speedup_text(s.speedup)}" for s in funnel(est, scope))


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
        if key not in ("stale", "switch_note"):  # the note under a field the reader changed is not a result
            assert after[key] == value, f"{label}={text!r} changed {key}"
    assert root.evaluate("r => r.querySelector('svg') ? r.querySelector('svg').innerHTML : ''") == svg_before
    assert "showing the last valid result" in after["stale"].lower()
    _assert_no_nan_in_results(root)


def _each_bad_input(root, cases):
    """:func:`_bad_input_case` for each case in turn on one mounted calculator (a page load per case
    cost about 3 s): the field gets its valid value back after each, and every failing case is listed."""
    failures = []
    for label, text, field, expect in cases:
        control = root.get_by_label(label, exact=True)
        valid = control.input_value()
        try:
            _bad_input_case(root, label, text, field, expect)
        except AssertionError as err:
            failures.append(f"{label}={text!r}: {err}")
        if control.evaluate("e => e.tagName") == "SELECT":
            control.select_option(valid)
        else:
            control.fill(valid)
        left = root.locator(f"[data-field='{field}'] .calc-msg").inner_text()
        if left:
            failures.append(f"{label}: still says {left!r} once its valid value {valid!r} is back")
    assert not failures, "\n".join(failures)


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
    ("prefill chunk tokens", "", "prefill_chunk_tokens", "enter a value"),
    ("prefill chunk tokens", "-256", "prefill_chunk_tokens", "negative"),
    ("prefill chunk tokens", "2.5", "prefill_chunk_tokens", "whole number"),
    ("prefill chunk tokens", "1e7", "prefill_chunk_tokens", "not a real prefill chunk"),
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


def test_gemm_bad_input_gets_a_message_not_nan(watched, base_url):
    page = _open(watched, base_url, CALC)
    calc = page.locator("[data-calc='gemm']").first
    calc.get_by_label("GPU", exact=True).select_option("A100")
    _each_bad_input(calc, GEMM_BAD)
    assert not watched.console_errors


def test_amdahl_bad_input_gets_a_message_not_nan(watched, base_url):
    page = _open(watched, base_url, CALC)
    _each_bad_input(page.locator("[data-calc='amdahl']").first, AMDAHL_BAD)
    assert not watched.console_errors


def test_packing_bad_input_gets_a_message_not_nan(watched, base_url):
    page = _open(watched, base_url, CALC)
    _each_bad_input(page.locator("[data-calc='packing']").first, PACKING_BAD)
    assert not watched.console_errors


@pytest.mark.slow
def test_request_bad_inputs_get_messages_not_nan(watched, base_url):
    page = _open(watched, base_url, CALC)
    root = _request_calc(page)
    root.get_by_label("GPU", exact=True).select_option("A100")  # no fp8 on A100
    root.get_by_label("typed in from a measurement").check()
    root.get_by_label("model", exact=True).select_option("custom")
    root.locator("summary", has_text="More assumptions").click()
    _wait_for_url(page, "model=custom")
    _each_bad_input(root, REQUEST_BAD)
    assert root.locator(".calc-msg:not(:empty)").count() == 0
    assert not watched.console_errors


# ---------------------------------------------------------------------------------------------
# Out of range: values that would make a result non-finite


OUT_OF_RANGE_TYPED = [
    # (calculator, label, text, field)
    ("amdahl", "GEMM speedup s", "1e-320", "s"),       # a denormal: p / s overflows
    ("amdahl", "eligible fraction p", "4e-324", "p"),  # the smallest denormal
    ("amdahl", "GEMM speedup s", "1e-400", "s"),       # rounds to 0 in parsing
    ("request", "attention efficiency", "1e-320", "attention_efficiency"),
    ("request", "memory efficiency", "2e-310", "memory_efficiency"),
    ("request", "fixed cost per step (ms)", "1e-330", "step_overhead_ms"),  # 0 is valid, this is not
    ("request", "measured decode GEMM speedup", "5e-324", "speedup_decode"),
]


def test_a_typed_value_that_breaks_finiteness_is_out_of_range(watched, base_url):
    page = _open(watched, base_url, CALC)
    for calc_name in ("amdahl", "request"):
        root = page.locator(f"[data-calc='{calc_name}']").first
        if calc_name == "request":
            root.locator("summary", has_text="More assumptions").click()
            root.get_by_label("typed in from a measurement").check()
        _each_bad_input(root, [(label, text, field, "out of range")
                               for name, label, text, field in OUT_OF_RANGE_TYPED if name == calc_name])
    assert not watched.console_errors


def test_an_overflow_from_normal_numbers_is_out_of_range_next_to_its_cause(watched, base_url):
    """Each value is fine alone; together the attention time overflows. The divisor gets the message."""
    page = _open(watched, base_url, CALC)
    root = _request_calc(page)
    root.locator("summary", has_text="More assumptions").click()
    root.get_by_label("prompt tokens", exact=True).fill("100000000")
    _bad_input_case(root, "attention efficiency", "1e-303", "attention_efficiency", "out of range")
    assert root.locator("[data-field='prompt_len'] .calc-msg").inner_text() == ""
    assert not watched.console_errors


@pytest.mark.parametrize("query,field", [
    ("attn_eff=1e-320", "attention_efficiency"),
    ("mem_eff=1e-320", "memory_efficiency"),
    ("gemm=measured&s_prefill=1e-320&s_decode=0.9", "speedup_prefill"),
    ("step_ms=1e-320", "step_overhead_ms"),
    ("request_ms=1e-400", "request_overhead_ms"),
    ("prompt=100000000&attn_eff=1e-303", "attention_efficiency"),
    ("batch=1e-320", "batch"),
])
def test_a_link_with_a_value_that_breaks_finiteness_still_mounts_and_says_out_of_range(watched, base_url, query, field):
    page = _open(watched, base_url, CALC + "?" + query)  # _open waits for every calculator to be ready
    root = _request_calc(page)
    message = root.locator(f"[data-field='{field}'] .calc-msg").inner_text()
    assert "out of range" in message.lower() or (field == "batch" and "whole number" in message.lower()), message
    assert _outputs(root)["speedup_request"] == speedup_text(_default_estimate().speedup("request"))  # the defaults' result stays
    _assert_no_nan_in_results(root)
    assert page.evaluate("() => [...document.querySelectorAll('[data-calc]')].map(e => e.dataset.calcReady)") == ["true"] * 4
    assert not watched.console_errors


# ---------------------------------------------------------------------------------------------
# Ceilings: over a grid of inputs and every scenario, nothing the calculators compute passes them


def test_no_gemm_prediction_passes_its_ceiling_in_any_scenario(watched, base_url):
    """2x everywhere; 1 / packed ratio where the dense kernel is bound by bytes. Fitted sets and
    ones with no cost outside the kernels, every GPU with a 2:4 path, each backend, both
    algorithms, every dtype it runs."""
    page = _open(watched, base_url, CALC)
    for module in ("roofline", "hardware", "ui/gemm-calc"):
        _import(page, module)
    result = page.evaluate(
        """() => {
          const R = window.__m.roofline, H = window.__m.hardware, G = window.__m['ui/gemm-calc'];
          const Ms = [1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 64, 100, 128, 255, 256, 257, 512, 1000, 1024, 2048, 4096,
                      8192, 12345, 16384, 32768, 65536];
          const shapes = [[4096, 4096], [1024, 4096], [14336, 4096], [4096, 14336], [128256, 4096], [8192, 28672], [256, 64]];
          const worst = {gemm: 0, bytes: 0}, over = [];
          let n = 0;
          for (const gpu of H.SPARSE_GPUS) for (const backend of [null, ...H.GPUS[gpu].backends]) {
            const base = R.defaultParams(gpu, backend);
            const zero = {...base, graph_dense_us: 0, graph_sparse_us: 0, host_dense_us: 0, host_sparse_us: 0, pad_us: 0};
            const algorithms = (backend ?? H.GPUS[gpu].backends[0]) === "CUTLASS" ? ["default"] : ["default", "searched"];
            for (const d of Object.keys(H.GPUS[gpu].sparse_tflops)) for (const params of [null, zero]) for (const algorithm of algorithms) {
              for (const [N, K] of shapes) for (const M of Ms) for (const scenario of R.SCENARIOS) {
                let p;
                try {
                  p = params === null ? G.compute({M, N, K, dtype: d, gpu, backend: backend ?? H.GPUS[gpu].backends[0], algorithm, scenario})
                                      : R.predict(M, N, K, d, gpu, backend, params, {scenario, algorithm});
                } catch (e) {
                  if (e.name === "InputError" && e.field === "dtype") continue;  // e.g. CUTLASS has no fp8 path
                  throw e;
                }
                n += 1;
                const c = R.ceilings(d);
                if (!(p.speedup <= c.compute * (1 + 1e-12))) over.push(["2x", gpu, backend, d, M, N, K, scenario, algorithm, p.speedup]);
                worst.gemm = Math.max(worst.gemm, p.speedup / c.compute);
                if (p.dense.bound === "memory") {
                  if (!(p.speedup <= c.memory * (1 + 1e-12))) over.push(["bytes", gpu, backend, d, M, N, K, scenario, algorithm, p.speedup]);
                  worst.bytes = Math.max(worst.bytes, p.speedup / c.memory);
                }
              }
            }
          }
          return {n, over: over.slice(0, 10), nover: over.length, worst};
        }"""
    )
    print(f"\nGEMM ceilings: {result['n']} predictions, worst fraction of 2x {result['worst']['gemm']:.3f}, "
          f"of 1/packed ratio where dense is memory-bound {result['worst']['bytes']:.3f}")
    assert result["n"] > 20_000
    assert result["nover"] == 0, result["over"]


def test_no_request_passes_amdahls_bound_in_any_scenario(watched, base_url):
    """The request calculator's own compute function over a grid of workloads, GPUs, dtypes,
    pruned sets and every scenario: each phase and the request stay within Amdahl's bound for
    their eligible share, and the predicted GEMM speedups within the roofline ceiling."""
    page = _open(watched, base_url, CALC)
    for module in ("ui/request-calc", "hardware", "roofline", "amdahl"):
        _import(page, module)
    result = page.evaluate(
        """() => {
          const C = window.__m['ui/request-calc'], H = window.__m.hardware, R = window.__m.roofline, A = window.__m.amdahl;
          const over = [];
          let n = 0;
          const tol = 1 + 1e-9;
          const check = (what, value, bound, ctx) => { if (!(value <= bound * tol)) over.push([what, value, bound, ctx]); };
          const prunedSets = [["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
                              ["gate_proj", "up_proj", "down_proj"], ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"]];
          for (const gpu of H.SPARSE_GPUS) for (const backend of H.GPUS[gpu].backends)
          for (const dtype of ["bf16", "fp8", "int8"]) for (const [batch, prompt, output] of [[1, 512, 256], [1, 8192, 64], [8, 1024, 128], [64, 7680, 512], [256, 128, 1]])
          for (const pruned of prunedSets) for (const scenario of R.SCENARIOS) for (const gemm of ["roofline", "measured"]) {
            const state = {...C.DEFAULTS, gpu, backend, dtype, batch, prompt_len: prompt, output_len: output, pruned, scenario, gemm,
                           speedup_prefill: 1.9, speedup_decode: 1.7, step_overhead_ms: 0.1};
            let v;
            try { v = C.computeScenario(state); } catch (e) { if (e.name === "InputError") continue; throw e; }
            n += 1;
            const s = v.summary, ctx = [gpu, backend, dtype, batch, prompt, output, pruned.length, scenario, gemm];
            for (const [speed, p, g] of [["speedup_request", "p_request", "gemm_speedup_request"],
                                         ["speedup_ttft", "p_prefill", "gemm_speedup_prefill"]]) {
              if (s[p] < 1) check(speed + " <= 1/(1-p)", s[speed], 1 / (1 - s[p]), ctx);
              check(speed + " <= amdahl(p, s)", s[speed], A.speedup(s[p], s[g]), ctx);
            }
            if (output > 1) {
              if (s.p_decode < 1) check("speedup_tpot <= 1/(1-p)", s.speedup_tpot, 1 / (1 - s.p_decode), ctx);
              check("speedup_tpot <= amdahl(p, s)", s.speedup_tpot, A.speedup(s.p_decode, s.gemm_speedup_decode), ctx);
            }
            if (gemm === "roofline") {
              for (const ph of ["prefill", "decode", "request"]) {
                check(`gemm_speedup_${ph} <= 2`, s[`gemm_speedup_${ph}`], 2, ctx);
                check(`gemm_speedup_${ph} <= ceiling`, s[`gemm_speedup_${ph}`], s[`ceiling_speedup_${ph}`], ctx);
              }
            }
            const final = v.stages[v.stages.length - 1].speedup;
            check("funnel end <= Amdahl bound", final, s.p_request < 1 ? 1 / (1 - s.p_request) : Infinity, ctx);
          }
          return {n, over: over.slice(0, 10), nover: over.length};
        }"""
    )
    print(f"\nrequest ceilings: {result['n']} workloads checked")
    assert result["n"] > 1000
    assert result["nover"] == 0, result["over"]


# ---------------------------------------------------------------------------------------------
# Instant navigation, notebook pages (the update speed is measured by benchmarks/site_speed.py)


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
