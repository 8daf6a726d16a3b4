// Mirror of twofour.roofline.predict: dense vs 2:4 time of one GEMM y = x @ W.T,
// x [M, K], W [N, K]. The model (see the Python module docstring for why each term exists):
//
//   flops     = 2 * M * N * K
//   wave_eff  = tiles / (ceil(tiles / sms) * sms),  tiles = ceil(M/tile_m) * ceil(N/tile_n)
//   t_compute = flops / (peak_tflops * 1e12 * compute_eff * wave_eff)
//   n_bytes   = weight_bytes + M * K * in_bytes + M * N * out_bytes
//   t_memory  = n_bytes / (mem_bw_gbs * 1e9 * memory_eff)
//   t         = max(t_compute, t_memory) + overhead_us * 1e-6
//
// The 2:4 side pads M to the backend's row multiple, uses the sparse peak and the packed
// weight bytes. Python computes flops and n_bytes as exact integers and converts once; BigInt
// does the same here, so the two agree to the last bit.

import { InputError } from "./errors.js";
import { getGpu, peakTflops } from "./hardware.js";
import { packedBytes } from "./packing.js";

// Assumptions, not measurements (twofour.roofline.Efficiency defaults).
export const DEFAULT_EFFICIENCY = Object.freeze({
  dense_compute: 0.75,
  sparse_compute: 0.55,
  dense_memory: 0.8,
  sparse_memory: 0.8,
  dense_overhead_us: 5.0,
  sparse_overhead_us: 15.0,
  tile_m: 128,
  tile_n: 128,
  pad_to: null,
});

// Dense-operand row multiple of PyTorch's 2:4 path (torch/sparse/semi_structured.py,
// _DTYPE_SHAPE_CONSTRAINTS; facts.md §3). Same table as twofour.roofline._PAD_MULTIPLE.
export const PAD_MULTIPLE = {
  "cuSPARSELt/fp16": 8, "cuSPARSELt/bf16": 8, "cuSPARSELt/int8": 16, "cuSPARSELt/fp8": 16, "cuSPARSELt/tf32": 4,
  "CUTLASS/fp16": 8, "CUTLASS/bf16": 8, "CUTLASS/int8": 16, "CUTLASS/tf32": 4,
};

const IN_BYTES = { fp16: 2, bf16: 2, fp8: 1, int8: 1, tf32: 4 };
// 8-bit GEMMs are assumed to write bf16, as scaled matmuls usually do.
const OUT_BYTES = { fp16: 2, bf16: 2, fp8: 2, int8: 2, tf32: 4 };
// The packing format twofour.packing counts for each GEMM dtype (tf32 runs as fp32 1:2).
const PACKING = { fp16: "fp16", bf16: "bf16", int8: "int8", fp8: "fp8", tf32: "fp32" };

export function padMultiple(backend, d) {
  const mult = PAD_MULTIPLE[`${backend}/${d}`];
  if (mult === undefined) {
    throw new InputError("dtype", `no 2:4 padding rule for backend '${backend}' with dtype '${d}' (CUTLASS has no fp8 path)`);
  }
  return mult;
}

export function waveEfficiency(M, N, sms, tileM = 128, tileN = 128) {
  const tiles = Math.ceil(M / tileM) * Math.ceil(N / tileN);
  const waves = Math.ceil(tiles / sms);
  return tiles / (waves * sms);
}

/** One GEMM's time in seconds, what bounds it, and its wave efficiency (gemm_time_s). */
export function gemmTimeS(M, N, K, o) {
  const flops = Number(2n * BigInt(M) * BigInt(N) * BigInt(K));
  const waveEff = waveEfficiency(M, N, o.sms, o.tile_m, o.tile_n);
  const tCompute = flops / (o.peak_tflops * 1e12 * o.compute_eff * waveEff);
  const nBytes = Number(
    BigInt(o.weight_bytes) + BigInt(M) * BigInt(K) * BigInt(o.in_bytes) + BigInt(M) * BigInt(N) * BigInt(o.out_bytes),
  );
  const tMemory = nBytes / (o.mem_bw_gbs * 1e9 * o.memory_eff);
  const bound = tCompute >= tMemory ? "compute" : "memory";
  return [Math.max(tCompute, tMemory) + o.overhead_us * 1e-6, bound, waveEff];
}

function requirePositiveInt(name, value) {
  if (!Number.isSafeInteger(value) || value <= 0) throw new InputError(name, `${name} must be a positive int, got ${value}`);
  return value;
}

/**
 * Predicted dense and 2:4 time (microseconds) of one GEMM: twofour.roofline.predict.
 * @example predict(1, 4096, 4096, "fp16", "H100").bound_dense === "memory"
 */
export function predict(M, N, K, d = "fp16", gpu = "H100", backend = null, params = DEFAULT_EFFICIENCY) {
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
  backend = backend ?? spec.backends[0];
  if (!spec.backends.includes(backend)) {
    throw new InputError("backend", `backend '${backend}' is not available on ${spec.name}; valid: ${spec.backends.join(", ")}`);
  }
  const peakDense = peakTflops(spec, d);
  const peakSparse = peakTflops(spec, d, true);
  const e = params;
  const mult = e.pad_to || padMultiple(backend, d);
  const Mpadded = Math.ceil(M / mult) * mult;
  const common = {
    mem_bw_gbs: spec.mem_bw_gbs, sms: spec.sms, in_bytes: IN_BYTES[d], out_bytes: OUT_BYTES[d],
    tile_m: e.tile_m, tile_n: e.tile_n,
  };
  const [tDense, boundDense, waveDense] = gemmTimeS(M, N, K, {
    ...common, peak_tflops: peakDense, weight_bytes: N * K * IN_BYTES[d],
    compute_eff: e.dense_compute, memory_eff: e.dense_memory, overhead_us: e.dense_overhead_us,
  });
  const [tSparse, boundSparse, waveSparse] = gemmTimeS(Mpadded, N, K, {
    ...common, peak_tflops: peakSparse, weight_bytes: packedBytes([N, K], PACKING[d]),
    compute_eff: e.sparse_compute, memory_eff: e.sparse_memory, overhead_us: e.sparse_overhead_us,
  });
  return {
    M, N, K, dtype: d, gpu: spec.name, backend, M_padded: Mpadded,
    dense_us: tDense * 1e6, sparse_us: tSparse * 1e6,
    bound_dense: boundDense, bound_sparse: boundSparse,
    wave_eff_dense: waveDense, wave_eff_sparse: waveSparse,
    speedup: (tDense * 1e6) / (tSparse * 1e6),
  };
}
