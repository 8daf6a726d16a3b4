// Mounts every calculator placeholder on the page: <div data-calc="request|amdahl|packing|gemm">.
//
// Loaded once as an ES module (mkdocs.yml extra_javascript). Material's `document$` emits on
// the first load and after every instant navigation, which swaps the page content without a
// reload; each emission mounts the placeholders of the new content. Mounting is idempotent:
// a placeholder is marked when mounted and skipped after that.

import * as amdahl from "./ui/amdahl-calc.js";
import * as gemm from "./ui/gemm-calc.js";
import * as packing from "./ui/packing-calc.js";
import * as request from "./ui/request-calc.js";

const CALCULATORS = { amdahl, gemm, packing, request };

export function mountAll(scope = document) {
  for (const root of scope.querySelectorAll("[data-calc]")) {
    if (root.dataset.calcMounted) continue;
    root.dataset.calcMounted = "true";
    const kind = root.dataset.calc;
    const calculator = CALCULATORS[kind];
    if (!calculator) {
      root.textContent = `Unknown calculator "${kind}"; known: ${Object.keys(CALCULATORS).join(", ")}.`;
      console.error(`data-calc="${kind}" is not a calculator; known: ${Object.keys(CALCULATORS).join(", ")}`);
      continue;
    }
    try {
      calculator.mount(root);
    } catch (err) {
      // Never a blank hole in the page: every input problem is caught inside the calculator
      // (an inline message), so reaching this is a bug; say so where the calculator would be.
      root.replaceChildren();
      const p = document.createElement("p");
      p.className = "calc-msg";
      p.textContent = `This calculator could not start (${err && err.message ? err.message : err}). Reload the page without the part of the address after "?", or report it.`;
      root.append(p);
      root.dataset.calcReady = "error";
      console.error(err);
      continue;
    }
    root.dataset.calcReady = "true";
  }
}

if (typeof window !== "undefined" && window.document$) {
  window.document$.subscribe(() => mountAll());
} else if (typeof document !== "undefined") {
  // Without Material (a plain HTML page), mount once the document is parsed.
  mountAll();
}
