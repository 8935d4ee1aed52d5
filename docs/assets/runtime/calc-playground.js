// The playground's page state (step 22): one knob, one value across the page, and the whole state in the URL.
//
// The playground's widgets are the elements whose data-widget starts with "playground.". A knob
// (a form control) with the same name in several of them holds one value: change it in one
// widget and the others take it and recompute (the live simulation reruns). Every knob that
// differs from the page's default is written to the URL's query string, so the address is a
// link to this exact configuration; opening such a link sets the knobs and recomputes.
// The scenario-file widget gets a download link for its JSON (computed by calc, never here)
// and a field with the link to share. Text only: nothing from the URL or from calc is ever
// parsed as HTML.
//
// A component of the runtime (calc-runtime.js), mounted on the page's first playground widget: it
// ties all of them together, and when the page goes away its debounce timer is cleared, its
// listeners removed and its download's blob URL revoked.
(function () {
  "use strict";

  var runtime = window.calcRuntime;
  if (!runtime) return;
  var SELECTOR = '[data-widget^="playground."], [data-widget^="plan."]'; // step 22 and "Plan a deployment"
  var FILE_WIDGET = '[data-widget="playground.scenario_file"]';
  var DEBOUNCE_MS = 250;

  function knobsOf(widget) {
    var form = widget.querySelector("form");
    if (!form) return [];
    return Array.prototype.filter.call(form.elements, function (element) {
      return element.name && element.name.indexOf("__") !== 0;
    });
  }

  function mountPlayground(first, lifetime) {
    var widgets = Array.prototype.slice.call(document.querySelectorAll(SELECTOR));
    if (widgets[0] !== first) return; // the page's first playground widget holds the page's playground
    // Registered after the widget and simulation components, so every widget here has its recompute
    // or simulation handle by now.

    // name -> [{widget, element}], and each knob's default: the value the build rendered.
    var knobs = {};
    widgets.forEach(function (widget) {
      knobsOf(widget).forEach(function (element) {
        (knobs[element.name] = knobs[element.name] || []).push({ widget: widget, element: element });
      });
    });
    var defaults = {};
    Object.keys(knobs).forEach(function (name) { defaults[name] = knobs[name][0].element.value; });

    function value(name) {
      var shown = knobs[name].filter(function (k) { return k.element.type !== "hidden"; })[0] || knobs[name][0];
      return shown.element.value;
    }

    function refresh(targets) {
      targets.forEach(function (widget) {
        if (widget.dataset.kind === "simulation" && widget.simulation) widget.simulation.start();
        else if (typeof widget.recompute === "function") widget.recompute();
      });
    }

    function writeUrl() {
      var params = new URLSearchParams(location.search);
      Object.keys(knobs).forEach(function (name) {
        var current = value(name);
        if (current === defaults[name]) params.delete(name);
        else params.set(name, current);
      });
      var query = params.toString();
      history.replaceState(history.state, "", location.pathname + (query ? "?" + query : "") + location.hash);
      showLink();
    }

    // Changing a knob in one widget: every other widget with that knob takes the value and recomputes.
    var pending = [];
    var timer = null;
    function onEdit(event) {
      var element = event.target;
      if (!element.name || !knobs[element.name] || element.name.indexOf("__") === 0) return;
      knobs[element.name].forEach(function (k) {
        if (k.element === element) return;
        k.element.value = element.value;
        if (pending.indexOf(k.widget) < 0) pending.push(k.widget);
      });
      clearTimeout(timer);
      timer = setTimeout(function () {
        var targets = pending;
        pending = [];
        refresh(targets);
        writeUrl();
      }, DEBOUNCE_MS);
    }
    lifetime.add(function () { clearTimeout(timer); pending = []; });
    widgets.forEach(function (widget) {
      var form = widget.querySelector("form");
      if (!form) return;
      lifetime.listen(form, "input", onEdit);
      lifetime.listen(form, "change", onEdit);
    });

    // The share field and the download link live in the scenario-file widget.
    var fileWidget = document.querySelector(FILE_WIDGET);
    var linkField = null;
    var download = null;
    var blobUrl = null;
    function showLink() { if (linkField) linkField.value = location.href; }
    function setDownload(text) {
      if (!download) return;
      if (blobUrl) URL.revokeObjectURL(blobUrl);
      blobUrl = URL.createObjectURL(new Blob([text + "\n"], { type: "application/json" }));
      download.href = blobUrl;
    }
    lifetime.add(function () { if (blobUrl) URL.revokeObjectURL(blobUrl); blobUrl = null; });
    if (fileWidget) {
      var bar = document.createElement("div");
      bar.className = "calc-playground__share";
      download = document.createElement("a");
      download.className = "md-button md-button--primary";
      download.setAttribute("download", "scenario.json");
      download.setAttribute("data-action", "download");
      download.textContent = "Download scenario.json";
      var copy = document.createElement("button");
      copy.type = "button";
      copy.className = "md-button";
      copy.setAttribute("data-action", "copy-link");
      copy.textContent = "Copy link";
      var label = document.createElement("label");
      label.className = "calc-playground__link";
      var caption = document.createElement("span");
      caption.textContent = "Link to this configuration";
      linkField = document.createElement("input");
      linkField.type = "text";
      linkField.readOnly = true;
      linkField.setAttribute("data-share-link", "");
      label.appendChild(caption);
      label.appendChild(linkField);
      bar.appendChild(download);
      bar.appendChild(copy);
      bar.appendChild(label);
      var outputs = fileWidget.querySelector(".calc-outputs");
      fileWidget.insertBefore(bar, outputs);
      var json = fileWidget.querySelector('[data-output="scenario_json"]');
      setDownload(json ? json.textContent : "");
      lifetime.listen(fileWidget, "calc:view", function (event) {
        var item = event.detail.outputs && event.detail.outputs.scenario_json;
        if (item) setDownload(item.text);
      });
      lifetime.listen(download, "click", function (event) {
        // While calc rejects a knob, or has not answered for the latest one, the file would be the last good
        // one: do not download it (aria-busy is set at once; data-state="computing" only once an answer is late).
        if (fileWidget.dataset.state === "error" || fileWidget.getAttribute("aria-busy") === "true") event.preventDefault();
      });
      lifetime.listen(copy, "click", function () {
        linkField.select();
        var done = function () { copy.textContent = "Copied"; setTimeout(function () { copy.textContent = "Copy link"; }, 1500); };
        if (navigator.clipboard && navigator.clipboard.writeText) {
          navigator.clipboard.writeText(linkField.value).then(done, function () { document.execCommand("copy"); done(); });
        } else {
          document.execCommand("copy");
          done();
        }
      });
      showLink();
    }

    // Opened from a shared link: set the knobs it names, then recompute every widget and rerun the simulation.
    var params = new URLSearchParams(location.search);
    var given = Object.keys(knobs).filter(function (name) { return params.has(name); });
    if (given.length) {
      given.forEach(function (name) {
        knobs[name].forEach(function (k) { k.element.value = params.get(name); });
      });
      refresh(widgets);
      showLink();
    }
  }

  runtime.component("playground", SELECTOR, mountPlayground);
})();
