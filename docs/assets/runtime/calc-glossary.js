// Tap-to-read glossary: an abbreviation's definition on touch screens and on keyboard focus.
//
// The glossary's terms are <abbr title="..."> on every page (docs/includes/abbreviations.md). With a
// mouse, Material's tooltips (content.tooltips) show the definition on hover. A touch screen has no hover,
// so a tap on a term opens a small popover with its definition; a second tap on the term, a tap anywhere
// else, or Escape closes it. The first use of each term on a page is focusable (one tab stop per term,
// not one per use): keyboard focus then shows Material's tooltip, as a hover does. One component of the
// runtime per page (the article), mounted from its document$ pass and released (popover and document
// listeners included) when the page goes.
(function () {
  "use strict";

  var runtime = window.calcRuntime;
  if (!runtime) return;

  var popoverCount = 0;

  function definitionOf(term) {
    // Material moves the title into its own tooltip on the first hover: keep a copy before it does.
    if (term.title) term.dataset.definition = term.title;
    return term.dataset.definition || "";
  }

  function mountGlossary(article, lifetime) {
    var terms = Array.prototype.slice.call(article.querySelectorAll("abbr[title]"));
    if (!terms.length) return;
    var seen = {};
    terms.forEach(function (term) {
      definitionOf(term);
      var name = term.textContent.trim();
      if (!seen[name]) { // the first use of each term: a tab stop
        seen[name] = true;
        term.tabIndex = 0;
      }
    });

    var popover = document.createElement("div");
    popover.className = "calc-glossary-tip";
    popover.id = "calc-glossary-tip-" + (++popoverCount);
    // Not tied to the term by aria-describedby: Material's tooltip sets and clears that attribute on the mouse
    // events a tap also fires, and the term's title (which Material gives back) is what a screen reader reads.
    popover.setAttribute("role", "tooltip");
    popover.hidden = true;
    document.body.appendChild(popover);
    var shownFor = null;
    lifetime.add(function () { hide(); popover.remove(); });

    function show(term) {
      var text = term.dataset.definition;
      if (!text) return;
      shownFor = term;
      popover.textContent = "";
      var name = document.createElement("strong");
      name.textContent = term.textContent.trim();
      popover.append(name, ": " + text);
      popover.hidden = false;
      term.dataset.glossaryOpen = "true";
      place(term);
    }

    function hide() {
      if (!shownFor) return;
      delete shownFor.dataset.glossaryOpen;
      shownFor = null;
      popover.hidden = true;
    }

    // Below the term (above it when there is no room), inside the viewport's width.
    function place(term) {
      var box = term.getBoundingClientRect();
      var margin = 8;
      popover.style.maxWidth = Math.min(320, document.documentElement.clientWidth - 2 * margin) + "px";
      var width = popover.offsetWidth, height = popover.offsetHeight;
      var left = Math.min(Math.max(margin, box.left + box.width / 2 - width / 2),
        document.documentElement.clientWidth - width - margin);
      var top = box.bottom + 6;
      if (top + height > window.innerHeight && box.top - height - 6 > 0) top = box.top - height - 6;
      popover.style.left = Math.round(left + window.scrollX) + "px";
      popover.style.top = Math.round(top + window.scrollY) + "px";
    }

    var lastPointer = "mouse";
    lifetime.listen(document, "pointerdown", function (event) { lastPointer = event.pointerType || "mouse"; }, true);
    // A tap would focus a focusable term, and Material shows its own tooltip on focus: one popover, not two.
    lifetime.listen(document, "mousedown", function (event) {
      var term = lastPointer === "touch" && event.target.closest && event.target.closest("abbr");
      if (term && article.contains(term)) event.preventDefault();
    }, true);
    // A tap: on the shown term it closes, on another term it moves, anywhere else it closes.
    lifetime.listen(document, "click", function (event) {
      var term = event.target.closest && event.target.closest("abbr");
      var touch = (event.pointerType || lastPointer) === "touch" || lastPointer === "pen";
      if (term && article.contains(term) && definitionOf(term) && touch) {
        if (shownFor === term) hide(); else show(term);
        return;
      }
      if (shownFor && !popover.contains(event.target)) hide();
    });
    lifetime.listen(document, "keydown", function (event) { if (event.key === "Escape") hide(); });
    lifetime.listen(window, "resize", function () { if (shownFor) place(shownFor); });
  }

  runtime.component("glossary-tap", "article.md-content__inner", mountGlossary);
})();
