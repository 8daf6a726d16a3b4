// The Calculator page: a workload, a GPU, how the GEMMs run (the scenario) and a GEMM speedup
// -> TTFT, per-token and request speedups, the eligible fraction per phase, the range over the
// scenarios, and the funnel, drawn live. The model is ../request.js (a mirror of
// twofour.request) with the fitted roofline; this module is only the form around it.
//
// The inputs live in the page's query string (?gpu=H100&batch=8...), rewritten on every valid
// change, so the address bar is always a link to the scenario on screen; opening such a link
// restores it. Placeholder: <div data-calc="request"></div> (add data-url="off" where the
// page's URL must not change, e.g. a copy embedded in a chapter).

import { InputError } from "../errors.js";
import { headlineSpeedupText, integerText, percentText, speedupText, timeText } from "../format.js";
import { funnel } from "../funnel.js";
import { GPUS, SPARSE_GPUS } from "../hardware.js";
import { DEFAULT_SCENARIO, SCENARIOS as GEMM_SCENARIOS, SCENARIO_TEXT, ceilings, fitFacts, fitLine, padMultiple, predict } from "../roofline.js";
import { DTYPE_BYTES, LINEAR_KINDS, PRESETS, WORKLOADS, buildInputs, evaluate, gemmShapes, summary } from "../request.js";
import { DTYPES, MECHANISM, VERDICT } from "../data.js";
import { drawFunnel, funnelRises } from "./funnel-svg.js";
import { Messages, el, firstNonFinite, headline, nextId, numberField, outOfRange, parseField, radioGroup, scrollBox, selectField, versusDense } from "./form.js";
import { SCENARIO_OPTIONS, backendOptions, refreshBackends } from "./gemm-calc.js";

const MODEL_FIELDS = ["layers", "hidden", "intermediate", "heads", "kv_heads", "vocab"];

// Input limits. The model itself accepts counts up to 2**31 - 1; beyond these a value is not
// a real deployment, and is far more likely a typo, so the form says so.
export const FIELDS = {
  batch: { label: "batch", integer: true, min: 1, max: 1_000_000, example: "8", why: "Larger is not a real batch." },
  prompt_len: { label: "prompt tokens", integer: true, min: 1, max: 100_000_000, example: "512",
    why: "Larger is not a real prompt." },
  output_len: { label: "output tokens", integer: true, min: 1, max: 100_000_000, example: "256",
    why: "Larger is not a real answer." },
  prefill_chunk_tokens: { label: "prefill chunk tokens", integer: true, min: 0, max: 1_000_000, example: "512",
    why: "Larger is not a real prefill chunk.",
    help: "Under continuous batching with chunked prefill, a decode step's GEMMs also carry a chunk of another request's prompt, so M = batch + chunk (0: a decode step alone)." },
  layers: { label: "layers", integer: true, min: 1, max: 10_000, example: "32" },
  hidden: { label: "hidden size", integer: true, min: 1, max: 1_000_000, example: "4096" },
  intermediate: { label: "MLP intermediate size", integer: true, min: 1, max: 4_000_000, example: "14336" },
  heads: { label: "attention heads", integer: true, min: 1, max: 100_000, example: "32" },
  kv_heads: { label: "KV heads", integer: true, min: 1, max: 100_000, example: "8" },
  vocab: { label: "vocabulary size", integer: true, min: 1, max: 10_000_000, example: "128256" },
  speedup_prefill: { label: "measured prefill GEMM speedup", integer: false, min: 0, minOpen: true, max: 100,
    example: "1.2", help: "dense time / 2:4 time you measured for the pruned GEMMs at M = batch × prompt tokens (starts at the H200 run's measurement; empty, it starts at the prediction)" },
  speedup_decode: { label: "measured decode GEMM speedup", integer: false, min: 0, minOpen: true, max: 100,
    example: "0.9", help: "the same at the decode M = batch + prefill chunk tokens (starts at the H200 run's measurement; empty, it starts at the prediction)" },
  step_overhead_ms: { label: "fixed cost per step", unit: "ms", integer: false, min: 0, max: 1_000_000, example: "0.5",
    help: "launches, sampling, scheduling" },
  request_overhead_ms: { label: "fixed cost per request", unit: "ms", integer: false, min: 0, max: 1_000_000,
    example: "20", help: "tokenisation, queueing, network (part of TTFT)" },
  attention_efficiency: { label: "attention efficiency", integer: false, min: 0, minOpen: true, max: 1, example: "0.6",
    help: "fraction of the dense peak the attention kernels reach" },
  memory_efficiency: { label: "memory efficiency", integer: false, min: 0, minOpen: true, max: 1, example: "0.85",
    help: "fraction of bandwidth for KV cache, norms, embedding" },
};

// Starting values (see the Defaults table on the page for their sources): chapter 7's worked
// deployment (VERDICT in ../data.js, generated from twofour.course.answer), with the GEMM speedups the
// project's H200 run measured in CUDA graphs, so the calculator opens on the number the home page
// and chapter 7 quote. backend null: the GPU's preferred one.
export const DEFAULTS = {
  gpu: VERDICT.gpu, backend: null, dtype: VERDICT.dtype, model: VERDICT.model, ...PRESETS[VERDICT.model],
  batch: VERDICT.batch, prompt_len: VERDICT.prompt_len, output_len: VERDICT.output_len, prefill_chunk_tokens: 0,
  scenario: DEFAULT_SCENARIO,
  gemm: "measured", speedup_prefill: String(VERDICT.speedup_prefill), speedup_decode: String(VERDICT.speedup_decode),
  pruned: [...VERDICT.pruned],
  step_overhead_ms: 0, request_overhead_ms: 0, attention_efficiency: 1, memory_efficiency: 1,
  scope: "request",
};

// How the worked deployment's GEMM speedups were measured: CUDA-graph replays (VERDICT.row "graph"),
// the "cached" scenario. In another scenario they do not hold.
export const WORKED_SCENARIO = "cached";

/** True when the inputs the measured GEMM speedups depend on are the worked deployment's (its scenario included). */
export function isWorkedWorkload(state) {
  const same = (a, b) => a.length === b.length && a.every((k) => b.includes(k));
  return (state.scenario ?? DEFAULT_SCENARIO) === WORKED_SCENARIO && state.gpu === VERDICT.gpu && state.dtype === VERDICT.dtype && state.model === VERDICT.model
    && state.batch === VERDICT.batch && state.prompt_len === VERDICT.prompt_len && state.output_len === VERDICT.output_len
    && state.prefill_chunk_tokens === 0 && same(state.pruned, VERDICT.pruned)
    && (state.backend ?? GPUS[state.gpu].backends[0]) === GPUS[VERDICT.gpu].backends[0];
}

/** True when the form holds the worked deployment with the H200 run's measured GEMM speedups. */
export function isWorkedDeployment(state) {
  return state.gemm === "measured" && isWorkedWorkload(state)
    && state.speedup_prefill === VERDICT.speedup_prefill && state.speedup_decode === VERDICT.speedup_decode;
}

// Query-string names of the inputs (short, readable in a shared link).
export const URL_KEYS = {
  gpu: "gpu", backend: "backend", dtype: "dtype", model: "model", layers: "layers", hidden: "hidden", intermediate: "intermediate",
  heads: "heads", kv_heads: "kv_heads", vocab: "vocab", batch: "batch", prompt_len: "prompt", output_len: "output",
  prefill_chunk_tokens: "chunk",
  gemm: "gemm", speedup_prefill: "s_prefill", speedup_decode: "s_decode", pruned: "pruned",
  step_overhead_ms: "step_ms", request_overhead_ms: "request_ms", attention_efficiency: "attn_eff",
  memory_efficiency: "mem_eff", scope: "scope", scenario: "scenario",
};

// The numeric fields in the order they are suspected when a result is not finite: the
// divisors first (efficiencies, measured speedups), then the sizes that multiply.
const SUSPECTS = ["attention_efficiency", "memory_efficiency", "speedup_prefill", "speedup_decode", "step_overhead_ms",
  "request_overhead_ms", "prompt_len", "output_len", "prefill_chunk_tokens", "batch", "layers", "hidden", "intermediate", "heads", "kv_heads", "vocab"];

const KIND_GROUPS = [
  ["attention projections", ["q_proj", "k_proj", "v_proj", "o_proj"]],
  ["MLP", ["gate_proj", "up_proj", "down_proj"]],
  ["output", ["lm_head"]],
];

/**
 * Everything the page shows for one valid state (a plain object of parsed inputs).
 * Pure: no DOM. Throws InputError naming the form field at fault.
 */
export function computeScenario(state) {
  const model = state.model === "custom"
    ? Object.fromEntries(MODEL_FIELDS.map((f) => [f, state[f]]))
    : PRESETS[state.model];
  const workload = { model, batch: state.batch, prompt_len: state.prompt_len, output_len: state.output_len,
    dtype: state.dtype, pruned: state.pruned, prefill_chunk_tokens: state.prefill_chunk_tokens ?? 0 };
  const gemmSpeedup = state.gemm === "measured" ? { prefill: state.speedup_prefill, decode: state.speedup_decode } : null;
  const scenario = state.scenario ?? DEFAULT_SCENARIO;
  const backend = state.backend ?? null;
  let inputs;
  try {
    inputs = buildInputs(workload, state.gpu, {
      gemmSpeedup, scenario, backend,
      assumptions: {
        step_overhead_s: state.step_overhead_ms * 1e-3,
        request_overhead_s: state.request_overhead_ms * 1e-3,
        attention_efficiency: state.attention_efficiency,
        memory_efficiency: state.memory_efficiency,
      },
    });
  } catch (err) {
    if (err instanceof InputError) {
      const rename = { gemm_speedup_prefill: "speedup_prefill", gemm_speedup_decode: "speedup_decode",
        step_overhead_s: "step_overhead_ms", request_overhead_s: "request_overhead_ms" };
      // A backend without a path for the dtype (CUTLASS has no fp8) is the backend's problem.
      const field = err.message.startsWith("no 2:4 padding rule") ? "backend" : rename[err.field] ?? err.field;
      throw new InputError(field, err.message);
    }
    throw err;
  }
  const est = evaluate(inputs);
  return { model, inputs, est, summary: summary(est), stages: funnel(est, state.scope), prunedShare: prunedWeightShare(model, state.pruned) };
}

/**
 * What choosing each scenario would show, as the form would then be: {eager: summary, ...}. The
 * worked deployment's measured speedups hold in its own scenario only (choosing another switches
 * the GEMM speedups to the prediction); typed-in speedups stay. A scenario whose numbers cannot be
 * computed gets null.
 */
export function scenarioChoices(state) {
  const worked = isWorkedDeployment(state);
  return Object.fromEntries(GEMM_SCENARIOS.map((sc) => {
    const next = { ...state, scenario: sc, ...(worked && sc !== WORKED_SCENARIO ? { gemm: "roofline" } : {}) };
    try {
      return [sc, computeScenario(next).summary];
    } catch (err) {
      if (err instanceof InputError) return [sc, null];
      throw err;
    }
  }));
}

/**
 * A typed-in GEMM speedup past what 2:4 can physically give, refused on its own field: a 2:4 GEMM
 * is at most 2x faster (half the math) and, where the dense GEMMs read their weight (memory-bound),
 * at most the packed byte ratio (1 / 0.5625 = 1.78x for 16-bit). Returns InputErrors (none: fine).
 */
export function ceilingProblems(state, view) {
  if (state.gemm !== "measured") return [];
  const cap = ceilings(state.dtype);
  const problems = [];
  for (const [name, phase] of [["speedup_prefill", "prefill"], ["speedup_decode", "decode"]]) {
    const shapes = gemmShapes(view.inputs, phase);
    const kinds = state.pruned.filter((k) => k in shapes);
    const M = kinds.length ? shapes[kinds[0]][0] : null;
    const compute = kinds.some((k) => {
      const [m, n, kk] = shapes[k];
      return predict(m, n, kk, state.dtype, state.gpu, state.backend, null, { scenario: "kernel" }).bound_dense === "compute";
    });
    const limit = compute ? cap.compute : cap.memory;
    if (!(state[name] > limit * (1 + 1e-9))) continue;
    const why = compute
      ? "half the math of dense, so at most 2x"
      : `the dense GEMMs at M = ${integerText(M)} are bound by reading their weight, and the packed 2:4 weight is `
        + `${percentText(DTYPES[state.dtype].packed_ratio)} of its bytes, so at most ${headlineSpeedupText(cap.memory)}`;
    problems.push(new InputError(name, `${state[name]} is past what a 2:4 GEMM can give in ${phase}: ${why}. `
      + `A larger measured speedup is a timing error (compare both sides timed the same way); type one up to ${headlineSpeedupText(limit)}.`));
  }
  return problems;
}

/** Why a predicted 2:4 decode GEMM of `rows` rows loses, from the kernel the model says it runs (MECHANISM's words where its token tile is wider). */
export function predictedLossWhy(q, rows) {
  const at = `at M = ${integerText(rows)}`;
  if (q.bound_sparse === "host") return `${at} each 2:4 call waits for the host, which builds a cuSPARSELt plan per call in eager PyTorch`;
  if (q.sparse.tile_m > q.M) {
    return MECHANISM.padded_tile.replaceAll("{tile_n}", String(q.sparse.tile_n)).replaceAll("{tile_m}", String(q.sparse.tile_m))
      .replaceAll("{where}", at);
  }
  return `${at} the 2:4 kernels reach a smaller share of their peak than the dense ones reach of theirs (as measured and fitted), which outweighs what 2:4 saves`;
}

/** The headline speedups in every scenario, with the roofline's GEMM speedups: {eager: summary, ...}. */
export function scenarioRange(state) {
  return Object.fromEntries(GEMM_SCENARIOS.map((sc) => [sc, computeScenario({ ...state, gemm: "roofline", scenario: sc }).summary]));
}

/** Every number the page shows for a view, for the finiteness check (one place, so none is missed). */
export function shownNumbers(view) {
  return { summary: view.summary, stages: view.stages.map((s) => s.speedup), share: view.prunedShare,
    prefill: view.est.prefill, decode: view.est.decode };
}

/** Share of all linear-layer weights (block linears + LM head) that are stored 2:4. */
export function prunedWeightShare(model, pruned) {
  const h = model.hidden, I = model.intermediate, L = model.layers;
  const kvDim = model.kv_heads * Math.floor(model.hidden / model.heads);
  const params = {
    q_proj: h * h * L, k_proj: kvDim * h * L, v_proj: kvDim * h * L, o_proj: h * h * L,
    gate_proj: I * h * L, up_proj: I * h * L, down_proj: h * I * L, lm_head: model.vocab * h,
  };
  let all = 0, kept = 0;
  for (const k of LINEAR_KINDS) {
    all += params[k];
    if (pruned.includes(k)) kept += params[k];
  }
  return kept / all;
}

function siteBase() {
  try {
    return JSON.parse(document.getElementById("__config").textContent).base.replace(/\/$/, "");
  } catch {
    return "..";
  }
}

export function mount(root) {
  const id = nextId("request");
  // The Calculator page keeps its inputs in the URL; a copy embedded in a chapter
  // (data-url="off") leaves the chapter's URL alone.
  const syncUrl = root.dataset.url !== "off";
  // Read before the first update, which rewrites the address bar with what is on screen.
  const sharedQuery = syncUrl ? location.search : "";
  const f = {}; // name -> {wrap, input, message}

  // --- the form ---
  const gpuOptions = SPARSE_GPUS.map((g) => [g, `${g} (${GPUS[g].arch})${GPUS[g].unconfirmed.length ? " *" : ""}`]);
  f.preset = selectField("preset", "start from a workload",
    [["", "(keep my inputs)"], ...Object.keys(WORKLOADS).map((s) => [s, s])], "", id,
    "sets model, batch, lengths and dtype to one of chapter 6's workloads, with no prefill chunk");
  f.model = selectField("model", "model", [...Object.keys(PRESETS).map((m) => [m, m]), ["custom", "custom shape"]], DEFAULTS.model, id);
  for (const name of MODEL_FIELDS) f[name] = numberField(name, FIELDS[name], DEFAULTS[name], id);
  for (const name of ["batch", "prompt_len", "output_len", "prefill_chunk_tokens"]) f[name] = numberField(name, FIELDS[name], DEFAULTS[name], id);
  f.gpu = selectField("gpu", "GPU", gpuOptions, DEFAULTS.gpu, id,
    "GPUs marked * have numbers we could not confirm against an NVIDIA document");
  f.dtype = selectField("dtype", "dtype (weights and activations)", Object.keys(DTYPE_BYTES).map((d) => [d, d]), DEFAULTS.dtype, id);
  f.backend = selectField("backend", "2:4 backend", backendOptions(DEFAULTS.gpu), GPUS[DEFAULTS.gpu].backends[0], id,
    "the PyTorch path that runs the 2:4 GEMMs; each has its own fitted parameters where measurements exist");
  f.scenario = radioGroup("scenario", "How the GEMMs are run", SCENARIO_OPTIONS, DEFAULTS.scenario, id);
  // Beside each scenario: what choosing it gives (the numbers the headline would then show).
  const gives = {};
  for (const r of f.scenario.radios) {
    gives[r.value] = el("span", { class: "calc-help calc-gives", "data-out": `gives_${r.value}` });
    r.node.append(gives[r.value]);
  }

  const gemmName = `${id}-gemm`;
  const gemmRadios = [["roofline", "predicted by the roofline model"], ["measured", "typed in from a measurement"]].map(([v, text]) => {
    const input = el("input", { type: "radio", name: "gemm", id: `${gemmName}-${v}`, value: v, checked: v === DEFAULTS.gemm });
    return { value: v, input, label: el("label", { for: `${gemmName}-${v}`, text }) };
  });
  f.gemm = { input: gemmRadios[0].input, message: el("span", { class: "calc-msg", "aria-live": "polite" }) };
  for (const name of ["speedup_prefill", "speedup_decode"]) f[name] = numberField(name, FIELDS[name], DEFAULTS[name], id);

  const kindBoxes = {};
  const kindSets = KIND_GROUPS.map(([legend, kinds]) => el("fieldset", { class: "calc-kinds" }, [
    el("legend", { text: legend }),
    ...kinds.map((k) => {
      const input = el("input", { type: "checkbox", name: "pruned", value: k, id: `${id}-kind-${k}`, checked: DEFAULTS.pruned.includes(k) });
      kindBoxes[k] = input;
      return el("span", { class: "calc-check" }, [input, el("label", { for: `${id}-kind-${k}`, text: k })]);
    }),
  ]));
  f.pruned = { input: kindBoxes.q_proj, message: el("span", { class: "calc-msg", "aria-live": "polite" }) };
  const prunedShare = el("output", { "data-out": "pruned_share" });

  for (const name of ["step_overhead_ms", "request_overhead_ms", "attention_efficiency", "memory_efficiency"]) {
    f[name] = numberField(name, FIELDS[name], DEFAULTS[name], id);
  }

  const customBox = el("div", { class: "calc-grid calc-custom" }, MODEL_FIELDS.map((n) => f[n].wrap));
  const measuredBox = el("div", { class: "calc-grid" }, [f.speedup_prefill.wrap, f.speedup_decode.wrap]);
  // Says why the GEMM source moved to the prediction when the inputs left the worked deployment.
  const gemmNote = el("p", { class: "calc-help", "data-out": "gemm_note", "aria-live": "polite" });
  // The same switch, said again where it happened: under the field the reader just changed.
  const switchNote = el("p", { class: "calc-help calc-switch", "data-out": "switch_note", "aria-live": "polite", hidden: true });
  // What a choice does (or why it is off) while the GEMM speedups are typed in.
  const scenarioNote = el("p", { class: "calc-help", "data-out": "scenario_note", hidden: true });
  const backendNote = el("span", { class: "calc-help", id: `${id}-backend-why`, "data-out": "backend_note", hidden: true });
  f.backend.wrap.insertBefore(backendNote, f.backend.message);
  f.backend.input.setAttribute("aria-describedby", `${f.backend.input.getAttribute("aria-describedby")} ${id}-backend-why`);
  scenarioNote.id = `${id}-scenario-why`;
  const form = el("form", { class: "calc-form", "aria-label": "Workload, hardware and 2:4 inputs" }, [
    el("fieldset", {}, [el("legend", { text: "Workload" }),
      el("div", { class: "calc-grid" }, [f.preset.wrap, f.model.wrap]), customBox,
      el("div", { class: "calc-grid" }, [f.batch.wrap, f.prompt_len.wrap, f.output_len.wrap, f.prefill_chunk_tokens.wrap])]),
    el("fieldset", {}, [el("legend", { text: "Hardware" }), el("div", { class: "calc-grid" }, [f.gpu.wrap, f.dtype.wrap, f.backend.wrap])]),
    f.scenario.wrap,
    scenarioNote,
    el("fieldset", {}, [el("legend", { text: "Linear layers stored 2:4" }),
      el("div", { class: "calc-grid" }, kindSets),
      el("p", { class: "calc-help" }, ["share of all linear-layer weights that are 2:4: ", prunedShare]), f.pruned.message]),
    el("fieldset", {}, [el("legend", { text: "2:4 GEMM speedup" }),
      el("div", { class: "calc-radios" }, gemmRadios.flatMap((r) => [el("span", { class: "calc-check" }, [r.input, r.label])])),
      measuredBox, gemmNote, switchNote, f.gemm.message]),
    el("details", { class: "calc-more" }, [el("summary", { text: "More assumptions: fixed costs and efficiencies" }),
      el("div", { class: "calc-grid" }, [f.step_overhead_ms.wrap, f.request_overhead_ms.wrap, f.attention_efficiency.wrap, f.memory_efficiency.wrap])]),
  ]);
  form.addEventListener("submit", (e) => e.preventDefault());

  // --- the results ---
  const o = {};
  const cell = (name) => (o[name] = el("td", { "data-out": name }));
  // No class on the table: Material styles only `table:not([class])`.
  const table = el("table", {}, [
    el("caption", { text: "Dense vs 2:4, from the model" }),
    el("thead", {}, [el("tr", {}, ["part of the request", "dense", "2:4", "speedup", "eligible share p"].map((t) => el("th", { scope: "col", text: t })))]),
    el("tbody", {}, [
      ["time to first token", "ttft"], ["time per output token", "tpot"], ["whole request", "total"],
    ].map(([label, key]) => {
      const p = { ttft: "p_prefill", tpot: "p_decode", total: "p_request" }[key];
      const s = { ttft: "speedup_ttft", tpot: "speedup_tpot", total: "speedup_request" }[key];
      return el("tr", {}, [el("th", { scope: "row", text: label }), cell(`${key}_dense_s`), cell(`${key}_sparse_s`), cell(s), cell(p)]);
    })),
  ]);
  const gemmLine = el("p", { "data-out": "gemm_line" });
  // The same request in every scenario: the answer as a range (rows), the chosen one marked.
  const rangeRows = {};
  const rangeTable = el("table", {}, [
    el("caption", { text: "The same request in each scenario (GEMM speedups predicted)" }),
    el("thead", {}, [el("tr", {}, ["how the GEMMs are run", "TTFT", "per output token", "whole request"].map((t) => el("th", { scope: "col", text: t })))]),
    el("tbody", {}, GEMM_SCENARIOS.map((sc) => {
      const cells = ["speedup_ttft", "speedup_tpot", "speedup_request"].map((k) => el("td", { "data-out": `range_${sc}_${k}` }));
      rangeRows[sc] = { row: el("tr", {}, [el("th", { scope: "row", text: SCENARIO_TEXT[sc].label }), ...cells]), cells };
      return rangeRows[sc].row;
    })),
  ]);
  const rangeNote = el("p", { class: "calc-help", "data-out": "range_note" });
  // On a phone the two tables are wider than the card: each scrolls sideways in its own box.
  const tableScroll = scrollBox(table, "Dense vs 2:4 table");
  const rangeScroll = scrollBox(rangeTable, "Scenario range table");
  const rangeBox = el("div", { class: "calc-range" }, [rangeScroll.wrap, rangeNote]);
  // The answer the reader came for, first in the card and kept on screen beside the inputs.
  const head = headline("whole request with 2:4");
  const fitText = el("p", { class: "calc-fit", "data-out": "fit" });
  const scopeName = `${id}-scope`;
  const scopeRadios = [["request", "whole request"], ["prefill", "prefill (TTFT)"], ["decode", "decode (per token)"]].map(([v, text]) => {
    const input = el("input", { type: "radio", name: "scope", id: `${scopeName}-${v}`, value: v, checked: v === DEFAULTS.scope });
    return { value: v, input, label: el("label", { for: `${scopeName}-${v}`, text }) };
  });
  const scopeGroup = el("fieldset", { class: "calc-radios calc-scope" }, [el("legend", { text: "funnel for" }),
    ...scopeRadios.map((r) => el("span", { class: "calc-check" }, [r.input, r.label]))]);
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.id = `${id}-funnel`;
  svg.setAttribute("class", "calc-funnel");
  // Under the funnel: why a step is above the one before it, where one is (the funnel's own caption).
  const funnelNote = el("p", { class: "calc-help", "data-out": "funnel_note" });
  const establish = el("ul", { "data-out": "establish" });
  const measure = el("ol", { "data-out": "measure" });
  const stale = el("p", { class: "calc-stale", "data-out": "stale", "aria-live": "polite" });
  const general = el("p", { class: "calc-msg", "aria-live": "polite" });
  const copyButton = el("button", { type: "button", class: "md-button", text: "Copy link to this scenario" });
  const resetButton = el("button", { type: "button", class: "md-button", text: "Reset to the defaults" });
  const copyStatus = el("span", { class: "calc-help", "aria-live": "polite", "data-out": "copy_status" });
  const actions = el("p", { class: "calc-actions" }, syncUrl ? [copyButton, " ", resetButton, " ", copyStatus] : [resetButton]);
  const results = el("section", { class: "calc-results", "aria-label": "Results" }, [
    actions, stale, general, tableScroll.wrap, gemmLine, rangeBox, fitText, scopeGroup, svg, funnelNote,
    el("div", { class: "calc-grid calc-verdict" }, [
      el("div", { class: "admonition success" }, [el("p", { class: "admonition-title", text: "What these numbers establish" }), establish]),
      el("div", { class: "admonition warning" }, [el("p", { class: "admonition-title", text: "What still needs measurement" }), measure]),
    ]),
  ]);

  root.replaceChildren(el("div", { class: "calc calc--request", role: "group", "aria-label": "Request calculator" }, [
    el("div", { class: "calc-io" }, [head.wrap, form]), results]));
  const messages = new Messages(f, general);

  // --- reading the form ---
  function gemmSource() {
    return gemmRadios.find((r) => r.input.checked)?.value ?? "roofline";
  }
  function scope() {
    return scopeRadios.find((r) => r.input.checked)?.value ?? "request";
  }
  function readState() {
    const state = { gpu: f.gpu.input.value, backend: f.backend.input.value, dtype: f.dtype.input.value, model: f.model.input.value,
      gemm: gemmSource(), scenario: f.scenario.value(), scope: scope(), pruned: LINEAR_KINDS.filter((k) => kindBoxes[k].checked) };
    const errors = [];
    const numeric = ["batch", "prompt_len", "output_len", "prefill_chunk_tokens", "step_overhead_ms", "request_overhead_ms", "attention_efficiency", "memory_efficiency"];
    if (state.model === "custom") numeric.push(...MODEL_FIELDS);
    if (state.gemm === "measured") numeric.push("speedup_prefill", "speedup_decode");
    for (const name of numeric) {
      try {
        state[name] = parseField(name, f[name].input.value, FIELDS[name]);
      } catch (err) {
        if (!(err instanceof InputError)) throw err;
        errors.push(err);
      }
    }
    return { state, errors, numeric };
  }

  function syncVisibility() {
    customBox.hidden = f.model.input.value !== "custom";
    measuredBox.hidden = gemmSource() !== "measured";
  }

  /**
   * A choice that cannot change the result is switched off, with the reason beside it: the
   * backend when the GPU has only one, or while the GEMM speedups are typed in (it changes only
   * the predicted 2:4 times, which they replace). The scenario still sets the dense times then,
   * and a line under it says that this is all it does.
   */
  function syncChoices() {
    const measured = gemmSource() === "measured";
    const select = f.backend.input;
    const why = select.options.length <= 1
      ? `Nothing to choose: ${select.value} is the only 2:4 backend PyTorch has on the ${f.gpu.input.value}.`
      : measured ? "Off while the GEMM speedups are typed in: the backend changes only the predicted 2:4 times, which your speedups replace."
      : "";
    select.disabled = Boolean(why);
    backendNote.textContent = why;
    backendNote.hidden = !why;
    scenarioNote.hidden = !measured;
    scenarioNote.textContent = measured
      ? "With the GEMM speedups typed in, this choice sets only the dense times (and so p): each 2:4 GEMM takes its dense time divided by your speedup."
      : "";
  }

  // --- the update: parse, compute, show (or keep the last valid result) ---
  /** The field whose value makes a result non-finite: the first suspect that, set back to its default, fixes it. */
  function blame(state, numeric) {
    for (const name of SUSPECTS.filter((n) => numeric.includes(n))) {
      const fallback = DEFAULTS[name] === "" ? 1 : Number(DEFAULTS[name]);
      if (state[name] === fallback) continue;
      try {
        const view = computeScenario({ ...state, [name]: fallback });
        if (firstNonFinite(shownNumbers(view)) === null) return outOfRange(name, FIELDS[name], f[name].input.value);
      } catch (err) {
        if (!(err instanceof InputError)) throw err;
      }
    }
    return new InputError("inputs", "These inputs together are out of range: a result would not be a finite number. Bring the largest or smallest values nearer the usual ones.");
  }

  function update() {
    syncVisibility();
    refreshBackends(f.backend.input, f.gpu.input.value);
    syncChoices();
    messages.clearAll();
    const { state, errors, numeric } = readState();
    let view = null;
    if (!errors.length) {
      try {
        try {
          view = computeScenario(state);
        } catch (err) {
          // request.js refuses an estimate whose times overflow (field "inputs"): name the cause instead.
          if (err instanceof InputError && err.field === "inputs") throw blame(state, numeric);
          throw err;
        }
        if (firstNonFinite(shownNumbers(view)) !== null) throw blame(state, numeric);
        const past = ceilingProblems(state, view);
        if (past.length) {
          errors.push(...past);
          view = null;
        }
        if (view && state.gemm === "roofline") {
          try {
            view.range = scenarioRange(state);
          } catch (err) {
            if (err instanceof InputError && err.field === "inputs") throw blame(state, numeric);
            throw err;
          }
          if (firstNonFinite(view.range) !== null) throw blame(state, numeric);
        }
      } catch (err) {
        if (!(err instanceof InputError)) throw err;
        errors.push(err);
      }
    }
    if (errors.length) {
      for (const e of errors) {
        messages.show(e.field, e.message);
        // A message inside the folded "More assumptions" (say, from a shared link) must be seen.
        const fold = f[e.field]?.wrap?.closest("details");
        if (fold) fold.open = true;
      }
      stale.textContent = root.dataset.calcValid ? "Input problem: showing the last valid result until it is fixed." : "";
      head.stale(Boolean(root.dataset.calcValid));
      return false;
    }
    stale.textContent = "";
    head.stale(false);
    show(state, view);
    if (syncUrl) scheduleUrl(state);
    root.dataset.calcValid = "true";
    return true;
  }

  function show(state, view) {
    const s = view.summary;
    for (const key of ["ttft_dense_s", "ttft_sparse_s", "tpot_dense_s", "tpot_sparse_s", "total_dense_s", "total_sparse_s"]) {
      o[key].textContent = timeText(s[key]);
    }
    for (const key of ["speedup_ttft", "speedup_tpot", "speedup_request"]) o[key].textContent = speedupText(s[key]);
    for (const key of ["p_prefill", "p_decode", "p_request"]) o[key].textContent = percentText(s[key]);
    prunedShare.textContent = percentText(view.prunedShare);
    const choices = scenarioChoices(state);
    for (const sc of GEMM_SCENARIOS) {
      const c = choices[sc];
      gives[sc].textContent = c && Number.isFinite(c.speedup_tpot) && Number.isFinite(c.speedup_request)
        ? `${sc === state.scenario ? "gives" : "would give"}: per output token ${headlineSpeedupText(c.speedup_tpot)}, whole request ${headlineSpeedupText(c.speedup_request)}`
        : "";
    }
    const scenarioLabel = SCENARIO_TEXT[state.scenario].label;
    const worked = isWorkedDeployment(state);
    const source = worked ? `measured on the ${VERDICT.gpu} in CUDA graphs, ${VERDICT.software.split("measured ")[1] ?? ""}; chapter 7's verdict`
      : state.gemm === "measured" ? "typed in as measured" : `predicted by the fitted roofline, ${scenarioLabel}`;
    gemmLine.textContent = `2:4 GEMM speedup used (${source}): prefill ${speedupText(s.gemm_speedup_prefill)}, decode ${speedupText(s.gemm_speedup_decode)}. `
      + `Roofline ceiling with perfect kernels: prefill ${speedupText(s.ceiling_speedup_prefill)}, decode ${speedupText(s.ceiling_speedup_decode)}.`;
    // Only a predicted range exists: with typed-in speedups the table goes (emptied, so that no
    // earlier inputs' numbers can come back) and the note says why.
    rangeScroll.wrap.hidden = !view.range;
    if (!view.range) for (const sc of GEMM_SCENARIOS) for (const c of rangeRows[sc].cells) c.textContent = "";
    if (view.range) {
      for (const sc of GEMM_SCENARIOS) {
        ["speedup_ttft", "speedup_tpot", "speedup_request"].forEach((k, i) => { rangeRows[sc].cells[i].textContent = speedupText(view.range[sc][k]); });
        rangeRows[sc].row.classList.toggle("calc-chosen", sc === state.scenario);
      }
      rangeNote.textContent = `The row in bold is the scenario chosen above. Which one your deployment is in can decide whether 2:4 wins.`;
    } else {
      rangeNote.textContent = "No range over the scenarios: the 2:4 GEMM speedups are typed in, so only the dense times follow the chosen scenario.";
    }
    fitText.textContent = fitLine(state.gpu, state.backend);
    const scopeLabel = { request: "the whole request", prefill: "prefill (time to first token)", decode: "decode (time per output token)" }[state.scope];
    drawFunnel(svg, view.stages, { kernelRole: state.gemm === "measured" ? "measured" : "predicted",
      title: `The funnel for ${scopeLabel}: from the data sheet's 2:4 speedup to what this workload gets` });
    const rising = funnelRises(view.stages);
    funnelNote.textContent = rising.join(" ");
    funnelNote.hidden = !rising.length;
    writeVerdict(state, view);
    // The headline rounds as the verdict table does (2 decimals); the tables keep 3.
    const whole = headlineSpeedupText(s.speedup_request);
    const how = worked ? `GEMMs measured on the ${VERDICT.gpu} (CUDA graphs)`
      : state.gemm === "measured" ? "with the GEMM speedups typed in" : SCENARIO_TEXT[state.scenario].label;
    head.show(whole, versusDense(whole), `TTFT ${headlineSpeedupText(s.speedup_ttft)} · per output token ${headlineSpeedupText(s.speedup_tpot)} · ${how}`);
    tableScroll.refresh();
    rangeScroll.refresh();
  }

  function writeVerdict(state, view) {
    const s = view.summary;
    const chunk = state.prefill_chunk_tokens;
    const mDecode = state.batch + chunk;
    const p = s.p_request;
    const bound = p < 1 ? speedupText(1 / (1 - p)) : "no limit";
    const items = [
      `At most ${percentText(p)} of this request's time is in 2:4 GEMMs, so even an infinitely fast sparse kernel could not make it more than ${bound} faster (Amdahl's bound 1 / (1 − p)).`,
      `The eligible share is ${percentText(s.p_prefill)} of time to first token and ${percentText(s.p_decode)} of each decode step${chunk ? ` (each carrying a ${integerText(chunk)}-token prefill chunk)` : ""}.`,
      `With the GEMM speedups above, the model gives ${speedupText(s.speedup_ttft)} on TTFT, ${speedupText(s.speedup_tpot)} per output token and ${speedupText(s.speedup_request)} on the whole request.`,
    ];
    if (s.gemm_speedup_decode < 1) {
      // The worked deployment's measured loss has one explanation, roofline.mechanism.why(), carried in data.js (VERDICT.why).
      let why = isWorkedDeployment(state) ? `${VERDICT.why}` : "the typed-in speedups say the 2:4 kernels lost; a profile of your own run says why (chapter 4 shows how to read one)";
      if (state.gemm === "roofline") {
        const [M, N, K] = gemmShapes(view.inputs, "decode").q_proj;
        // The mechanism's one sentence (MECHANISM in data.js) where the kernel's token tile is wider than M.
        why = predictedLossWhy(predict(M, N, K, state.dtype, state.gpu, state.backend, null, { scenario: state.scenario }), M);
      }
      items.push(isWorkedDeployment(state) && state.gemm !== "roofline"
        ? `The decode GEMMs come out slower with 2:4 (${speedupText(s.gemm_speedup_decode)}), as measured. ${why}`
        : `The decode GEMMs come out slower with 2:4 (${speedupText(s.gemm_speedup_decode)}): ${state.gemm === "roofline" ? why : `at M = ${integerText(mDecode)} rows ${why}`}.`);
    }
    if (s.speedup_request < 1) items.push("On these numbers 2:4 makes this request slower than dense.");
    establish.replaceChildren(...items.map((t) => el("li", { text: t })));

    const backend = state.backend;
    const pad = padMultiple(backend, state.dtype);
    const facts = fitFacts(state.gpu, backend);
    const mPrefill = state.batch * state.prompt_len;
    const base = siteBase();
    const link = (href, text) => el("a", { href: `${base}/${href}`, text });
    measure.replaceChildren(
      el("li", {}, [`Does a sparse kernel run at all at these shapes? Decode multiplies M = ${integerText(mDecode)} (${chunk ? `one row per sequence plus ${integerText(chunk)} prompt-chunk rows` : "one row per sequence"}; the ${backend} path pads them to a multiple of ${pad}), prefill M = ${integerText(mPrefill)}. Prove which kernel ran with a profiler (`,
        link("notebooks/03-dispatch/", "chapter 3"), ").", ]),
      el("li", {}, [isWorkedDeployment(state)
        ? `These GEMM speedups are the project's ${VERDICT.gpu} measurements of this workload (${VERDICT.software}); on your GPU and software they will differ. `
        : state.gemm === "measured"
        ? "The GEMM speedups you typed: were they measured at these M, on this GPU, dtype and library version? "
        : `The achieved 2:4 GEMM speedup on your GPU and software: the predicted one comes from a model fitted to ${facts.n_points} measurements (the line under the table says which, and its held-out error), in the "${SCENARIO_TEXT[state.scenario].label}" scenario. `,
      "Time dense and 2:4 at both M with ", el("code", { text: "twofour bench" }), " and type the results in."]),
      el("li", {}, ["The quality cost of pruning to 2:4, and what recovering it costs (",
        link("reference/sources/", "sources"), "): one-shot 2:4 pruning raises perplexity noticeably unless the model is fine-tuned or the masks are learned."]),
      el("li", {}, ["The real time split of your serving engine: this model runs kernels back to back with no overlap and only the fixed costs you enter (",
        link("notebooks/06-amdahl/", "chapter 6"), ")."]),
    );
  }

  // --- the URL: always a link to what is on screen ---
  // Written a moment after the last change rather than on every keystroke: replaceState
  // costs milliseconds and browsers throttle floods of it. Skipped if the reader has moved
  // on to another page (instant navigation keeps this script alive).
  const pagePath = location.pathname;
  let urlTimer = null;
  function scheduleUrl(state) {
    clearTimeout(urlTimer);
    urlTimer = setTimeout(() => {
      if (root.isConnected && location.pathname === pagePath) writeUrl(state);
    }, 120);
  }

  function writeUrl(state) {
    const q = new URLSearchParams();
    const put = (name, value) => q.set(URL_KEYS[name], String(value));
    put("gpu", state.gpu);
    if (state.backend !== GPUS[state.gpu].backends[0]) put("backend", state.backend);
    put("dtype", state.dtype);
    put("model", state.model);
    if (state.model === "custom") for (const n of MODEL_FIELDS) put(n, state[n]);
    for (const n of ["batch", "prompt_len", "output_len"]) put(n, state[n]);
    if (state.prefill_chunk_tokens !== DEFAULTS.prefill_chunk_tokens) put("prefill_chunk_tokens", state.prefill_chunk_tokens);
    put("scenario", state.scenario);
    put("gemm", state.gemm);
    if (state.gemm === "measured") for (const n of ["speedup_prefill", "speedup_decode"]) put(n, state[n]);
    put("pruned", state.pruned.join(",") || "none");
    for (const n of ["step_overhead_ms", "request_overhead_ms", "attention_efficiency", "memory_efficiency"]) {
      if (state[n] !== DEFAULTS[n]) put(n, state[n]);
    }
    if (state.scope !== "request") put("scope", state.scope);
    const url = `${location.pathname}?${q.toString()}${location.hash}`;
    if (url !== `${location.pathname}${location.search}${location.hash}`) history.replaceState(history.state, "", url);
  }

  /** Put a shared link's values into the form; unknown names/values get a message, not silence. */
  function readUrl() {
    const q = new URLSearchParams(sharedQuery);
    const problems = [];
    const setSelect = (name, value) => {
      const select = f[name].input;
      if ([...select.options].some((opt) => opt.value === value)) select.value = value;
      else problems.push([name, `The link asks for ${name} "${value}", which this calculator does not know; valid: ${[...select.options].map((x) => x.value).join(", ")}.`]);
    };
    for (const [name, key] of Object.entries(URL_KEYS)) {
      if (!q.has(key)) continue;
      const value = q.get(key);
      if (["gpu", "dtype", "model"].includes(name)) {
        setSelect(name, value);
        if (name === "gpu") refreshBackends(f.backend.input, f.gpu.input.value);
      } else if (name === "backend") {
        const match = [...f.backend.input.options].find((o) => o.value.toLowerCase() === value.toLowerCase());
        if (match) f.backend.input.value = match.value;
        else problems.push(["backend", `The link asks for backend "${value}", which ${f.gpu.input.value} does not have in PyTorch; valid: ${[...f.backend.input.options].map((o) => o.value).join(", ")}.`]);
      } else if (name === "scenario") {
        if (!f.scenario.set(value)) problems.push(["scenario", `The link asks for scenario "${value}"; valid: ${GEMM_SCENARIOS.join(", ")}.`]);
      }
      else if (name === "gemm") {
        const r = gemmRadios.find((x) => x.value === value);
        if (r) r.input.checked = true; else problems.push(["gemm", `The link asks for GEMM source "${value}"; valid: roofline, measured.`]);
      } else if (name === "scope") {
        const r = scopeRadios.find((x) => x.value === value);
        if (r) r.input.checked = true; else problems.push(["scope", `The link asks for funnel scope "${value}"; valid: request, prefill, decode.`]);
      } else if (name === "pruned") {
        const kinds = value === "none" ? [] : value.split(",");
        const unknown = kinds.filter((k) => !LINEAR_KINDS.includes(k));
        if (unknown.length) problems.push(["pruned", `The link names unknown layer kinds ${unknown.join(", ")}; valid: ${LINEAR_KINDS.join(", ")}.`]);
        else for (const k of LINEAR_KINDS) kindBoxes[k].checked = kinds.includes(k);
      } else {
        f[name].input.value = value;
      }
    }
    return problems;
  }

  function reset() {
    f.preset.input.value = "";
    for (const name of ["gpu", "dtype", "model", ...MODEL_FIELDS, "batch", "prompt_len", "output_len", "prefill_chunk_tokens", "speedup_prefill",
      "speedup_decode", "step_overhead_ms", "request_overhead_ms", "attention_efficiency", "memory_efficiency"]) {
      f[name].input.value = String(DEFAULTS[name]);
    }
    for (const k of LINEAR_KINDS) kindBoxes[k].checked = DEFAULTS.pruned.includes(k);
    refreshBackends(f.backend.input, DEFAULTS.gpu);
    f.backend.input.value = DEFAULTS.backend ?? GPUS[DEFAULTS.gpu].backends[0];
    f.scenario.set(DEFAULTS.scenario);
    for (const r of gemmRadios) r.input.checked = r.value === DEFAULTS.gemm;
    for (const r of scopeRadios) r.input.checked = r.value === DEFAULTS.scope;
    gemmNote.textContent = "";
    hideSwitchNote();
    update();
  }

  /** The measured fields still hold the H200 run's values they opened with. */
  function measuredAreDefaults() {
    return f.speedup_prefill.input.value.trim() === DEFAULTS.speedup_prefill
      && f.speedup_decode.input.value.trim() === DEFAULTS.speedup_decode;
  }

  /**
   * The opening speedups were measured for the worked deployment only. When the inputs leave it
   * (another GPU, dtype, workload...) while the fields still hold them, the GEMM speedups switch to
   * the prediction and a line says why; typing a speedup, or choosing "typed in", is the reader's
   * own claim and stays.
   */
  function leaveWorkedDeployment(where = null) {
    if (gemmSource() !== "measured" || !measuredAreDefaults()) return;
    const { state, errors } = readState();
    if (errors.length || isWorkedWorkload(state)) return;
    for (const r of gemmRadios) r.input.checked = r.value === "roofline";
    gemmNote.textContent = `The measured speedups belong to the worked deployment (${VERDICT.model} ${VERDICT.dtype} on the ${VERDICT.gpu}, `
      + `batch ${VERDICT.batch}, ${VERDICT.prompt_len} + ${VERDICT.output_len} tokens): for these inputs the GEMM speedups are predicted. `
      + `Choose "typed in from a measurement" to enter your own.`;
    if (where) {
      // Said where it happened too: the reader is looking at the field they changed, not at the GEMM box.
      switchNote.textContent = `This change switched the 2:4 GEMM speedups from typed in (the ${VERDICT.gpu} measurement) to predicted: `
        + `that measurement holds only for the worked deployment. See "2:4 GEMM speedup" below.`;
      where.append(switchNote);
      switchNote.hidden = false;
    }
  }

  function hideSwitchNote() {
    switchNote.hidden = true;
    switchNote.textContent = "";
    gemmNote.after(switchNote); // back home, out of the field it was shown under
  }

  /**
   * Empty measured-speedup fields start at what the model predicts for the inputs on screen
   * (3 significant digits), so that choosing "typed in" changes nothing until a measurement is typed.
   * Fields still holding the worked deployment's measurement count as empty for any other inputs.
   */
  function fillMeasured() {
    const other = measuredAreDefaults() && !isWorkedWorkload(readState().state);
    const empty = ["speedup_prefill", "speedup_decode"].filter((n) => other || f[n].input.value.trim() === "");
    if (!empty.length) return;
    const { state, errors } = readState();
    // The GEMM speedups depend on the workload, GPU, dtype, backend, scenario and pruned layers,
    // not on the measured fields or the fixed costs and efficiencies: a bad value there is
    // replaced by its default for this purpose; a bad value anywhere else leaves the fields empty.
    const irrelevant = ["speedup_prefill", "speedup_decode", "step_overhead_ms", "request_overhead_ms",
      "attention_efficiency", "memory_efficiency"];
    if (errors.some((e) => !irrelevant.includes(e.field))) return;
    for (const e of errors) if (e.field in DEFAULTS && DEFAULTS[e.field] !== "") state[e.field] = DEFAULTS[e.field];
    let predicted;
    try {
      predicted = computeScenario({ ...state, gemm: "roofline" }).summary;
    } catch (err) {
      if (!(err instanceof InputError)) throw err;
      return;
    }
    const key = { speedup_prefill: "gemm_speedup_prefill", speedup_decode: "gemm_speedup_decode" };
    for (const n of empty) {
      const v = predicted[key[n]];
      if (Number.isFinite(v) && v > 0) f[n].input.value = String(Number(v.toPrecision(3)));
    }
  }

  async function copyLink() {
    clearTimeout(urlTimer);
    const { state, errors } = readState();
    if (!errors.length) writeUrl(state);
    try {
      await navigator.clipboard.writeText(location.href);
      copyStatus.textContent = "Link copied.";
    } catch {
      copyStatus.textContent = "Copy the address bar: it holds this scenario.";
    }
  }

  // --- wiring ---
  resetButton.addEventListener("click", reset);
  copyButton.addEventListener("click", copyLink);
  f.preset.input.addEventListener("change", () => {
    const sc = WORKLOADS[f.preset.input.value];
    if (!sc) return;
    f.model.input.value = sc.model;
    for (const n of MODEL_FIELDS) f[n].input.value = PRESETS[sc.model][n];
    f.batch.input.value = sc.batch;
    f.prompt_len.input.value = sc.prompt_len;
    f.output_len.input.value = sc.output_len;
    f.prefill_chunk_tokens.input.value = sc.prefill_chunk_tokens;
    f.dtype.input.value = sc.dtype;
    hideSwitchNote();
    leaveWorkedDeployment(f.preset.wrap);
    update();
  });
  f.model.input.addEventListener("change", () => {
    // Switching to "custom" starts from the preset that was selected, so one field can be changed.
    const preset = PRESETS[f.model.input.value];
    if (preset) for (const n of MODEL_FIELDS) f[n].input.value = preset[n];
  });
  form.addEventListener("input", (e) => {
    if (e.target === f.preset.input) return; // its own "change" handler does the rest
    if (e.target !== f.model.input) f.preset.input.value = "";
    hideSwitchNote();
    if (gemmRadios.some((r) => r.input === e.target)) gemmNote.textContent = "";
    if (e.target === gemmRadios[1].input) fillMeasured();
    else if (!gemmRadios.some((r) => r.input === e.target)) leaveWorkedDeployment(e.target.closest("[data-field], fieldset"));
    update();
  });
  scopeGroup.addEventListener("input", update);

  root.calcUpdate = update;
  root.calcState = () => readState().state;
  update(); // the defaults: always valid, so there is a last valid result to keep
  if (syncUrl) {
    const problems = readUrl();
    // A link that names its GEMM source keeps it (an empty measured field starts at the prediction);
    // one that does not gets the opening measurement only for the worked deployment.
    if (!new URLSearchParams(sharedQuery).has(URL_KEYS.gemm)) leaveWorkedDeployment();
    if (gemmSource() === "measured") fillMeasured();
    update();
    for (const [name, text] of problems) {
      messages.show(name, text);
      const fold = f[name]?.wrap?.closest("details");
      if (fold) fold.open = true;
    }
  }
}
