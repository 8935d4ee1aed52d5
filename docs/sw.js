// Offline after the first visit: a service worker that keeps the site and its Python runtime.
//
// It does nothing while the page boots. Once the page's Python is ready and the page is idle,
// calc-offline.js registers it and asks it to "precache": it fills a cache with every file of
// the list the build writes to assets/runtime/precache.json (what a page can load: no source
// maps, no lunr languages the site does not search in, no font fallbacks), reusing what the
// page already downloaded instead of fetching it again:
//   - the files the page's Python worker fetched while booting (Pyodide, its snapshot, the calc
//     zip): the worker hands them over in the cache HANDOVER_CACHE (the browser's HTTP cache
//     does not keep files this large in every profile: a private window's keeps none over ~6 MB);
//   - the files a previous cache of this site already holds, when their name says they never change;
//   - everything else is fetched with `cache: "force-cache"`, which takes the browser's HTTP cache's
//     copy when it has one (the page itself, its scripts and styles) without asking the server.
// Pages and scripts are then served network first (a rebuilt site shows at once), falling back to
// the cache when the server is gone; vendored files and the content-hashed calc zip and snapshot
// never change under their name, so they come from the cache.

const SCOPE = self.registration.scope;
const PRECACHE_LIST = new URL("assets/runtime/precache.json", SCOPE).href;
const HANDOVER_CACHE = "calc-handover"; // calc-offline.js and worker.mjs use the same name
const CACHE_PREFIX = "site-";
const IMMUTABLE = [/\/assets\/vendor\//, /\/assets\/runtime\/calc-[0-9a-f]+\.zip$/,
  /\/assets\/runtime\/pyodide-[0-9a-f]+\.snapshot$/];
const PARALLEL_FETCHES = 4; // enough to keep the connection busy, few enough to leave the page its own requests

let currentCache = null; // the name of the complete cache, once one is known

self.addEventListener("install", (event) => {
  event.waitUntil(self.skipWaiting()); // nothing to fetch here: the page asks for the precache when it is idle
});

self.addEventListener("activate", (event) => {
  event.waitUntil(self.clients.claim());
});

function isImmutable(url) {
  return IMMUTABLE.some((pattern) => pattern.test(new URL(url).pathname));
}

// Fills `site-<version>` for the build's current list; a cache already complete (it holds the list
// itself, stored last) is kept as it is. Returns what it did, for the page and the tests.
async function precache() {
  let listResponse;
  try {
    listResponse = await fetch(PRECACHE_LIST, { cache: "no-cache" });
  } catch (error) {
    // Offline: the cache that holds a list is complete (the list is stored last), so the site still reads.
    listResponse = await caches.match(PRECACHE_LIST);
    if (!listResponse) throw error;
  }
  if (!listResponse.ok) throw new Error(`precache.json: HTTP ${listResponse.status}`);
  const list = await listResponse.clone().json();
  const name = `${CACHE_PREFIX}${list.version}`;
  const cache = await caches.open(name);
  const report = { cache: name, files: list.urls.length, already_complete: false, handed_over: 0, from_previous_cache: 0,
    from_http_cache_or_network: 0 };
  if (await cache.match(PRECACHE_LIST)) {
    currentCache = name;
    await caches.delete(HANDOVER_CACHE); // handed over by a page that did not know the cache was complete
    return { ...report, already_complete: true };
  }
  const handover = (await caches.has(HANDOVER_CACHE)) ? await caches.open(HANDOVER_CACHE) : null;
  const urls = list.urls.map((path) => new URL(path, SCOPE).href);
  let next = 0;
  async function fillOne(url) {
    if (await cache.match(url)) return;
    const handed = handover && await handover.match(url);
    if (handed) { report.handed_over += 1; await cache.put(url, handed); return; }
    const previous = isImmutable(url) && await caches.match(url);
    if (previous) { report.from_previous_cache += 1; await cache.put(url, previous); return; }
    const response = await fetch(url, { cache: "force-cache" });
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    report.from_http_cache_or_network += 1;
    await cache.put(url, response);
  }
  async function lane() {
    while (next < urls.length) await fillOne(urls[next++]);
  }
  await Promise.all(Array.from({ length: PARALLEL_FETCHES }, lane));
  await cache.put(PRECACHE_LIST, listResponse); // last: marks the cache complete
  currentCache = name;
  for (const key of await caches.keys()) {
    if ((key.startsWith(CACHE_PREFIX) && key !== name) || key === HANDOVER_CACHE) await caches.delete(key);
  }
  return report;
}

let running = null; // one fill at a time, however many pages ask

self.addEventListener("message", (event) => {
  if (!event.data || event.data.type !== "precache") return;
  const port = event.ports[0];
  running = running || precache().finally(() => { running = null; });
  event.waitUntil(running.then(
    (report) => port && port.postMessage({ ok: true, report }),
    (error) => port && port.postMessage({ ok: false, error: String(error && error.message ? error.message : error) }),
  ));
});

async function cacheForResponses() {
  if (currentCache) return currentCache;
  const names = (await caches.keys()).filter((key) => key.startsWith(CACHE_PREFIX));
  return names.length ? names[names.length - 1] : null; // before the first precache: keep nothing
}

async function networkFirst(request) {
  try {
    const response = await fetch(request);
    if (response.ok && request.method === "GET") {
      const name = await cacheForResponses();
      if (name) (await caches.open(name)).put(request, response.clone());
    }
    return response;
  } catch (error) {
    const cached = await caches.match(request, { ignoreSearch: true });
    if (cached) return cached;
    throw error;
  }
}

async function cacheFirst(request) {
  const cached = await caches.match(request);
  return cached || networkFirst(request);
}

self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  if (event.request.method !== "GET" || url.origin !== self.location.origin) return;
  event.respondWith(isImmutable(url.href) ? cacheFirst(event.request) : networkFirst(event.request));
});
