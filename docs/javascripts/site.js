// Site script. Material's `document$` emits on the first load and after every instant
// navigation (which swaps the page without reloading), so all set-up runs from there and
// must be idempotent: it may run many times on the same window.

// Wide formulas, program output and tables scroll sideways; a scrolling box must be
// reachable by keyboard (WCAG 2.1.1), so make the ones that actually overflow focusable,
// and name them so a screen reader says what the stop is. Run again when the width changes.
var SCROLL_BOXES = ".md-content .math-block, .md-content .nb-output pre, .md-content .nb-output .nb-html, " +
  ".md-content .nb-output .nb-image, .md-content .md-typeset__scrollwrap, .md-content .htw-scroll";
function markScrollBoxes() {
  document.querySelectorAll(SCROLL_BOXES).forEach(function (box) {
    var overflows = box.scrollWidth > box.clientWidth + 1;
    if (overflows && !box.hasAttribute("tabindex")) {
      box.tabIndex = 0;
      box.dataset.htwScrolls = "true";
      if (!box.hasAttribute("aria-label") && !box.hasAttribute("role")) {
        box.setAttribute("role", "region");
        box.setAttribute("aria-label", "wide content, scrolls sideways");
      }
    }
  });
}
// Tables marked to stack on a phone (a `<div class="htw-stack">` around them, extra.css) show
// each cell with its column's header as a label: copy the header text to the cells.
function labelStackedCells() {
  document.querySelectorAll(".md-content .htw-stack table").forEach(function (table) {
    var heads = Array.prototype.map.call(table.querySelectorAll("thead th"), function (th) {
      return th.textContent.trim();
    });
    table.querySelectorAll("tbody tr").forEach(function (tr) {
      Array.prototype.forEach.call(tr.children, function (td, i) {
        if (heads[i]) td.dataset.label = heads[i];
      });
    });
  });
}
// Search keeps "split-K", "2:4" and "alg_id" whole. Material's search cuts words at "-" and its
// query parser reads "2:" as a field name, so "split-K" became "split" OR any word starting with
// "k", and "2:4" became "2" OR "4". The built search index has the hyphen and colon inside such
// terms swapped for look-alikes nothing cuts (a non-breaking hyphen, U+2011; a ratio sign,
// U+2236: site_hooks/search_terms.py); every query gets the same swap here, before Material's
// search worker sees it (message type 2 is a query). searchTerms is search_terms() of that hook,
// character for character (tests/site/test_reading.py runs both). "alg_id" needs nothing.
var SEARCH_QUERY = 2;
function searchTerms(text) {
  return text.replace(/(\w)-(?=[A-Za-z0-9]\b)/g, "$1\u2011").replace(/(\d):(?=\d)/g, "$1\u2236");
}
(function () {
  if (typeof Worker === "undefined" || Worker.prototype.postMessage.htwSearchTerms) return;
  var post = Worker.prototype.postMessage;
  var patched = function (message) {
    var args = Array.prototype.slice.call(arguments);
    if (message && message.type === SEARCH_QUERY && typeof message.data === "string") {
      args[0] = { type: message.type, data: searchTerms(message.data) };
    }
    return post.apply(this, args);
  };
  patched.htwSearchTerms = true;
  Worker.prototype.postMessage = patched;
})();

var resizeTimer = null;
window.addEventListener("resize", function () {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(markScrollBoxes, 150);
});

document$.subscribe(function () {
  // Material's search box is a dialog without a name; a screen reader then announces just "dialog".
  document.querySelectorAll(".md-search[role='dialog']:not([aria-label])").forEach(function (dialog) {
    dialog.setAttribute("aria-label", "Search this site");
  });
  labelStackedCells();
  markScrollBoxes();

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
