// Mirror of twofour.hardware's GPU table: the numbers the calculators need, nothing else.
//
// Peaks in TFLOP/s (TOPS for int8) at boost clock, bandwidth in GB/s. Every value, its
// source and its status live in src/twofour/hardware.py; this copy is checked against it
// value for value by tests/site/test_calculators.py, so the two cannot drift apart.
// `unconfirmed` lists the fields whose source is not an NVIDIA document: the page labels them.

import { InputError } from "./errors.js";

export const GPUS = {
  T4: {
    name: "T4", arch: "Turing", capability: [7, 5], sms: 40, mem_bw_gbs: 320.0, backends: [],
    dense_tflops: { fp32: 8.1, fp16: 65.0, int8: 130.0 },
    sparse_tflops: {},
    unconfirmed: ["sms"],
  },
  A10G: {
    name: "A10G", arch: "Ampere", capability: [8, 6], sms: 80, mem_bw_gbs: 600.0, backends: ["cuSPARSELt", "CUTLASS"],
    dense_tflops: { fp32: 31.2, tf32: 35.0, fp16: 70.0, bf16: 70.0, int8: 140.0 },
    sparse_tflops: { tf32: 70.0, fp16: 140.0, bf16: 140.0, int8: 280.0 },
    unconfirmed: ["dense.fp32", "dense.tf32", "dense.fp16", "dense.bf16", "dense.int8",
      "sparse.tf32", "sparse.fp16", "sparse.bf16", "sparse.int8", "sms", "capability"],
  },
  L4: {
    name: "L4", arch: "Ada Lovelace", capability: [8, 9], sms: 58, mem_bw_gbs: 300.0, backends: ["cuSPARSELt", "CUTLASS"],
    dense_tflops: { fp32: 30.3, tf32: 60.0, fp16: 121.0, bf16: 121.0, fp8: 242.5, int8: 242.5 },
    sparse_tflops: { tf32: 120.0, fp16: 242.0, bf16: 242.0, fp8: 485.0, int8: 485.0 },
    unconfirmed: ["sms"],
  },
  A100: {
    name: "A100", arch: "Ampere", capability: [8, 0], sms: 108, mem_bw_gbs: 2039.0, backends: ["cuSPARSELt", "CUTLASS"],
    dense_tflops: { fp32: 19.5, tf32: 156.0, fp16: 312.0, bf16: 312.0, int8: 624.0 },
    sparse_tflops: { tf32: 312.0, fp16: 624.0, bf16: 624.0, int8: 1248.0 },
    unconfirmed: [],
  },
  H100: {
    name: "H100", arch: "Hopper", capability: [9, 0], sms: 132, mem_bw_gbs: 3350.0, backends: ["cuSPARSELt"],
    dense_tflops: { fp32: 67.0, tf32: 494.5, fp16: 989.5, bf16: 989.5, fp8: 1979.0, int8: 1979.0 },
    sparse_tflops: { tf32: 989.0, fp16: 1979.0, bf16: 1979.0, fp8: 3958.0, int8: 3958.0 },
    unconfirmed: [],
  },
  H200: {
    name: "H200", arch: "Hopper", capability: [9, 0], sms: 132, mem_bw_gbs: 4800.0, backends: ["cuSPARSELt"],
    dense_tflops: { fp32: 67.0, tf32: 494.5, fp16: 989.5, bf16: 989.5, fp8: 1979.0, int8: 1979.0 },
    sparse_tflops: { tf32: 989.0, fp16: 1979.0, bf16: 1979.0, fp8: 3958.0, int8: 3958.0 },
    unconfirmed: ["sparse.tf32", "sparse.int8", "dense.tf32", "dense.int8", "dense.fp32"],
  },
  B200: {
    name: "B200", arch: "Blackwell", capability: [10, 0], sms: 148, mem_bw_gbs: 8000.0, backends: ["cuSPARSELt"],
    dense_tflops: { fp32: 80.0, tf32: 1100.0, fp16: 2250.0, bf16: 2250.0, fp8: 4500.0, int8: 4500.0 },
    sparse_tflops: { tf32: 2200.0, fp16: 4500.0, bf16: 4500.0, fp8: 9000.0, int8: 9000.0 },
    unconfirmed: ["sms"],
  },
};

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
