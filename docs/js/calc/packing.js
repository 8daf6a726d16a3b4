// Mirror of twofour.packing's byte accounting (dense_bytes, packed_bytes, packed_ratio).
//
// Byte counts are exact integers in Python; here they are BigInt, so a shape of any size
// gives the same integer as Python (no rounding above 2**53).

import { InputError } from "./errors.js";
import { PACKED_FORMS } from "./data.js";

// The formats sparse tensor cores take, as chapter 2 lists them: element bits, the n:m
// pattern, and metadata bits per kept value. One table, twofour.vocabulary.PACKED_FORMS
// (the GEMM dtypes' forms and FP4's), delivered in data.js.
export const FORMATS = PACKED_FORMS;

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
  return (numel(shape) * BigInt(f.value_bits)) / 8n;
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
  const totalBits = kept * BigInt(f.value_bits + f.meta_bits);
  return (totalBits + 7n) / 8n; // ceil(bits / 8)
}

/** Packed / dense bytes: n/m * (bits + meta_bits) / bits, in Python's operation order. */
export function packedRatio(key) {
  const f = format(key);
  return (f.n / f.m) * (f.value_bits + f.meta_bits) / f.value_bits;
}
