// Site script. Material's `document$` emits on the first load and after every instant
// navigation (which swaps the page without reloading), so all set-up runs from there and
// must be idempotent: it may run many times on the same window.
document$.subscribe(function () {
  // Wide formulas, program output and tables scroll sideways; a scrolling box must be
  // reachable by keyboard (WCAG 2.1.1), so make the ones that actually overflow focusable.
  document.querySelectorAll(".md-content .math-block, .md-content .nb-output, .md-typeset__scrollwrap")
    .forEach(function (box) {
      var overflows = box.scrollWidth > box.clientWidth || box.scrollHeight > box.clientHeight;
      if (overflows && !box.hasAttribute("tabindex")) {
        box.tabIndex = 0;
      }
    });

  // Links leaving the site open in a new tab, so a reader keeps their place in a chapter.
  var here = location.host;
  document.querySelectorAll(".md-content a[href^='http']").forEach(function (a) {
    if (a.host !== here) {
      a.target = "_blank";
      a.rel = "noopener";
    }
  });

  // Last: tells tests (and anyone debugging) that set-up finished for the current page.
  document.documentElement.dataset.htwPage = location.pathname;
});
