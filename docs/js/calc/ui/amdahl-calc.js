// The two-input Amdahl calculator: eligible fraction p and part speedup s -> the whole's
// speedup, its bound 1 / (1 - p), and what the averaging mistake would claim.
// Placeholder: <div data-calc="amdahl" data-p="0.87" data-s="1.78"></div>

import { averagedSpeedupMistake, maxSpeedup, speedup } from "../amdahl.js";
import { InputError } from "../errors.js";
import { speedupText } from "../format.js";
import { Messages, el, nextId, numberField, parseField } from "./form.js";

export const FIELDS = {
  p: { label: "eligible fraction p", integer: false, min: 0, max: 1, example: "0.87",
    help: "share of the time spent in the 2:4 GEMMs, from 0 to 1" },
  s: { label: "GEMM speedup s", integer: false, min: 0, minOpen: true, max: 1e6, example: "1.78",
    help: "how much faster those GEMMs get; 1 = no change, below 1 = slower" },
};

export function compute(p, s) {
  return { speedup: speedup(p, s), bound: maxSpeedup(p), mistake: averagedSpeedupMistake([p], [s]) };
}

export function mount(root) {
  const id = nextId("amdahl");
  const start = { p: root.dataset.p ?? "0.87", s: root.dataset.s ?? "1.78" };
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
  ]);
  root.replaceChildren(el("div", { class: "calc calc--small", role: "group", "aria-label": "Amdahl's law calculator" },
    [el("p", { class: "calc-title", text: "Amdahl's law: try your own numbers" }), form, stale, general, results]));
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
    } catch (err) {
      for (const e of Array.isArray(err) ? err : [err]) {
        if (!(e instanceof InputError)) throw e;
        messages.show(e.field, e.message);
      }
      stale.textContent = root.dataset.calcValid ? "Showing the last valid result until the input is fixed." : "";
      return false;
    }
    stale.textContent = "";
    out.speedup.textContent = speedupText(r.speedup);
    formula.textContent = `= 1 / ((1 − ${p}) + ${p} / ${s})`;
    out.bound.textContent = r.bound === Infinity ? "no limit (p = 1)" : speedupText(r.bound);
    out.mistake.textContent = speedupText(r.mistake);
    root.dataset.calcValid = "true";
    return true;
  }

  form.addEventListener("input", update);
  root.calcUpdate = update; // for tests and for timing
  update();
}
