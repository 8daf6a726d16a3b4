// Form plumbing shared by the calculators: labelled fields with an inline message slot,
// strict number parsing, and the contract every calculator follows:
//
//   * every input event recomputes synchronously (no debounce: an update takes well under a frame);
//   * bad input puts a message next to its field (aria-invalid, aria-describedby) and the
//     last valid result stays on screen, marked as such; NaN or Infinity is never shown;
//   * a value that would make a result non-finite (a denormal such as 1e-320, an overflow) is
//     an input problem like any other: "out of range", next to the field that caused it, whether
//     it was typed or came in a shared link. The calculator always mounts.

import { InputError } from "../errors.js";

let uid = 0;
/** A page-unique id prefix, so two calculators on one page never share ids. */
export function nextId(prefix) {
  uid += 1;
  return `${prefix}-${uid}`;
}

/** Create an element: el("div", {class: "x", text: "hi"}, [children]). */
export function el(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "text") node.textContent = value;
    else if (key === "class") node.className = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

const MIN_NORMAL = 2.2250738585072014e-308; // Number.MIN_VALUE is the smallest denormal, not this

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/**
 * Parse what a reader typed. spec: {label, integer, min, minOpen, max, hint}.
 * Returns the number or throws InputError(name) with a message that says what is valid.
 */
export function parseField(name, text, spec) {
  const raw = String(text).trim();
  const what = spec.label;
  if (raw === "") throw new InputError(name, `Enter a value for ${what}${spec.hint ? ` (${spec.hint})` : ""}.`);
  if (!NUMBER.test(raw)) {
    throw new InputError(name, `"${raw}" is not a number. Type digits with an optional decimal point, e.g. ${spec.example}.`);
  }
  const value = Number(raw);
  if (!Number.isFinite(value)) throw new InputError(name, `"${raw}" is out of range: too large to be a ${what}.`);
  // A denormal (below the smallest normal double) or a number that silently rounds to 0 keeps
  // no precision, and dividing by it overflows: refuse it here rather than show a wrong result.
  const mantissa = raw.split(/[eE]/)[0];
  if ((value === 0 && /[1-9]/.test(mantissa)) || (value !== 0 && Math.abs(value) < MIN_NORMAL)) {
    const instead = spec.min <= 0 && !spec.minOpen ? "0 or a larger value" : "a larger value";
    throw new InputError(name, `"${raw}" is out of range: too close to 0 to compute with (the smallest usable magnitude is about 2.2e-308). Use ${instead}.`);
  }
  const range = rangeText(spec);
  if (spec.integer && !Number.isInteger(value)) throw new InputError(name, `${cap(what)} must be a whole number ${range}.`);
  const tooLow = spec.minOpen ? value <= spec.min : value < spec.min;
  if (tooLow || value > spec.max) {
    const why = value < 0 && spec.min >= 0 ? " It cannot be negative." : "";
    throw new InputError(name, `${cap(what)} must be ${range}; got ${raw}.${why}${spec.why ? " " + spec.why : ""}`);
  }
  return value;
}

function cap(s) {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

function num(x) {
  return Number.isInteger(x) && Math.abs(x) >= 10000 ? x.toLocaleString("en-US") : String(x);
}

function rangeText(spec) {
  if (spec.minOpen) return `above ${num(spec.min)} and at most ${num(spec.max)}`;
  return `from ${num(spec.min)} to ${num(spec.max)}`;
}

/**
 * A labelled text input with an inline message slot. Returns {wrap, input, message}.
 * Text inputs (not type=number) so that whatever is typed reaches the validator and gets a
 * message, instead of the browser silently turning it into an empty value.
 */
export function numberField(name, spec, value, idPrefix) {
  const id = `${idPrefix}-${name}`;
  const input = el("input", {
    id, name, type: "text", inputmode: spec.integer ? "numeric" : "decimal", autocomplete: "off",
    spellcheck: "false", value: String(value), "aria-describedby": `${id}-msg${spec.help ? ` ${id}-help` : ""}`,
  });
  const message = el("span", { id: `${id}-msg`, class: "calc-msg", "aria-live": "polite" });
  const wrap = el("div", { class: "calc-field", "data-field": name }, [
    el("label", { for: id, text: spec.label + (spec.unit ? ` (${spec.unit})` : "") }),
    input,
    spec.help ? el("span", { id: `${id}-help`, class: "calc-help", text: spec.help }) : null,
    message,
  ]);
  return { wrap, input, message };
}

/** A labelled <select>. options: [[value, text], ...]. */
export function selectField(name, label, options, value, idPrefix, help) {
  const id = `${idPrefix}-${name}`;
  const select = el("select", { id, name, "aria-describedby": `${id}-msg${help ? ` ${id}-help` : ""}` },
    options.map(([v, text]) => el("option", { value: v, text, selected: v === value })));
  const message = el("span", { id: `${id}-msg`, class: "calc-msg", "aria-live": "polite" });
  const wrap = el("div", { class: "calc-field", "data-field": name }, [
    el("label", { for: id, text: label }),
    select,
    help ? el("span", { id: `${id}-help`, class: "calc-help", text: help }) : null,
    message,
  ]);
  return { wrap, input: select, message };
}

/**
 * Tracks the messages of a set of fields: show(name, text) marks that field invalid,
 * clearAll() resets every field. Fields are {input, message} from the builders above.
 */
export class Messages {
  constructor(fields, fallback) {
    this.fields = fields; // name -> {input, message}
    this.fallback = fallback; // element for problems no single field owns
  }

  clearAll() {
    for (const f of Object.values(this.fields)) {
      f.message.textContent = "";
      f.input.removeAttribute("aria-invalid");
    }
    this.fallback.textContent = "";
  }

  show(name, text) {
    const f = this.fields[name];
    if (!f) {
      this.fallback.textContent = text;
      return;
    }
    f.message.textContent = text;
    f.input.setAttribute("aria-invalid", "true");
  }
}

/**
 * A group of radio buttons with one sentence under each option: options [[value, label, help]].
 * Returns {wrap, input (the first radio, for messages), message, radios, value(), set(v)}.
 */
export function radioGroup(name, legend, options, value, idPrefix) {
  const id = `${idPrefix}-${name}`;
  const message = el("span", { id: `${id}-msg`, class: "calc-msg", "aria-live": "polite" });
  const radios = options.map(([v, label, help]) => {
    const rid = `${id}-${v}`;
    const input = el("input", { type: "radio", name: id, id: rid, value: v, checked: v === value,
      "aria-describedby": help ? `${rid}-help` : null });
    return { value: v, input, node: el("div", { class: "calc-option" }, [
      el("span", { class: "calc-check" }, [input, el("label", { for: rid, text: label })]),
      help ? el("span", { id: `${rid}-help`, class: "calc-help", text: help }) : null,
    ]) };
  });
  const wrap = el("fieldset", { class: "calc-options", "data-field": name }, [
    el("legend", { text: legend }), ...radios.map((r) => r.node), message]);
  return {
    wrap, message, radios, input: radios[0].input,
    value: () => radios.find((r) => r.input.checked)?.value ?? value,
    set: (v) => {
      const r = radios.find((x) => x.value === v);
      if (r) r.input.checked = true;
      return Boolean(r);
    },
  };
}

/** Path ("summary.speedup_ttft") of the first number in `value` that is not finite, or null. */
export function firstNonFinite(value, path = "") {
  if (typeof value === "number") return Number.isFinite(value) ? null : path || "(value)";
  if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      const found = firstNonFinite(v, path ? `${path}.${k}` : k);
      if (found !== null) return found;
    }
  }
  return null;
}

/** The message for a value that makes a result non-finite (an overflow): "out of range". */
export function outOfRange(name, spec, raw) {
  return new InputError(name, `"${String(raw).trim()}" is out of range for the ${spec.label}: with it a result would not be a finite number. Use a value nearer the usual ones, e.g. ${spec.example}.`);
}

/**
 * The calculator's key figure, the first thing in its card and kept on screen (CSS makes it
 * sticky under the page header) while the reader changes the inputs below it, on a phone and
 * on a desktop alike. The full results stay where they were, under the form; this repeats the
 * one or two numbers a reader came for. Not a live region: the results already are one, and
 * a second would read every change out twice.
 *
 *   const head = headline("whole request with 2:4");
 *   head.show("0.723x", "slower than dense", "TTFT 0.888x · per output token 0.722x");
 *   head.stale(true); // an input is invalid: the numbers are the last valid ones, and say so
 */
export function headline(label) {
  const value = el("strong", { class: "calc-headline-value", "data-headline": "value" });
  const note = el("span", { class: "calc-headline-note", "data-headline": "note" });
  const detail = el("span", { class: "calc-headline-detail", "data-headline": "detail" });
  const staleMark = el("span", { class: "calc-headline-stale", "data-headline": "stale" });
  const wrap = el("div", { class: "calc-headline", "data-headline": "box" }, [
    el("span", { class: "calc-headline-main" }, [el("span", { class: "calc-headline-label", text: `${label}: ` }), value, " ", note]),
    " ", detail, " ", staleMark,
  ]);
  return {
    wrap,
    show(main, noteText = "", detailText = "") {
      value.textContent = main;
      note.textContent = noteText;
      detail.textContent = detailText;
    },
    stale(on) {
      staleMark.textContent = on ? "(last valid result: an input needs fixing)" : "";
    },
  };
}

/**
 * A box around a results table that scrolls sideways when the table is wider than the card
 * (a phone), with the site's scroll cue: shadows on the side where more is hidden (CSS) and a
 * "scroll →" line above it. While it overflows it is a keyboard stop with a name (WCAG 2.1.1;
 * axe's scrollable-region-focusable); when it fits it is neither. Returns {box, refresh}:
 * call refresh() after the table's text changes; a ResizeObserver covers width changes.
 */
export function scrollBox(table, name, extraClass = "") {
  const hint = el("p", { class: "calc-scroll-hint", "aria-hidden": "true", hidden: true, text: "scroll sideways for every column →" });
  const box = el("div", { class: `calc-table calc-scroll${extraClass ? ` ${extraClass}` : ""}` }, [table]);
  const wrap = el("div", { class: "calc-scroll-wrap" }, [hint, box]);
  function refresh() {
    const overflows = box.scrollWidth > box.clientWidth + 1;
    hint.hidden = !overflows;
    if (overflows) {
      box.tabIndex = 0;
      box.setAttribute("role", "region");
      box.setAttribute("aria-label", `${name} (scrolls sideways)`);
      box.dataset.htwScrolls = "true";
    } else {
      box.removeAttribute("tabindex");
      box.removeAttribute("role");
      box.removeAttribute("aria-label");
      delete box.dataset.htwScrolls;
    }
  }
  if (typeof ResizeObserver !== "undefined") new ResizeObserver(refresh).observe(box);
  return { wrap, box, refresh };
}

/**
 * What a shown speedup means, read from the rounded text so the words never contradict the figure:
 * "0.62x" -> "the dense speed (slower)", "1.20x" -> "the dense speed (faster)". The number is
 * already the ratio of speeds, so the words never say "0.62x slower".
 */
export function versusDense(shown) {
  const x = Number.parseFloat(shown);
  return x > 1 ? "the dense speed (faster)" : x < 1 ? "the dense speed (slower)" : "the dense speed (no change)";
}
