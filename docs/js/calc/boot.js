// Mounts every calculator placeholder on the page: <div data-calc="request|amdahl|packing|gemm">.
//
// Loaded once as an ES module (mkdocs.yml extra_javascript). Material's `document$` emits on
// the first load and after every instant navigation, which swaps the page content without a
// reload; each emission mounts the placeholders of the new content. Mounting is idempotent:
// a placeholder is marked when mounted and skipped after that. A calculator's code is fetched
// when a page first has one: most pages have none, and each used to fetch and compile every
// calculator's code for nothing. Each placeholder says when it is mounted
// (data-calc-ready="true", or "error" with the reason in its place).

const CALCULATORS = {
  amdahl: () => import("./ui/amdahl-calc.js"),
  gemm: () => import("./ui/gemm-calc.js"),
  packing: () => import("./ui/packing-calc.js"),
  request: () => import("./ui/request-calc.js"),
};

export function mountAll(scope = document) {
  const mounting = [];
  for (const root of scope.querySelectorAll("[data-calc]")) {
    if (root.dataset.calcMounted) continue;
    root.dataset.calcMounted = "true";
    const kind = root.dataset.calc;
    if (!Object.hasOwn(CALCULATORS, kind)) {
      root.textContent = `Unknown calculator "${kind}"; known: ${Object.keys(CALCULATORS).join(", ")}.`;
      console.error(`data-calc="${kind}" is not a calculator; known: ${Object.keys(CALCULATORS).join(", ")}`);
      continue;
    }
    mounting.push(CALCULATORS[kind]().then((calculator) => calculator.mount(root)).then(
      () => { root.dataset.calcReady = "true"; },
      (err) => {
        // Never a blank hole in the page: every input problem is caught inside the calculator
        // (an inline message), so reaching this is a bug or a failed download; say so where the
        // calculator would be.
        root.replaceChildren();
        const p = document.createElement("p");
        p.className = "calc-msg";
        p.textContent = `This calculator could not start (${err && err.message ? err.message : err}). Reload the page without the part of the address after "?", or report it.`;
        root.append(p);
        root.dataset.calcReady = "error";
        console.error(err);
      },
    ));
  }
  return Promise.all(mounting);
}

if (typeof window !== "undefined" && window.document$) {
  window.document$.subscribe(() => mountAll());
} else if (typeof document !== "undefined") {
  // Without Material (a plain HTML page), mount once the document is parsed.
  mountAll();
}
