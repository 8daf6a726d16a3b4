// One GEMM, dense vs 2:4, predicted by the roofline (../roofline.js, a mirror of
// twofour.roofline.predict): y[M, N] = x[M, K] @ W[N, K]^T on a chosen GPU and dtype.
// Placeholder: <div data-calc="gemm" data-m="16" data-n="4096" data-k="4096" data-dtype="fp16" data-gpu="H100"></div>

import { InputError } from "../errors.js";
import { fixed, integerText, percentText, speedupText } from "../format.js";
import { GPUS, SPARSE_GPUS } from "../hardware.js";
import { predict } from "../roofline.js";
import { Messages, el, nextId, numberField, parseField, selectField } from "./form.js";

export const FIELDS = {
  M: { label: "M (tokens)", integer: true, min: 1, max: 10_000_000, example: "16", why: "Larger is not a real batch of tokens." },
  N: { label: "N (out_features)", integer: true, min: 1, max: 10_000_000, example: "4096", why: "Larger is not a real weight matrix." },
  K: { label: "K (in_features)", integer: true, min: 1, max: 10_000_000, example: "4096", why: "Larger is not a real weight matrix." },
};

/** Microseconds with 2 decimals (the rounding rule of format.js). */
export function microsecondsText(us) {
  return `${fixed(us, 2)} µs`;
}

export function mount(root) {
  const id = nextId("gemm");
  const d = root.dataset;
  const fields = {
    M: numberField("M", FIELDS.M, d.m ?? "16", id),
    N: numberField("N", FIELDS.N, d.n ?? "4096", id),
    K: numberField("K", FIELDS.K, d.k ?? "4096", id),
    gpu: selectField("gpu", "GPU", SPARSE_GPUS.map((g) => [g, `${g} (${GPUS[g].arch})`]), d.gpu ?? "H100", id),
    dtype: selectField("dtype", "dtype", ["fp16", "bf16", "fp8", "int8", "tf32"].map((x) => [x, x]), d.dtype ?? "fp16", id),
  };
  const out = {};
  for (const k of ["dense", "sparse", "speedup", "bounds", "padding", "waves"]) out[k] = el("output", { "data-out": k });
  const stale = el("p", { class: "calc-stale", "data-out": "stale", "aria-live": "polite" });
  const general = el("p", { class: "calc-msg" });
  const form = el("form", { class: "calc-form calc-grid", "aria-label": "GEMM shape, GPU and dtype" },
    Object.values(fields).map((f) => f.wrap));
  const results = el("div", { class: "calc-results", "aria-live": "polite" }, [
    el("p", {}, ["dense: ", out.dense, "; 2:4: ", out.sparse]),
    el("p", {}, [el("strong", { text: "predicted 2:4 speedup: " }), out.speedup]),
    el("p", {}, ["bound by: ", out.bounds, "; ", out.padding, "; ", out.waves]),
    el("p", { class: "calc-aside", text: "Efficiencies and per-call costs are the model's assumptions, not measurements." }),
  ]);
  root.replaceChildren(el("div", { class: "calc calc--small", role: "group", "aria-label": "GEMM speedup calculator" },
    [el("p", { class: "calc-title", text: "One GEMM, dense vs 2:4 (roofline prediction)" }), form, stale, general, results]));
  form.addEventListener("submit", (e) => e.preventDefault());
  const messages = new Messages(fields, general);

  function update() {
    messages.clearAll();
    const v = {};
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
        p = predict(v.M, v.N, v.K, fields.dtype.input.value, fields.gpu.input.value);
      } catch (err) {
        if (!(err instanceof InputError)) throw err;
        errors.push(err);
      }
    }
    if (errors.length) {
      for (const e of errors) messages.show(e.field, e.message);
      stale.textContent = root.dataset.calcValid ? "Showing the last valid result until the input is fixed." : "";
      return false;
    }
    stale.textContent = "";
    out.dense.textContent = microsecondsText(p.dense_us);
    out.sparse.textContent = microsecondsText(p.sparse_us);
    out.speedup.textContent = speedupText(p.speedup);
    out.bounds.textContent = `dense ${p.bound_dense}, 2:4 ${p.bound_sparse}`;
    out.padding.textContent = p.M_padded === p.M ? "no padding" : `2:4 path pads M to ${integerText(p.M_padded)}`;
    out.waves.textContent = `SMs busy: ${percentText(p.wave_eff_dense)}`;
    root.dataset.calcValid = "true";
    return true;
  }

  form.addEventListener("input", update);
  root.calcUpdate = update;
  update();
}
