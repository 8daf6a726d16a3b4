// The two-input Amdahl calculator: eligible fraction p and part speedup s -> the whole's
// speedup, its bound 1 / (1 - p), and what the averaging mistake would claim.
// Placeholder: <div data-calc="amdahl"></div>, or with data-p="..." data-s="..." to start elsewhere.
// Without them it starts at the decode share p and the decode GEMM speedup s of the request
// calculator's default (the worked deployment, with its measured GEMM speedups): not a ceiling.

import { averagedSpeedupMistake, maxSpeedup, speedup } from "../amdahl.js";
import { InputError } from "../errors.js";
import { speedupText } from "../format.js";
import { SCENARIO_TEXT, fitLine } from "../roofline.js";
import { Messages, el, firstNonFinite, headline, nextId, numberField, outOfRange, parseField } from "./form.js";
import { DEFAULTS, computeScenario } from "./request-calc.js";

export const FIELDS = {
  p: { label: "eligible fraction p", integer: false, min: 0, max: 1, example: "0.9",
    help: "share of the time spent in the 2:4 GEMMs, from 0 to 1" },
  s: { label: "GEMM speedup s", integer: false, min: 0, minOpen: true, max: 1e6, example: "1.2",
    help: "how much faster those GEMMs get; 1 = no change, below 1 = slower" },
};

export function compute(p, s) {
  return { speedup: speedup(p, s), bound: maxSpeedup(p), mistake: averagedSpeedupMistake([p], [s]) };
}

/**
 * Where the card starts: the decode phase of the worked deployment the request calculator opens
 * on, with the 2:4 decode GEMM speedup measured there (so the card's result is that deployment's
 * speedup per output token, the number the calculator's table shows), each rounded to 3 decimals.
 * {p, s, text, fit}: the two values as typed into the fields, a sentence saying where they come
 * from, and (for a predicted s only) the fit line.
 */
export function decodeDefaults() {
  // The form's defaults hold the measured speedups as the text of their fields.
  const state = { ...DEFAULTS, speedup_prefill: Number(DEFAULTS.speedup_prefill), speedup_decode: Number(DEFAULTS.speedup_decode) };
  const view = computeScenario(state);
  const p = view.summary.p_decode.toFixed(3);
  const s = view.summary.gemm_speedup_decode.toFixed(3);
  const workload = `${state.model} on the ${state.gpu}, ${state.dtype}, batch ${state.batch}, ${state.prompt_len} prompt and ${state.output_len} output tokens`;
  const measured = state.gemm === "measured";
  return {
    p: String(Number(p)), s: String(Number(s)),
    text: `p and s start at the decode phase of the worked deployment the calculator above opens on (${workload}): its eligible share and its 2:4 decode GEMM speedup, `
      + (measured ? "measured on the H200 in CUDA graphs" : `predicted (${SCENARIO_TEXT[state.scenario].label})`)
      + ", rounded to 3 decimals. The result is its speedup per output token.",
    fit: measured ? "" : fitLine(state.gpu, null, state.batch),
  };
}

export function mount(root) {
  const id = nextId("amdahl");
  const computed = root.dataset.p === undefined || root.dataset.s === undefined ? decodeDefaults() : null;
  const start = { p: root.dataset.p ?? computed.p, s: root.dataset.s ?? computed.s };
  const fields = {};
  for (const name of ["p", "s"]) fields[name] = numberField(name, FIELDS[name], start[name], id);
  const out = {
    speedup: el("output", { "data-out": "speedup", for: `${id}-p ${id}-s` }),
    bound: el("output", { "data-out": "bound" }),
    mistake: el("output", { "data-out": "mistake" }),
  };
  const formula = el("span", { class: "calc-formula", "data-out": "formula" });
  const stale = el("p", { class: "calc-stale", "data-out": "stale", "aria-live": "polite" });
  const general = el("p", { class: "calc-msg" });
  const form = el("form", { class: "calc-form", "aria-label": "Amdahl calculator inputs" },
    [fields.p.wrap, fields.s.wrap]);
  const results = el("div", { class: "calc-results", "aria-live": "polite" }, [
    el("p", {}, [el("strong", { text: "whole-task speedup: " }), out.speedup, " ", formula]),
    el("p", {}, ["bound with an infinitely fast GEMM, 1 / (1 − p): ", out.bound]),
    el("p", { class: "calc-aside" }, ["the averaging mistake, p·s + (1 − p), would claim ", out.mistake]),
    computed ? el("p", { class: "calc-fit", "data-out": "origin", text: `${computed.text}${computed.fit ? ` ${computed.fit}` : ""}` }) : null,
  ]);
  const head = headline("whole-task speedup");
  root.replaceChildren(el("div", { class: "calc calc--small", role: "group", "aria-label": "Amdahl's law calculator" },
    [el("p", { class: "calc-title", text: "Amdahl's law: try your own numbers" }), el("div", { class: "calc-io" }, [head.wrap, form]),
      stale, general, results]));
  form.addEventListener("submit", (e) => e.preventDefault());
  const messages = new Messages(fields, general);

  function update() {
    messages.clearAll();
    let p, s, r;
    try {
      const errors = [];
      for (const name of ["p", "s"]) {
        try {
          const v = parseField(name, fields[name].input.value, FIELDS[name]);
          if (name === "p") p = v; else s = v;
        } catch (err) {
          if (!(err instanceof InputError)) throw err;
          errors.push(err);
        }
      }
      if (errors.length) throw errors;
      r = compute(p, s);
      if (firstNonFinite({ speedup: r.speedup, mistake: r.mistake }) !== null) throw outOfRange("s", FIELDS.s, fields.s.input.value);
    } catch (err) {
      for (const e of Array.isArray(err) ? err : [err]) {
        if (!(e instanceof InputError)) throw e;
        messages.show(e.field, e.message);
      }
      stale.textContent = root.dataset.calcValid ? "Showing the last valid result until the input is fixed." : "";
      head.stale(Boolean(root.dataset.calcValid));
      return false;
    }
    stale.textContent = "";
    head.stale(false);
    out.speedup.textContent = speedupText(r.speedup);
    formula.textContent = `= 1 / ((1 − ${p}) + ${p} / ${s})`;
    out.bound.textContent = r.bound === Infinity ? "no limit (p = 1)" : speedupText(r.bound);
    out.mistake.textContent = speedupText(r.mistake);
    head.show(out.speedup.textContent, "", `bound 1 / (1 − p): ${out.bound.textContent}`);
    root.dataset.calcValid = "true";
    return true;
  }

  form.addEventListener("input", update);
  root.calcUpdate = update; // for tests and for timing
  update();
}
