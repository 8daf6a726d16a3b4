// Mirror of twofour.amdahl: Amdahl's law, operation for operation.
//
//   speedup(p, s) = 1 / ((1 - p) + p / s)
//
// Same argument checks as the Python (p a fraction in [0, 1], s a positive finite speedup),
// raising InputError that names the argument. The golden vectors written by
// scripts/golden.py are checked against this module in a browser (tests/site/test_calculators.py).

import { InputError, isFiniteNumber, pyRepr } from "./errors.js";

/** The smallest normal double (twofour.amdahl.MIN_SPEEDUP); Number.MIN_VALUE is the smallest denormal. */
export const MIN_SPEEDUP = 2.2250738585072014e-308;

function requireFraction(name, value) {
  if (typeof value !== "number") {
    throw new InputError(name, `${name} must be a number in [0, 1] (a fraction of time), got ${JSON.stringify(value)}`);
  }
  if (!isFiniteNumber(value) || !(value >= 0 && value <= 1)) {
    throw new InputError(name, `${name} must be a fraction of time in [0, 1], got ${pyRepr(value)}`);
  }
  return value;
}

export function requireSpeedup(name, value) {
  if (typeof value !== "number") {
    throw new InputError(name, `${name} must be a positive finite number (a speedup), got ${JSON.stringify(value)}`);
  }
  if (!isFiniteNumber(value) || value <= 0) {
    throw new InputError(
      name,
      `${name} must be a positive finite speedup (1 = no change, 2 = twice as fast, 0.5 = twice as slow), got ${pyRepr(value)}`,
    );
  }
  // A denormal (1e-320) makes p / s overflow: speedup(1, 1e-320) would be 0. Python refuses the same.
  if (value < MIN_SPEEDUP) {
    throw new InputError(
      name,
      `${name} must be at least 2.2250738585072014e-308 (the smallest normal double; a smaller speedup makes the arithmetic overflow), got ${pyRepr(value)}`,
    );
  }
  return value;
}

/**
 * Whole-task speedup when a fraction p of the time gets s times faster.
 * @example speedup(0.5, 2.0) === 1.3333333333333333
 */
export function speedup(p, s) {
  p = requireFraction("p", p);
  s = requireSpeedup("s", s);
  return 1.0 / ((1.0 - p) + p / s);
}

/** The Amdahl bound 1 / (1 - p) (Infinity at p = 1). */
export function maxSpeedup(p) {
  p = requireFraction("p", p);
  return p === 1.0 ? Infinity : 1.0 / (1.0 - p);
}

function requireParts(fractions, speedups) {
  if (!Array.isArray(fractions)) throw new InputError("fractions", "fractions must be a sequence of numbers");
  if (!Array.isArray(speedups)) throw new InputError("speedups", "speedups must be a sequence of numbers");
  if (fractions.length !== speedups.length) {
    throw new InputError(
      "fractions",
      `fractions and speedups must have the same length (one speedup per part), got ${fractions.length} and ${speedups.length}`,
    );
  }
  const fs = fractions.map((f, i) => requireFraction(`fractions[${i}]`, f));
  const ss = speedups.map((s, i) => requireSpeedup(`speedups[${i}]`, s));
  let total = 0.0;
  for (const f of fs) total += f;
  // A little slack for fractions that were themselves computed in floating point.
  if (total > 1.0 + 1e-9) {
    throw new InputError(
      "fractions",
      `fractions must add up to at most 1 (parts of one total time), got sum ${pyRepr(total)}; the remainder 1 - sum is the unchanged part`,
    );
  }
  return [fs, ss];
}

/** Amdahl over several parts; whatever the fractions leave over is unchanged. */
export function combinedSpeedup(fractions, speedups) {
  const [fs, ss] = requireParts(fractions, speedups);
  let covered = 0.0;
  for (const f of fs) covered += f;
  let newTime = Math.max(0.0, 1.0 - covered);
  for (let i = 0; i < fs.length; i++) newTime += fs[i] / ss[i];
  return 1.0 / newTime;
}

/** THE WRONG WAY, kept to show why it is wrong: a time-weighted arithmetic average of speedups. */
export function averagedSpeedupMistake(fractions, speedups) {
  const [fs, ss] = requireParts(fractions, speedups);
  let covered = 0.0;
  for (const f of fs) covered += f;
  let average = Math.max(0.0, 1.0 - covered);
  for (let i = 0; i < fs.length; i++) average += fs[i] * ss[i];
  return average;
}
