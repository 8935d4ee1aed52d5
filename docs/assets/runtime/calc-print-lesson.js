// The whole lesson on one page, to print: the print page's component (docs/print.md).
//
// It fetches the 22 built step pages from this site (the same origin; the service worker's precache holds
// every built page, so this works offline too), takes each page's article, and puts them one after another
// in the print page, each in an <article class="calc-print-step">. What a printed page cannot use is left
// out (controls, Apply buttons, heading anchors, scripts); the numbers, tables, pictures and charts are the
// ones the build computed, the charts drawn by the runtime's chart component from the figures the build
// wrote. The copies are static: their widgets are not brought to life (no Python on this page). Each copy's
// ids are prefixed with its step ("s05-takeaway") so the page's ids stay unique and its labels keep pointing
// at their own elements. All this when the reader presses Print; once every step and chart is in, it calls
// window.print(). The print styles (reader.css) leave out the site's navigation, header and footer.
(function () {
  "use strict";

  var runtime = window.calcRuntime;
  if (!runtime) return;

  var scriptUrl = document.currentScript ? document.currentScript.src : location.href;
  var SITE_ROOT = new URL("../../", scriptUrl);
  var STEP_PATH = /^lesson\/(\d\d)-[^/]+\/$/;
  var LEFT_OUT = "script, form, .calc-status, .calc-sim__bar, [data-apply-step], .headerlink, .md-content__button, " +
    ".md-source-file, .calc-progress-resume";
  var ID_LISTS = ["for", "aria-labelledby", "aria-describedby", "aria-controls", "aria-owns", "headers", "list"];
  var LANDMARKS = "form, section[aria-label], section[aria-labelledby], aside, nav, [role=region], [role=form]";

  function stepUrls() {
    var seen = {};
    var urls = [];
    document.querySelectorAll(".md-nav--primary a.md-nav__link[href]").forEach(function (link) {
      var url = new URL(link.href, location.href);
      if (url.origin !== SITE_ROOT.origin || url.pathname.indexOf(SITE_ROOT.pathname) !== 0) return;
      var path = url.pathname.slice(SITE_ROOT.pathname.length);
      var match = STEP_PATH.exec(path);
      if (!match || seen[path]) return;
      seen[path] = true;
      urls.push({ number: Number(match[1]), url: new URL(path, SITE_ROOT).href });
    });
    return urls.sort(function (a, b) { return a.number - b.number; });
  }

  // A step's article, made fit for this page: parts left out, ids prefixed, links into it kept working.
  function prepare(html, step, pageUrl) {
    var source = new DOMParser().parseFromString(html, "text/html").querySelector("article.md-content__inner");
    if (!source) throw new Error("no article in " + pageUrl);
    source.querySelectorAll(LEFT_OUT).forEach(function (node) { node.remove(); });
    var prefix = "s" + String(step).padStart(2, "0") + "-";
    var ids = {};
    source.querySelectorAll("[id]").forEach(function (node) { ids[node.id] = prefix + node.id; node.id = ids[node.id]; });
    source.querySelectorAll("*").forEach(function (node) {
      ID_LISTS.forEach(function (name) {
        var value = node.getAttribute(name);
        if (value) node.setAttribute(name, value.split(/\s+/).map(function (id) { return ids[id] || id; }).join(" "));
      });
      ["href", "xlink:href"].forEach(function (name) {
        var value = node.getAttribute(name);
        if (!value) return;
        if (value.charAt(0) === "#" && ids[value.slice(1)]) node.setAttribute(name, "#" + ids[value.slice(1)]);
        else if (value.charAt(0) !== "#") node.setAttribute(name, new URL(value, pageUrl).href); // relative to its page
      });
      ["src"].forEach(function (name) {
        var value = node.getAttribute(name);
        if (value) node.setAttribute(name, new URL(value, pageUrl).href);
      });
      // Static copies: the runtime's widget, drill and simulation components must not take them for live ones.
      if (node.hasAttribute("data-widget")) {
        node.setAttribute("data-print-widget", node.getAttribute("data-widget"));
        node.removeAttribute("data-widget");
      }
    });
    // The cheat sheet's own print layout (calc.css, scoped by body:has(.calc-cheatsheet)) is for printing step 21
    // alone: in the whole lesson its marker would turn every step into the sheet's two columns.
    source.querySelectorAll(".calc-cheatsheet").forEach(function (node) {
      node.classList.remove("calc-cheatsheet");
      node.classList.add("calc-cheatsheet-copy");
    });
    // Landmarks keep names of their own across the 22 copies ("Step 5: ...").
    source.querySelectorAll(LANDMARKS).forEach(function (node) {
      var label = node.getAttribute("aria-label");
      if (label) node.setAttribute("aria-label", "Step " + step + ": " + label);
    });
    var article = document.createElement("article");
    article.className = "calc-print-step";
    article.dataset.printStep = String(step);
    while (source.firstChild) article.appendChild(document.adoptNode(source.firstChild));
    return article;
  }

  // The page is light until the reader asks: the Print button assembles the 22 steps (a few seconds: the
  // fetches, then Plotly drawing every chart), then opens the browser's print dialog; the steps stay on the
  // page, and a second press prints at once.
  function mountPrintLesson(holder, lifetime) {
    var status = holder.querySelector("[data-print-status]");
    var button = holder.querySelector("[data-print-button]");
    if (!button) return;
    var steps = document.createElement("div");
    steps.className = "calc-print-lesson__steps";
    holder.appendChild(steps);
    lifetime.add(function () { steps.remove(); });
    var controller = typeof AbortController === "function" ? new AbortController() : null;
    lifetime.add(function () { if (controller) controller.abort(); });
    var urls = stepUrls();
    function say(text) { if (status) status.textContent = text; }
    holder.dataset.printState = "idle";
    button.disabled = false;
    say("Press it to gather the " + urls.length + " steps here, then print them or save them as a PDF.");

    function assemble() {
      holder.dataset.printState = "loading";
      button.disabled = true;
      say("Loading the " + urls.length + " steps…");
      var done = 0;
      return Promise.all(urls.map(function (step) {
        return fetch(step.url, { credentials: "same-origin", signal: controller ? controller.signal : undefined })
          .then(function (response) {
            if (!response.ok) throw new Error(step.url + ": HTTP " + response.status);
            return response.text();
          })
          .then(function (html) {
            done += 1;
            if (!lifetime.ended) say("Loading the steps: " + done + " of " + urls.length + "…");
            return prepare(html, step.number, step.url);
          });
      })).then(function (articles) {
        if (lifetime.ended) return null;
        articles.forEach(function (article) { steps.appendChild(article); });
        if (runtime.mountAdded) runtime.mountAdded(); // formulas and charts of what was just added
        var charts = steps.querySelectorAll("[data-chart][data-figure]");
        holder.dataset.printSteps = String(articles.length);
        say("Drawing " + charts.length + " charts…");
        return whenDrawn(charts, lifetime);
      }).then(function (charts) {
        if (lifetime.ended || charts === null) return false;
        holder.dataset.printState = "ready";
        button.disabled = false;
        say("The " + urls.length + " steps are below, with " + charts + " charts.");
        return true;
      }).catch(function (error) {
        if (lifetime.ended) return false;
        holder.dataset.printState = "error";
        button.disabled = false;
        say("The steps could not be loaded (" + (error && error.message ? error.message : error) + "). " +
          "Serve the site (make serve), or open this page once online so that it is kept for offline reading.");
        return false;
      });
    }

    lifetime.listen(button, "click", function () {
      var state = holder.dataset.printState;
      if (state === "ready") { window.print(); return; }
      if (state === "loading") return;
      steps.textContent = ""; // after an error: start again
      assemble().then(function (ready) { if (ready) window.print(); });
    });
  }

  // Resolves with the number of charts once none waits to be drawn (the runtime marks each data-drawn).
  function whenDrawn(charts, lifetime) {
    return new Promise(function (resolve) {
      var timer = null;
      lifetime.add(function () { clearTimeout(timer); resolve(null); });
      function check() {
        var waiting = Array.prototype.some.call(charts, function (chart) {
          return !chart.dataset.drawn || chart.dataset.pending;
        });
        if (waiting) timer = setTimeout(check, 200);
        else resolve(charts.length);
      }
      check();
    });
  }

  runtime.component("print-lesson", "[data-print-lesson]", mountPrintLesson);
})();
