// The page side of the lesson's runtime: one worker per visit, components mounted on every page.
//
// A classic script (not a module), so that pages opened from file:// still draw their
// pre-rendered charts. Each kind of element the runtime brings to life (a widget, a drill, a chart,
// the status badge; calc-simulation.js and calc-playground.js add theirs) is a component found by
// its data attribute and mounted from Material's document$ subscription, which emits on every
// instant navigation. A component is released when its page goes away: what it added outside its
// own element (runtime listeners, timers, streams, observers, Plotly charts) is removed, so a long
// visit keeps only the page in view, while the worker (and its Python boot, restored from the
// build's snapshot) is kept for the whole visit. The messages and data-* attributes shared with
// Python are declared once in calc/widgets/contract.json (tests/test_contract.py checks both sides).
(function () {
  "use strict";

  var scriptUrl = document.currentScript ? document.currentScript.src : location.href;
  var ASSETS = new URL("../", scriptUrl); // .../assets/
  var root = document.documentElement;
  var FILE_NOTE = "This page was opened from a file, so its numbers are the ones computed at build. " +
    "Run `make serve` and open http://127.0.0.1:8000 for live widgets.";

  // ---- the worker: a serial queue of JSON requests, each with a time budget ---------------

  var runtime = {
    worker: null,
    boots: 0,
    state: "idle",
    detail: "",
    readyAt: null,
    queue: [],
    inFlight: null,
    nextId: 1,
    listeners: [], // (state, detail) callbacks: components add theirs through their lifetime (onRuntime)
  };
  window.calcRuntime = runtime;

  function markDocument() {
    if (runtime.state === "idle") delete root.dataset.pyodide; // a page without widgets needs no Python
    else root.dataset.pyodide = runtime.state;
    root.dataset.pyodideBoots = String(runtime.boots);
  }

  function setState(state, detail) {
    runtime.state = state;
    runtime.detail = detail || "";
    markDocument();
    // The search index waits for the boot (overrides/main.html): once it is over, build it.
    if ((state === "ready" || state === "error") && window.calcSearchRelease) window.calcSearchRelease();
    runtime.listeners.slice().forEach(function (listener) { listener(state, runtime.detail); });
  }

  function startWorker() {
    if (location.protocol === "file:") {
      setState("error", FILE_NOTE);
      return;
    }
    if (typeof Worker === "undefined") {
      setState("error", "This browser cannot run Web Workers, so the widgets stay as computed at build.");
      return;
    }
    runtime.boots += 1;
    // overrides/main.html starts the worker from the head of a page with widgets, while the
    // body is still parsed; adopt it (once) and replay what it said before we listened.
    var early = window.calcEarlyWorker;
    window.calcEarlyWorker = null;
    var worker = early || new Worker(new URL("runtime/worker.mjs", ASSETS), { type: "module" });
    runtime.bootStarted = early ? early.startedAt : performance.now();
    runtime.worker = worker;
    setState("loading", "Loading the Python runtime");
    function onError(message) {
      if (worker !== runtime.worker) return;
      failAll("The Python runtime stopped: " + message);
      setState("error", "The Python runtime failed to start: " + message);
    }
    worker.onmessage = function (event) { onWorkerMessage(worker, event.data); };
    worker.onerror = function (event) { onError(event.message || "worker error"); };
    if (early) {
      early.early.forEach(function (text) { onWorkerMessage(worker, text); });
      if (early.failed) onError(early.failed);
    }
  }

  function onWorkerMessage(worker, text) {
    if (worker !== runtime.worker) return; // a terminated worker's late answer
    var message;
    try { message = JSON.parse(text); } catch (error) { return; }
    if (message.type === "status") {
      runtime.progress = message.progress;
      if (message.state === "ready") {
        runtime.readyAt = performance.now();
        runtime.bootMs = runtime.readyAt - runtime.bootStarted;
        runtime.bootPhases = message.phases; // ms since the worker started, per boot step (bench)
        runtime.bootFetched = message.fetched;
        runtime.bootProfile = message.profile; // the same steps and more, on the worker's clock (bench)
      }
      setState(message.state, message.detail);
      if (message.state === "ready") pump();
      if (message.state === "error") failAll(message.detail);
      return;
    }
    var current = runtime.inFlight;
    if (!current || current.id !== message.id) return;
    clearTimeout(current.timer);
    runtime.inFlight = null;
    current.resolve(message);
    pump();
  }

  function failAll(reason) {
    var all = runtime.queue.splice(0);
    if (runtime.inFlight) { clearTimeout(runtime.inFlight.timer); all.push(runtime.inFlight); runtime.inFlight = null; }
    all.forEach(function (item) {
      item.resolve({ id: item.id, ok: false, error: { kind: "runtime", field: null, message: reason } });
    });
  }

  function pump() {
    if (runtime.inFlight || runtime.state !== "ready" || !runtime.queue.length) return;
    // A reader's request goes before background work (warming a page's widgets), whatever its place.
    var index = 0;
    while (index < runtime.queue.length && runtime.queue[index].background) index++;
    if (index === runtime.queue.length) index = 0;
    var item = runtime.queue.splice(index, 1)[0];
    runtime.inFlight = item;
    // The budget starts when the worker gets the request, not while it waits its turn.
    item.timer = setTimeout(function () { overBudget(item); }, item.budgetMs);
    runtime.worker.postMessage(JSON.stringify(Object.assign({ id: item.id }, item.payload)));
  }

  function overBudget(item) {
    if (runtime.inFlight !== item) return;
    runtime.inFlight = null;
    var seconds = (item.budgetMs / 1000).toFixed(1);
    item.resolve({
      id: item.id, ok: false,
      error: {
        kind: "budget", field: null,
        message: "That input took longer than its " + seconds + " s budget, so it was stopped and the Python " +
          "runtime restarted (about a second). Try a smaller value.",
      },
    });
    runtime.worker.terminate();
    runtime.worker = null;
    var waiting = runtime.queue.splice(0);
    startWorker();
    runtime.queue = waiting;
  }

  // request(op, payload, budgetMs, {background}) -> Promise of the worker's answer ({ok, result} or
  // {ok: false, error}). Background requests wait until no reader's request is queued.
  runtime.request = function (op, payload, budgetMs, options) {
    if (!runtime.worker && runtime.state !== "error") startWorker();
    return new Promise(function (resolve) {
      if (runtime.state === "error" && !runtime.worker) {
        resolve({ ok: false, error: { kind: "runtime", field: null, message: runtime.detail } });
        return;
      }
      runtime.queue.push({
        id: runtime.nextId++, payload: Object.assign({ op: op }, payload), budgetMs: budgetMs || 5000, resolve: resolve,
        background: !!(options && options.background),
      });
      pump();
    });
  };

  // stream(fn, args, onFrames, options) runs a live generator frame by frame; returns a controller.
  runtime.stream = function (fn, args, onFrames, options) {
    options = options || {};
    var controller = { id: null, paused: false, cancelled: false, done: false, asking: false };
    var budget = options.budgetMs || 4000;
    function next() {
      // One request at a time: a resume() can come while the timer of the last answer is still pending, and
      // two requests in flight at a stream's end made the second fail with "stream N is not running".
      if (controller.cancelled || controller.paused || controller.done || controller.asking) return;
      controller.asking = true;
      runtime.request("stream_next", { stream: controller.id, frames: options.framesPerCall || 1 }, budget)
        .then(function (answer) {
          controller.asking = false;
          if (controller.cancelled) return;
          if (!answer.ok) { controller.done = true; onFrames(null, answer.error); return; }
          controller.done = answer.result.done;
          onFrames(answer.result.frames, null, answer.result.done);
          if (!controller.done) setTimeout(next, options.delayMs || 0);
        });
    }
    controller.pause = function () { controller.paused = true; };
    controller.resume = function () { if (controller.paused) { controller.paused = false; next(); } };
    controller.cancel = function () {
      controller.cancelled = true;
      if (controller.id !== null) runtime.request("stream_cancel", { stream: controller.id }, 2000);
    };
    runtime.request("stream_start", { fn: fn, args: args }, budget).then(function (answer) {
      if (!answer.ok) { controller.done = true; onFrames(null, answer.error); return; }
      controller.id = answer.result.stream;
      if (controller.cancelled) { controller.cancel(); return; }
      next();
    });
    return controller;
  };

  // ---- components: one per element, released when its page goes away ------------------------
  //
  // As Material's own components do (one mount per element found, each returning its teardown), a
  // kind is registered with the selector that finds its elements and a mount(element, lifetime)
  // function. Everything a component adds outside its own element goes through its lifetime, which
  // ends when the element has left the document (document$ emits after instant navigation swapped
  // the page): listeners are removed, streams cancelled, timers cleared, observers disconnected,
  // charts purged. Listeners on the component's own elements die with them and need no release.
  var componentKinds = []; // {kind, selector, mount}, in the order they mount on a page
  var mountedComponents = []; // {kind, element, lifetime}
  var mountedKinds = new WeakMap(); // element -> {kind: true}: each kind mounts once per element
  var started = false; // the first page pass has run: a kind registered later mounts at once

  function Lifetime() {
    this.ended = false;
    this.releases = [];
  }
  // Run `release` when the component goes away (at once if it already has).
  Lifetime.prototype.add = function (release) {
    if (this.ended) release();
    else this.releases.push(release);
  };
  Lifetime.prototype.listen = function (target, type, handler, options) {
    target.addEventListener(type, handler, options);
    this.add(function () { target.removeEventListener(type, handler, options); });
  };
  // Hear the runtime's state changes (loading, ready, error) while the component lives.
  Lifetime.prototype.onRuntime = function (listener) {
    runtime.listeners.push(listener);
    this.add(function () {
      var index = runtime.listeners.indexOf(listener);
      if (index >= 0) runtime.listeners.splice(index, 1);
    });
  };
  Lifetime.prototype.end = function () {
    if (this.ended) return;
    this.ended = true;
    var releases = this.releases.splice(0);
    for (var i = releases.length - 1; i >= 0; i--) { // the reverse of the order they were added
      try { releases[i](); } catch (error) { console.warn("[calc] releasing a component:", error); }
    }
  };

  function mountKind(spec) {
    var mountedNow = [];
    document.querySelectorAll(spec.selector).forEach(function (element) {
      var kinds = mountedKinds.get(element);
      if (!kinds) { kinds = {}; mountedKinds.set(element, kinds); }
      if (kinds[spec.kind]) return;
      kinds[spec.kind] = true;
      var lifetime = new Lifetime();
      try {
        spec.mount(element, lifetime);
      } catch (error) {
        console.warn("[calc] mounting " + spec.kind + ":", error);
      }
      mountedComponents.push({ kind: spec.kind, element: element, lifetime: lifetime });
      mountedNow.push(element);
    });
    return mountedNow;
  }

  // Release every component whose element is no longer in the document, then take the page it was on
  // apart. That page is gone, but a heap snapshot showed each page left by instant navigation still
  // reachable from Material's viewport$ subscriptions (toc.follow's, now replaced: see mountTocFollow):
  // a closure held the old page's toc list, and through it (a node reaches its parent and children)
  // every element of the old page, its navigation included. Emptying the old article frees its widgets,
  // charts and tables; unhooking every element of the departed container from its parent, bottom-up,
  // leaves whatever a library still holds a lone element with its own text, not a page.
  var shownContainer = null; // Material's .md-container of the page mounted last (instant navigation swaps it)

  function dismantle(root) {
    var elements = root.querySelectorAll("*");
    for (var i = elements.length - 1; i >= 0; i--) elements[i].remove();
  }

  function releaseDeparted() {
    var departedArticles = [];
    mountedComponents = mountedComponents.filter(function (component) {
      if (component.element.isConnected) return true;
      component.lifetime.end();
      var article = component.element.closest("article");
      if (article && !article.isConnected && departedArticles.indexOf(article) < 0) departedArticles.push(article);
      return false;
    });
    departedArticles.forEach(function (article) { article.textContent = ""; });
    if (shownContainer && !shownContainer.isConnected) dismantle(shownContainer);
    shownContainer = document.querySelector(".md-container");
  }

  // component(kind, selector, mount(element, lifetime)): register a kind; on a page already shown, mount it now.
  runtime.component = function (kind, selector, mount) {
    var spec = { kind: kind, selector: selector, mount: mount };
    componentKinds.push(spec);
    if (started) mountKind(spec);
  };
  // The components alive now, [{kind, element}] (tests check that none is of a page left behind).
  runtime.mounted = function () {
    return mountedComponents.map(function (component) { return { kind: component.kind, element: component.element }; });
  };

  // ---- lazy assets: Plotly and KaTeX load only on pages that use them -----------------------

  var loaded = {};
  function loadScript(path) {
    if (!loaded[path]) {
      loaded[path] = new Promise(function (resolve, reject) {
        var script = document.createElement("script");
        script.src = new URL(path, ASSETS).href;
        script.onload = resolve;
        script.onerror = function () { reject(new Error("could not load " + path)); };
        document.head.appendChild(script);
      });
    }
    return loaded[path];
  }
  // A page with formulas names KaTeX's stylesheet in its head (overrides/main.html), where Material's instant
  // navigation keeps it; this adds it only to a page whose build did not (its link is looked for in the document,
  // not remembered: a stylesheet appended here is gone after the next navigation).
  function ensureStyle(path) {
    var href = new URL(path, ASSETS).href;
    var links = document.querySelectorAll('link[rel="stylesheet"]');
    for (var i = 0; i < links.length; i++) if (links[i].href === href) return;
    var link = document.createElement("link");
    link.rel = "stylesheet";
    link.href = href;
    document.head.appendChild(link);
  }

  // Each formula is rendered once, marked as it is (a page's formulas are looked for on each page pass).
  function renderMath(container) {
    var nodes = Array.prototype.filter.call(container.querySelectorAll(".arithmatex"), function (node) {
      if (node.dataset.mathRendered) return false;
      node.dataset.mathRendered = "1";
      return true;
    });
    if (!nodes.length) return;
    ensureStyle("vendor/katex/katex.min.css");
    loadScript("vendor/katex/katex.min.js").then(function () {
      nodes.forEach(function (node) {
        var text = node.textContent.replace(/\u00a0/g, " ").trim();
        var display = node.tagName === "DIV";
        var tex = text.replace(/^\\\[|\\\]$/g, "").replace(/^\\\(|\\\)$/g, "");
        try {
          window.katex.render(tex, node, { displayMode: display, throwOnError: false, output: "htmlAndMathml" });
        } catch (error) { /* keep the TeX source visible */ }
      });
    });
  }

  // ---- charts -------------------------------------------------------------------------------

  // Plotly parses rgb() and hex, not every CSS colour Material uses (hsla with "deg"): let the
  // browser resolve a custom property to rgb() through a probe element. Resolving forces a style
  // pass, so the colours are read once per colour scheme, not once per chart.
  function cssColour(property, fallback) {
    var probe = document.createElement("span");
    probe.style.color = "var(" + property + ")";
    probe.style.display = "none";
    document.body.appendChild(probe);
    var colour = getComputedStyle(probe).color;
    probe.remove();
    return colour || fallback;
  }

  var themeColours = null; // {scheme, fg, grid}
  function currentColours() {
    var scheme = document.body.getAttribute("data-md-color-scheme") || "";
    if (!themeColours || themeColours.scheme !== scheme) {
      themeColours = {
        scheme: scheme,
        fg: cssColour("--md-default-fg-color", "#333"),
        grid: cssColour("--md-default-fg-color--lightest", "#ddd"),
      };
    }
    return themeColours;
  }

  function chartTheme(layout, bandPx) {
    var colours = currentColours(), fg = colours.fg, grid = colours.grid;
    var themed = JSON.parse(JSON.stringify(layout || {}));
    if (bandPx) withModeBarBand(themed, bandPx);
    themed.paper_bgcolor = "rgba(0,0,0,0)";
    themed.plot_bgcolor = "rgba(0,0,0,0)";
    themed.font = Object.assign({ family: "inherit", size: 13 }, themed.font || {}, { color: fg });
    if (themed.title && typeof themed.title === "object") {
      themed.title = Object.assign({}, themed.title, { font: Object.assign({}, themed.title.font || {}, { color: fg }) });
    }
    themed.legend = Object.assign({}, themed.legend || {}, { font: { color: fg } });
    Object.keys(themed).forEach(function (key) {
      if (/^[xy]axis\d*$/.test(key)) {
        themed[key] = Object.assign({ gridcolor: grid, zerolinecolor: grid, linecolor: grid }, themed[key]);
      }
    });
    ["xaxis", "yaxis"].forEach(function (axis) {
      if (!themed[axis]) themed[axis] = { gridcolor: grid, zerolinecolor: grid, linecolor: grid };
    });
    themed.autosize = true;
    delete themed.width;
    return themed;
  }

  // Plotly's mode bar sits at a chart's top right, on top of the plot; a centred title reaches it once the chart is
  // narrow (a phone, an admonition) or the title long. Such a chart gets a band of its own for the mode bar above
  // the title: the top margin and the height grow by the band, the title is centred in the margin below it, and the
  // plot area, its annotations and its legend keep their sizes. Whether a chart needs one is foreseen before its
  // first draw (the title measured in the chart's font, the bar as wide as the last one drawn) and checked on
  // the drawn chart, where a miss is corrected by one relayout.
  var PLOTLY_MARGIN_TOP_PX = 100, PLOTLY_HEIGHT_PX = 450; // Plotly's defaults, for a layout that sets neither
  var modeBar = { widthPx: 200, heightPx: 28 }; // the bar's size as last measured (7 buttons: 192 x 26 px)
  var measureCanvas = null;

  function withModeBarBand(layout, bandPx) {
    var margin = layout.margin = Object.assign({}, layout.margin || {});
    var top = margin.t === undefined ? PLOTLY_MARGIN_TOP_PX : margin.t;
    var height = (layout.height || PLOTLY_HEIGHT_PX) + bandPx;
    margin.t = top + bandPx;
    layout.height = height;
    if (layout.title) {
      var title = typeof layout.title === "object" ? Object.assign({}, layout.title) : { text: String(layout.title) };
      layout.title = Object.assign(title, { yref: "container", y: 1 - (bandPx + top / 2) / height, yanchor: "middle" });
    }
  }

  function titleText(layout) {
    var title = layout && layout.title;
    return (title && typeof title === "object" ? title.text : title) || "";
  }

  function foreseenBand(holder, layout) {
    var text = titleText(layout).replace(/<[^>]*>/g, "");
    var width = holder.clientWidth;
    if (!text || !width) return 0;
    var titleFont = (layout.title && layout.title.font) || {};
    var size = titleFont.size || 1.4 * ((layout.font && layout.font.size) || 13);
    var top = layout.margin && layout.margin.t !== undefined ? layout.margin.t : PLOTLY_MARGIN_TOP_PX;
    if (top / 2 - 0.6 * size >= modeBar.heightPx) return 0; // the title sits below the bar already
    measureCanvas = measureCanvas || document.createElement("canvas");
    var context = measureCanvas.getContext("2d");
    context.font = size + "px " + getComputedStyle(holder).fontFamily;
    var titleRight = width / 2 + context.measureText(text).width / 2;
    return titleRight > width - modeBar.widthPx - 4 ? modeBar.heightPx + 2 : 0;
  }

  function overlaps(a, b) {
    return Math.min(a.right, b.right) > Math.max(a.left, b.left) && Math.min(a.bottom, b.bottom) > Math.max(a.top, b.top);
  }

  // On a drawn chart in view: the band it needs (0 when its bar and title are clear); the bar's size noted.
  function measuredBand(holder) {
    var bar = holder.querySelector(".modebar"), title = holder.querySelector(".gtitle");
    if (!bar || !title || (holder.checkVisibility && !holder.checkVisibility())) return 0;
    var barBox = bar.getBoundingClientRect(), titleBox = title.getBoundingClientRect();
    if (!barBox.width) return 0;
    modeBar.widthPx = Math.ceil(barBox.width);
    modeBar.heightPx = Math.ceil(barBox.bottom - holder.getBoundingClientRect().top);
    return overlaps(barBox, titleBox) ? modeBar.heightPx + 2 : 0;
  }

  // After a draw, a resize, or a fold opening: give the chart the band it turns out to need (a band only grows).
  function clearModeBar(holder) {
    if (!window.Plotly || !holder.isConnected || !holder.__figure) return;
    var band = measuredBand(holder);
    if (band <= (holder.__modeBarBand || 0)) return;
    holder.__modeBarBand = band;
    var banded = chartTheme(holder.__figure.layout, band);
    window.Plotly.relayout(holder, { "margin.t": banded.margin.t, height: banded.height, title: banded.title });
  }

  var plotConfig = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["select2d", "lasso2d"] };
  // A chart under 400 px wide (every chart on a phone, a dashboard's small multiples) has no room to zoom or pan in,
  // and the bar (about 200 px) would cover its title or its plot: it goes without.
  var SMALL_CHART_PX = 400;
  var smallChartConfig = Object.assign({}, plotConfig, { displayModeBar: false });
  function chartConfig(holder) {
    if (holder.__small === undefined && holder.clientWidth) holder.__small = holder.clientWidth < SMALL_CHART_PX;
    return holder.__small ? smallChartConfig : plotConfig;
  }

  // The chart's numbers as a table (its text alternative), rows of (series, x, y) as
  // hooks/widget_html.py renders them at build. The table sits in a closed <details>: it is
  // rebuilt when the reader opens it (the chart component listens), not on every redraw (a
  // 200-row table costs a task of its own).
  var MAX_CHART_ROWS = 200;
  var wholeNumber = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
  function formatCell(value) {
    if (typeof value !== "number") return String(value);
    if (Number.isInteger(value) || Math.abs(value) >= 1e4) return wholeNumber.format(Math.round(value));
    return String(Number(value.toPrecision(4)));
  }
  function chartTable(holder) {
    return holder.parentNode ? holder.parentNode.querySelector('[data-chart-table="' + holder.dataset.chart + '"]') : null;
  }
  function fillChartTable(table, figure) {
    var body = table.querySelector("tbody");
    var rows = [];
    (figure.data || []).forEach(function (trace) {
      var xs = trace.x || [], ys = trace.y || [];
      if (trace.orientation === "h") { var swap = xs; xs = ys; ys = swap; }
      for (var i = 0; i < Math.min(xs.length, ys.length) && rows.length < MAX_CHART_ROWS; i++) {
        rows.push([trace.name || "", xs[i], ys[i]]);
      }
    });
    var fragment = document.createDocumentFragment();
    rows.forEach(function (row) {
      var tr = document.createElement("tr");
      row.forEach(function (cell) {
        var td = document.createElement("td");
        td.textContent = formatCell(cell);
        tr.appendChild(td);
      });
      fragment.appendChild(tr);
    });
    body.textContent = "";
    body.appendChild(fragment);
  }
  function renderChartTable(holder, figure) {
    var table = chartTable(holder);
    if (!table) return;
    var details = table.closest("details");
    if (details && !details.open) {
      table.__figure = figure; // filled when opened
      return;
    }
    table.__figure = null;
    fillChartTable(table, figure);
  }

  // Drawing: one chart per task, charts the reader can see first, so no task holds the main thread
  // for long (a Plotly draw is 10-40 ms here) and a page with ten charts stays responsive while
  // they come up. A holder waiting for its turn carries data-pending; drawChart's promise settles
  // once that chart is on screen.
  var drawQueue = [];
  var drawScheduled = false;
  var visibility = typeof IntersectionObserver === "function" ? new IntersectionObserver(function (entries) {
    entries.forEach(function (entry) { entry.target.__nearView = entry.isIntersecting; });
  }, { rootMargin: "200px 0px" }) : null;

  // Each draw waits for the next frame to be rendered first, so the numbers (or the chart before) are
  // painted, and Plotly's own layout reads find the page already laid out instead of paying for it.
  function scheduleDraws() {
    if (drawScheduled || !drawQueue.length) return;
    drawScheduled = true;
    requestAnimationFrame(function () { setTimeout(drawNext, 0); });
  }

  function pick(test) {
    for (var i = 0; i < drawQueue.length; i++) if (test(drawQueue[i])) return i;
    return -1;
  }

  function drawNext() {
    drawScheduled = false;
    if (!drawQueue.length) return;
    // A chart the reader just changed first, then one in view, then the page's order.
    var index = pick(function (job) { return job.urgent; });
    if (index < 0) index = pick(function (job) { return job.holder.__nearView; });
    if (index < 0) index = 0;
    var job = drawQueue.splice(index, 1)[0];
    if (!job.holder.isConnected) { job.resolve(); scheduleDraws(); return; } // its page has gone
    plotNow(job.holder, job.holder.__figure).then(job.resolve, job.resolve).then(scheduleDraws);
  }

  function plotNow(holder, figure) {
    var first = !holder.dataset.drawn;
    var plot = first ? window.Plotly.newPlot : window.Plotly.react;
    holder.dataset.drawn = "1";
    var config = chartConfig(holder);
    if (first && holder.__modeBarBand === undefined) holder.__modeBarBand = config === plotConfig ? foreseenBand(holder, figure.layout) : 0;
    var result;
    try {
      result = plot(holder, figure.data, chartTheme(figure.layout, holder.__modeBarBand), config);
    } catch (error) {
      result = Promise.reject(error);
    }
    return Promise.resolve(result).then(function () {
      delete holder.dataset.pending;
      // Drawn before the column had its final width (fonts, sidebars): fit it once laid out.
      if (first && !holder.dataset.fitted) {
        holder.dataset.fitted = "1";
        requestAnimationFrame(function () {
          if (!holder.isConnected || !holder.data) return;
          Promise.resolve(window.Plotly.Plots.resize(holder)).then(function () { clearModeBar(holder); });
        });
      }
    }, function () { delete holder.dataset.pending; });
  }

  // drawChart(holder, figure, {urgent, keepTable}) -> Promise that settles when the chart shows `figure`.
  function drawChart(holder, figure, options) {
    holder.__figure = figure;
    if (!(options && options.keepTable)) renderChartTable(holder, figure); // the build wrote it, or it holds this figure
    holder.dataset.pending = "1";
    if (visibility && !holder.__observed) { holder.__observed = true; visibility.observe(holder); }
    return loadScript("vendor/plotly/plotly-basic.min.js").then(function () {
      return new Promise(function (resolve) {
        for (var i = 0; i < drawQueue.length; i++) {
          if (drawQueue[i].holder === holder) { // a newer figure for a chart still waiting: one draw
            var earlier = drawQueue[i].resolve;
            drawQueue[i].resolve = function () { earlier(); resolve(); };
            drawQueue[i].urgent = drawQueue[i].urgent || !!(options && options.urgent);
            return;
          }
        }
        drawQueue.push({ holder: holder, resolve: resolve, urgent: !!(options && options.urgent) });
        scheduleDraws();
      });
    });
  }

  // The chart component: draws the build's figure, fills its numbers table when opened, and when its
  // page goes away takes it out of the draw queue and the visibility observer and purges Plotly's
  // chart (Plotly keeps a window resize listener per responsive chart until it is purged).
  function mountChart(holder, lifetime) {
    var table = chartTable(holder);
    var details = table && table.closest("details");
    if (details) {
      lifetime.listen(details, "toggle", function () {
        if (details.open && table.__figure) { fillChartTable(table, table.__figure); table.__figure = null; }
      });
    }
    var fold = holder.closest("details");
    if (fold) lifetime.listen(fold, "toggle", function () { if (fold.open && holder.dataset.drawn) clearModeBar(holder); });
    lifetime.add(function () {
      for (var i = drawQueue.length - 1; i >= 0; i--) {
        if (drawQueue[i].holder === holder) drawQueue.splice(i, 1)[0].resolve();
      }
      if (visibility && holder.__observed) visibility.unobserve(holder);
      if (window.Plotly && holder.dataset.drawn) window.Plotly.purge(holder);
      holder.__figure = null;
      holder.__modeBarBand = holder.__small = undefined;
      if (table) table.__figure = null;
    });
    if (holder.dataset.figure && !holder.dataset.drawn && !holder.dataset.pending) {
      try { drawChart(holder, JSON.parse(holder.dataset.figure), { keepTable: true }); } catch (error) { /* keep the caption */ }
    }
  }

  // Redraw in the other colours when the reader flips light/dark.
  new MutationObserver(function () {
    document.querySelectorAll("[data-chart][data-drawn]").forEach(function (holder) {
      if (holder.__figure) drawChart(holder, holder.__figure, { keepTable: true });
    });
  }).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });

  // ---- selects --------------------------------------------------------------------------------

  // A closed select shows its chosen option on one line, cut where the control ends. One whose widest option does
  // not fit takes its form's whole row (calc-control--wide); where even that is too narrow (a phone), its text is
  // set smaller, to no less than 12 px, so that any option reads whole once chosen. Fitted once laid out, again
  // when the window resizes or its fold opens.
  var SELECT_ARROW_PX = 24, SELECT_MIN_FONT_PX = 12;
  function fitSelect(select) {
    if (!select.isConnected || (select.checkVisibility && !select.checkVisibility())) return;
    select.style.fontSize = "";
    var style = getComputedStyle(select);
    measureCanvas = measureCanvas || document.createElement("canvas");
    var context = measureCanvas.getContext("2d");
    context.font = style.fontWeight + " " + style.fontSize + " " + style.fontFamily;
    var widest = 0;
    for (var i = 0; i < select.options.length; i++) widest = Math.max(widest, context.measureText(select.options[i].text).width);
    function room() {
      return select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - SELECT_ARROW_PX;
    }
    if (widest <= room()) return;
    var control = select.closest(".calc-control");
    if (control) control.classList.add("calc-control--wide");
    var available = room();
    if (widest > available) {
      select.style.fontSize = Math.max(SELECT_MIN_FONT_PX, Math.floor(parseFloat(style.fontSize) * available / widest)) + "px";
    }
  }
  function mountSelectFit(select, lifetime) {
    var timer = null;
    var fit = function () { fitSelect(select); };
    requestAnimationFrame(fit);
    lifetime.listen(window, "resize", function () { clearTimeout(timer); timer = setTimeout(fit, 150); });
    lifetime.add(function () { clearTimeout(timer); });
    var fold = select.closest("details");
    if (fold) lifetime.listen(fold, "toggle", function () { if (fold.open) fit(); });
  }

  // ---- widgets --------------------------------------------------------------------------------

  function formValues(form) {
    var values = {};
    Array.prototype.forEach.call(form.elements, function (element) {
      if (!element.name) return;
      values[element.name] = element.type === "checkbox" ? element.checked : element.value;
    });
    return values;
  }

  function showError(widget, message) {
    var box = widget.querySelector("[data-error]");
    if (box) box.textContent = message || "";
  }

  function setWidgetState(widget, state) { widget.dataset.state = state; }

  // A call in flight: aria-busy at once (assistive technology waits for the answer before reading the
  // outputs; no style depends on it), but the visible "computing" state only once the answer is late.
  // Most answers come back in 10-30 ms: painting the dimmed outputs and then the numbers costs the main
  // thread a frame (and the worker CPU on a 2-core machine) for a flash the reader would not see.
  var COMPUTING_DELAY_MS = 100;
  function markBusy(widget) {
    widget.setAttribute("aria-busy", "true");
    clearTimeout(widget.__computingTimer);
    widget.__computingTimer = setTimeout(function () { setWidgetState(widget, "computing"); }, COMPUTING_DELAY_MS);
  }

  // The answer of call `answer` is written: leave the busy state for `state`, then tell listeners
  // (calc:answered, detail {id, ok, ms}: the bench and tests time a recompute on it).
  function settle(widget, state, answer, startedAt) {
    clearTimeout(widget.__computingTimer);
    widget.__computingTimer = null;
    widget.removeAttribute("aria-busy");
    setWidgetState(widget, state);
    widget.dispatchEvent(new CustomEvent("calc:answered", {
      detail: { id: answer.id, ok: !!answer.ok, ms: performance.now() - startedAt },
    }));
  }

  // Write `text` only when it differs: replacing a text node with the same words still costs a layout.
  function setText(element, text) {
    if (element.textContent !== text) element.textContent = text;
  }

  // A widget's table: cells of the same shape are rewritten in place (only those whose text changed),
  // otherwise the body is rebuilt off the document and swapped in once.
  function fillTableBody(body, rows) {
    var trs = body.rows;
    var sameShape = trs.length === rows.length && rows.every(function (row, i) { return trs[i].cells.length === row.length; });
    if (sameShape) {
      rows.forEach(function (row, i) {
        row.forEach(function (cell, j) { setText(trs[i].cells[j], String(cell)); });
      });
      return;
    }
    var fragment = document.createDocumentFragment();
    rows.forEach(function (row) {
      var tr = document.createElement("tr");
      row.forEach(function (cell) {
        var td = document.createElement("td");
        td.textContent = cell;
        tr.appendChild(td);
      });
      fragment.appendChild(tr);
    });
    body.textContent = "";
    body.appendChild(fragment);
  }

  function applyView(widget, view) {
    Object.keys(view.outputs || {}).forEach(function (key) {
      var element = widget.querySelector('[data-output="' + key + '"]');
      if (element) setText(element, view.outputs[key].text);
    });
    var draws = [];
    Object.keys(view.figures || {}).forEach(function (key) {
      var holder = widget.querySelector('[data-chart="' + key + '"]');
      if (!holder) return;
      draws.push(drawChart(holder, view.figures[key], { urgent: true }));
      var caption = widget.querySelector('[data-chart-summary="' + key + '"]');
      if (caption && view.figures[key].summary) setText(caption, view.figures[key].summary);
    });
    Object.keys(view.tables || {}).forEach(function (key) {
      var tableEl = widget.querySelector('[data-table="' + key + '"]');
      if (!tableEl) return;
      fillTableBody(tableEl.querySelector("tbody"), view.tables[key].rows);
      var caption = tableEl.querySelector("caption"); // it may name the inputs ("400 requests at 4/s")
      if (caption && view.tables[key].caption) setText(caption, view.tables[key].caption);
    });
    widget.dispatchEvent(new CustomEvent("calc:view", { detail: view }));
    return Promise.all(draws);
  }

  function setStatusNote(widget, text) {
    var note = widget.querySelector("[data-status]");
    if (note) note.textContent = text;
  }

  // The build's note says how to go live; once Python is ready (or has failed), the note says so.
  function whenReady(widget, lifetime) {
    function onRuntime(state, detail) {
      if (state === "ready") markLive(widget);
      if (state === "error") setStatusNote(widget, detail);
    }
    if (runtime.state === "ready") { markLive(widget); return; }
    lifetime.onRuntime(onRuntime);
    if (runtime.state === "error") setStatusNote(widget, runtime.detail);
  }

  function markLive(widget) {
    if (widget.dataset.state === "static") setWidgetState(widget, "live");
    setStatusNote(widget, widget.dataset.kind === "drill"
      ? "Live: answers are checked by calc running in your browser."
      : "Live: recomputed by calc running in your browser.");
  }

  // A call's answer may come back after its page has gone: it is then dropped.
  function clearBusyTimer(widget) {
    clearTimeout(widget.__computingTimer);
    widget.__computingTimer = null;
  }

  function mountWidget(widget, lifetime) {
    var form = widget.querySelector("form");
    var budget = Number(widget.dataset.budgetMs) || 5000;
    var generation = 0;
    var timer = null;

    function recompute() {
      var mine = ++generation;
      var startedAt = performance.now();
      markBusy(widget);
      // A component may make the call itself (calc-pool.js: the planner's simulations across workers).
      var call = widget.calcCall || function (args, budgetMs) {
        return runtime.request("call", { fn: widget.dataset.widget, args: args }, budgetMs);
      };
      call(formValues(form), budget).then(function (answer) {
        if (lifetime.ended || mine !== generation) return; // its page has gone, or a newer input has been sent since
        if (answer.ok) {
          showError(widget, "");
          // The numbers show now; the charts follow in tasks of their own. data-charts says
          // whether they have caught up with the numbers ("drawing" or "drawn").
          widget.dataset.charts = "drawing";
          applyView(widget, answer.result).then(function () {
            if (lifetime.ended || mine !== generation) return;
            widget.dataset.charts = "drawn";
            widget.dispatchEvent(new CustomEvent("calc:drawn"));
          });
          settle(widget, "live", answer, startedAt);
        } else {
          showError(widget, answer.error.message);
          settle(widget, "error", answer, startedAt);
        }
      });
    }
    function schedule(delay) {
      clearTimeout(timer);
      timer = setTimeout(recompute, delay);
    }
    lifetime.add(function () { clearTimeout(timer); clearBusyTimer(widget); generation++; delete widget.recompute; });
    lifetime.listen(form, "input", function (event) { schedule(event.target.tagName === "SELECT" ? 0 : 200); });
    lifetime.listen(form, "change", function () { schedule(0); });
    lifetime.listen(form, "submit", function (event) { event.preventDefault(); schedule(0); });
    widget.recompute = recompute;
    whenReady(widget, lifetime);
  }

  function mountDrill(widget, lifetime) {
    var form = widget.querySelector("form");
    var input = form.querySelector('[name="answer"]');
    var budget = Number(widget.dataset.budgetMs) || 5000;
    var verdict = widget.querySelector('[data-output="verdict"]');
    var explanation = widget.querySelector("[data-explanation]");

    lifetime.add(function () { clearBusyTimer(widget); });
    lifetime.listen(form, "submit", function (event) {
      event.preventDefault();
      var args = { seed: Number(widget.dataset.seed) };
      var startedAt = performance.now();
      markBusy(widget);
      runtime.request("check", { fn: widget.dataset.widget, args: args, answer: input.value }, budget).then(function (answer) {
        if (lifetime.ended) return;
        if (!answer.ok) {
          // An answer calc cannot read has no verdict: the last answer's "Right"/"Not quite" must not stay
          // beside the error as if it were this answer's.
          verdict.textContent = "";
          delete verdict.dataset.correct;
          showError(widget, answer.error.message);
          settle(widget, "error", answer, startedAt);
          return;
        }
        showError(widget, "");
        verdict.textContent = answer.result.message + (answer.result.correct ? "" : " The answer is " + answer.result.expected_text + ".");
        verdict.dataset.correct = String(answer.result.correct);
        widget.querySelector('[data-output="explanation"]').textContent = answer.result.explanation;
        explanation.hidden = false;
        explanation.open = true;
        settle(widget, "live", answer, startedAt);
      });
    });
    lifetime.listen(form.querySelector('[data-action="new"]'), "click", function () {
      var seed = 1 + Math.floor(Math.random() * 999999);
      var startedAt = performance.now();
      markBusy(widget);
      runtime.request("drill", { fn: widget.dataset.widget, args: { seed: seed } }, budget).then(function (answer) {
        if (lifetime.ended) return;
        if (!answer.ok) { showError(widget, answer.error.message); settle(widget, "error", answer, startedAt); return; }
        widget.dataset.seed = String(seed);
        widget.querySelector('[data-output="question"]').textContent = answer.result.question;
        widget.querySelector('[data-output="explanation"]').textContent = answer.result.explanation;
        input.value = "";
        verdict.textContent = "";
        delete verdict.dataset.correct;
        explanation.hidden = true;
        showError(widget, "");
        settle(widget, "live", answer, startedAt);
        input.focus();
      });
    });
    whenReady(widget, lifetime);
  }

  // ---- the runtime status badge (loading, ready, failed with the reason) -----------------

  var BADGE_LABELS = { idle: "Python: idle", loading: "Python: loading…", ready: "Python: ready", error: "Python: off" };

  // Mounted on Material's header: the badge is added to it and follows the runtime's state.
  function mountStatusBadge(host, lifetime) {
    var badge = host.querySelector("[data-runtime-status]");
    if (!badge) {
      badge = document.createElement("span");
      badge.setAttribute("data-runtime-status", "");
      badge.setAttribute("role", "status");
      badge.className = "calc-runtime-status";
      host.appendChild(badge);
    }
    function render() {
      var text = BADGE_LABELS[runtime.state] || runtime.state;
      if (runtime.state === "loading" && typeof runtime.progress === "number") {
        text = "Python: loading " + Math.round(runtime.progress * 100) + "%";
      }
      setText(badge, text);
      badge.title = runtime.detail;
      badge.dataset.state = runtime.state;
    }
    lifetime.onRuntime(render);
    render();
  }

  // ---- a page: release what the last one left, mount this one's components, warm its widgets -------

  // The table of contents follows the reading position: when the entry of the section in view changes,
  // it is brought to the middle of its scrolling sidebar. Material's own toc.follow does this, but in
  // Material 9.8.2 that subscription outlives its page (it combines with main$, which never completes,
  // and takes viewport$ twice): a heap snapshot counted 3 more viewport$ subscribers for every page
  // seen, each holding the page it was made for, so the heap grew with the visit. The feature is off in
  // mkdocs.yml; this component does the same from the classes Material's table of contents sets, and is
  // released with its page.
  function mountTocFollow(list, lifetime) {
    var active = null;
    var observer = new MutationObserver(function () {
      var link = list.querySelector(".md-nav__link--active");
      if (link === active) return;
      active = link;
      var container = link && link.offsetHeight ? link.closest(".md-sidebar__scrollwrap") : null;
      if (!container) return;
      var top = link.getBoundingClientRect().top - container.getBoundingClientRect().top + container.scrollTop;
      container.scrollTo({ top: top - container.clientHeight / 2 });
    });
    observer.observe(list, { subtree: true, attributes: true, attributeFilter: ["class"] });
    lifetime.add(function () { observer.disconnect(); active = null; });
  }

  // ---- the on-call dashboards (steps 19, 20): one crosshair across their small multiples -------------
  // The panels share one time axis; hovering (or tapping, on a phone) a moment in one panel shows the same
  // moment in every other, so the metrics can be read side by side in time even two to a row at 390 px.
  var DASHBOARDS = '[data-widget="incident_p99_ttft.dashboard"], [data-widget="the_fix.fleet"]';
  function mountDashboardCrosshair(widget, lifetime) {
    var syncing = false;
    function charts() { return Array.prototype.slice.call(widget.querySelectorAll("[data-chart]")); }
    function follow(source, x) {
      if (syncing || !window.Plotly || !window.Plotly.Fx) return;
      syncing = true;
      try {
        charts().forEach(function (gd) {
          if (gd === source || !gd._fullLayout) return;
          if (x === null) window.Plotly.Fx.unhover(gd); else window.Plotly.Fx.hover(gd, { xval: x });
        });
      } finally { syncing = false; }
    }
    function attach(event) {
      var gd = event.target.closest && event.target.closest("[data-chart]");
      if (!gd || gd.calcCrosshair || typeof gd.on !== "function") return;
      gd.calcCrosshair = true;  // once per drawn chart; purging the chart drops its Plotly listeners
      gd.on("plotly_hover", function (data) { if (data.points && data.points.length) follow(gd, data.points[0].x); });
      gd.on("plotly_unhover", function () { follow(gd, null); });
    }
    lifetime.listen(widget, "pointerover", attach);
    lifetime.listen(widget, "pointerdown", attach);
  }

  runtime.component("dashboard-crosshair", DASHBOARDS, mountDashboardCrosshair);
  runtime.component("status-badge", ".md-header__inner", mountStatusBadge);
  runtime.component("toc-follow", ".md-nav--secondary > .md-nav__list", mountTocFollow);
  runtime.component("chart", "[data-chart]", mountChart);
  runtime.component("select-fit", "article .calc-control select", mountSelectFit);
  runtime.component("widget", '[data-widget][data-kind="widget"]', mountWidget);
  runtime.component("drill", '[data-widget][data-kind="drill"]', mountDrill);

  var warmRequested = new WeakSet();

  function mountPage() {
    releaseDeparted();
    started = true;
    renderMath(document.querySelector("article") || document.body);
    componentKinds.forEach(mountKind);
    var all = document.querySelectorAll("[data-widget]");
    if (all.length && !runtime.worker && runtime.state !== "error") startWorker();
    // Each widget is warmed once, whichever pass (document$, DOMContentLoaded) finds it first.
    var widgets = Array.prototype.filter.call(all, function (widget) { return !warmRequested.has(widget); });
    if (widgets.length && runtime.state !== "error") {
      widgets.forEach(function (widget) { warmRequested.add(widget); });
      // Have the worker import this page's widget modules as soon as it is ready.
      var names = widgets.map(function (w) { return w.dataset.widget; });
      runtime.request("warm", { names: names }, 30000);
      // Then run each widget once on the inputs it shows, in the background: the page already holds
      // these numbers, but the run fills calc's per-input caches (samples, step pricers, measurement
      // evaluations) and warms the interpreter, so the reader's first change answers sooner.
      widgets.forEach(function (widget) {
        // Nor a widget declared warm=False (the planner's: a run holds the worker for seconds).
        if (widget.dataset.kind !== "widget" || widget.dataset.warmed || widget.dataset.warm === "off") return;
        widget.dataset.warmed = "1";
        var form = widget.querySelector("form");
        // A widget without inputs (step 15's three autoscalers) only ever shows what the build drew: warming
        // it would rerun its simulations in the worker for nothing.
        if (!form || !form.elements.length) return;
        runtime.request("call", { fn: widget.dataset.widget, args: formValues(form) },
          Number(widget.dataset.budgetMs) || 5000, { background: true });
      });
    }
    markDocument(); // Material may have swapped the page: mark it again
    // A table wider than the article scrolls inside Material's wrapper; the keyboard must reach it too (axe:
    // scrollable-region-focusable). After Material's own document$ handler has wrapped the tables.
    setTimeout(focusScrollingTables, 0);
  }

  function focusScrollingTables() {
    document.querySelectorAll("article .md-typeset__scrollwrap").forEach(function (wrap) {
      if (wrap.scrollWidth > wrap.clientWidth && !wrap.hasAttribute("tabindex")) wrap.setAttribute("tabindex", "0");
    });
  }

  // Offline after the first visit: calc-offline.js registers the service worker once Python is ready.

  runtime.drawChart = drawChart;
  runtime.mountAdded = mountPage; // a component that adds content (the print view's steps) mounts what it added
  runtime.renderChartTable = renderChartTable;
  runtime.formatCell = formatCell;
  runtime.chartColours = currentColours;
  runtime.setStatusNote = setStatusNote;
  // Material's document$ emits on each instant navigation; a page opened from a file (where it may not
  // emit) or without Material is mounted once its body is parsed. A second pass over a page is a no-op.
  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(function () { mountPage(); });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { mountPage(); }, { once: true });
  } else {
    mountPage();
  }
})();
