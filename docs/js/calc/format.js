// How every calculator writes a number: ONE rounding rule, used by the tests in Python too.
//
// Rule: round the exact binary value half away from zero to a fixed number of decimals
// (Number.prototype.toFixed; in Python Decimal(x).quantize(Decimal("0.001"), ROUND_HALF_UP)).
//   speedups     3 decimals and "x"            1.542x
//   headlines    2 decimals and "x"            1.54x   (as the verdict table and the prose round)
//   fractions    as percent, 2 decimals        93.73 %  (the double x * 100, then rounded)
//   times        ms below 1 s, else s; 3 decimals   31.245 ms, 1.322 s
//   byte counts  exact integers with thousands separators; MiB with 1 decimal
// A value that is not finite is never formatted: it is a bug upstream, so this throws.

function finite(x) {
  if (typeof x !== "number" || !Number.isFinite(x)) throw new Error(`refusing to display a non-finite value: ${x}`);
  return x;
}

export function fixed(x, digits) {
  return finite(x).toFixed(digits);
}

export function speedupText(x) {
  return `${fixed(x, 3)}x`;
}

export function headlineSpeedupText(x) {
  return `${fixed(x, 2)}x`;
}

export function percentText(fraction) {
  return `${fixed(finite(fraction) * 100, 2)} %`;
}

export function timeText(seconds) {
  finite(seconds);
  return seconds < 1 ? `${fixed(seconds * 1e3, 3)} ms` : `${fixed(seconds, 3)} s`;
}

/** An exact integer (Number or BigInt) with comma thousands separators: 117,440,512. */
export function integerText(n) {
  const s = (typeof n === "bigint" ? n : BigInt(finite(n))).toString();
  return s.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

export function mibText(bytes) {
  return `${fixed(Number(bytes) / 1048576, 1)} MiB`;
}
