// The replica panel: the reader's one replica of the running example, live on every lesson page.
//
// One panel, made once per page load and kept outside the content Material swaps on instant
// navigation, so it lives for the whole visit; the simulation itself lives in the worker
// (calc/widgets/replica.py, keyed by this visit's id), one simulated second per frame. Collapsed it is
// one status line (simulated time, queue, p99 TTFT, Play and Pause); opened it shows the views the
// lesson teaches, the changes applied in order with Undo, and the export. It sits in the right-hand
// column where there is one (over the table of contents, never over the text), else at the bottom
// (the page gets room below its end, and it opens as a drawer). Its history of changes and its
// simulated time are kept in localStorage and replayed by the worker on a reload or in a new tab, so the
// clock does not go back. Each step's "Apply to my replica" button (hooks/replica.py) is a component of
// its page, released when the page goes away. Attributes: calc/widgets/contract.json.
(function () {
  "use strict";

  var runtime = window.calcRuntime;
  if (!runtime) return;

  var STORAGE_KEY = "calc-replica";
  var FN = "replica.live";
  var EXPORT_FN = "replica.export_scenario";
  var EFFECT_FN = "replica.change_effect_view";
  var TICK_MS = 500; // one simulated second per half second of reading: twice real time
  var POINTS = 120; // the sparklines' last two simulated minutes
  var scriptUrl = document.currentScript ? document.currentScript.src : location.href;
  var PLAYGROUND = new URL("../../lesson/22-playground/", scriptUrl).href;
  // What tests and the bench read: the panel's slowest main-thread handling of a batch of frames, and the count.
  var api = window.calcReplica = { slowestFrameMs: 0, frames: 0 };
  var visitId = "visit-" + Date.now().toString(36) + "-" + Math.floor(Math.random() * 1e9).toString(36);

  function isLessonPage() { return /\/lesson\//.test(location.pathname); }

  // ---- saved state -------------------------------------------------------------------------------
  function load() {
    var empty = { history: [], t_s: 0, applied: [], allocation: "paged", running: 0, queue: 0, ttft_p99_s: null };
    try {
      var saved = JSON.parse(localStorage.getItem(STORAGE_KEY) || "null");
      if (saved && Array.isArray(saved.history) && typeof saved.t_s === "number") return Object.assign(empty, saved);
    } catch (error) { /* storage off or damaged: start afresh */ }
    return empty;
  }
  function save(state) {
    try { localStorage.setItem(STORAGE_KEY, JSON.stringify(state)); } catch (error) { /* private mode */ }
  }

  // ---- formatting --------------------------------------------------------------------------------
  function seconds(value) {
    if (value === null || value === undefined) return "–";
    return value < 1 ? Math.round(value * 1000) + " ms" : value.toFixed(value < 10 ? 2 : 1) + " s";
  }
  function percent(value) { return value === null || value === undefined ? "–" : Math.round(value * 100) + "%"; }
  function clock(t) {
    var whole = Math.floor(t);
    var m = Math.floor(whole / 60), s = whole % 60;
    return m ? m + " min " + (s < 10 ? "0" : "") + s + " s" : s + " s";
  }
  function whole(n) { return Math.round(n).toLocaleString("en-US"); }
  // Chat's own TTFT p99 where other classes share the replicas (calc.replica: steps 19 and 20, what pools protect).
  function chatPart(value) { return value === null || value === undefined ? "" : " (chat " + seconds(value) + ")"; }

  // ---- the panel's DOM ---------------------------------------------------------------------------
  var VIEWS = [
    ["memory", "Memory per GPU"], ["blocks", "KV blocks"], ["batch", "Batch and queue"],
    ["latency", "TTFT and ITL"], ["util", "GPU-Util and real compute use"], ["cost", "Cost per million tokens"],
  ];
  var SVG = "http://www.w3.org/2000/svg";

  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function button(text, className) {
    var node = element("button", "md-button calc-replica__button " + (className || ""), text);
    node.type = "button";
    return node;
  }
  function sparkline(lines) {
    var svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("viewBox", "0 0 120 32");
    svg.setAttribute("preserveAspectRatio", "none");
    svg.setAttribute("class", "calc-replica__spark");
    svg.setAttribute("aria-hidden", "true");
    var polylines = lines.map(function (name) {
      var line = document.createElementNS(SVG, "polyline");
      line.setAttribute("class", "calc-replica__line calc-replica__line--" + name);
      svg.appendChild(line);
      return line;
    });
    return { svg: svg, lines: polylines };
  }

  function build() {
    var root = element("aside", "calc-replica");
    root.dataset.replica = "";
    root.setAttribute("aria-label", "My replica: the live simulation you change step by step");
    var bar = element("div", "calc-replica__bar");
    var toggle = button("My replica", "calc-replica__toggle");
    toggle.setAttribute("aria-expanded", "false");
    var chevron = element("span", "calc-replica__chevron", "\u25B4"); // not part of its name: aria-hidden
    chevron.setAttribute("aria-hidden", "true");
    toggle.appendChild(chevron);
    toggle.setAttribute("aria-controls", "calc-replica-body");
    var status = element("span", "calc-replica__status");
    var play = button("Play", "calc-replica__play");
    var pause = button("Pause", "calc-replica__pause");
    bar.appendChild(toggle);
    bar.appendChild(status);
    bar.appendChild(play);
    bar.appendChild(pause);
    var body = element("div", "calc-replica__body");
    body.id = "calc-replica-body";
    body.hidden = true;
    var intro = element("p", "calc-replica__intro",
      "One replica of the running example (Llama 3.1 70B on four H100s) under the lesson's traffic. " +
      "Each step's \u201cApply to my replica\u201d button redeploys it with that step's change; the clock keeps counting.");
    body.appendChild(intro);
    var grid = element("div", "calc-replica__views");
    var views = {};
    VIEWS.forEach(function (spec) {
      var figure = element("figure", "calc-replica__view");
      figure.dataset.replicaView = spec[0];
      var caption = element("figcaption", "calc-replica__view-title", spec[1]);
      var value = element("p", "calc-replica__value", "–");
      var lines = { memory: ["weights", "kv"], blocks: ["kv"], batch: ["running", "queue"], latency: ["ttft", "itl"],
        util: ["gpu", "compute"], cost: ["cost"] }[spec[0]];
      var spark = sparkline(lines);
      figure.appendChild(caption);
      figure.appendChild(value);
      figure.appendChild(spark.svg);
      grid.appendChild(figure);
      views[spec[0]] = { value: value, spark: spark };
    });
    body.appendChild(grid);
    body.appendChild(element("h2", "calc-replica__heading", "Applied, in order"));
    var applied = element("ol", "calc-replica__applied");
    body.appendChild(applied);
    var actions = element("div", "calc-replica__actions");
    var undo = button("Undo", "calc-replica__undo");
    var exportButton = button("Export scenario JSON", "calc-replica__export");
    var playground = element("a", "md-button calc-replica__button calc-replica__playground", "Open in the playground");
    playground.href = PLAYGROUND;
    // "Reset to step N" on a step's page: the replica as the lesson has it at that step (calc.replica.LESSON_CHANGES).
    var reset = button("Reset to this step", "calc-replica__reset");
    actions.appendChild(undo);
    actions.appendChild(reset);
    actions.appendChild(exportButton);
    actions.appendChild(playground);
    body.appendChild(actions);
    var note = element("p", "calc-replica__note", "");
    note.setAttribute("role", "status");
    body.appendChild(note);
    root.appendChild(bar);
    root.appendChild(body);
    return { root: root, toggle: toggle, chevron: chevron, status: status, play: play, pause: pause, body: body, views: views,
      applied: applied, undo: undo, reset: reset, exportButton: exportButton, playground: playground, note: note };
  }

  // ---- the panel ---------------------------------------------------------------------------------
  var ui = null;
  var state = load();
  var run = { controller: null, playing: false, timer: null, resumeOnShow: false, catchingUp: false };
  var series = { weights: [], kv: [], blocks: [], running: [], queue: [], ttft: [], itl: [], gpu: [], compute: [], cost: [] };
  var labels = {}; // step -> label, from the buttons seen and the history
  var applyButtons = []; // the page's "Apply to my replica" buttons' refresh functions (their components' lifetimes)
  var pending = null; // {step, action} sent to the worker, until a frame shows it done (or an error comes back)
  var resumedFromSave = state.t_s > 0; // a reload or a new tab: the saved replica waits for Play, and says so

  function writeRoot() {
    var root = ui.root;
    root.dataset.simTimeS = String(state.t_s);
    root.dataset.applied = state.applied.join(",");
    root.dataset.allocation = state.allocation;
    root.dataset.running = String(state.running);
    var paused = !run.playing && !run.catchingUp && state.t_s > 0;
    ui.status.textContent = (paused ? (resumedFromSave ? "Paused since you left \u00b7 Play resumes" : "Paused") + " \u00b7 " : "") +
      "t = " + clock(state.t_s) + " \u00b7 queue " + whole(state.queue) + " \u00b7 p99 TTFT " +
      seconds(state.ttft_p99_s) + chatPart(state.chat_ttft_p99_s) + (run.catchingUp ? " \u00b7 catching up" : "");
    ui.play.disabled = run.playing;
    ui.pause.disabled = !run.playing;
    ui.undo.disabled = !state.applied.length || !!pending;
    var step = pageStep();
    ui.reset.hidden = !step;
    ui.reset.textContent = "Reset to step " + step;
    ui.reset.disabled = !!pending;
    applyButtons.forEach(function (refresh) { refresh(); });
  }

  // What a step's change is now: "applied" (in force), "top" (in force and the last applied: Undo takes it off),
  // "pending" (sent, not yet shown by a frame) or "" (not applied).
  function changeState(step) {
    if (pending && pending.step === step) return "pending";
    var at = state.applied.lastIndexOf(step);
    if (at < 0) return "";
    return at === state.applied.length - 1 ? "top" : "applied";
  }

  // The lesson step of the page shown (its path: lesson/NN-...), or 0 off the lesson's steps.
  function pageStep() {
    var match = /\/lesson\/(\d\d)-/.exec(window.location.pathname);
    return match ? Number(match[1]) : 0;
  }

  function renderApplied() {
    var list = ui.applied;
    while (list.firstChild) list.removeChild(list.firstChild);
    // The changes in force, from the history: an undo takes the last apply off.
    var stack = [];
    state.history.forEach(function (entry) {
      if (entry.kind === "apply") stack.push(entry);
      else if (entry.kind === "reset") stack = entry.changes.map(function (c) { return { step: c.step, label: c.label, at_s: entry.at_s }; });
      else stack.pop();
    });
    if (!stack.length) list.appendChild(element("li", "calc-replica__none", "Nothing yet: the running example as it starts."));
    stack.forEach(function (entry) {
      list.appendChild(element("li", "", "Step " + entry.step + ": " + (entry.label || labels[entry.step] || "change") +
        " (at " + clock(entry.at_s) + ")"));
    });
  }

  function push(name, value) {
    var points = series[name];
    points.push(value === null || value === undefined ? null : value);
    if (points.length > POINTS) points.shift();
  }

  function draw(line, points, top) {
    var max = top || Math.max.apply(null, points.map(function (v) { return v || 0; }).concat([1e-9]));
    var coords = [];
    points.forEach(function (v, i) {
      if (v === null) return;
      coords.push((i * 120 / (POINTS - 1)).toFixed(1) + "," + (31 - 30 * Math.min(1, v / max)).toFixed(1));
    });
    line.setAttribute("points", coords.join(" "));
  }

  function renderViews(frame) {
    var v = ui.views;
    var gb = function (x) { return x.toFixed(1) + " GB"; };
    v.memory.value.textContent = "weights " + gb(frame.weights_gb_per_gpu) + " \u00b7 KV " + gb(frame.kv_used_gb_per_gpu) +
      " of " + gb(frame.kv_pool_gb_per_gpu) + " (" + frame.replicas + (frame.replicas === 1 ? " replica" : " replicas") + ")";
    v.blocks.value.textContent = whole(frame.kv_blocks_used) + " of " + whole(frame.kv_blocks_total) + " used (" +
      percent(frame.kv_blocks_total ? frame.kv_blocks_used / frame.kv_blocks_total : 0) + "), " + frame.allocation;
    v.batch.value.textContent = whole(frame.running) + " running \u00b7 " + whole(frame.queue) + " queued";
    v.latency.value.textContent = "TTFT p50 " + seconds(frame.ttft_p50_s) + ", p99 " + seconds(frame.ttft_p99_s) +
      chatPart(frame.chat_ttft_p99_s) + " \u00b7 ITL p50 " + seconds(frame.itl_p50_s) + ", p99 " + seconds(frame.itl_p99_s);
    // The seconds after a redeploy are the restart's transient (calc.replica.SETTLE_S), not the new steady state.
    if (frame.settling_s > 0) v.latency.value.textContent = "Redeploying: steady figures in " + Math.ceil(frame.settling_s) + " s";
    v.util.value.textContent = "GPU-Util " + percent(frame.gpu_util_reported) + " \u00b7 compute " + percent(frame.compute_utilization);
    v.cost.value.textContent = frame.usd_per_million_tokens === null ? "– (no tokens out yet)"
      : "$" + frame.usd_per_million_tokens.toFixed(2) + " per million output tokens";
    if (ui.body.hidden) return; // the sparklines are drawn only while someone can see them
    var mem = frame.weights_gb_per_gpu + frame.kv_pool_gb_per_gpu;
    draw(v.memory.spark.lines[0], series.weights, mem);
    draw(v.memory.spark.lines[1], series.kv, mem);
    draw(v.blocks.spark.lines[0], series.blocks, 1);
    var batchTop = Math.max.apply(null, series.running.concat(series.queue).concat([1]));
    draw(v.batch.spark.lines[0], series.running, batchTop);
    draw(v.batch.spark.lines[1], series.queue, batchTop);
    draw(v.latency.spark.lines[0], series.ttft);
    draw(v.latency.spark.lines[1], series.itl);
    draw(v.util.spark.lines[0], series.gpu, 1);
    draw(v.util.spark.lines[1], series.compute, 1);
    draw(v.cost.spark.lines[0], series.cost);
  }

  function applyFrame(frame) {
    run.catchingUp = !!frame.catching_up;
    state.t_s = Math.max(state.t_s, frame.t_s); // the clock never goes back
    if (frame.state) {
      state.history = frame.state.history;
      renderApplied();
    }
    state.applied = frame.applied;
    if (pending && (pending.action === "apply") === (frame.applied.indexOf(pending.step) >= 0)) pending = null;
    state.allocation = frame.allocation;
    state.running = frame.running;
    state.queue = frame.queue;
    state.ttft_p99_s = frame.ttft_p99_s;
    state.chat_ttft_p99_s = frame.chat_ttft_p99_s;
    if (!frame.catching_up) {
      push("weights", frame.weights_gb_per_gpu);
      push("kv", frame.kv_used_gb_per_gpu + frame.weights_gb_per_gpu);
      push("blocks", frame.kv_blocks_total ? frame.kv_blocks_used / frame.kv_blocks_total : 0);
      push("running", frame.running);
      push("queue", frame.queue);
      if (!(frame.settling_s > 0)) { // the restart's burst is left out of the latency lines
        push("ttft", frame.ttft_p99_s);
        push("itl", frame.itl_p99_s);
      }
      push("gpu", frame.gpu_util_reported);
      push("compute", frame.compute_utilization);
      push("cost", frame.usd_per_million_tokens);
      renderViews(frame);
    }
    save(state);
    writeRoot();
  }

  function savedArgs(change) {
    return {
      replica_id: visitId,
      state: JSON.stringify({ history: state.history, t_s: state.t_s }),
      change: change ? JSON.stringify(change) : "",
      speed: "1",
      frames: "600",
    };
  }

  function stopStream() {
    clearTimeout(run.timer);
    if (run.controller) run.controller.cancel();
    run.controller = null;
  }

  // A stream of frames from the worker; each batch pauses it, and the next tick (or at once while the
  // worker catches up on a replay) asks for more, so the page never holds more than a frame ahead.
  function startStream(change) {
    stopStream();
    var controller = runtime.stream(FN, savedArgs(change), function (frames, error, done) {
      if (run.controller !== controller) return;
      if (error) {
        run.controller = null;
        if (error.field === "stream" && run.playing) { startStream(null); return; } // dropped by the runtime
        run.playing = false;
        pending = null;
        ui.note.textContent = error.message;
        if (/^(state|history)/.test(error.field || "")) { // a saved state this calc cannot read: start afresh
          state = load();
          state.history = []; state.applied = []; state.t_s = 0;
          save(state);
          renderApplied();
          ui.note.textContent = "The saved replica could not be replayed (" + error.message + "); it starts afresh.";
        }
        writeRoot();
        return;
      }
      controller.pause();
      var started = performance.now();
      (frames || []).forEach(applyFrame);
      api.slowestFrameMs = Math.max(api.slowestFrameMs, performance.now() - started);
      api.frames += (frames || []).length;
      if (!run.playing && !run.catchingUp) { if (done) run.controller = null; return; }
      clearTimeout(run.timer);
      run.timer = setTimeout(function () {
        if (run.controller !== controller || !(run.playing || run.catchingUp)) return;
        if (done) startStream(null); // a stream is a few minutes; the run goes on in the worker under the same id
        else controller.resume();
      }, run.catchingUp ? 0 : TICK_MS);
    }, { budgetMs: 8000, framesPerCall: 1 });
    run.controller = controller;
  }

  function play() {
    if (run.playing) return;
    run.playing = true;
    resumedFromSave = false;
    ui.note.textContent = "";
    if (run.controller && !run.controller.done && !run.controller.cancelled) run.controller.resume();
    else startStream(null);
    writeRoot();
  }

  function pause() {
    run.playing = false;
    clearTimeout(run.timer);
    writeRoot();
  }

  function change(what) {
    run.playing = true; // a change is there to be watched
    resumedFromSave = false;
    if (what.action === "apply") pending = { step: what.step, action: "apply" };
    else if (what.action === "reset") pending = null; // the next frame's state shows the lesson's changes
    else if (state.applied.length) pending = { step: state.applied[state.applied.length - 1], action: "undo" };
    ui.note.textContent = "";
    startStream(what);
    writeRoot();
  }

  function setOpen(open) {
    ui.body.hidden = !open;
    ui.toggle.setAttribute("aria-expanded", String(open));
    ui.chevron.textContent = open ? "\u25BE" : "\u25B4";
    ui.root.classList.toggle("calc-replica--open", open);
    state.open = open;
    save(state);
    place();
  }

  function exportScenario() {
    ui.note.textContent = "Exporting\u2026";
    runtime.request("call", { fn: EXPORT_FN, args: { state: JSON.stringify({ history: state.history, t_s: state.t_s }) } }, 5000)
      .then(function (answer) {
        if (!answer.ok) { ui.note.textContent = answer.error.message; return; }
        var out = answer.result.outputs;
        var blob = new Blob([out.scenario_json.text + "\n"], { type: "application/json" });
        var link = document.createElement("a");
        link.href = URL.createObjectURL(blob);
        link.download = out.file_name.text;
        document.body.appendChild(link);
        link.click();
        link.remove();
        setTimeout(function () { URL.revokeObjectURL(link.href); }, 10000);
        ui.playground.href = PLAYGROUND + "?" + out.playground_query.text;
        ui.note.textContent = "Saved " + out.file_name.text + ". Run it with: " + out.command.text +
          ". The playground link now opens the same replica.";
      });
  }

  // In the right-hand column where there is one (over the table of contents), else at the bottom. The page keeps
  // room for it, so that it never covers a control or the footer's links: docked, the panel's own height (the bar,
  // or the opened drawer) below the page's end (body padding) and as the page's scroll padding (a control the
  // browser scrolls to, for a focus or a link, stops above the panel: --calc-replica-room, replica.css); beside the
  // text, it rises with the top of the footer as that scrolls into view (rise()).
  function place() {
    if (!ui) return;
    var side = document.querySelector(".md-sidebar--secondary");
    var wide = window.matchMedia("(min-width: 76.25em)").matches;
    var rect = side && wide ? side.getBoundingClientRect() : null;
    var docked = !rect || rect.width < 150;
    var html = document.documentElement;
    ui.root.classList.toggle("calc-replica--side", !docked);
    ui.root.classList.toggle("calc-replica--docked", docked);
    html.classList.toggle("calc-replica-docked", docked && !ui.root.hidden);
    if (docked) {
      ui.root.style.left = ui.root.style.width = ui.root.style.bottom = ui.root.style.maxHeight = "";
      var room = ui.root.hidden ? 0 : Math.ceil(ui.root.getBoundingClientRect().height) + 8;
      document.body.style.paddingBottom = room ? room + "px" : "";
      html.style.setProperty("--calc-replica-room", room + "px");
    } else {
      document.body.style.paddingBottom = "";
      html.style.removeProperty("--calc-replica-room");
      ui.root.style.left = Math.round(rect.left) + "px";
      ui.root.style.width = Math.round(rect.width) + "px";
      rise();
    }
  }

  // Beside the text: the panel's bottom at the end of Material's main area (the footer's top) once that is in view.
  function rise() {
    if (!ui || ui.root.hidden || !ui.root.classList.contains("calc-replica--side")) return;
    var main = document.querySelector(".md-main");
    var lift = main ? Math.max(0, Math.round(window.innerHeight - main.getBoundingClientRect().bottom)) : 0;
    ui.root.style.bottom = lift + "px";
    ui.root.style.maxHeight = "calc(100vh - 3.4rem - " + lift + "px)"; // and its top below Material's header
  }

  function mountPanel() {
    ui = build();
    document.body.appendChild(ui.root);
    ui.play.addEventListener("click", play);
    ui.pause.addEventListener("click", pause);
    ui.toggle.addEventListener("click", function () { setOpen(ui.body.hidden); });
    ui.undo.addEventListener("click", function () { if (state.applied.length && !pending) change({ action: "undo" }); });
    ui.reset.addEventListener("click", function () { if (!pending && pageStep()) change({ action: "reset", step: pageStep() }); });
    ui.exportButton.addEventListener("click", exportScenario);
    // Escape closes it from anywhere (a disabled button drops the focus out of the panel), unless a dialog of the
    // page (Material's search) has the focus.
    document.addEventListener("keydown", function (event) {
      if (event.key !== "Escape" || ui.body.hidden) return;
      var active = document.activeElement;
      if (active && active !== document.body && !ui.root.contains(active)) return;
      setOpen(false);
      ui.toggle.focus();
    });
    document.addEventListener("visibilitychange", function () {
      if (document.hidden && run.playing) { run.resumeOnShow = true; pause(); }
      else if (!document.hidden && run.resumeOnShow) { run.resumeOnShow = false; play(); }
    });
    window.addEventListener("resize", place);
    window.addEventListener("scroll", rise, { passive: true }); // scroll events come once a frame, before it is drawn
    // The bar's height changes as its status line wraps, the drawer's as it opens: the room follows.
    if (typeof ResizeObserver === "function") new ResizeObserver(function () { place(); }).observe(ui.root);
    renderApplied();
    writeRoot();
    setOpen(!!state.open);
  }

  // Each page pass (instant navigation included): the panel shows on lesson pages only.
  function onPage() {
    if (!isLessonPage()) {
      if (ui) { ui.root.hidden = true; pause(); place(); }
      return;
    }
    if (!ui) mountPanel();
    ui.root.hidden = false;
    place();
  }

  // The changes in force, from the history (an undo takes the last apply off, a reset puts the lesson's in place).
  function appliedStack(history) {
    var stack = [];
    history.forEach(function (entry) {
      if (entry.kind === "apply") stack.push(entry);
      else if (entry.kind === "reset") stack = entry.changes.slice();
      else stack.pop();
    });
    return stack;
  }

  // JSON with its keys sorted, so that two deltas compare by content (numbers as this page parsed them).
  function canonical(value) {
    if (Array.isArray(value)) return "[" + value.map(canonical).join(",") + "]";
    if (value && typeof value === "object") {
      return "{" + Object.keys(value).sort().map(function (key) {
        return JSON.stringify(key) + ":" + canonical(value[key]);
      }).join(",") + "}";
    }
    return JSON.stringify(value);
  }

  // Whether the replica holds exactly the changes the build computed a step's effect on (data-replica-path).
  function onPath(history, pathText) {
    var path;
    try { path = JSON.parse(pathText || "null"); } catch (error) { return false; }
    if (!Array.isArray(path)) return false;
    var stack = appliedStack(history);
    return stack.length === path.length && stack.every(function (entry, i) {
      return entry.step === path[i].step && canonical(entry.delta) === canonical(path[i].delta);
    });
  }

  // Beside an Apply button, once applied: what to watch and before -> after for the figures that move, computed in
  // calc (calc.replica.change_effect: the replica before and after the change, on one seed, the transient skipped).
  // The build pre-rendered it for the replica the lesson carries to this step (calc.replica.lesson_change_effect):
  // on that path it shows at once; a replica changed otherwise asks the worker.
  function showEffect(node, step, delta, before) {
    var holder = node.parentNode;
    var out = holder.querySelector(".calc-replica-effect");
    if (out && out.dataset.replicaPath !== undefined && onPath(before.history, out.dataset.replicaPath)) {
      out.textContent = out.dataset.replicaText;
      out.dataset.replicaEffect = "built";
      out.hidden = false;
      return;
    }
    if (!out) {
      out = element("p", "calc-replica-effect", "");
      out.setAttribute("aria-live", "polite");
      holder.appendChild(out);
    }
    out.dataset.replicaEffect = "live";
    out.hidden = false;
    out.textContent = "Measuring before \u2192 after\u2026";
    runtime.request("call", { fn: EFFECT_FN, args: { state: JSON.stringify(before), step: step,
      delta: JSON.stringify(delta) } }, 60000).then(function (answer) {
      if (!answer.ok) { out.textContent = answer.error.message; return; }
      out.textContent = answer.result.outputs.sentence.text;
    }, function () { out.textContent = ""; });
  }

  // A step's "Apply to my replica" button: a component of its page. It shows what the change is now: "Apply to my
  // replica"; "Applying..." once sent (disabled: a second click cannot apply it twice); "Applied \u00b7 Undo" while
  // it is the last change applied (a click undoes it); "Applied" while a later step's change sits on top of it.
  var BUTTON_TEXT = { "": "Apply to my replica", pending: "Applying\u2026", top: "Applied \u00b7 Undo", applied: "Applied" };
  runtime.component("replica-apply", "[data-apply-step]", function (node, lifetime) {
    var step = Number(node.dataset.applyStep);
    labels[step] = node.dataset.replicaLabel;
    function refresh() {
      var now = changeState(step);
      node.textContent = BUTTON_TEXT[now];
      node.disabled = now === "pending" || now === "applied";
      node.classList.toggle("md-button--primary", now === "");
      node.title = now === "applied" ? "A later step's change is applied on top of this one: undo it first (My replica)" : "";
    }
    applyButtons.push(refresh);
    lifetime.add(function () { applyButtons.splice(applyButtons.indexOf(refresh), 1); });
    lifetime.listen(node, "click", function () {
      var now = changeState(step);
      if (now === "top") { change({ action: "undo" }); return; }
      if (now !== "") return; // sent already, or in force under a later change: never applied twice
      var delta;
      try { delta = JSON.parse(node.dataset.replicaDelta); } catch (error) { return; }
      if (!ui) mountPanel();
      showEffect(node, step, delta, { history: state.history, t_s: state.t_s });
      change({ action: "apply", step: step, delta: delta, label: node.dataset.replicaLabel || "" });
    });
    refresh();
  });

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(function () { onPage(); });
  } else {
    onPage();
  }
})();
