// Mirror of twofour.roofline.predict: dense vs 2:4 time of one GEMM y = x @ W.T,
// x [M, K], W [N, K]. The model (see the Python module docstring for why each term exists):
//
//   flops     = 2 * M * N * K
//   wave_eff  = tiles / (ceil(tiles / sms) * sms),  tiles = ceil(M/tile_m) * ceil(N/tile_n)
//   t_compute = flops / (peak_tflops * 1e12 * compute_eff * wave_eff)
//   n_bytes   = weight_bytes + M * K * in_bytes + M * N * out_bytes
//   t_memory  = n_bytes / (mem_bw_gbs * 1e9 * memory_eff)
//   t         = max(max(t_compute, t_memory) + device_us * 1e-6, host_us * 1e-6)
//
// The 2:4 side pads M to the backend's row multiple, uses the sparse peak and the packed
// weight bytes. Python computes flops and n_bytes as exact integers and converts once; BigInt
// does the same here, so the two agree to the last bit.
//
// Which per-call costs count depends on the scenario (SCENARIOS): "ideal" pays none, "cached"
// the device's (launch, the 2:4 path's extra kernels), "eager" also waits for the host
// (Python dispatch; cuSPARSELt builds a plan per call; CUTLASS's host cost is the dense one's).
// The parameters are fitted (./fitted.js, a checked copy of twofour/data/kernel-fit.json).

import { InputError, pyRepr } from "./errors.js";
import { DTYPES, FIT } from "./fitted.js";
import { getGpu, peakTflops } from "./hardware.js";
import { packedBytes, packedRatio } from "./packing.js";

export const SCENARIOS = Object.freeze(["eager", "cached", "ideal"]);
export const DEFAULT_SCENARIO = "cached";

// What each scenario means, in the words the calculators show (one sentence each).
export const SCENARIO_TEXT = Object.freeze({
  eager: Object.freeze({
    label: "eager PyTorch",
    help: "Each call runs from Python with no caching: the host dispatches every call and, for cuSPARSELt, builds a plan per call, so a fast kernel waits for the host.",
  }),
  cached: Object.freeze({
    label: "cached plans or CUDA graphs",
    help: "Plans are built once and calls are replayed, as serving engines run: only the GPU's own per-call cost (launch, the 2:4 path's extra kernels) is added to the kernel.",
  }),
  ideal: Object.freeze({
    label: "kernel only",
    help: "The kernels' time alone, with no per-call cost at all: an upper bound that no real call reaches.",
  }),
});

// The model's guesses before it was fitted (twofour.roofline.ASSUMED_EFFICIENCY, the
// Efficiency field defaults): kept to show what the fit changed, and to fill missing fields.
export const ASSUMED_EFFICIENCY = Object.freeze({
  dense_compute: 0.75,
  sparse_compute: 0.55,
  dense_memory: 0.8,
  sparse_memory: 0.8,
  dense_overhead_us: 5.0,
  sparse_overhead_us: 15.0,
  tile_m: 128,
  tile_n: 128,
  pad_to: null,
  dense_host_us: 0.0,
  sparse_host_us: 0.0,
});

// Dense-operand row multiple of PyTorch's 2:4 path (torch/sparse/semi_structured.py,
// _DTYPE_SHAPE_CONSTRAINTS; facts.md §3), bytes per input and output element (8-bit GEMMs are
// assumed to write bf16): all from the one dtype table (twofour._common.dtypes), delivered in fitted.js.
export const PAD_MULTIPLE = Object.fromEntries(Object.entries(DTYPES).flatMap(
  ([d, f]) => Object.entries(f.pad_multiple).map(([backend, mult]) => [`${backend}/${d}`, mult])));
const IN_BYTES = Object.fromEntries(Object.entries(DTYPES).map(([d, f]) => [d, f.in_bytes]));
const OUT_BYTES = Object.fromEntries(Object.entries(DTYPES).map(([d, f]) => [d, f.out_bytes]));
// The packing format twofour.packing counts for each GEMM dtype (tf32 runs as fp32 1:2).
const PACKING = { fp16: "fp16", bf16: "bf16", int8: "int8", fp8: "fp8", tf32: "fp32" };

const FRACTIONS = ["dense_compute", "sparse_compute", "dense_memory", "sparse_memory"];
const MICROSECONDS = ["dense_overhead_us", "sparse_overhead_us", "dense_host_us", "sparse_host_us"];

/**
 * A complete, checked parameter set (twofour.roofline.Efficiency): missing fields take the
 * assumed values; the checks and messages are the Python's (__post_init__).
 */
export function efficiency(partial = {}) {
  const unknown = Object.keys(partial).filter((k) => !(k in ASSUMED_EFFICIENCY));
  if (unknown.length) {
    throw new InputError("params", `unknown Efficiency fields ${unknown.sort().join(", ")}; valid: ${Object.keys(ASSUMED_EFFICIENCY).sort().join(", ")}`);
  }
  const e = { ...ASSUMED_EFFICIENCY, ...partial };
  for (const name of FRACTIONS) {
    const v = e[name];
    if (typeof v !== "number" || !(v > 0 && v <= 1)) throw new InputError(name, `${name} must be a fraction in (0, 1], got ${pyRepr(v)}`);
  }
  for (const name of MICROSECONDS) {
    const v = e[name];
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0) {
      throw new InputError(name, `${name} must be a finite number of microseconds >= 0, got ${pyRepr(v)}`);
    }
  }
  for (const name of ["tile_m", "tile_n"]) requirePositiveInt(name, e[name]);
  if (e.pad_to !== null) requirePositiveInt("pad_to", e.pad_to);
  for (const name of ["compute", "memory"]) {
    const s = e[`sparse_${name}`], d = e[`dense_${name}`];
    if (s > d) {
      throw new InputError(`sparse_${name}`, `sparse_${name}=${pyRepr(s)} exceeds dense_${name}=${pyRepr(d)}: a 2:4 kernel more efficient than dense would predict more than the 2x / 1/packed_ratio ceilings; use sparse_<x> <= dense_<x>`);
    }
  }
  for (const name of ["overhead_us", "host_us"]) {
    const s = e[`sparse_${name}`], d = e[`dense_${name}`];
    if (s < d) {
      throw new InputError(`sparse_${name}`, `sparse_${name}=${pyRepr(s)} is below dense_${name}=${pyRepr(d)}: the 2:4 call does what the dense one does and more, so its per-call cost cannot be smaller; use sparse_<x> >= dense_<x>`);
    }
  }
  return Object.freeze(e);
}

// The fitted base set (the GPU measured here): twofour.roofline.DEFAULT_EFFICIENCY.
export const DEFAULT_EFFICIENCY = efficiency(FIT.base.params);

/** Return `scenario` if it is one of SCENARIOS, else throw naming the valid ones (check_scenario). */
export function checkScenario(scenario) {
  if (!SCENARIOS.includes(scenario)) {
    throw new InputError(
      "scenario",
      `scenario must be one of ('eager', 'cached', 'ideal') (eager: PyTorch eager, plan built per call; cached: plans cached or CUDA graphs, as a serving engine runs; ideal: kernel time only), got ${pyStr(scenario)}`,
    );
  }
  return scenario;
}

function pyStr(v) {
  return typeof v === "string" ? `'${v}'` : pyRepr(v);
}

function checkKind(kind) {
  if (kind !== "dense" && kind !== "sparse") throw new InputError("kind", `kind must be 'dense' or 'sparse', got ${pyStr(kind)}`);
}

/** Device cost per call (µs) of `kind` in `scenario`: 0 when ideal, else <kind>_overhead_us (Efficiency.device_us). */
export function deviceUs(e, kind, scenario) {
  checkScenario(scenario);
  checkKind(kind);
  return scenario === "ideal" ? 0.0 : e[`${kind}_overhead_us`];
}

/**
 * Host time per call (µs) that bounds `kind` in `scenario` (Efficiency.host_us): 0 unless eager.
 * PyTorch's CUTLASS 2:4 path builds no cuSPARSELt plan: its host cost is the dense one's.
 */
export function hostUs(e, kind, scenario, backend = null) {
  checkScenario(scenario);
  checkKind(kind);
  if (scenario !== "eager") return 0.0;
  if (kind === "sparse" && backend !== null && backend !== undefined && String(backend).toLowerCase() === "cutlass") {
    return e.dense_host_us;
  }
  return e[`${kind}_host_us`];
}

/** The backend of `spec` named `backend` in any case (its canonical spelling), or null. */
function canonicalBackend(spec, backend) {
  if (typeof backend !== "string") return null;
  return spec.backends.find((b) => b.toLowerCase() === backend.toLowerCase()) ?? null;
}

/**
 * The fitted parameter set for `gpu` and `backend` (twofour.roofline.default_params): looked up
 * as "GPU/backend", then "GPU", then the base set. The backend may be spelled in any case.
 */
export function defaultParams(gpu = null, backend = null) {
  return FIT_ENTRIES[fitKey(gpu, backend) ?? ""] ?? DEFAULT_EFFICIENCY;
}

/** The per_gpu key of kernel-fit.json that defaultParams uses, or null for the base set. */
export function fitKey(gpu = null, backend = null) {
  if (gpu === null || gpu === undefined) return null;
  const spec = getGpu(gpu);
  const b = backend === null || backend === undefined ? null : canonicalBackend(spec, backend) ?? backend;
  if (b !== null && `${spec.name}/${b}` in FIT.per_gpu) return `${spec.name}/${b}`;
  return spec.name in FIT.per_gpu ? spec.name : null;
}

const FIT_ENTRIES = Object.fromEntries(Object.entries(FIT.per_gpu).map(([k, v]) => [k, efficiency(v.params)]));

export function padMultiple(backend, d) {
  const mult = PAD_MULTIPLE[`${backend}/${d}`];
  if (mult === undefined) {
    const valid = [...new Set(Object.keys(PAD_MULTIPLE).map((k) => k.split("/")[0]))].sort();
    throw new InputError("dtype", `no 2:4 padding rule for backend='${backend}' with dtype='${d}'; backends: ['${valid.join("', '")}'] (CUTLASS has no fp8 path)`);
  }
  return mult;
}

export function waveEfficiency(M, N, sms, tileM = 128, tileN = 128) {
  const tiles = Math.ceil(M / tileM) * Math.ceil(N / tileN);
  const waves = Math.ceil(tiles / sms);
  return tiles / (waves * sms);
}

/** One GEMM's time in seconds, what bounds it ("compute", "memory" or "host") and its wave efficiency (gemm_time_s). */
export function gemmTimeS(M, N, K, o) {
  const flops = Number(2n * BigInt(M) * BigInt(N) * BigInt(K));
  const waveEff = waveEfficiency(M, N, o.sms, o.tile_m, o.tile_n);
  const tCompute = flops / (o.peak_tflops * 1e12 * o.compute_eff * waveEff);
  const nBytes = Number(
    BigInt(o.weight_bytes) + BigInt(M) * BigInt(K) * BigInt(o.in_bytes) + BigInt(M) * BigInt(N) * BigInt(o.out_bytes),
  );
  const tMemory = nBytes / (o.mem_bw_gbs * 1e9 * o.memory_eff);
  const bound = tCompute >= tMemory ? "compute" : "memory";
  const tDevice = Math.max(tCompute, tMemory) + o.overhead_us * 1e-6;
  const hostUs = o.host_us ?? 0.0;
  if (hostUs * 1e-6 > tDevice) return [hostUs * 1e-6, "host", waveEff];
  return [tDevice, bound, waveEff];
}

function requirePositiveInt(name, value) {
  if (!Number.isSafeInteger(value) || value <= 0) throw new InputError(name, `${name} must be a positive int, got ${value}`);
  return value;
}

/**
 * Predicted dense and 2:4 time (microseconds) of one GEMM: twofour.roofline.predict.
 * `params`: a parameter set (see efficiency()); null = the fitted set of the GPU and backend.
 * `backend`: "cuSPARSELt" or "CUTLASS" in any case; null = the GPU's preferred one.
 * @example predict(1, 4096, 4096, "fp16", "H100", null, null, { scenario: "eager" }).bound_sparse === "host"
 */
export function predict(M, N, K, d = "fp16", gpu = "H100", backend = null, params = null, { scenario = DEFAULT_SCENARIO } = {}) {
  for (const [name, v] of [["M", M], ["N", N], ["K", K]]) requirePositiveInt(name, v);
  if (K % 4) throw new InputError("K", `K must be a multiple of 4 for a 2:4 weight (groups of 4 along K), got K=${K}`);
  const spec = getGpu(gpu);
  if (!spec.backends.length) {
    throw new InputError(
      "gpu",
      `gpu ${spec.name} (compute capability ${spec.capability[0]}.${spec.capability[1]}) has no sparse tensor cores; 2:4 needs 8.0 or newer (e.g. A100, L4, H100)`,
    );
  }
  if (!(d in IN_BYTES)) throw new InputError("dtype", `dtype must be one of ${Object.keys(IN_BYTES).join(", ")}, got '${d}'`);
  if (backend === null || backend === undefined) backend = spec.backends[0];
  else {
    const canonical = canonicalBackend(spec, backend);
    if (canonical === null) {
      throw new InputError("backend", `backend ${pyStr(backend)} is not available on ${spec.name}; valid: ['${spec.backends.join("', '")}']`);
    }
    backend = canonical;
  }
  const peakDense = peakTflops(spec, d);
  const peakSparse = peakTflops(spec, d, true);
  checkScenario(scenario);
  const e = params === null || params === undefined ? defaultParams(spec.name, backend) : efficiency(params);
  const mult = e.pad_to || padMultiple(backend, d);
  const Mpadded = Math.ceil(M / mult) * mult;
  const common = {
    mem_bw_gbs: spec.mem_bw_gbs, sms: spec.sms, in_bytes: IN_BYTES[d], out_bytes: OUT_BYTES[d],
    tile_m: e.tile_m, tile_n: e.tile_n,
  };
  const [tDense, boundDense, waveDense] = gemmTimeS(M, N, K, {
    ...common, peak_tflops: peakDense, weight_bytes: N * K * IN_BYTES[d],
    compute_eff: e.dense_compute, memory_eff: e.dense_memory, overhead_us: deviceUs(e, "dense", scenario),
    host_us: hostUs(e, "dense", scenario),
  });
  const [tSparse, boundSparse, waveSparse] = gemmTimeS(Mpadded, N, K, {
    ...common, peak_tflops: peakSparse, weight_bytes: packedBytes([N, K], PACKING[d]),
    compute_eff: e.sparse_compute, memory_eff: e.sparse_memory, overhead_us: deviceUs(e, "sparse", scenario),
    host_us: hostUs(e, "sparse", scenario, backend),
  });
  return {
    M, N, K, dtype: d, gpu: spec.name, backend, M_padded: Mpadded,
    dense_us: tDense * 1e6, sparse_us: tSparse * 1e6,
    bound_dense: boundDense, bound_sparse: boundSparse,
    wave_eff_dense: waveDense, wave_eff_sparse: waveSparse,
    speedup: (tDense * 1e6) / (tSparse * 1e6),
    scenario,
  };
}

/** The two ceilings of any 2:4 GEMM (twofour.roofline.ceilings): compute 2x, memory 1 / packed ratio. */
export function ceilings(d) {
  if (!(d in PACKING)) throw new InputError("dtype", `dtype must be one of ${Object.keys(PACKING).join(", ")}, got '${d}'`);
  return { compute: 2.0, memory: 1 / packedRatio(PACKING[d]) };
}

// ---------------------------------------------------------------------------------------------
// What a prediction rests on: the fit line shown under every prediction

const REGIMES = [["M<=16", "M ≤ 16"], ["16<M<=256", "16 < M ≤ 256"], ["M>256", "M > 256"]];

/** The held-out error regime of twofour.roofline.calibration for a GEMM with M rows. */
export function regimeOf(M) {
  return M <= 16 ? "M<=16" : M <= 256 ? "16<M<=256" : "M>256";
}

function pct(x) {
  return `${(x * 100).toFixed(0)}%`;
}

function regimeRow(table, regime) {
  return table.find((r) => r.regime === regime) ?? null;
}

/**
 * One paragraph's worth of facts for the fit line: which set a prediction used and what it was
 * fitted to, and the median held-out error of the predicted speedup per M regime, all read
 * from FIT. `M` (optional) picks the regime to name first.
 */
export function fitFacts(gpu, backend = null, M = null) {
  const spec = getGpu(gpu);
  const b = backend === null || backend === undefined ? spec.backends[0] : canonicalBackend(spec, backend) ?? backend;
  const key = fitKey(spec.name, b);
  const measured = FIT.errors.measured_leave_one_shape_out.by_regime;
  const published = FIT.errors.published_leave_one_source_out;
  const regime = M === null ? null : regimeOf(M);
  return {
    gpu: spec.name, backend: b, key,
    set: key === null
      ? `no usable measurement on the ${spec.name}, so the base set, fitted to ${FIT.base.source}`
      : FIT.per_gpu[key].note,
    n_points: FIT.provenance.n_points,
    n_sources: FIT.provenance.sources.length,
    date: FIT.provenance.date,
    base_source: FIT.base.source,
    regime,
    measured: REGIMES.map(([r, text]) => ({ regime: r, text, row: regimeRow(measured, r) })).filter((x) => x.row),
    published: REGIMES.map(([r, text]) => ({ regime: r, text, row: regimeRow(published.by_regime, r) })).filter((x) => x.row),
    published_sources: published.n_sources,
  };
}

/** The fit line as text: which parameters, their held-out error (at this M's regime if given), what they were fitted to. */
export function fitLine(gpu, backend = null, M = null) {
  const f = fitFacts(gpu, backend, M);
  const ours = `measured for this project (${f.base_source}; each shape left out)`;
  const theirs = "published measurements (each source left out)";
  const parts = [`Fitted model, ${f.gpu} with ${f.backend}: ${f.set}.`];
  if (f.regime !== null) {
    const txt = REGIMES.find(([r]) => r === f.regime)[1];
    const mine = f.measured.find((x) => x.regime === f.regime);
    const pub = f.published.find((x) => x.regime === f.regime);
    parts.push(`Median held-out error of the predicted speedup at this M (${txt}): `
      + (mine ? `${pct(mine.row.median)} on ${mine.row.n} points ${ours}` : `no point ${ours}`)
      + (pub ? `, ${pct(pub.row.median)} on ${pub.row.n} ${theirs}.` : "; no usable published measurement at this M."));
  } else {
    const list = (rows) => rows.map((x) => `${pct(x.row.median)} at ${x.text} (n = ${x.row.n})`).join(", ");
    const missing = REGIMES.filter(([r]) => !f.published.some((x) => x.regime === r)).map(([, text]) => text);
    parts.push(`Median held-out error of the predicted speedup, on points ${ours}: ${list(f.measured)}; on ${theirs}: `
      + `${list(f.published) || "none"}${missing.length ? `, none usable at ${missing.join(" or ")}` : ""}.`);
  }
  parts.push(`Fitted to ${f.n_points} measurements from ${f.n_sources} sources (${f.date}).`);
  return parts.join(" ");
}
