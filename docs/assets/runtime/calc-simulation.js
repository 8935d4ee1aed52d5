// The live simulation view: runs a scenario in the worker and animates it frame by frame.
//
// The worker owns the simulation (a Python generator, one slice of work per request); this
// file only draws what each frame carries: new points for the time-series charts (traces
// name their series in `meta`), the metrics panel, and the KV block map of one replica on a
// canvas (one character per cell: "." free, "a"-"p" held by a request, "A"-"P" reserved
// by a request but not yet written, "z" cached prefix blocks no request holds).
(function () {
  "use strict";

  var runtime = window.calcRuntime;
  if (!runtime) return;

  var PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#B8A300", "#7F7F7F",
    "#1F4E79", "#A65E00", "#00664A", "#8A3E6E", "#2E86C1", "#922B21", "#6E6100", "#4D4D4D"];
  var SPEEDS = { "1": 1, "2": 2, "4": 4, "8": 8 };
  var TICK_MS = 120;
  // prefers-reduced-motion: each tick shows every frame that has come (the run is not played out frame by
  // frame) and the charts move at most every REDUCED_CHART_MS instead of CHART_MS.
  var reducedMotion = window.matchMedia ? window.matchMedia("(prefers-reduced-motion: reduce)") : { matches: false };
  var REDUCED_CHART_MS = 2000;

  function cellColour(code, style) {
    if (code === ".") return style.free;
    if (code === "z") return style.cached;
    var lower = code.toLowerCase();
    var index = lower.charCodeAt(0) - 97;
    if (index < 0 || index >= PALETTE.length) return style.free;
    return PALETTE[index];
  }

  // The map's colours, read once per colour scheme (reading them forces a style pass).
  var mapStyle = null;
  function blockMapStyle() {
    var scheme = document.body.getAttribute("data-md-color-scheme") || "";
    if (!mapStyle || mapStyle.scheme !== scheme) {
      var css = getComputedStyle(document.body);
      mapStyle = {
        scheme: scheme,
        free: css.getPropertyValue("--md-default-fg-color--lightest").trim() || "#e0e0e0",
        cached: css.getPropertyValue("--md-default-fg-color--lighter").trim() || "#9e9e9e",
        background: css.getPropertyValue("--md-default-bg-color").trim() || "#fff",
      };
    }
    return mapStyle;
  }

  // Blocks are a pool, not a grid, so on a narrow screen the map wraps to fewer columns rather
  // than shrinking its cells below MIN_CELL_PX, where a hollow (reserved) cell would look solid.
  var MIN_CELL_PX = 4;
  function drawBlockMap(canvas, map) {
    if (!map || !map.cells) return;
    var context = canvas.getContext("2d");
    var width = canvas.clientWidth || 600;
    var cell = Math.max(MIN_CELL_PX, Math.floor(width / map.cols));
    var cols = Math.max(1, Math.min(map.cols, Math.floor(width / cell)));
    var rows = Math.ceil(map.cells.length / cols);
    canvas.width = cols * cell;
    canvas.height = rows * cell;
    canvas.dataset.cellPx = String(cell);
    var style = blockMapStyle();
    context.fillStyle = style.background;
    context.fillRect(0, 0, canvas.width, canvas.height);
    for (var i = 0; i < map.cells.length; i++) {
      var code = map.cells.charAt(i);
      var x = (i % cols) * cell, y = Math.floor(i / cols) * cell;
      context.fillStyle = cellColour(code, style);
      context.fillRect(x, y, Math.max(1, cell - (cell > 3 ? 1 : 0)), Math.max(1, cell - (cell > 3 ? 1 : 0)));
      if (code >= "A" && code <= "P" && cell >= 3) {
        // reserved but unused: a hollow cell, so promises read differently from tokens
        context.fillStyle = style.background;
        var inset = Math.max(1, Math.floor(cell / 4));
        context.fillRect(x + inset, y + inset, Math.max(1, cell - 2 * inset - 1), Math.max(1, cell - 2 * inset - 1));
      }
    }
    canvas.setAttribute("aria-label", map.summary || "KV block map");
    var caption = canvas.parentNode.querySelector("[data-blockmap-summary]");
    if (caption && map.summary) caption.textContent = map.summary;
  }

  // The simulation component. When its page goes away the run stops: its stream is cancelled in the
  // worker, its animation timer cleared, its runtime listener removed.
  function mountSimulation(widget, lifetime) {
    var form = widget.querySelector("form.calc-controls");
    var budget = Number(widget.dataset.budgetMs) || 4000;
    var canvas = widget.querySelector("canvas[data-blockmap]");
    var buttons = {
      play: widget.querySelector('[data-action="play"]'),
      pause: widget.querySelector('[data-action="pause"]'),
      reset: widget.querySelector('[data-action="reset"]'),
    };
    var speed = widget.querySelector('[name="__speed"]');
    var progress = widget.querySelector("[data-sim-progress]");
    var run = null; // {controller, figures, queue, timer}

    if (canvas && canvas.dataset.blockmap) {
      try { drawBlockMap(canvas, JSON.parse(canvas.dataset.blockmap)); } catch (error) { /* keep it empty */ }
    }

    function formArgs() {
      var values = {};
      Array.prototype.forEach.call(form.elements, function (element) {
        if (!element.name || element.name.indexOf("__") === 0) return;
        values[element.name] = element.type === "checkbox" ? element.checked : element.value;
      });
      return values;
    }

    function setButtons(state) {
      widget.dataset.simState = state; // idle | playing | paused | done
      buttons.play.disabled = state === "playing";
      buttons.pause.disabled = state !== "playing";
    }

    function showError(message) {
      var box = widget.querySelector("[data-error]");
      box.textContent = message || "";
      widget.dataset.state = message ? "error" : "live";
    }

    function startRun() {
      if (lifetime.ended) return; // a late call (the playground's debounce) after the page has gone
      stopRun();
      showError("");
      var figures = {};
      var state = { queue: [], done: false, figures: figures, frames: 0, drawn: {} };
      run = state;
      widget.dataset.state = "computing";
      state.controller = runtime.stream(widget.dataset.widget, formArgs(), function (frames, error, done) {
        if (run !== state) return;
        if (error) { showError(error.message); setButtons("idle"); return; }
        Array.prototype.push.apply(state.queue, frames);
        if (done) state.done = true;
        state.controller.pause(); // the animation loop asks for more when it runs low
        state.waiting = false;
      }, { budgetMs: budget, framesPerCall: 4 });
      state.waiting = true;
      setButtons("playing");
      tick(state);
    }

    // Fold a frame into the run's state; charts are redrawn once per tick, not per frame.
    function applyFrame(state, frame) {
      state.frames += 1;
      Object.keys(frame.outputs || {}).forEach(function (key) {
        var element = widget.querySelector('[data-output="' + key + '"]');
        if (element) element.textContent = frame.outputs[key].text;
      });
      Object.keys(frame.figures || {}).forEach(function (key) {
        state.figures[key] = JSON.parse(JSON.stringify(frame.figures[key]));
        delete state.drawn[key];
      });
      var series = frame.series || {};
      Object.keys(state.figures).forEach(function (key) {
        var figure = state.figures[key];
        var xs = series[figure.x_series || "t_s"] || [];
        figure.data.forEach(function (trace) {
          var points = series[trace.meta];
          if (!points || !points.length) return;
          trace.x = (trace.x || []).concat(xs);
          trace.y = (trace.y || []).concat(points);
        });
        state.dirty = true;
      });
      if (frame.blockmap) {
        state.blockmap = frame.blockmap;
        // The fullest moment is kept (as the build's map is, calc.widgets.framework.collect_stream): a run that
        // ends drained shows its peak, not an empty pool.
        var fill = (frame.blockmap.used_blocks || 0) + (frame.blockmap.reserved_unused_blocks || 0);
        if (!state.peakMap || fill > state.peakFill) { state.peakMap = frame.blockmap; state.peakFill = fill; } // the first, as the build
      }
      if (typeof frame.t_s === "number") state.t_s = frame.t_s;
    }

    // Charts are brought up to date at most every CHART_MS, each in a task of its own and by
    // appending the new points (Plotly.extendTraces), so no task holds the main thread for long.
    var CHART_MS = 480;
    function updateChart(state, key) {
      var holder = widget.querySelector('[data-chart="' + key + '"]');
      var figure = state.figures[key];
      if (!holder || !figure) return;
      var drawn = state.drawn[key];
      if (!drawn || !window.Plotly || !holder.data) {
        state.drawn[key] = figure.data.map(function (trace) { return (trace.y || []).length; });
        if (window.Plotly && holder.data && holder.data.length === figure.data.length) {
          // The build's chart is already on the page: swap its points rather than rebuild it.
          window.Plotly.restyle(holder, {
            x: figure.data.map(function (t) { return t.x; }), y: figure.data.map(function (t) { return t.y; }),
          });
          holder.__figure = figure;
        } else {
          runtime.drawChart(holder, figure);
        }
        return;
      }
      var xs = [], ys = [], indices = [];
      figure.data.forEach(function (trace, index) {
        var have = drawn[index] || 0;
        if ((trace.y || []).length > have) {
          xs.push(trace.x.slice(have));
          ys.push(trace.y.slice(have));
          indices.push(index);
          drawn[index] = trace.y.length;
        }
      });
      if (indices.length) {
        window.Plotly.extendTraces(holder, { x: xs, y: ys }, indices);
        if (runtime.renderChartTable) runtime.renderChartTable(holder, figure);
      }
    }

    function redraw(state, force) {
      var now = performance.now();
      if (state.dirty && (force || now - (state.chartsAt || 0) >= (reducedMotion.matches ? REDUCED_CHART_MS : CHART_MS))) {
        state.chartsAt = now;
        state.dirty = false;
        Object.keys(state.figures).forEach(function (key) {
          setTimeout(function () { if (run === state) updateChart(state, key); }, 0);
        });
      }
      if (canvas && state.blockmap) {
        var map = state.blockmap;
        state.blockmap = null;
        setTimeout(function () { if (run === state) drawBlockMap(canvas, map); }, 0);
      }
      if (progress && typeof state.t_s === "number") progress.textContent = "t = " + state.t_s.toFixed(1) + " s simulated";
    }

    function tick(state) {
      if (run !== state) return;
      if (widget.dataset.simState === "paused") return;
      var perTick = reducedMotion.matches ? state.queue.length : SPEEDS[speed ? speed.value : "1"] || 1;
      for (var i = 0; i < perTick && state.queue.length; i++) applyFrame(state, state.queue.shift());
      redraw(state, state.done && !state.queue.length);
      if (!state.done && state.queue.length < 8 && !state.waiting) {
        state.waiting = true;
        state.controller.resume();
      }
      if (state.done && !state.queue.length) {
        if (canvas && state.peakMap) { // after the last frame's map, which redraw() queued
          var peak = state.peakMap;
          setTimeout(function () { if (run === state) drawBlockMap(canvas, peak); }, 0);
        }
        setButtons("done");
        widget.dataset.state = "live";
        return;
      }
      if (widget.dataset.state === "computing" && state.frames) widget.dataset.state = "live";
      state.timer = setTimeout(function () { tick(state); }, TICK_MS);
    }

    function stopRun() {
      if (!run) return;
      clearTimeout(run.timer);
      if (run.controller) run.controller.cancel();
      run = null;
    }

    lifetime.add(function () { stopRun(); delete widget.simulation; });
    lifetime.listen(buttons.play, "click", function () {
      if (run && widget.dataset.simState === "paused") { setButtons("playing"); tick(run); return; }
      startRun();
    });
    lifetime.listen(buttons.pause, "click", function () {
      if (!run) return;
      setButtons("paused");
      clearTimeout(run.timer);
    });
    lifetime.listen(buttons.reset, "click", function () {
      stopRun();
      setButtons("idle");
      startRun();
    });
    lifetime.listen(form, "change", function (event) {
      if (event.target.name && event.target.name.indexOf("__") === 0) return; // speed: no rerun
      startRun();
    });
    lifetime.listen(form, "submit", function (event) { event.preventDefault(); startRun(); });
    setButtons("idle");
    widget.simulation = { start: startRun, stop: stopRun, frames: function () { return run ? run.frames : 0; } };

    // The build's note says how to go live; once Python is ready, say what the buttons do instead.
    var LIVE_NOTE = "Live: press Play to run this simulation in your browser; changing a control runs it again.";
    function onRuntime(state, detail) {
      if (state === "ready") {
        if (widget.dataset.state === "static") widget.dataset.state = "live";
        runtime.setStatusNote(widget, LIVE_NOTE);
      } else if (state === "error") {
        runtime.setStatusNote(widget, detail);
      }
    }
    lifetime.onRuntime(onRuntime);
    onRuntime(runtime.state, runtime.detail);
  }

  runtime.component("simulation", '[data-widget][data-kind="simulation"]', mountSimulation);
})();
