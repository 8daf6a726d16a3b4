// One error type for every calculator: it names the input it is about, so a form can show
// the message next to that field (the Python side raises ValueError/TypeError with the
// argument's name in the message; here the name is also machine-readable).

export class InputError extends Error {
  /**
   * @param {string} field  the input the problem is about (a form field name, e.g. "p", "batch")
   * @param {string} message  what is wrong and what would be valid
   */
  constructor(field, message) {
    super(message);
    this.name = "InputError";
    this.field = field;
  }
}

/** A number is usable when it is a finite JS number (not NaN, not +-Infinity). */
export function isFiniteNumber(value) {
  return typeof value === "number" && Number.isFinite(value);
}

/** Python's repr of a float, closely enough for error messages ("0.5", "nan", "inf"). */
export function pyRepr(value) {
  if (typeof value !== "number") return JSON.stringify(value);
  if (Number.isNaN(value)) return "nan";
  if (value === Infinity) return "inf";
  if (value === -Infinity) return "-inf";
  return Number.isInteger(value) ? value.toFixed(1) : String(value);
}
