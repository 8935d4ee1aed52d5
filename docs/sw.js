// Offline after the first visit: a service worker that keeps the site and its Python runtime.
//
// On install it caches what the widgets need (Pyodide, the calc zip, Plotly, KaTeX, the
// runtime scripts) and every page of the site, from the list the build writes to
// assets/runtime/precache.json. Pages and scripts are fetched network first (a rebuilt
// site shows at once), falling back to the cache when the server is gone; vendored files
// and the content-hashed calc zip never change under their name, so they come from the cache.

const PRECACHE_LIST = new URL("assets/runtime/precache.json", self.registration.scope).href;
const IMMUTABLE = [/\/assets\/vendor\//, /\/assets\/runtime\/calc-[0-9a-f]+\.zip$/];

async function currentCacheName() {
  const response = await fetch(PRECACHE_LIST, { cache: "no-cache" });
  const list = await response.json();
  return { name: `site-${list.version}`, urls: list.urls.map((path) => new URL(path, self.registration.scope).href) };
}

self.addEventListener("install", (event) => {
  event.waitUntil((async () => {
    const { name, urls } = await currentCacheName();
    const cache = await caches.open(name);
    await cache.addAll(urls);
    await self.skipWaiting();
  })());
});

self.addEventListener("activate", (event) => {
  event.waitUntil((async () => {
    const { name } = await currentCacheName().catch(() => ({ name: null }));
    if (name) {
      for (const key of await caches.keys()) {
        if (key.startsWith("site-") && key !== name) await caches.delete(key);
      }
    }
    await self.clients.claim();
  })());
});

async function networkFirst(request) {
  try {
    const response = await fetch(request);
    if (response.ok && request.method === "GET") {
      const cache = await caches.open((await caches.keys()).find((k) => k.startsWith("site-")) || "site-runtime");
      cache.put(request, response.clone());
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
  const immutable = IMMUTABLE.some((pattern) => pattern.test(url.pathname));
  event.respondWith(immutable ? cacheFirst(event.request) : networkFirst(event.request));
});
