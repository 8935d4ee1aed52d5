// The boot's head script (docs/assets/runtime/head.js) without a browser: run in a fresh V8 context whose
// document, location, Worker, MessageChannel, performance and setTimeout are fakes that record what the script
// does with them. Each case runs on the source and, when HEAD_SCRIPT_MINIFIED names a file, on the minified
// text the build inlines (tests/test_head_script.py passes it). The combinations are head.js's header's.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import vm from "node:vm";

const SOURCE = new URL("../../docs/assets/runtime/head.js", import.meta.url);
const variants = [["source", readFileSync(SOURCE, "utf8")]];
if (process.env.HEAD_SCRIPT_MINIFIED) variants.push(["minified", readFileSync(process.env.HEAD_SCRIPT_MINIFIED, "utf8")]);

const FACTS = { calc_zip: "calc-ab.zip", pyodide_snapshot: "pyodide-cd.snapshot", pyodide_snapshot_bytes: 31457424 };
const WORKER = "../../assets/runtime/worker.mjs";
const HELPER = "../../assets/runtime/boot-inflate-worker.mjs";
const SEARCH = "../../assets/javascripts/workers/search.973d3a69.min.js";

// A page: the fakes, the script run in it once. `throwsFor(url)` makes a Worker constructor throw.
function page(code, { protocol = "http:", boot = JSON.stringify(FACTS), withWorker = true, withChannel = true,
  throwsFor = () => false } = {}) {
  const started = []; // every real (fake) worker, in the order started
  class FakeWorker {
    constructor(url, options) {
      if (throwsFor(String(url))) throw new Error(`cannot start ${url}`);
      Object.assign(this, { url: String(url), options, posted: [], terminated: false, onmessage: null, onerror: null });
      started.push(this);
    }
    postMessage(message, transfer) { this.posted.push({ message, transfer }); }
    terminate() { this.terminated = true; }
  }
  const listeners = [];
  const timers = [];
  const sandbox = {
    location: { protocol, href: "http://127.0.0.1:8771/lesson/02-kv-cache-arithmetic/" },
    document: {
      currentScript: { dataset: { calcWorker: WORKER, calcHelper: HELPER, calcBoot: boot } },
      addEventListener: (type, listener) => listeners.push({ type, listener }),
    },
    performance: { now: () => 42.5 },
    setTimeout: (callback, ms) => timers.push({ callback, ms }),
    URL, EventTarget, Event, MessageEvent,
  };
  if (withWorker) sandbox.Worker = FakeWorker;
  if (withChannel) {
    sandbox.MessageChannel = class { constructor() { this.port1 = { name: "port1" }; this.port2 = { name: "port2" }; } };
  }
  sandbox.window = sandbox;
  vm.createContext(sandbox);
  vm.runInContext(code, sandbox);
  const focus = (matches) => listeners.filter((l) => l.type === "focusin")
    .forEach((l) => l.listener({ target: { matches: (selector) => matches(selector) } }));
  return { sandbox, started, listeners, timers, FakeWorker, focus };
}

const named = (worker) => JSON.parse(worker.options.name);
const plain = (value) => JSON.parse(JSON.stringify(value)); // across the two contexts' Object prototypes

for (const [label, code] of variants) {
  test(`${label}: from a file, or without Worker, it does nothing`, () => {
    const fromFile = page(code, { protocol: "file:" });
    assert.equal(fromFile.started.length, 0);
    assert.equal(fromFile.sandbox.calcEarlyWorker, undefined);
    assert.equal(fromFile.sandbox.calcSearchRelease, undefined);
    assert.equal(fromFile.sandbox.Worker, fromFile.FakeWorker); // the search worker is not held either
    const noWorker = page(code, { withWorker: false });
    assert.equal(noWorker.sandbox.calcEarlyWorker, undefined);
    assert.equal(noWorker.sandbox.Worker, undefined);
    assert.equal(noWorker.timers.length, 0);
  });

  test(`${label}: the Python worker first, named by the boot facts, then two helpers linked to it`, () => {
    const { started, sandbox } = page(code);
    assert.deepEqual(started.map((w) => w.url), [
      "http://127.0.0.1:8771/assets/runtime/worker.mjs",
      "http://127.0.0.1:8771/assets/runtime/boot-inflate-worker.mjs",
      "http://127.0.0.1:8771/assets/runtime/boot-inflate-worker.mjs"]);
    assert.ok(started.every((w) => w.options.type === "module"));
    const [python, wasm, snapshot] = started;
    assert.equal(python.options.name, JSON.stringify({ ...FACTS, helper: true })); // the exact text worker.mjs reads
    assert.deepEqual(named(wasm), { ...FACTS, jobs: ["wasm"] });
    assert.deepEqual(named(snapshot), { ...FACTS, jobs: ["snapshot", "calc"] });
    // Each helper gets one end of a channel, the Python worker the other, each moved (transferred).
    for (const [helper, index] of [[wasm, 0], [snapshot, 1]]) {
      assert.equal(helper.posted.length, 1);
      const { message, transfer } = helper.posted[0];
      const toPython = python.posted[index];
      assert.equal(transfer[0], message.port);
      assert.equal(toPython.transfer[0], toPython.message.calcBootHelper);
      assert.equal(message.port.name, "port1");
      assert.equal(toPython.message.calcBootHelper.name, "port2");
    }
    assert.equal(python.posted.length, 2);
    assert.equal(sandbox.calcEarlyWorker, python);
    assert.equal(python.startedAt, 42.5);
  });

  test(`${label}: what the early worker says before calc-runtime.js listens is kept, in order, and its error`, () => {
    const { sandbox } = page(code);
    const early = sandbox.calcEarlyWorker;
    early.onmessage({ data: '{"type":"status","state":"loading"}' });
    early.onmessage({ data: '{"type":"status","state":"ready"}' });
    assert.deepEqual(plain(early.early), ['{"type":"status","state":"loading"}', '{"type":"status","state":"ready"}']);
    assert.equal(early.failed, undefined);
    early.onerror({ message: "SyntaxError in worker.mjs" });
    assert.equal(early.failed, "SyntaxError in worker.mjs");
    early.onerror(undefined);
    assert.equal(early.failed, "worker error");
  });

  test(`${label}: a helper that cannot start, or fails to load, is reported to the Python worker`, () => {
    let helpers = 0;
    const { started } = page(code, { throwsFor: (url) => url.endsWith("boot-inflate-worker.mjs") && helpers++ === 0 });
    const [python, snapshotHelper] = started;
    assert.equal(started.length, 2);
    assert.deepEqual(plain(python.posted[0].message), { calcBootHelperGone: true });
    assert.ok(python.posted[1].message.calcBootHelper);
    snapshotHelper.onerror({ message: "404" }); // its script did not load
    assert.deepEqual(plain(python.posted[2].message), { calcBootHelperGone: true });
  });

  test(`${label}: facts that do not parse, none, or no MessageChannel: no helpers, the attribute's text as name`, () => {
    for (const [options, name] of [[{ boot: "{not json" }, "{not json"], [{ boot: "" }, ""],
      [{ withChannel: false }, JSON.stringify(FACTS)]]) {
      const { started, sandbox } = page(code, options);
      assert.equal(started.length, 1, JSON.stringify(options));
      assert.equal(started[0].options.name, name);
      assert.equal(started[0].posted.length, 0);
      assert.equal(sandbox.calcEarlyWorker, started[0]);
    }
  });

  test(`${label}: a Python worker that cannot start: no early worker, and the search worker is not held`, () => {
    const { sandbox, started, FakeWorker } = page(code, { throwsFor: (url) => url.endsWith("/worker.mjs") });
    assert.equal(started.length, 0);
    assert.equal(sandbox.calcEarlyWorker, undefined);
    assert.equal(sandbox.Worker, FakeWorker);
  });

  test(`${label}: the search worker's stand-in keeps what Material posts and replays it at the release`, () => {
    const { sandbox, started, FakeWorker } = page(code);
    const before = started.length;
    const search = new sandbox.Worker(SEARCH, { name: "search" });
    assert.equal(started.length, before); // held: not started
    assert.ok(!(search instanceof FakeWorker));
    const heard = [];
    search.addEventListener("message", (event) => heard.push(event.data));
    search.postMessage({ type: 0, data: "index" });
    search.postMessage({ type: 1, data: "query" }, []);
    sandbox.calcSearchRelease(); // Python is ready (calc-runtime.js)
    const real = started[before];
    assert.equal(real.url, SEARCH);
    assert.deepEqual(plain(real.options), { name: "search" });
    assert.deepEqual(plain(real.posted.map((p) => p.message)), [{ type: 0, data: "index" }, { type: 1, data: "query" }]);
    assert.deepEqual(plain(real.posted[1].transfer), []);
    search.postMessage({ type: 2 }); // after the release: straight to the real worker
    assert.deepEqual(plain(real.posted[2].message), { type: 2 });
    real.onmessage({ data: { type: 3, results: [] } }); // the real worker's answer reaches Material's listener
    assert.deepEqual(plain(heard), [{ type: 3, results: [] }]);
    let errors = 0;
    search.addEventListener("error", () => { errors += 1; });
    real.onerror({});
    assert.equal(errors, 1);
    search.terminate();
    assert.equal(real.terminated, true);
    sandbox.calcSearchRelease(); // once only
    assert.equal(started.length, before + 1);
    // Once released, a search worker starts at once.
    assert.ok(new sandbox.Worker(SEARCH) instanceof FakeWorker);
  });

  test(`${label}: the release comes on focus in the search box, or after 15 s, whichever is first`, () => {
    const focused = page(code);
    const before = focused.started.length;
    new focused.sandbox.Worker(SEARCH);
    focused.focus(() => false); // another input
    assert.equal(focused.started.length, before);
    focused.focus((selector) => selector === "input.md-search__input");
    assert.equal(focused.started.length, before + 1);

    const waited = page(code);
    new waited.sandbox.Worker(SEARCH);
    assert.deepEqual(waited.timers.map((t) => t.ms), [15000]);
    waited.timers[0].callback();
    assert.equal(waited.started.at(-1).url, SEARCH);
  });

  test(`${label}: other workers start at once; a search worker ended before the release never starts`, () => {
    const { sandbox, started, FakeWorker } = page(code);
    const before = started.length;
    const other = new sandbox.Worker("../../assets/runtime/worker.mjs", { type: "module" });
    assert.ok(other instanceof FakeWorker);
    assert.equal(started.length, before + 1);
    assert.equal(sandbox.Worker.prototype, FakeWorker.prototype); // `instanceof Worker` still holds
    const search = new sandbox.Worker(SEARCH);
    search.terminate();
    sandbox.calcSearchRelease();
    assert.equal(started.length, before + 1);
  });
}
