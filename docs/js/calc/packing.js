// Mirror of twofour.packing's byte accounting (dense_bytes, packed_bytes, packed_ratio).
//
// Byte counts are exact integers in Python; here they are BigInt, so a shape of any size
// gives the same integer as Python (no rounding above 2**53).

import { InputError } from "./errors.js";
import { DTYPES } from "./fitted.js";

// The formats sparse tensor cores take, as chapter 2 lists them: element bits, the n:m
// pattern, and metadata bits per kept value (null = the default, ceil(log2 m)). The tensor-core
// dtypes come from the one dtype table (twofour._common.dtypes, delivered in fitted.js): fp32 runs as
// 1:2 with its metadata written as for two 16-bit halves (4 bits per kept value). FP4 on
// Blackwell is *paired* 4:8 (a 2-bit index per pair: 1 bit per kept value).
const fromTable = (label, f) => ({ label, bits: f.value_bits, n: f.n, m: f.m, metaBits: f.meta_bits });
export const FORMATS = {
  fp16: fromTable("float16", DTYPES.fp16),
  bf16: fromTable("bfloat16", DTYPES.bf16),
  int8: fromTable("int8", DTYPES.int8),
  fp8: fromTable("float8 (e4m3 / e5m2)", DTYPES.fp8),
  fp32: fromTable("float32 (runs as 1:2)", DTYPES.tf32),
  fp4_paired: { label: "fp4 e2m1, paired 4:8", bits: 4, n: 4, m: 8, metaBits: 1 },
  fp4_elementwise: { label: "fp4, element-wise 2:4", bits: 4, n: 2, m: 4, metaBits: null },
};

/** ceil(log2 m), at least 1: bits naming one position in a group of m. */
export function indexBits(m) {
  // as twofour.packing.index_bits: an integer group size of at least 2 (NaN answered NaN before)
  if (!Number.isSafeInteger(m) || m < 2) throw new InputError("m", `m must be an int of at least 2 (group size), got ${m}`);
  return Math.max(1, Math.ceil(Math.log2(m)));
}

function format(key) {
  // Own properties only: "__proto__" or "constructor" is not a format (it was NaN before).
  const f = typeof key === "string" && Object.hasOwn(FORMATS, key) ? FORMATS[key] : null;
  if (!f) throw new InputError("dtype", `dtype must be one of ${Object.keys(FORMATS).join(", ")}, got ${JSON.stringify(key)}`);
  return f;
}

function metaBitsOf(f) {
  return f.metaBits === null ? indexBits(f.m) : f.metaBits;
}

/** Checks a shape (array of positive safe integers) and returns its element count as a BigInt. */
function numel(shape) {
  if (!Array.isArray(shape) || shape.length === 0) {
    throw new InputError("shape", "shape must be a non-empty list of positive integers such as [4096, 14336]");
  }
  let count = 1n;
  shape.forEach((d, i) => {
    if (!Number.isSafeInteger(d) || d <= 0) {
      throw new InputError(`shape[${i}]`, `shape must be non-empty with positive integer sizes, got ${JSON.stringify(shape)}`);
    }
    count *= BigInt(d);
  });
  return count;
}

/** Dense bytes: numel * bits // 8 (BigInt). */
export function denseBytes(shape, key) {
  const f = format(key);
  return (numel(shape) * BigInt(f.bits)) / 8n;
}

/** Packed bytes: n/m of the values plus the metadata bits of each kept value, rounded up to bytes (BigInt). */
export function packedBytes(shape, key) {
  const f = format(key);
  const count = numel(shape);
  const last = shape[shape.length - 1];
  if (last % f.m !== 0) {
    throw new InputError(`shape[${shape.length - 1}]`, `shape's last dimension ${last} must be a multiple of m=${f.m}`);
  }
  const kept = (count / BigInt(f.m)) * BigInt(f.n);
  const totalBits = kept * BigInt(f.bits + metaBitsOf(f));
  return (totalBits + 7n) / 8n; // ceil(bits / 8)
}

/** Packed / dense bytes: n/m * (bits + meta_bits) / bits, in Python's operation order. */
export function packedRatio(key) {
  const f = format(key);
  return (f.n / f.m) * (f.bits + metaBitsOf(f)) / f.bits;
}
