// The GPU table of twofour.hardware, as the calculators use it: the numbers come from the one
// generated data module (./data.js, written by scripts/js_data.py from src/twofour/hardware.py,
// where every value has its source and status); this module adds the lookups.
// `unconfirmed` lists the fields whose source is not an NVIDIA document: the page labels them.

import { GPUS } from "./data.js";
import { InputError } from "./errors.js";

export { GPUS };

/** GPUs with sparse tensor cores (compute capability >= 8.0): the ones 2:4 can help. */
export const SPARSE_GPUS = Object.keys(GPUS).filter((name) => GPUS[name].backends.length > 0);

/** Look a GPU up by name (case-insensitive). */
export function getGpu(name) {
  const key = String(name).trim().toLowerCase();
  for (const spec of Object.values(GPUS)) {
    if (spec.name.toLowerCase() === key) return spec;
  }
  throw new InputError("gpu", `gpu must be one of ${Object.keys(GPUS).sort().join(", ")}, got ${JSON.stringify(name)}`);
}

/** Peak TFLOP/s of `spec` for dtype `d`; InputError (field "dtype") where the GPU has no such mode. */
export function peakTflops(spec, d, sparse = false) {
  const table = sparse ? spec.sparse_tflops : spec.dense_tflops;
  const value = typeof d === "string" && Object.hasOwn(table, d) ? table[d] : null;  // never an inherited "constructor"
  if (typeof value !== "number") {
    const kind = sparse ? "2:4 sparse" : "dense";
    const have = Object.keys(table);
    throw new InputError(
      "dtype",
      `${spec.name} has no ${kind} tensor-core peak for dtype '${d}'; it has ${kind} peaks for ${have.length ? have.join(", ") : "no dtype"}`,
    );
  }
  return value;
}

/** True if the value of `key` ("sms", "dense.fp16", ...) is not confirmed by an NVIDIA document. */
export function isUnconfirmed(spec, key) {
  return spec.unconfirmed.includes(key);
}
