// Mirror of twofour.request: the request-time model (prefill + decode, component by component).
//
// The arithmetic is specified in the Python module docstring ("Spec of the arithmetic", steps
// 1-6) for exactly this purpose; every function here follows it operation for operation, in
// the same order, with the same names (snake_case keys, so a result compares key by key with
// the Python's RequestEstimate.to_dict() in the golden vectors).

import { requireSpeedup } from "./amdahl.js";
import { InputError, isFiniteNumber, pyRepr } from "./errors.js";
import { BLOCK_LINEARS, DTYPES, PRESETS, WORKLOADS } from "./data.js";
import { getGpu, peakTflops } from "./hardware.js";
import { DEFAULT_SCENARIO, checkScenario, predict } from "./roofline.js";

// The block linears pruned by default, the model presets (Meta's released config.json files) and the
// three workloads chapter 6 follows: twofour.request and twofour.models, delivered in ./data.js.
export { BLOCK_LINEARS, PRESETS, WORKLOADS };
export const LINEAR_KINDS = [...BLOCK_LINEARS, "lm_head"];
export const COMPONENTS = [
  "pruned_linear", "dense_linear", "attention", "kv_cache", "embedding", "lm_head", "other",
  "step_overhead", "request_overhead",
];
export const PHASES = ["prefill", "decode"];
// Bytes per element, GEMM output bytes and packed ratio of the 2:4 dtypes: the one dtype table
// (twofour.vocabulary), delivered in data.js; 2:4 proper is n=2 of m=4 (tf32 runs as 1:2).
const SPARSE_24 = Object.entries(DTYPES).filter(([, f]) => f.n === 2 && f.m === 4);
export const DTYPE_BYTES = Object.fromEntries(SPARSE_24.map(([k, f]) => [k, f.in_bytes]));
const OUT_BYTES = Object.fromEntries(SPARSE_24.map(([k, f]) => [k, f.out_bytes]));
const PACKED_RATIO = Object.fromEntries(SPARSE_24.map(([k, f]) => [k, f.packed_ratio]));
export const MAX_COUNT = 2 ** 31 - 1; // batch and lengths: far beyond any real request

// The defaults of twofour.request.Assumptions: an optimistic bound for every part alike.
export const DEFAULT_ASSUMPTIONS = Object.freeze({
  attention_efficiency: 1.0,
  memory_efficiency: 1.0,
  kv_bytes_per_element: null,
  other_elems_per_token_layer: null,
  step_overhead_s: 0.0,
  request_overhead_s: 0.0,
});

// ---------------------------------------------------------------------------------------------
// Input checks (the Python's messages, with the field they are about)

function requireCount(name, value, minimum = 1) {
  if (!Number.isInteger(value)) throw new InputError(name, `${name} must be an int >= ${minimum}, got ${pyRepr(value)}`);
  if (!(value >= minimum && value <= MAX_COUNT)) {
    throw new InputError(name, `${name} must be an int in [${minimum}, ${MAX_COUNT}], got ${value}`);
  }
  return value;
}

function requireNumber(name, value, { low = 0.0, lowOpen = true, high = null } = {}) {
  if (typeof value !== "number") throw new InputError(name, `${name} must be a number, got ${JSON.stringify(value)}`);
  const badLow = lowOpen ? value <= low : value < low;
  if (!isFiniteNumber(value) || badLow || (high !== null && value > high)) {
    const bound = `${lowOpen ? ">" : ">="} ${low}` + (high !== null ? ` and <= ${high}` : "");
    throw new InputError(name, `${name} must be a finite number ${bound}, got ${pyRepr(value)}`);
  }
  return value;
}

/** twofour.models.TransformerConfig checks: positive ints, hidden % heads == 0, heads % kv_heads == 0. */
export function checkModel(cfg) {
  for (const f of ["layers", "hidden", "intermediate", "heads", "kv_heads", "vocab"]) {
    const v = cfg[f];
    if (!Number.isSafeInteger(v) || v <= 0) throw new InputError(f, `${f} must be a positive int, got ${pyRepr(v)}`);
  }
  if (cfg.hidden % cfg.heads) throw new InputError("hidden", `hidden (${cfg.hidden}) must be a multiple of heads (${cfg.heads})`);
  if (cfg.heads % cfg.kv_heads) throw new InputError("kv_heads", `heads (${cfg.heads}) must be a multiple of kv_heads (${cfg.kv_heads})`);
  return cfg;
}

/**
 * twofour.request.Workload checks; returns a normalised copy (pruned kinds in LINEAR_KINDS order,
 * prefill_chunk_tokens 0 when not given: a decode step alone).
 */
export function checkWorkload(w) {
  const chunk = requireCount("prefill_chunk_tokens", w.prefill_chunk_tokens ?? 0, 0);
  checkModel(w.model);
  requireCount("batch", w.batch);
  requireCount("prompt_len", w.prompt_len);
  requireCount("output_len", w.output_len);
  if (typeof w.dtype !== "string" || !Object.hasOwn(DTYPE_BYTES, w.dtype)) {
    throw new InputError("dtype", `dtype must be one of ${Object.keys(DTYPE_BYTES).sort().join(", ")} (the 2:4 tensor-core dtypes), got '${w.dtype}'`);
  }
  const pruned = w.pruned ?? BLOCK_LINEARS;
  if (!Array.isArray(pruned)) {  // a string's .filter is a TypeError
    throw new InputError("pruned", `pruned must be a list of linear kinds such as ["q_proj", "k_proj"], got ${JSON.stringify(pruned)}`);
  }
  const unknown = pruned.filter((k) => !LINEAR_KINDS.includes(k));
  if (unknown.length) throw new InputError("pruned", `pruned contains unknown linear kinds ${unknown}; valid kinds are ${LINEAR_KINDS}`);
  return { ...w, pruned: LINEAR_KINDS.filter((k) => pruned.includes(k)), prefill_chunk_tokens: chunk };
}

function checkAssumptions(a) {
  const unknown = Object.keys(a).filter((k) => !Object.hasOwn(DEFAULT_ASSUMPTIONS, k)).sort();
  if (unknown.length) {
    throw new InputError(unknown[0], `assumptions has unknown fields ${unknown.join(", ")}; valid: ${Object.keys(DEFAULT_ASSUMPTIONS).join(", ")}`);
  }
  requireNumber("attention_efficiency", a.attention_efficiency, { high: 1.0 });
  requireNumber("memory_efficiency", a.memory_efficiency, { high: 1.0 });
  if (a.kv_bytes_per_element !== null) requireNumber("kv_bytes_per_element", a.kv_bytes_per_element);
  if (a.other_elems_per_token_layer !== null) requireNumber("other_elems_per_token_layer", a.other_elems_per_token_layer, { lowOpen: false });
  requireNumber("step_overhead_s", a.step_overhead_s, { lowOpen: false });
  requireNumber("request_overhead_s", a.request_overhead_s, { lowOpen: false });
  return a;
}

// ---------------------------------------------------------------------------------------------
// Spec step 1 and 2: GEMM shapes and the per-GEMM times

/**
 * {kind: [M, N, K]} of the GEMMs one step of `phase` runs (per layer for block kinds). In decode
 * the block linears see M = batch + prefill_chunk_tokens (the mixed step); the LM head only the
 * batch's decode tokens.
 */
export function gemmShapes(r, phase) {
  const h = r.hidden, I = r.intermediate, vocab = r.vocab;
  const kvDim = r.kv_heads * Math.floor(r.hidden / r.heads);
  const M = phase === "prefill" ? r.batch * r.prompt_len : r.batch + (r.prefill_chunk_tokens ?? 0);
  return {
    q_proj: [M, h, h],
    k_proj: [M, kvDim, h],
    v_proj: [M, kvDim, h],
    o_proj: [M, h, h],
    gate_proj: [M, I, h],
    up_proj: [M, I, h],
    down_proj: [M, h, I],
    lm_head: [r.batch, vocab, h], // logits only for the last token of each sequence
  };
}

/** Spec step 3: perfect kernels at the data-sheet peaks, weights and activations read once. */
function idealTimes(M, N, K, b, bOut, packedRatio, machine) {
  const flops = 2.0 * M * N * K;
  const act = M * K * b + M * N * bOut;
  const w = N * K * b;
  const idealDense = Math.max(flops / machine.dense_flops, (w + act) / machine.bandwidth);
  const idealSparse = Math.max(flops / machine.sparse_flops, (w * packedRatio + act) / machine.bandwidth);
  return [idealDense, idealSparse];
}

function phaseSpeedups(gemmSpeedup) {
  if (gemmSpeedup === null || gemmSpeedup === undefined) return { prefill: null, decode: null };
  if (typeof gemmSpeedup === "object") {
    const unknown = Object.keys(gemmSpeedup).filter((k) => !PHASES.includes(k)).sort();
    if (unknown.length) {
      throw new InputError("gemm_speedup", `gemm_speedup keys must be among ('prefill', 'decode'), got [${unknown.map((k) => `'${k}'`).join(", ")}]`);
    }
    const out = {};
    for (const p of PHASES) {
      const v = gemmSpeedup[p];
      out[p] = v === null || v === undefined ? null : requireSpeedup(`gemm_speedup_${p}`, v);
    }
    return out;
  }
  const s = requireSpeedup("gemm_speedup", gemmSpeedup);
  return { prefill: s, decode: s };
}

/** Extreme inputs together can overflow a time: refuse the estimate (field "inputs"), never show Infinity seconds. */
function requireFiniteTimes(est) {
  for (const name of ["ttft_dense_s", "ttft_sparse_s", "tpot_dense_s", "tpot_sparse_s", "total_dense_s", "total_sparse_s"]) {
    const value = est[name];
    if (!isFiniteNumber(value)) {
      throw new InputError("inputs", `these inputs together are out of range: ${name} would be ${pyRepr(value)}, not a finite number; bring the largest or smallest inputs nearer the usual ones`);
    }
  }
  return est;
}

/**
 * Workload + GPU + assumptions -> the flat numbers evaluate() needs (twofour.request.build_inputs
 * with the roofline GEMM model, roofline_gemm_model). `gemmSpeedup`: null (predicted by the
 * roofline), one measured number for every pruned GEMM, or {prefill, decode}. `scenario`: how
 * the GEMM calls run ("eager", "cached", "kernel"); `backend` and `params`: passed to predict
 * (null: the GPU's preferred backend and its fitted parameters). Throws InputError naming the field.
 */
export function buildInputs(workload, gpu = "H100", { assumptions = DEFAULT_ASSUMPTIONS, gemmSpeedup = null, backend = null, params = null, scenario = DEFAULT_SCENARIO } = {}) {
  const w = checkWorkload(workload);
  const a = checkAssumptions({ ...DEFAULT_ASSUMPTIONS, ...assumptions });
  const spec = getGpu(gpu);
  if (!spec.backends.length) {
    const cc = `${spec.capability[0]}.${spec.capability[1]}`;
    throw new InputError("gpu", `gpu ${spec.name} (compute capability ${cc}) has no sparse tensor cores, so 2:4 cannot speed anything up there; choose a GPU with compute capability 8.0 or newer (e.g. A100, L4, H100)`);
  }
  checkScenario(scenario);
  const machine = {
    dense_flops: peakTflops(spec, w.dtype) * 1e12,
    sparse_flops: peakTflops(spec, w.dtype, true) * 1e12,
    bandwidth: spec.mem_bw_gbs * 1e9,
  };
  const speedups = phaseSpeedups(gemmSpeedup);
  const cfg = w.model;
  const b = DTYPE_BYTES[w.dtype];
  const kvB = a.kv_bytes_per_element === null ? b : a.kv_bytes_per_element;
  const kvDim = cfg.kv_heads * Math.floor(cfg.hidden / cfg.heads);
  let other = a.other_elems_per_token_layer;
  if (other === null) other = 12.0 * cfg.hidden + 2.0 * kvDim + 3.0 * cfg.intermediate;

  const r = {
    layers: cfg.layers, hidden: cfg.hidden, intermediate: cfg.intermediate, heads: cfg.heads,
    kv_heads: cfg.kv_heads, vocab: cfg.vocab, batch: w.batch, prompt_len: w.prompt_len, output_len: w.output_len,
    bytes_per_element: b, out_bytes_per_element: OUT_BYTES[w.dtype], kv_bytes_per_element: kvB,
    packed_ratio: PACKED_RATIO[w.dtype],
    dense_flops: machine.dense_flops, sparse_flops: machine.sparse_flops, bandwidth: machine.bandwidth,
    attention_efficiency: a.attention_efficiency, memory_efficiency: a.memory_efficiency,
    other_elems_per_token_layer: other, step_overhead_s: a.step_overhead_s, request_overhead_s: a.request_overhead_s,
    pruned: Object.fromEntries(LINEAR_KINDS.map((k) => [k, w.pruned.includes(k)])),
    gemm: {},
    // Only when set, as RequestInputs.to_dict leaves it out at its default 0.
    ...(w.prefill_chunk_tokens > 0 ? { prefill_chunk_tokens: w.prefill_chunk_tokens } : {}),
  };
  for (const phase of PHASES) {
    r.gemm[phase] = {};
    for (const [kind, [M, N, K]] of Object.entries(gemmShapes(r, phase))) {
      let pred;
      try {
        pred = predict(M, N, K, w.dtype, spec.name, backend, params, { scenario });
      } catch (err) {
        // A shape the roofline refuses comes from a model field: say which one.
        if (err instanceof InputError && err.field === "K") {
          throw new InputError(K === cfg.intermediate && kind === "down_proj" ? "intermediate" : "hidden",
            `${kind} has K = ${K}, not a multiple of 4: a 2:4 weight needs groups of 4 along K (in_features)`);
        }
        throw err;
      }
      const denseS = pred.dense_us * 1e-6;
      let sparseS = pred.sparse_us * 1e-6;
      if (speedups[phase] !== null) sparseS = denseS / speedups[phase];
      r.gemm[phase][kind] = [denseS, sparseS];
    }
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Spec steps 4-6: the arithmetic

function phaseTime(r, phase, steps, attended, kvTokens, tokens) {
  const h = r.hidden;
  const L = r.layers;
  const kvDim = r.kv_heads * Math.floor(r.hidden / r.heads);
  const b = r.bytes_per_element;
  const memRate = r.bandwidth * r.memory_efficiency;
  const shapes = gemmShapes(r, phase);
  const n = steps;

  const dense = Object.fromEntries(COMPONENTS.map((c) => [c, 0.0]));
  const sparse = Object.fromEntries(COMPONENTS.map((c) => [c, 0.0]));
  const linearDense = {};
  const linearSparse = {};
  let eligibleDense = 0.0, eligibleSparse = 0.0, eligibleIdeal = 0.0;
  for (const kind of LINEAR_KINDS) {
    const [gemmDense, gemmSparse] = r.gemm[phase][kind];
    const count = kind === "lm_head" ? n : n * L;
    const tDense = count * gemmDense;
    const pruned = Boolean(r.pruned[kind]);
    const tSparse = pruned ? count * gemmSparse : tDense;
    linearDense[kind] = tDense;
    linearSparse[kind] = tSparse;
    const component = kind === "lm_head" ? "lm_head" : pruned ? "pruned_linear" : "dense_linear";
    dense[component] += tDense;
    sparse[component] += tSparse;
    if (pruned) {
      const [M, N, K] = shapes[kind];
      const [idealDense, idealSparse] = idealTimes(M, N, K, b, r.out_bytes_per_element, r.packed_ratio, r);
      eligibleDense += tDense;
      eligibleSparse += tSparse;
      eligibleIdeal += tDense / (idealDense / idealSparse);
    }
  }

  const unchanged = {
    attention: 4.0 * r.batch * L * h * attended / (r.dense_flops * r.attention_efficiency),
    kv_cache: 2.0 * r.batch * L * kvDim * kvTokens * r.kv_bytes_per_element / memRate,
    embedding: n * 2.0 * tokens * h * b / memRate,
    other: n * tokens * (L * r.other_elems_per_token_layer + 2.0 * h) * b / memRate,
    step_overhead: n * r.step_overhead_s,
    request_overhead: phase === "prefill" ? r.request_overhead_s : 0.0,
  };
  const chunk = phase === "decode" ? (r.prefill_chunk_tokens ?? 0) : 0.0;
  if (chunk > 0.0) { // the mixed step: a prompt chunk shares every decode step (spec step 4)
    const P = r.prompt_len;
    unchanged.attention += 4.0 * L * h * n * chunk * (P + 1.0) / 2.0 / (r.dense_flops * r.attention_efficiency);
    unchanged.kv_cache += (2.0 * L * kvDim * n * (chunk + Math.max(P - chunk, 0.0) / 2.0)
                           * r.kv_bytes_per_element / memRate);
  }
  for (const [c, t] of Object.entries(unchanged)) {
    dense[c] = t;
    sparse[c] = t;
  }

  let denseS = 0.0, sparseS = 0.0;
  for (const c of COMPONENTS) {
    denseS += dense[c];
    sparseS += sparse[c];
  }
  return {
    name: phase,
    steps,
    dense,
    sparse,
    linear_dense: linearDense,
    linear_sparse: linearSparse,
    dense_s: denseS,
    sparse_s: sparseS,
    eligible_dense_s: eligibleDense,
    eligible_sparse_s: eligibleSparse,
    eligible_ideal_sparse_s: eligibleIdeal,
    overhead_s: dense.step_overhead + dense.request_overhead,
    p: denseS > 0.0 ? eligibleDense / denseS : 0.0,
    gemm_speedup: eligibleDense > 0.0 ? eligibleDense / eligibleSparse : 1.0,
    ceiling_speedup: eligibleDense > 0.0 ? eligibleDense / eligibleIdeal : 1.0,
    speedup: sparseS > 0.0 ? denseS / sparseS : 1.0,
  };
}

/** twofour.request.evaluate: both phases and the request-level numbers (times in seconds). */
export function evaluate(r) {
  const P = r.prompt_len;
  const nDec = r.output_len - 1;
  const nd = nDec;
  const prefill = phaseTime(r, "prefill", 1, P * (P + 1.0) / 2.0, P, r.batch * P);
  const decodeAttended = nd * P + nd * (nd + 1.0) / 2.0;
  const decodeTokens = r.batch + (r.prefill_chunk_tokens ?? 0); // === r.batch without a chunk
  const decode = phaseTime(r, "decode", nDec, decodeAttended, decodeAttended, decodeTokens);
  let tpotDense, tpotSparse;
  if (nDec > 0) {
    tpotDense = decode.dense_s / nd;
    tpotSparse = decode.sparse_s / nd;
  } else { // no decode step in this request: report what one step at context P + 1 would take
    const one = phaseTime(r, "decode", 1, P + 1.0, P + 1.0, decodeTokens);
    tpotDense = one.dense_s;
    tpotSparse = one.sparse_s;
  }
  const totalDense = prefill.dense_s + decode.dense_s;
  const totalSparse = prefill.sparse_s + decode.sparse_s;
  const eligibleDense = prefill.eligible_dense_s + decode.eligible_dense_s;
  const eligibleSparse = prefill.eligible_sparse_s + decode.eligible_sparse_s;
  const eligibleIdeal = prefill.eligible_ideal_sparse_s + decode.eligible_ideal_sparse_s;
  return requireFiniteTimes({
    inputs: r,
    prefill,
    decode,
    ttft_dense_s: prefill.dense_s,
    ttft_sparse_s: prefill.sparse_s,
    tpot_dense_s: tpotDense,
    tpot_sparse_s: tpotSparse,
    total_dense_s: totalDense,
    total_sparse_s: totalSparse,
    p_request: eligibleDense / totalDense,
    gemm_speedup_request: eligibleDense > 0.0 ? eligibleDense / eligibleSparse : 1.0,
    ceiling_speedup_request: eligibleDense > 0.0 ? eligibleDense / eligibleIdeal : 1.0,
  });
}

/** The headline numbers (RequestEstimate.summary). */
export function summary(est) {
  return {
    ttft_dense_s: est.ttft_dense_s,
    ttft_sparse_s: est.ttft_sparse_s,
    tpot_dense_s: est.tpot_dense_s,
    tpot_sparse_s: est.tpot_sparse_s,
    total_dense_s: est.total_dense_s,
    total_sparse_s: est.total_sparse_s,
    speedup_ttft: est.ttft_dense_s / est.ttft_sparse_s,
    speedup_tpot: est.tpot_dense_s / est.tpot_sparse_s,
    speedup_request: est.total_dense_s / est.total_sparse_s,
    p_prefill: est.prefill.p,
    p_decode: est.decode.p,
    p_request: est.p_request,
    gemm_speedup_prefill: est.prefill.gemm_speedup,
    gemm_speedup_decode: est.decode.gemm_speedup,
    gemm_speedup_request: est.gemm_speedup_request,
    ceiling_speedup_prefill: est.prefill.ceiling_speedup,
    ceiling_speedup_decode: est.decode.ceiling_speedup,
    ceiling_speedup_request: est.ceiling_speedup_request,
  };
}

/** RequestEstimate.to_dict: summary plus the per-phase breakdowns (what the golden files hold). */
export function toDict(est) {
  const out = { summary: summary(est) };
  for (const ph of [est.prefill, est.decode]) {
    out[ph.name] = {
      steps: ph.steps, dense: { ...ph.dense }, sparse: { ...ph.sparse }, dense_s: ph.dense_s, sparse_s: ph.sparse_s,
      eligible_dense_s: ph.eligible_dense_s, eligible_sparse_s: ph.eligible_sparse_s,
      eligible_ideal_sparse_s: ph.eligible_ideal_sparse_s, p: ph.p, gemm_speedup: ph.gemm_speedup,
      ceiling_speedup: ph.ceiling_speedup, speedup: ph.speedup,
    };
  }
  return out;
}

/** buildInputs then evaluate (twofour.request.estimate). */
export function estimate(workload, gpu = "H100", options = {}) {
  return evaluate(buildInputs(workload, gpu, options));
}
