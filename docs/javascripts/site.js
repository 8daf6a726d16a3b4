// Site script. Material's `document$` emits on the first load and after every instant
// navigation (which swaps the page without reloading), so all set-up runs from there and
// must be idempotent: it may run many times on the same window.
document$.subscribe(function () {
  var root = document.documentElement;
  // Lets tests (and anyone debugging) see that page scripts ran for the current page.
  root.dataset.htwPage = location.pathname;

  // Links leaving the site open in a new tab, so a reader keeps their place in a chapter.
  var here = location.host;
  document.querySelectorAll(".md-content a[href^='http']").forEach(function (a) {
    if (a.host !== here) {
      a.target = "_blank";
      a.rel = "noopener";
    }
  });
});
