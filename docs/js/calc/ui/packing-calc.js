// Packed bytes of one weight: shape [N, K] and a format -> dense bytes, packed bytes
// (kept values + metadata), their ratio and the memory-bound ceiling 1 / ratio.
// Placeholder: <div data-calc="packing" data-rows="4096" data-cols="14336" data-dtype="fp16"></div>

import { InputError } from "../errors.js";
import { integerText, mibText, percentText, speedupText } from "../format.js";
import { FORMATS, denseBytes, packedBytes, packedRatio } from "../packing.js";
import { Messages, el, headline, nextId, numberField, parseField, selectField } from "./form.js";

const MAX_DIM = 10_000_000; // 10M rows or columns: beyond any real weight matrix

export const FIELDS = {
  rows: { label: "rows N (out_features)", integer: true, min: 1, max: MAX_DIM, example: "4096",
    why: "Larger is not a real weight matrix." },
  cols: { label: "columns K (in_features)", integer: true, min: 1, max: MAX_DIM, example: "14336",
    why: "Larger is not a real weight matrix." },
};

export function compute(rows, cols, dtype) {
  const dense = denseBytes([rows, cols], dtype);
  const packed = packedBytes([rows, cols], dtype);
  const ratio = packedRatio(dtype);
  return { dense, packed, ratio, ceiling: 1 / ratio };
}

export function mount(root) {
  const id = nextId("packing");
  const fields = {
    rows: numberField("rows", FIELDS.rows, root.dataset.rows ?? "4096", id),
    cols: numberField("cols", FIELDS.cols, root.dataset.cols ?? "14336", id),
    dtype: selectField("dtype", "element type and pattern",
      Object.entries(FORMATS).map(([key, f]) => [key, `${f.label} (${f.n}:${f.m})`]), root.dataset.dtype ?? "fp16", id),
  };
  const out = {
    dense: el("output", { "data-out": "dense" }),
    packed: el("output", { "data-out": "packed" }),
    ratio: el("output", { "data-out": "ratio" }),
    ceiling: el("output", { "data-out": "ceiling" }),
  };
  const stale = el("p", { class: "calc-stale", "data-out": "stale", "aria-live": "polite" });
  const general = el("p", { class: "calc-msg" });
  const form = el("form", { class: "calc-form", "aria-label": "Packed bytes inputs" },
    [fields.rows.wrap, fields.cols.wrap, fields.dtype.wrap]);
  const results = el("div", { class: "calc-results", "aria-live": "polite" }, [
    el("p", {}, ["dense: ", out.dense]),
    el("p", {}, [el("strong", { text: "packed (kept values + metadata): " }), out.packed]),
    el("p", {}, ["packed / dense: ", out.ratio, "; memory-bound ceiling 1 / ratio: ", out.ceiling]),
  ]);
  const head = headline("packed / dense");
  root.replaceChildren(el("div", { class: "calc calc--small", role: "group", "aria-label": "Packed bytes calculator" },
    [el("p", { class: "calc-title", text: "Bytes of a weight, dense and packed" }), el("div", { class: "calc-io" }, [head.wrap, form]),
      stale, general, results]));
  form.addEventListener("submit", (e) => e.preventDefault());
  const messages = new Messages(fields, general);

  function update() {
    messages.clearAll();
    const values = {};
    const errors = [];
    for (const name of ["rows", "cols"]) {
      try {
        values[name] = parseField(name, fields[name].input.value, FIELDS[name]);
      } catch (err) {
        if (!(err instanceof InputError)) throw err;
        errors.push(err);
      }
    }
    let r = null;
    if (!errors.length) {
      try {
        r = compute(values.rows, values.cols, fields.dtype.input.value);
      } catch (err) {
        if (!(err instanceof InputError)) throw err;
        // The model names the shape index; on this form index 1 is the K field.
        errors.push(new InputError(err.field === "shape[1]" ? "cols" : err.field === "shape[0]" ? "rows" : err.field,
          err.field === "shape[1]" ? `K = ${values.cols} must be a multiple of ${FORMATS[fields.dtype.input.value].m}: groups run along K.` : err.message));
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
    out.dense.textContent = `${integerText(r.dense)} bytes (${mibText(r.dense)})`;
    out.packed.textContent = `${integerText(r.packed)} bytes (${mibText(r.packed)})`;
    out.ratio.textContent = percentText(r.ratio);
    out.ceiling.textContent = speedupText(r.ceiling);
    head.show(out.ratio.textContent, "", `${mibText(r.packed)} instead of ${mibText(r.dense)}; memory-bound ceiling ${out.ceiling.textContent}`);
    root.dataset.calcValid = "true";
    return true;
  }

  form.addEventListener("input", update);
  root.calcUpdate = update;
  update();
}
