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
    calculator.mount(root);
    root.dataset.calcReady = "true";
  }
}

if (typeof window !== "undefined" && window.document$) {
  window.document$.subscribe(() => mountAll());
} else if (typeof document !== "undefined") {
  // Without Material (a plain HTML page), mount once the document is parsed.
  mountAll();
}
