// The reader's progress through the 22 steps, kept in this browser only (localStorage; nothing is sent).
//
// A step is read once the reader reaches its Takeaway (or the end of the page): the step's heading
// id "takeaway", else the article's last element, scrolls into view. The site's navigation marks the
// steps read, and the home page and step 1 offer to resume where the reader left off: the last step
// opened, or the one after it once that one is read. Three components of the runtime (calc-runtime.js),
// mounted from its document$ pass on every page and released when the page goes:
//   - "progress-step": on a step's article, records the visit and watches for the Takeaway;
//   - "progress-nav": on the primary navigation, marks the steps read (and updates when one is);
//   - "progress-resume": on the home page's and step 1's article, the "Resume at step N" box.
// Without localStorage (a private mode that refuses it, file:// in some browsers) nothing is shown.
(function () {
  "use strict";

  var runtime = window.calcRuntime;
  if (!runtime) return;

  var STORAGE_KEY = "calc-progress";
  var CHANGED = "calc:progress"; // dispatched on window when a step is recorded
  var scriptUrl = document.currentScript ? document.currentScript.src : location.href;
  var SITE_ROOT = new URL("../../", scriptUrl); // .../assets/runtime/ -> the site's root
  var STEP_PATH = /^lesson\/(\d\d)-[^/]+\/$/;
  var DWELL_MS = 1000; // how long the Takeaway stays in view before the step counts as read

  // The site-relative path of a URL ("lesson/05-paged-attention/"), or null when it is not on this site.
  function sitePath(url) {
    var parsed = new URL(url, location.href);
    if (parsed.origin !== SITE_ROOT.origin || parsed.pathname.indexOf(SITE_ROOT.pathname) !== 0) return null;
    return parsed.pathname.slice(SITE_ROOT.pathname.length).replace(/index\.html$/, "");
  }

  function stepOf(url) {
    var path = sitePath(url);
    var match = path && STEP_PATH.exec(path);
    return match ? { number: Number(match[1]), slug: path.split("/")[1], path: path } : null;
  }

  function load() {
    try {
      var saved = JSON.parse(window.localStorage.getItem(STORAGE_KEY) || "null");
      if (saved && typeof saved === "object" && saved.done && typeof saved.done === "object") return saved;
      return { done: {}, last: null };
    } catch (error) {
      return null; // no storage: no progress
    }
  }

  function save(progress) {
    try {
      window.localStorage.setItem(STORAGE_KEY, JSON.stringify(progress));
    } catch (error) {
      return false;
    }
    window.dispatchEvent(new CustomEvent(CHANGED));
    return true;
  }

  // The lesson's steps in the navigation's order: [{number, slug, path, url, title}].
  function lessonSteps() {
    var seen = {};
    var steps = [];
    document.querySelectorAll(".md-nav--primary a.md-nav__link[href]").forEach(function (link) {
      var step = stepOf(link.href);
      if (!step || seen[step.slug]) return;
      seen[step.slug] = true;
      step.url = new URL(step.path, SITE_ROOT).href;
      step.title = link.textContent.replace(/\s+/g, " ").trim().replace(/^\d+\.\s*/, "");
      steps.push(step);
    });
    return steps.sort(function (a, b) { return a.number - b.number; });
  }

  // Where to resume: the last step opened, or the next one once it is read; null before any step.
  function resumeTarget(progress, steps) {
    if (!progress || !progress.last) return null;
    var index = -1;
    steps.forEach(function (step, i) { if (step.slug === progress.last) index = i; });
    if (index < 0) return null;
    if (progress.done[progress.last] && index + 1 < steps.length) index += 1;
    return steps[index];
  }

  runtime.progress = { load: load, storageKey: STORAGE_KEY, resumeTarget: function () { return resumeTarget(load(), lessonSteps()); } };

  // ---- the step being read --------------------------------------------------------------------

  function mountStep(article, lifetime) {
    var step = stepOf(location.href);
    if (!step) return;
    var progress = load();
    if (!progress) return;
    progress.last = step.slug;
    save(progress);
    // Read once the reader, having scrolled or pressed a key on this page, has the Takeaway (or the end of the
    // article) in view for DWELL_MS. Not when an instant navigation shows the new page at the old one's scroll
    // position: after the footer's Next, a page can open at its end, Takeaway in view, before a word is read.
    var engaged = false;
    ["wheel", "touchmove", "keydown", "pointerdown"].forEach(function (type) {
      lifetime.listen(window, type, function () {
        engaged = true;
        if (!timer && marks.some(inView)) timer = setTimeout(markRead, DWELL_MS);
      }, { passive: true, capture: true });
    });
    var marks = [article.querySelector("#takeaway"), article.lastElementChild].filter(Boolean);
    if (!marks.length || typeof IntersectionObserver === "undefined") return;
    var timer = null;
    function inView(node) {
      var box = node.getBoundingClientRect();
      return box.bottom > 0 && box.top < window.innerHeight;
    }
    function markRead() {
      timer = null;
      if (lifetime.ended || !engaged || !marks.some(inView)) return;
      observer.disconnect();
      var now = load();
      if (!now) return;
      if (!now.done[step.slug]) {
        now.done[step.slug] = true;
        save(now);
      }
      article.dataset.stepRead = "true";
    }
    var observer = new IntersectionObserver(function () {
      if (engaged && marks.some(inView)) { if (!timer) timer = setTimeout(markRead, DWELL_MS); }
      else { clearTimeout(timer); timer = null; }
    });
    marks.forEach(function (node) { observer.observe(node); });
    lifetime.add(function () { observer.disconnect(); clearTimeout(timer); });
  }

  // ---- the navigation: a check mark on each step read -----------------------------------------

  var READ_NOTE = "calc-progress__read"; // the hidden ", read" a screen reader says after the link's text

  function mountNav(nav, lifetime) {
    function mark() {
      var progress = load();
      if (!progress) return;
      nav.querySelectorAll("a.md-nav__link[href]").forEach(function (link) {
        var step = stepOf(link.href);
        if (!step) return;
        var read = !!progress.done[step.slug];
        var note = link.querySelector("." + READ_NOTE);
        if (read) {
          link.dataset.stepRead = "true";
          if (!note) {
            note = document.createElement("span");
            note.className = READ_NOTE;
            note.textContent = ", read";
            (link.querySelector(".md-ellipsis") || link).appendChild(note);
          }
        } else {
          delete link.dataset.stepRead;
          if (note) note.remove();
        }
      });
    }
    mark();
    lifetime.listen(window, CHANGED, mark);
    lifetime.listen(window, "storage", function (event) { if (event.key === STORAGE_KEY) mark(); }); // another tab
  }

  // ---- the home page and step 1: resume where you left off -------------------------------------

  function isHome() { return sitePath(location.href) === ""; }

  function mountResume(article, lifetime) {
    var here = stepOf(location.href);
    if (!isHome() && !(here && here.number === 1)) return;
    var box = document.createElement("div");
    box.className = "calc-progress-resume admonition info";
    box.setAttribute("data-progress-resume", "");
    box.hidden = true;
    var heading = article.querySelector("h1");
    if (heading) heading.after(box); else article.prepend(box);
    lifetime.add(function () { box.remove(); });

    // What this visit found: on step 1 the visit itself is recorded next (progress-step mounts after this).
    var before = load();
    function render() {
      var steps = lessonSteps();
      var target = resumeTarget(before, steps);
      box.textContent = "";
      if (!target || (here && target.number === here.number)) { box.hidden = true; return; }
      var read = steps.filter(function (step) { return before.done[step.slug]; }).length;
      var text = document.createElement("p");
      text.append("You have read " + read + " of " + steps.length + " steps in this browser. ");
      var link = document.createElement("a");
      link.className = "md-button md-button--primary";
      link.href = target.url;
      link.setAttribute("data-resume-step", String(target.number));
      link.textContent = "Resume at step " + target.number + ": " + target.title;
      var forget = document.createElement("button");
      forget.type = "button";
      forget.className = "md-button calc-progress-resume__forget";
      forget.textContent = "Forget my progress";
      var actions = document.createElement("p");
      actions.className = "calc-progress-resume__actions";
      actions.append(link, " ", forget);
      box.append(text, actions);
      box.hidden = false;
    }
    lifetime.listen(box, "click", function (event) {
      if (!event.target.closest(".calc-progress-resume__forget")) return;
      try { window.localStorage.removeItem(STORAGE_KEY); } catch (error) { /* nothing to forget */ }
      before = null;
      window.dispatchEvent(new CustomEvent(CHANGED));
      render();
    });
    render();
  }

  // The resume box first: on step 1 it reads the progress before this visit is recorded.
  runtime.component("progress-resume", "article.md-content__inner", mountResume);
  runtime.component("progress-step", "article.md-content__inner", mountStep);
  runtime.component("progress-nav", ".md-nav--primary", mountNav);
})();
