// Mirror of twofour.roofline.predict: dense vs 2:4 time of one GEMM y = x @ W.T, x [M, K],
// W [N, K], predicted from the kernel each side runs (see the Python module docstring of
// twofour.roofline.model for why each term exists). One side, in Python's order:
//
//   Mp        = ceil(M / mult) * mult on the 2:4 side (PyTorch pads x's rows), M for dense
//   tile      = first row (m_max, n_max, tile_n, tile_m) of the family's table with Mp <= m_max, N <= n_max
//   tiles     = ceil(N / tile_n) * ceil(Mp / tile_m)
//   split     = max(1, min(max_split, floor(cta_target / tiles), floor(K / (64 * min_k_iters))))
//   ctas      = tiles * split;  waves = ceil(ctas / sms);  busy = min(ctas, sms)
//   n_bytes   = weight + Mp * K * in_bytes + M * N * out_bytes + 2 * (ctas - tiles) * tile_n * tile_m * 4
//   sat       = mem_bw_gbs * mem_eff;  per_sm = per_sm_gbs * (1 + fill_gain * min(Mp, tile_m) / tile_m)
//   bw_gbs    = sat * busy / (busy + sat / per_sm)
//   dirty     = min(n_bytes * flush_dirty_frac, flush_dirty_mb * 1e6) if l2 === "flushed", else 0
//               (l2: "clean" by default, kernels back to back; "flushed" as twofour bench measured)
//   t_memory  = max(n_bytes / (bw_gbs * 1e3), (n_bytes + dirty) / (mem_bw_gbs * dram_eff * 1e3))
//   cta_flops = 2 * tile_n * tile_m * ceil(K / split)      (the whole tile: its padding columns are math too)
//   cta_rate  = min(peak * 1e6 / sms * sm_compute_eff, peak * 1e6 * compute_eff / busy)
//   t_compute = waves * cta_flops / cta_rate
//   kernel_us = latency_us + max(t_compute, t_memory) + (split > 1 ? helper_split_us : 0) + (2:4 && M % mult ? pad_us : 0)
//
// Then the scenario: "kernel" is kernel_us, "cached" adds the idle time between kernels of a captured
// chain (graph_dense_us / graph_sparse_us, from the GEMM-chain traces), "eager"
// is max(kernel_us, host_us) (cuSPARSELt builds a plan per call; cuBLAS and CUTLASS do not).
// The ceiling guard raises the 2:4 time to dense / ceiling where the model would pass it.
// Python computes the byte count as an exact integer; BigInt does the same here, so the two
// agree to the last bit. The parameters are fitted (FIT in ./data.js, generated from
// twofour/data/kernel-fit.json by scripts/js_data.py).

import { InputError, pyRepr } from "./errors.js";
import { ASSUMED, DTYPES, FIT } from "./data.js";
import { getGpu, peakTflops } from "./hardware.js";
import { packedBytes } from "./packing.js";

export const SCENARIOS = Object.freeze(["eager", "cached", "kernel"]);
export const DEFAULT_SCENARIO = "cached";
export const ALGORITHMS = Object.freeze(["default", "searched"]);
export const L2_STATES = Object.freeze(["flushed", "clean"]);
export const FAMILIES = Object.freeze(["cublas", "cusparselt", "cusparselt_bf16", "cusparselt_searched", "cutlass"]);

// What each scenario means, in the words the calculators show (one sentence each).
export const SCENARIO_TEXT = Object.freeze({
  eager: Object.freeze({
    label: "eager PyTorch",
    help: "Each call runs from Python with no caching: the host dispatches every call and, for cuSPARSELt, builds a plan per call, so a fast kernel waits for the host.",
  }),
  cached: Object.freeze({
    label: "cached plans or CUDA graphs",
    help: "Plans are built once and calls are replayed from a CUDA graph, as serving engines run: the kernels plus the short idle between them inside the captured chain (read off the GEMM-chain traces).",
  }),
  kernel: Object.freeze({
    label: "kernel only",
    help: "The kernels' own time as the profiler records it, the GEMM with its fixed latency and its helper kernels, without the host or a launch.",
  }),
});

// Dense-operand row multiple of PyTorch's 2:4 path (torch/sparse/semi_structured.py,
// _DTYPE_SHAPE_CONSTRAINTS), bytes per input and output element (8-bit GEMMs are
// assumed to write bf16): all from the one dtype table (twofour.vocabulary), delivered in data.js.
export const PAD_MULTIPLE = Object.fromEntries(Object.entries(DTYPES).flatMap(
  ([d, f]) => Object.entries(f.pad_multiple).map(([backend, mult]) => [`${backend}/${d}`, mult])));
const IN_BYTES = Object.fromEntries(Object.entries(DTYPES).map(([d, f]) => [d, f.in_bytes]));
const OUT_BYTES = Object.fromEntries(Object.entries(DTYPES).map(([d, f]) => [d, f.out_bytes]));

function pyStr(v) {
  return typeof v === "string" ? `'${v}'` : pyRepr(v);
}

function pyList(names) {
  return `[${names.map((s) => `'${s}'`).join(", ")}]`;
}

function requirePositiveInt(name, value) {
  if (!Number.isSafeInteger(value) || value <= 0) throw new InputError(name, `${name} must be a positive int, got ${value}`);
  return value;
}

// ---------------------------------------------------------------------------------------------
// The parameters (twofour.roofline.KernelFamily, KernelParams): checked as Python checks them

const FAMILY_FIELDS = ["tiles", "cta_target", "max_split", "min_k_iters", "compute_eff", "sm_compute_eff", "mem_eff",
  "per_sm_gbs", "fill_gain", "latency_us", "helper_split_us"];
const COST_FIELDS = ["pad_us", "graph_dense_us", "graph_sparse_us", "bench_replay_dense_us", "bench_replay_sparse_us",
  "host_dense_us", "host_sparse_us"];
const PARAM_FIELDS = [...FAMILIES, ...COST_FIELDS, "dram_eff", "flush_dirty_mb", "flush_dirty_frac", "pad_to"];

function isNumber(v) {
  return typeof v === "number" && !Number.isNaN(v);
}

function fraction(name, v, zeroOk = false) {
  if (!isNumber(v) || !(zeroOk ? v >= 0 && v <= 1 : v > 0 && v <= 1)) {
    throw new InputError(name, `${name} must be a fraction in ${zeroOk ? "[0, 1]" : "(0, 1]"}, got ${pyRepr(v)}`);
  }
}

function nonNegative(name, v, unit = "microseconds") {
  if (!isNumber(v) || !Number.isFinite(v) || v < 0) throw new InputError(name, `${name} must be a finite number of ${unit} >= 0, got ${pyRepr(v)}`);
}

function tupleRepr(row) {
  return `(${row.map((v) => (v === null ? "None" : String(v))).join(", ")})`;
}

/** A tile table checked as twofour.roofline.tiles.check_tile_table checks it (rows of 4, last one unbounded). */
export function checkTileTable(name, rows) {
  if (!Array.isArray(rows) || !rows.length) throw new InputError(name, `${name} must hold at least one row (m_max, n_max, tile_n, tile_m)`);
  for (const r of rows) {
    if (!Array.isArray(r) || r.length !== 4) throw new InputError(name, `${name}: each row is (m_max, n_max, tile_n, tile_m), got ${JSON.stringify(r)}`);
    if (r[0] !== null) requirePositiveInt(`${name} m_max`, r[0]);
    if (r[1] !== null) requirePositiveInt(`${name} n_max`, r[1]);
    requirePositiveInt(`${name} tile_n`, r[2]);
    requirePositiveInt(`${name} tile_m`, r[3]);
  }
  const last = rows[rows.length - 1];
  if (last[0] !== null || last[1] !== null) {
    throw new InputError(name, `${name}: the last row must be (None, None, tile_n, tile_m) so that every GEMM has a tile, got ${tupleRepr(last)}`);
  }
  return Object.freeze(rows.map((r) => Object.freeze([...r])));
}

function unknownFields(what, obj, known) {
  const unknown = Object.keys(obj).filter((k) => !known.includes(k)).sort();
  if (unknown.length) throw new InputError("params", `unknown ${what} fields ${pyList(unknown)}; valid: ${pyList([...known].sort())}`);
}

/** One kernel family, checked (KernelFamily.__post_init__). */
export function kernelFamily(obj) {
  unknownFields("KernelFamily", obj, FAMILY_FIELDS);
  const f = { ...obj, tiles: checkTileTable("tiles", obj.tiles) };
  if (!Number.isSafeInteger(f.cta_target) || f.cta_target < 0) {
    throw new InputError("cta_target", `cta_target must be an int >= 0 (0: the GPU's SM count), got ${f.cta_target}`);
  }
  requirePositiveInt("max_split", f.max_split);
  requirePositiveInt("min_k_iters", f.min_k_iters);
  for (const name of ["compute_eff", "sm_compute_eff", "mem_eff"]) fraction(name, f[name]);
  if (!isNumber(f.per_sm_gbs) || !Number.isFinite(f.per_sm_gbs) || f.per_sm_gbs <= 0) {
    throw new InputError("per_sm_gbs", `per_sm_gbs must be a finite number of GB/s > 0, got ${pyRepr(f.per_sm_gbs)}`);
  }
  nonNegative("fill_gain", f.fill_gain, "times");
  nonNegative("latency_us", f.latency_us);
  nonNegative("helper_split_us", f.helper_split_us);
  return Object.freeze(f);
}

/** A complete parameter set, checked (KernelParams.from_dict): one family each, and the costs outside the kernel. */
export function kernelParams(obj) {
  unknownFields("KernelParams", obj, PARAM_FIELDS);
  const p = { pad_to: null, ...obj };
  for (const name of FAMILIES) {
    if (!(name in obj)) throw new InputError("params", `KernelParams needs the family '${name}'; families: ('${FAMILIES.join("', '")}')`);
    p[name] = kernelFamily(obj[name]);
  }
  for (const name of COST_FIELDS) nonNegative(name, p[name]);
  nonNegative("flush_dirty_mb", p.flush_dirty_mb, "MB");
  fraction("dram_eff", p.dram_eff);
  fraction("flush_dirty_frac", p.flush_dirty_frac, true);
  if (p.pad_to !== null) requirePositiveInt("pad_to", p.pad_to);
  return Object.freeze(p);
}

// The model before any fit (twofour.roofline.ASSUMED_PARAMS) and the fitted base set (DEFAULT_PARAMS).
export const ASSUMED_PARAMS = kernelParams(ASSUMED);
export const DEFAULT_PARAMS = kernelParams(FIT.base.params);
const FIT_ENTRIES = Object.fromEntries(Object.entries(FIT.per_gpu).map(([k, v]) => [k, kernelParams(v.params)]));

/** Return `scenario` if it is one of SCENARIOS, else throw naming the valid ones (check_scenario). */
export function checkScenario(scenario) {
  if (!SCENARIOS.includes(scenario)) {
    throw new InputError(
      "scenario",
      `scenario must be one of ('eager', 'cached', 'kernel') (eager: PyTorch eager, calls back to back, a plan built per call; cached: plans cached or a CUDA-graph replay, as a serving engine runs; kernel: the kernels' own time, as the profiler records it), got ${pyStr(scenario)}`,
    );
  }
  return scenario;
}

/** The backend of `spec` named `backend` in any case (its canonical spelling), or null. */
function canonicalBackend(spec, backend) {
  if (typeof backend !== "string") return null;
  return spec.backends.find((b) => b.toLowerCase() === backend.toLowerCase()) ?? null;
}

/** The per_gpu key of kernel-fit.json that defaultParams uses ("GPU/backend", then "GPU"), or null for the base set. */
export function fitKey(gpu = null, backend = null) {
  if (gpu === null || gpu === undefined) return null;
  const spec = getGpu(gpu);
  if (backend !== null && backend !== undefined) {
    const want = `${spec.name}/${backend}`.toLowerCase();
    const key = Object.keys(FIT.per_gpu).find((k) => k.toLowerCase() === want);
    if (key !== undefined) return key;
  }
  return spec.name in FIT.per_gpu ? spec.name : null;
}

/** The fitted parameter set for `gpu` and `backend` (twofour.roofline.default_params). */
export function defaultParams(gpu = null, backend = null) {
  const key = fitKey(gpu, backend);
  return key === null ? DEFAULT_PARAMS : FIT_ENTRIES[key];
}

export function padMultiple(backend, d) {
  const mult = PAD_MULTIPLE[`${backend}/${d}`];
  if (mult === undefined) {
    const valid = [...new Set(Object.keys(PAD_MULTIPLE).map((k) => k.split("/")[0]))].sort();
    throw new InputError("dtype", `no 2:4 padding rule for backend='${backend}' with dtype='${d}'; backends: ['${valid.join("', '")}'] (CUTLASS has no fp8 path)`);
  }
  return mult;
}

// ---------------------------------------------------------------------------------------------
// The kernel (twofour.roofline.tiles and model._kernel_time)

/** [tile_n, tile_m] of the first row with M <= m_max and N <= n_max (tiles.choose_tile). */
export function chooseTile(rows, M, N) {
  for (const [mMax, nMax, tileN, tileM] of rows) {
    if ((mMax === null || M <= mMax) && (nMax === null || N <= nMax)) return [tileN, tileM];
  }
  throw new InputError("params", `tile table has no row for M=${M}, N=${N}; its last row must be unbounded`);
}

/** Tile, tiles, split-K, CTAs, waves and busy SMs (tiles.launch), M as the kernel sees it. */
export function launch(M, N, K, rows, sms, fam) {
  const [tileN, tileM] = chooseTile(rows, M, N);
  const tiles = Math.ceil(N / tileN) * Math.ceil(M / tileM);
  const target = fam.cta_target || sms;
  const split = Math.max(1, Math.min(fam.max_split, Math.floor(target / tiles), Math.floor(K / (64 * fam.min_k_iters))));
  const ctas = tiles * split;
  return { tile_n: tileN, tile_m: tileM, tiles, split, ctas, waves: Math.ceil(ctas / sms), busy_sms: Math.min(ctas, sms) };
}

function packedWeightBytes(N, K, d) {
  return packedBytes([N, K], d);
}

function kernelTimeOf(M, N, K, d, spec, name, fam, params, mult, l2) {
  const sparse = name !== "cublas";
  const Mp = sparse ? Math.ceil(M / mult) * mult : M;
  const L = launch(Mp, N, K, fam.tiles, spec.sms, fam);
  const inB = IN_BYTES[d], outB = OUT_BYTES[d];
  const weight = sparse ? packedWeightBytes(N, K, d) : BigInt(N) * BigInt(K) * BigInt(inB);
  const nBytes = Number(weight + BigInt(Mp) * BigInt(K) * BigInt(inB) + BigInt(M) * BigInt(N) * BigInt(outB)
    + 2n * BigInt(L.ctas - L.tiles) * BigInt(L.tile_n) * BigInt(L.tile_m) * 4n);
  const sat = spec.mem_bw_gbs * fam.mem_eff;
  const perSm = fam.per_sm_gbs * (1 + fam.fill_gain * Math.min(Mp, L.tile_m) / L.tile_m);
  const bw = sat * L.busy_sms / (L.busy_sms + sat / perSm);
  const dirty = l2 === "flushed" ? Math.min(nBytes * params.flush_dirty_frac, params.flush_dirty_mb * 1e6) : 0.0;
  const tMemory = Math.max(nBytes / (bw * 1e3), (nBytes + dirty) / (spec.mem_bw_gbs * params.dram_eff * 1e3));
  const peak = peakTflops(spec, d, sparse);
  const ctaFlops = 2 * L.tile_n * L.tile_m * Math.ceil(K / L.split);
  const ctaRate = Math.min(peak * 1e6 / spec.sms * fam.sm_compute_eff, peak * 1e6 * fam.compute_eff / L.busy_sms);
  const tCompute = L.waves * ctaFlops / ctaRate;
  const gemm = fam.latency_us + Math.max(tCompute, tMemory);
  const helpers = (L.split > 1 ? fam.helper_split_us : 0.0) + (sparse && M % mult ? params.pad_us : 0.0);
  return {
    family: name, ...L, n_bytes: nBytes, bw_gbs: bw, t_compute_us: tCompute, t_memory_us: tMemory,
    gemm_us: gemm, helpers_us: helpers, kernel_us: gemm + helpers, bound: tCompute >= tMemory ? "compute" : "memory",
  };
}

/** One call's time in `scenario` from its kernel time, and whether the host bounds it (scenarios.scenario_us). */
export function scenarioUs(kernelUs, scenario, graphUs, hostUs) {
  if (scenario === "kernel") return [kernelUs, false];
  if (scenario === "cached") return [kernelUs + graphUs, false];
  checkScenario(scenario);
  return [Math.max(kernelUs, hostUs), hostUs > kernelUs];
}

function familyFor(backend, algorithm, d) {
  if (backend === "CUTLASS") return "cutlass";
  if (algorithm !== "default") return "cusparselt_searched";
  return d === "bf16" ? "cusparselt_bf16" : "cusparselt";
}

function checkOptions(algorithm, l2, backend) {
  if (!ALGORITHMS.includes(algorithm)) {
    throw new InputError("algorithm", `algorithm must be one of ('default', 'searched') ('default': cuSPARSELt algorithm 0, what PyTorch passes unless told otherwise; 'searched': the fastest algorithm a search finds), got ${pyStr(algorithm)}`);
  }
  if (algorithm === "searched" && backend === "CUTLASS") {
    throw new InputError("algorithm", "algorithm='searched' picks a cuSPARSELt algorithm; the CUTLASS backend has none to search, use algorithm='default'");
  }
  if (!L2_STATES.includes(l2)) {
    throw new InputError("l2", `l2 must be one of ('flushed', 'clean') ('flushed': after an L2 flush that writes, as twofour bench measures; 'clean': kernels back to back, as in a decode step), got ${pyStr(l2)}`);
  }
}

/**
 * Predicted dense and 2:4 time (microseconds) of one GEMM: twofour.roofline.predict.
 * `params`: a parameter set (see kernelParams()); null = the fitted set of the GPU and backend.
 * `backend`: "cuSPARSELt" or "CUTLASS" in any case; null = the GPU's preferred one.
 * @example predict(1, 4096, 4096, "fp16", "H100", null, null, { scenario: "eager" }).bound_sparse === "host"
 */
export function predict(M, N, K, d = "fp16", gpu = "H100", backend = null, params = null,
  { scenario = DEFAULT_SCENARIO, algorithm = "default", l2 = "clean" } = {}) {
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
  peakTflops(spec, d);
  peakTflops(spec, d, true);
  checkScenario(scenario);
  checkOptions(algorithm, l2, backend);
  const P = params === null || params === undefined ? defaultParams(spec.name, backend) : kernelParams(params);
  const mult = P.pad_to || padMultiple(backend, d);
  const fam = familyFor(backend, algorithm, d);
  const kd = kernelTimeOf(M, N, K, d, spec, "cublas", P.cublas, P, mult, l2);
  const ks = kernelTimeOf(M, N, K, d, spec, fam, P[fam], P, mult, l2);
  const hostSparse = fam === "cutlass" ? P.host_dense_us : P.host_sparse_us;
  const [denseUs, hostD] = scenarioUs(kd.kernel_us, scenario, P.graph_dense_us, P.host_dense_us);
  let [sparseUs, hostS] = scenarioUs(ks.kernel_us, scenario, P.graph_sparse_us, hostSparse);
  const cap = kd.bound === "compute" ? 2.0 : 1 / DTYPES[d].packed_ratio;
  const guard = denseUs / sparseUs > cap;
  if (guard) sparseUs = denseUs / cap;
  return {
    M, N, K, dtype: d, gpu: spec.name, backend, algorithm, scenario, l2, M_padded: Math.ceil(M / mult) * mult,
    dense: kd, sparse: ks, dense_us: denseUs, sparse_us: sparseUs,
    bound_dense: hostD ? "host" : kd.bound, bound_sparse: hostS ? "host" : ks.bound,
    ceiling_guard: guard, speedup: denseUs / sparseUs,
  };
}

/** The two ceilings of any 2:4 GEMM (twofour.roofline.ceilings): compute 2x, memory 1 / packed ratio. */
export function ceilings(d) {
  // own properties only: `"__proto__" in DTYPES` is true
  if (typeof d !== "string" || !Object.hasOwn(DTYPES, d)) throw new InputError("dtype", `dtype must be one of ${Object.keys(DTYPES).join(", ")}, got '${d}'`);
  return { compute: 2.0, memory: 1 / DTYPES[d].packed_ratio };
}

// ---------------------------------------------------------------------------------------------
// What a prediction rests on: the fit line shown under every prediction

const REGIMES = [["M<=16", "M ≤ 16"], ["16<M<=256", "16 < M ≤ 256"], ["M>256", "M > 256"]];

/** The held-out error regime of twofour.roofline.calibration for a GEMM with M rows. */
export function regimeOf(M) {
  if (!(typeof M === "number" && Number.isFinite(M) && M > 0)) {
    throw new InputError("M", `M must be a positive number of rows, got ${M}`);  // NaN fell through to "M>256"
  }
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
 * fitted to, and the median held-out error of the predicted speedup per M regime (on the held-out
 * model's shapes, kernel time and graph replay; on published points, each source left out), all
 * read from FIT. `M` (optional) picks the regime to name first.
 */
export function fitFacts(gpu, backend = null, M = null) {
  const spec = getGpu(gpu);
  const b = backend === null || backend === undefined ? spec.backends[0] : canonicalBackend(spec, backend) ?? backend;
  const key = fitKey(spec.name, b);
  const held = FIT.errors.held_out;
  const published = FIT.errors.published_leave_one_source_out;
  const regime = M === null ? null : regimeOf(M);
  const rows = (table) => REGIMES.map(([r, text]) => ({ regime: r, text, row: regimeRow(table, r) })).filter((x) => x.row);
  return {
    gpu: spec.name, backend: b, key,
    set: key === null
      ? `no usable measurement on the ${spec.name}, so the base set, fitted to ${FIT.base.source}`
      : FIT.per_gpu[key].note,
    n_points: FIT.provenance.n_points,
    n_sources: FIT.provenance.sources.length,
    date: FIT.provenance.date,
    base_source: FIT.base.source,
    held_out_label: held.label,
    regime,
    kernel: rows(held.by_mode.kernel),
    graph: rows(held.by_mode.graph),
    published: rows(published.by_regime),
    published_sources: published.n_sources,
  };
}

/** The fit line as text: which parameters, their held-out error (at this M's regime if given), what they were fitted to. */
export function fitLine(gpu, backend = null, M = null) {
  const f = fitFacts(gpu, backend, M);
  const theirs = "published measurements (each source left out)";
  const parts = [`Fitted model, ${f.gpu} with ${f.backend}: ${f.set}.`];
  const at = (list, regime) => list.find((x) => x.regime === regime);
  if (f.regime !== null) {
    const txt = REGIMES.find(([r]) => r === f.regime)[1];
    const k = at(f.kernel, f.regime), g = at(f.graph, f.regime), pub = at(f.published, f.regime);
    const mine = [k ? `${pct(k.row.median)} on ${k.row.n} kernel times` : null, g ? `${pct(g.row.median)} on ${g.row.n} graph replays` : null]
      .filter(Boolean);
    parts.push(`Median held-out error of the predicted speedup at this M (${txt}): `
      + (mine.length ? `${mine.join(", ")} of ${f.held_out_label}` : `no held-out point of ${f.held_out_label}`)
      + (pub ? `; ${pct(pub.row.median)} on ${pub.row.n} ${theirs}.` : "; no usable published measurement at this M."));
  } else {
    const list = (rows) => rows.map((x) => `${pct(x.row.median)} at ${x.text} (n = ${x.row.n})`).join(", ");
    const missing = REGIMES.filter(([r]) => !f.published.some((x) => x.regime === r)).map(([, text]) => text);
    parts.push(`Median held-out error of the predicted speedup on ${f.held_out_label}: kernel time ${list(f.kernel)}; `
      + `graph replay ${list(f.graph)}; on ${theirs}: ${list(f.published) || "none"}`
      + `${missing.length ? `, none usable at ${missing.join(" or ")}` : ""}.`);
  }
  parts.push(`Fitted to ${f.n_points} measurements from ${f.n_sources} sources (${f.date}).`);
  return parts.join(" ");
}
