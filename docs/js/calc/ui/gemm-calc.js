// One GEMM, dense vs 2:4, predicted from the kernel each side runs (../roofline.js, a mirror of
// twofour.roofline.predict): y[M, N] = x[M, K] @ W[N, K]^T on a chosen GPU, dtype, 2:4 backend,
// cuSPARSELt algorithm and scenario (how the call is run), with the fitted parameters of that GPU
// and backend. It shows each side's tile, split-K and the CTAs it launches against the GPU's SMs.
// Placeholder: <div data-calc="gemm" data-m="16" data-n="4096" data-k="4096" data-dtype="fp16"
//   data-gpu="H100" data-backend="cuSPARSELt" data-algorithm="default" data-scenario="cached"></div>
//   (every data-* optional)

import { DTYPES } from "../data.js";
import { InputError } from "../errors.js";
import { fixed, integerText, speedupText } from "../format.js";
import { GPUS, SPARSE_GPUS } from "../hardware.js";
import { ALGORITHMS, DEFAULT_SCENARIO, SCENARIOS, SCENARIO_TEXT, fitLine, predict } from "../roofline.js";
import { Messages, el, firstNonFinite, headline, nextId, numberField, outOfRange, parseField, radioGroup, selectField, versusDense } from "./form.js";

export const FIELDS = {
  M: { label: "M (tokens)", integer: true, min: 1, max: 10_000_000, example: "16", why: "Larger is not a real batch of tokens." },
  N: { label: "N (out_features)", integer: true, min: 1, max: 10_000_000, example: "4096", why: "Larger is not a real weight matrix." },
  K: { label: "K (in_features)", integer: true, min: 1, max: 10_000_000, example: "4096", why: "Larger is not a real weight matrix." },
};

/** Microseconds with 2 decimals (the rounding rule of format.js). */
export function microsecondsText(us) {
  return `${fixed(us, 2)} µs`;
}

/** Options of the algorithm choice: [value, label]. */
export const ALGORITHM_OPTIONS = [
  ["default", "default (algorithm 0, what PyTorch passes)"],
  ["searched", "searched (the fastest of a cuSPARSELt search)"],
];

/** One side's kernel in words: library, tile, split-K, CTAs and the SMs they keep busy. */
export function kernelText(k, sms) {
  const lib = { cublas: "cuBLAS", cusparselt: "cuSPARSELt alg 0", cusparselt_bf16: "cuSPARSELt alg 0", cusparselt_searched: "cuSPARSELt searched",
    cutlass: "CUTLASS" }[k.family];
  return `${lib} tile ${k.tile_n}×${k.tile_m}, split-K ${k.split}, ${integerText(k.ctas)} CTAs on ${sms} SMs (${integerText(k.busy_sms)} busy, ${k.waves} wave${k.waves > 1 ? "s" : ""})`;
}

/** Options of the scenario choice: [value, label, one sentence]. Shared with the request calculator. */
export const SCENARIO_OPTIONS = SCENARIOS.map((s) => [s, SCENARIO_TEXT[s].label, SCENARIO_TEXT[s].help]);

/** The backend options of a GPU: its PyTorch 2:4 backends, the preferred one first. */
export function backendOptions(gpu) {
  return GPUS[gpu].backends.map((b, i) => [b, i === 0 ? `${b} (PyTorch's default here)` : b]);
}

/** Refill a backend <select> for `gpu` if its options are another GPU's, keeping the chosen backend where it can. */
export function refreshBackends(select, gpu) {
  const keep = select.value;
  const options = backendOptions(gpu);
  if ([...select.options].map((o) => o.value).join() === options.map(([v]) => v).join()) return;
  select.replaceChildren(...options.map(([v, text]) => el("option", { value: v, text })));
  select.value = options.some(([v]) => v === keep) ? keep : options[0][0];
}

/** The prediction for one state {M, N, K, dtype, gpu, backend, algorithm, scenario}; pure, no DOM. */
export function compute(state) {
  // CUTLASS has no algorithm to search: the choice applies to cuSPARSELt only.
  const algorithm = state.backend === "CUTLASS" ? "default" : state.algorithm ?? "default";
  return predict(state.M, state.N, state.K, state.dtype, state.gpu, state.backend, null, { scenario: state.scenario, algorithm });
}

export function mount(root) {
  const id = nextId("gemm");
  const d = root.dataset;
  const gpu0 = d.gpu && GPUS[d.gpu]?.backends.length ? d.gpu : "H100";
  const fields = {
    M: numberField("M", FIELDS.M, d.m ?? "16", id),
    N: numberField("N", FIELDS.N, d.n ?? "4096", id),
    K: numberField("K", FIELDS.K, d.k ?? "4096", id),
    gpu: selectField("gpu", "GPU", SPARSE_GPUS.map((g) => [g, `${g} (${GPUS[g].arch})`]), gpu0, id),
    dtype: selectField("dtype", "dtype", Object.keys(DTYPES).map((x) => [x, x]), d.dtype ?? "fp16", id),
    backend: selectField("backend", "2:4 backend", backendOptions(gpu0), d.backend ?? GPUS[gpu0].backends[0], id),
    algorithm: selectField("algorithm", "cuSPARSELt algorithm", ALGORITHM_OPTIONS,
      ALGORITHMS.includes(d.algorithm) ? d.algorithm : "default", id),
  };
  const scenario = radioGroup("scenario", "How the call is run", SCENARIO_OPTIONS,
    SCENARIOS.includes(d.scenario) ? d.scenario : DEFAULT_SCENARIO, id);
  fields.scenario = scenario;
  const out = {};
  for (const k of ["dense", "sparse", "speedup", "bounds", "padding", "kernel_dense", "kernel_sparse", "fit"]) out[k] = el("output", { "data-out": k });
  const stale = el("p", { class: "calc-stale", "data-out": "stale", "aria-live": "polite" });
  const general = el("p", { class: "calc-msg" });
  const form = el("form", { class: "calc-form", "aria-label": "GEMM shape, GPU, dtype, backend, algorithm and scenario" }, [
    el("div", { class: "calc-grid" }, ["M", "N", "K", "gpu", "dtype", "backend", "algorithm"].map((n) => fields[n].wrap)),
    scenario.wrap,
  ]);
  const results = el("div", { class: "calc-results", "aria-live": "polite" }, [
    el("p", {}, ["dense: ", out.dense, "; 2:4: ", out.sparse]),
    el("p", {}, [el("strong", { text: "predicted 2:4 speedup: " }), out.speedup]),
    el("p", {}, ["bound by: ", out.bounds, "; ", out.padding]),
    el("p", {}, ["dense kernel: ", out.kernel_dense]),
    el("p", {}, ["2:4 kernel: ", out.kernel_sparse]),
    el("p", { class: "calc-fit" }, [out.fit]),
  ]);
  const head = headline("predicted 2:4 speedup");
  root.replaceChildren(el("div", { class: "calc calc--small", role: "group", "aria-label": "GEMM speedup calculator" },
    [el("p", { class: "calc-title", text: "One GEMM, dense vs 2:4 (predicted from the kernels' tiles)" }), el("div", { class: "calc-io" }, [head.wrap, form]),
      stale, general, results]));
  form.addEventListener("submit", (e) => e.preventDefault());
  const messages = new Messages(fields, general);

  function update() {
    messages.clearAll();
    refreshBackends(fields.backend.input, fields.gpu.input.value);
    fields.algorithm.input.disabled = fields.backend.input.value === "CUTLASS";
    const v = { dtype: fields.dtype.input.value, gpu: fields.gpu.input.value, backend: fields.backend.input.value,
      algorithm: fields.algorithm.input.value, scenario: scenario.value() };
    const errors = [];
    for (const name of ["M", "N", "K"]) {
      try {
        v[name] = parseField(name, fields[name].input.value, FIELDS[name]);
      } catch (err) {
        if (!(err instanceof InputError)) throw err;
        errors.push(err);
      }
    }
    let p = null;
    if (!errors.length) {
      try {
        p = compute(v);
        // Integers up to 1e7 cannot overflow this model; kept so that no change can ever show NaN.
        if (firstNonFinite(p) !== null) throw outOfRange("M", FIELDS.M, fields.M.input.value);
      } catch (err) {
        if (!(err instanceof InputError)) throw err;
        errors.push(err);
      }
    }
    if (errors.length) {
      for (const e of errors) messages.show(e.field, e.message);
      stale.textContent = root.dataset.calcValid ? "Showing the last valid result until the input is fixed." : "";
      head.stale(Boolean(root.dataset.calcValid));
      return false;
    }
    stale.textContent = "";
    head.stale(false);
    out.dense.textContent = microsecondsText(p.dense_us);
    out.sparse.textContent = microsecondsText(p.sparse_us);
    out.speedup.textContent = speedupText(p.speedup);
    out.bounds.textContent = `dense ${p.bound_dense}, 2:4 ${p.bound_sparse}`;
    out.padding.textContent = p.M_padded === p.M ? "no padding" : `2:4 path pads M to ${integerText(p.M_padded)}`;
    out.kernel_dense.textContent = kernelText(p.dense, GPUS[p.gpu].sms);
    out.kernel_sparse.textContent = kernelText(p.sparse, GPUS[p.gpu].sms) + (p.ceiling_guard ? "; held at the ceiling" : "");
    out.fit.textContent = fitLine(p.gpu, p.backend, p.M);
    head.show(out.speedup.textContent, versusDense(out.speedup.textContent),
      `dense ${out.dense.textContent}, 2:4 ${out.sparse.textContent} · ${SCENARIO_TEXT[v.scenario].label}`);
    root.dataset.calcValid = "true";
    return true;
  }

  form.addEventListener("input", update); // text fields, selects and radios all fire "input"
  root.calcUpdate = update;
  update();
}
