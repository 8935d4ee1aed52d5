// The planner's simulations across Web Workers ("Plan a deployment", issue 34).
//
// The page's Python runs in one worker (calc-runtime.js), which cannot wait inside a call for other
// workers. So the confirmed answer is driven in rounds (calc/plan/pool.py): the main worker says which
// simulations the plan needs next (plan.confirmed_jobs: the finalists and the hand-made baseline; then the
// winner's sensitivity runs; the error bands are read from the stored record, not run), this component hands
// them out one at a time to a pool of Python workers (as many as the reader's cores, at most MAX_WORKERS;
// each is worker.mjs again, restored from the same snapshot), each runs its job (plan.simulated_jobs), and
// the results go back to the main worker, which replays the CLI's own plan with them. Once every round is
// done the main worker keeps the answer, and the confirmed and JSON widgets make their ordinary calls, which
// find it: the same bytes as `python -m calc plan --json`. A result is passed on as the text it came in,
// never parsed here.
//
// A component of the runtime, mounted on the confirmed widget: the pool starts with the first plan it
// simulates (not on a page load: the build rendered the default plan), and when the page goes away its
// workers are terminated and the run in progress dropped. If a pool worker fails, the page falls back to
// the main worker alone (the same answer, serially) for the rest of its visit.
(function () {
  "use strict";

  var runtime = window.calcRuntime;
  if (!runtime) return;
  var CONFIRMED = '[data-widget="plan.confirmed"]';
  var SERVED = [CONFIRMED, '[data-widget="plan.plan_json"]']; // the widgets whose calls wait for the pool's answer
  var MAX_WORKERS = 4; // each Python worker holds its own interpreter (tens of MB): more than 4 buys little
  var MAIN_BUDGET_MS = 60000;
  var JOB_BUDGET_MS = 120000; // one finalist's replica walk in Pyodide: seconds; past this the pool is given up

  function poolSize() {
    return Math.max(1, Math.min(MAX_WORKERS, navigator.hardwareConcurrency || 1));
  }

  // The worker script and its boot facts, as the page's head starts the main worker (overrides/main.html).
  function workerSource() {
    var head = document.querySelector("script[data-calc-worker]");
    if (!head) return null;
    return { url: new URL(head.dataset.calcWorker, location.href), name: head.dataset.calcBoot || "" };
  }

  // One Python worker of the pool: requests with ids, one in flight at a time, each with a budget.
  function Slot(source, onFailure) {
    var slot = this;
    slot.nextId = 1;
    slot.waiting = {};
    slot.worker = new Worker(source.url, { type: "module", name: source.name });
    slot.worker.onmessage = function (event) {
      var message;
      try { message = JSON.parse(event.data); } catch (error) { return; }
      if (message.type === "status") {
        if (message.state === "error") onFailure("a pool worker did not start: " + message.detail);
        return;
      }
      var pending = slot.waiting[message.id];
      if (!pending) return;
      delete slot.waiting[message.id];
      clearTimeout(pending.timer);
      pending.resolve(message);
    };
    slot.worker.onerror = function (event) { onFailure("a pool worker stopped: " + (event.message || "worker error")); };
  }
  Slot.prototype.request = function (op, payload, budgetMs) {
    var slot = this;
    var id = slot.nextId++;
    return new Promise(function (resolve) {
      var timer = setTimeout(function () {
        delete slot.waiting[id];
        resolve({ id: id, ok: false, error: { kind: "budget", field: null, message: "a pool worker's simulation ran past its budget" } });
      }, budgetMs);
      slot.waiting[id] = { resolve: resolve, timer: timer };
      slot.worker.postMessage(JSON.stringify(Object.assign({ id: id, op: op }, payload)));
    });
  };
  Slot.prototype.stop = function () {
    this.worker.terminate();
    var waiting = this.waiting;
    this.waiting = {};
    Object.keys(waiting).forEach(function (id) {
      clearTimeout(waiting[id].timer);
      waiting[id].resolve({ id: Number(id), ok: false, error: { kind: "runtime", field: null, message: "the pool stopped" } });
    });
  };

  function mountPool(confirmed, lifetime) {
    var source = workerSource();
    if (!source || typeof Worker === "undefined") return; // opened from a file, or no head script: the main worker alone
    var slots = null; // started with the first plan to simulate
    var broken = null; // why the pool was given up (then the main worker computes alone)
    var current = null; // {key, done: Promise, cancelled}

    function giveUp(reason) {
      if (broken) return;
      broken = reason;
      console.warn("[calc] the planner's worker pool is off, the main worker simulates alone:", reason);
      stopSlots();
    }
    function stopSlots() {
      if (slots) slots.forEach(function (slot) { slot.stop(); });
      slots = null;
    }
    function startSlots() {
      if (slots || broken) return;
      slots = [];
      try {
        for (var i = 0; i < poolSize(); i++) slots.push(new Slot(source, giveUp));
      } catch (error) {
        giveUp(String(error && error.message ? error.message : error));
      }
    }

    function askMain(args, done) {
      return runtime.request("call", { fn: "plan.confirmed_jobs", args: Object.assign({}, args, { done: done }) },
        MAIN_BUDGET_MS);
    }

    // Every job of a round, each handed to the next free worker; resolves to their result texts in order
    // (null when the run was dropped or the pool failed).
    function runRound(jobs, args, run) {
      return new Promise(function (resolve) {
        var results = new Array(jobs.length);
        var next = 0, left = jobs.length, over = false;
        function finish(value) { if (!over) { over = true; resolve(value); } }
        function feed(slot) {
          if (over || run.cancelled || broken || !slots) { finish(null); return; }
          if (next >= jobs.length) return;
          var index = next++;
          var payload = Object.assign({}, args, { jobs: JSON.stringify([jobs[index]]) });
          slot.request("call", { fn: "plan.simulated_jobs", args: payload }, JOB_BUDGET_MS).then(function (answer) {
            if (!answer.ok) { giveUp(answer.error.message); finish(null); return; }
            results[index] = answer.result.outputs.results.text.slice(1, -1); // "[result]" -> "result"
            left -= 1;
            if (left === 0) finish(results);
            else feed(slot);
          });
        }
        slots.forEach(feed);
      });
    }

    // Resolves once the main worker keeps the plan for `args` (or once it is clear it will compute it alone), to
    // whether newer inputs replaced these meanwhile.
    function simulate(args, run) {
      return askMain(args, "").then(function step(answer) {
        if (run.cancelled || !answer.ok) return; // a newer input, or calc refused this one: the widget's call says why
        var jobsText = answer.result.outputs.jobs.text;
        var jobs = JSON.parse(jobsText);
        if (!jobs.length || broken) return;
        run.forText = run.forText || answer.result.outputs.for.text;
        startSlots();
        if (!slots) return;
        return runRound(jobs, args, run).then(function (results) {
          if (!results) return;
          run.rounds.push('{"jobs": ' + jobsText + ', "results": [' + results.join(", ") + "]}");
          return askMain(args, '{"for": ' + run.forText + ', "rounds": [' + run.rounds.join(", ") + "]}").then(step);
        });
      });
    }

    function ensure(args) {
      var key = JSON.stringify(args);
      if (current && current.key === key) return current.done;
      if (current) current.cancelled = true; // its remaining jobs are not handed out
      var run = { key: key, cancelled: false, rounds: [], forText: null };
      run.done = simulate(args, run).catch(function (error) { giveUp(String(error && error.message ? error.message : error)); })
        .then(function () { return run.cancelled; });
      current = run;
      return run.done;
    }
    // The answer of a call whose inputs were replaced before its simulations finished: the runtime drops it (a
    // newer call of the widget is on its way), so the main worker is not asked to simulate the old inputs itself.
    var SUPERSEDED = { ok: false, error: { kind: "runtime", field: null, message: "superseded by newer inputs" } };

    var served = [];
    SERVED.forEach(function (selector) {
      var widget = (confirmed.closest("article") || document).querySelector(selector);
      if (!widget) return;
      widget.calcCall = function (args, budgetMs) {
        var call = function () { return runtime.request("call", { fn: widget.dataset.widget, args: args }, budgetMs); };
        if (broken) return call();
        return ensure(args).then(function (superseded) { return superseded ? SUPERSEDED : call(); }, call);
      };
      served.push(widget);
    });
    lifetime.add(function () {
      if (current) current.cancelled = true;
      current = null;
      stopSlots();
      served.forEach(function (widget) { delete widget.calcCall; });
    });
  }

  runtime.component("plan-pool", CONFIRMED, mountPool);
})();
