// Mirror of twofour.funnel.funnel: from the data sheet's 2x to what the request gets, in five
// steps (not the answer's six stages), each a speedup that explains one loss. Every step has
// the short label of the Python FunnelStep, its number and its title ("step 3: 2:4 GEMM speedup").

import { InputError } from "./errors.js";

export const SCOPES = ["request", "prefill", "decode"];

// What each step's number is, said as a speedup (twofour.funnel._STEP_TITLES).
const STEP_TITLES = {
  datasheet: "data-sheet speedup",
  roofline_ceiling: "ceiling speedup (perfect kernels)",
  kernel: "2:4 GEMM speedup",
  eligible_fraction: "speedup after Amdahl (GPU work)",
};

/** FunnelStep.title: "step N: <what> speedup" (step 5 says per-token or end-to-end). */
function titled(steps) {
  return steps.map((s, i) => {
    let what = STEP_TITLES[s.key] ?? `${s.label} speedup`;
    if (s.key === "request") what = s.label === "per token" ? "per-token speedup" : "end-to-end speedup";
    return { ...s, step: i + 1, title: `step ${i + 1}: ${what}` };
  });
}

/** The five steps of one scope ("request", "prefill" or "decode") of an evaluate() result. */
export function funnel(est, scope = "request") {
  if (!SCOPES.includes(scope)) throw new InputError("scope", `scope must be one of ${SCOPES.join(", ")}, got ${JSON.stringify(scope)}`);
  const r = est.inputs;
  const phases = { request: [est.prefill, est.decode], prefill: [est.prefill], decode: [est.decode] }[scope];
  let ceiling, kernel, final;
  if (scope === "request") {
    ceiling = est.ceiling_speedup_request;
    kernel = est.gemm_speedup_request;
    final = est.total_dense_s / est.total_sparse_s;
  } else {
    ceiling = phases[0].ceiling_speedup;
    kernel = phases[0].gemm_speedup;
    final = scope === "prefill" ? est.ttft_dense_s / est.ttft_sparse_s : est.tpot_dense_s / est.tpot_sparse_s;
  }
  let workDense = 0.0, workSparse = 0.0;
  for (const ph of phases) {
    workDense += ph.dense_s - ph.overhead_s;
    workSparse += ph.sparse_s - ph.overhead_s;
  }
  const gpuWork = workSparse > 0.0 ? workDense / workSparse : 1.0;
  const phaseWord = { request: "the request's", prefill: "prefill", decode: "decode" }[scope];
  return titled([
    { key: "datasheet", label: "data sheet", speedup: r.sparse_flops / r.dense_flops,
      explains: "peak 2:4 FLOP/s over peak dense FLOP/s for this GPU and dtype" },
    { key: "roofline_ceiling", label: "roofline ceiling", speedup: ceiling,
      explains: `perfect kernels on ${phaseWord} GEMMs: compute-bound ones keep 2x, bytes-bound ones get only 1/packed ratio` },
    { key: "kernel", label: "2:4 GEMM", speedup: kernel,
      explains: "the GEMM speedup the kernels reach (predicted or measured): padding, efficiency, waves, per-call overhead" },
    { key: "eligible_fraction", label: "eligible fraction", speedup: gpuWork,
      explains: "Amdahl over the GPU work: attention, KV-cache reads, embeddings, LM head and per-layer ops stay as they are" },
    { key: "request", label: scope !== "decode" ? "end to end" : "per token", speedup: final,
      explains: "fixed per-step and per-request overheads included" + (scope === "request" ? " and prefill and decode mixed by their time" : "") },
  ]);
}
