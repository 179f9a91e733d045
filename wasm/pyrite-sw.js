// pyrite's service worker (registered by `pyrite.enableOffline()`): pages under the bundle's
// folder keep working offline. Content-addressed files (wheels/<hash>/, models/NAME.<hash>.bin,
// kernels/NAME.<hash>.json) and Pyodide's runtime files are the worker's business (cache.js
// answers them from the cache "pyrite" before any request is made), so they pass through;
// everything else (the page, pyrite.js, worker.js, manifest.json, Pyodide's modules) is
// network-first, keeping the last good copy in "pyrite-pages" for when the network is down.
// On activation it takes the open pages and keeps copies of them and of the bundle's entry
// files, which were fetched before it existed.

const HASHED = /\/(wheels\/[0-9a-f]{16}\/[^/]+|(models|kernels)\/[^/]+\.[0-9a-f]{16}\.[a-z0-9]+)$/;
const ENTRY = ["pyrite.js", "worker.js", "elements.js", "cache.js", "mnist-input.js",
  "snapshot.js", "wheels.js", "gpu_start.js", "restore.js", "python_setup.js", "next_visit.js",
  "snapshot_background.js", "snapshot_store.js", "manifest.json", "pyodide/pyodide.mjs", "pyodide/pyodide.asm.mjs"];

async function keep(request, response) {
  if (!response.ok || response.type === "opaque") return;
  try {
    const pages = await caches.open("pyrite-pages");
    await pages.put(request, response);
  } catch { /* quota: the network copy still answers */ }
}

self.addEventListener("install", () => self.skipWaiting());

self.addEventListener("activate", (event) => {
  event.waitUntil((async () => {
    await self.clients.claim();
    const base = new URL(".", self.location.href);
    const urls = ENTRY.map((f) => new URL(f, base).href);
    for (const client of await self.clients.matchAll({ type: "window" })) urls.push(client.url);
    await Promise.all(urls.map(async (url) => {
      try { await keep(new Request(url), await fetch(url, { cache: "no-cache" })); } catch { /* offline now: later */ }
    }));
  })());
});

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET" || new URL(request.url).origin !== self.location.origin) return;
  const path = new URL(request.url).pathname;
  // the worker's cache keeps these (by hash): no second copy here
  if (HASHED.test(path) || (path.includes("/pyodide/") && !path.endsWith(".mjs"))) return;
  event.respondWith((async () => {
    try {
      const response = await fetch(request);
      keep(request, response.clone());
      return response;
    } catch (err) {
      const hit = await caches.match(request, { cacheName: "pyrite-pages" }).catch(() => null);
      if (hit) return hit;
      throw err;
    }
  })());
});
