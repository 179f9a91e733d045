// The worker's cache of the bundle (Cache Storage, cache "pyrite"): a repeat visit downloads
// nothing that did not change, and works offline once the page itself is available (see
// pyrite-sw.js for that part).
//
// - Content-addressed files (wheels/<hash>/, models/NAME.<hash>.bin, kernels/NAME.<hash>.json)
//   and the Pyodide runtime (its files listed with their sha256 in the manifest, or keyed by
//   its version) are cache-first: fetched once, then read from the cache.
// - manifest.json is network-first (a new bundle version is seen at once), its last copy
//   answering when the network is down.
// - Entries the current manifest no longer names are deleted after a load (a new bundle
//   version replaces stale entries). Any failure of the cache itself (no Cache Storage in an
//   insecure context, quota exceeded) falls back to the network, never to a broken page.
// The cache lives on the embedding page's origin (the worker is same-origin with the page,
// also when the bundle comes from another origin), so it works in both embeddings.

export const CACHE_NAME = "pyrite";
const network = self.fetch.bind(self); // the real fetch (cacheFetchesOf replaces self.fetch)

let opened = null;

async function open() {
  if (opened === null) {
    opened = (async () => {
      try {
        return self.caches ? await self.caches.open(CACHE_NAME) : null;
      } catch {
        return null; // e.g. storage disabled: network only
      }
    })();
  }
  return opened;
}

/** The key a file is cached under: its URL, with the content hash for files whose name has
 * none (Pyodide's), so a new version never reads an old copy. */
function keyOf(url, sha256) {
  const key = new URL(url);
  if (sha256) key.searchParams.set("pyrite-sha256", sha256);
  return key.href;
}

/** The cached copy of a file (`url` with its sha256), or null: never the network. */
export async function cachedResponse(url, sha256 = null) {
  const cache = await open();
  if (!cache) return null;
  try {
    return (await cache.match(keyOf(url, sha256))) || null;
  } catch {
    return null;
  }
}

/** Whether this page has Cache Storage (not in an insecure context, nor with storage off). */
export async function cacheAvailable() {
  return Boolean(await open());
}

/** fetch(url) answered from the cache when it holds the file (see above). */
export async function cachedFetch(url, sha256 = null, init = undefined) {
  const cache = await open();
  const key = keyOf(url, sha256);
  if (cache) {
    try {
      const hit = await cache.match(key);
      if (hit) return hit;
    } catch { /* a broken cache entry: fetch it again */ }
  }
  const response = await network(url, init);
  if (cache && response.ok) {
    // not awaited: the caller reads the body while the cache's copy is written (Pyodide
    // compiles its WebAssembly as it arrives, instead of after the whole file is cached)
    cache.put(key, response.clone()).catch(() => { /* quota exceeded: the network copy */ });
  }
  return response;
}

/** manifest.json from the network, or its last cached copy when the network is down. */
export async function fetchManifest(url) {
  const cache = await open();
  try {
    const response = await network(url, { cache: "no-cache" });
    if (!response.ok) throw new Error(`${url} answered ${response.status}`);
    if (cache) {
      try { await cache.put(url, response.clone()); } catch { /* quota: fine */ }
    }
    return await response.json();
  } catch (err) {
    const kept = await cachedManifest(url);
    if (kept) return kept;
    throw new Error(`pyrite: could not fetch the bundle's manifest ${url} (${err.message}); is the bundle URL right and the server up?`);
  }
}

/** The copy of the manifest at `url` that fetchManifest kept on a former visit, or null. */
export async function cachedManifest(url) {
  const cache = await open();
  if (!cache) return null;
  try {
    const hit = await cache.match(url);
    return hit ? await hit.json() : null;
  } catch {
    return null; // a broken entry: as if there were none
  }
}

/** Route the worker's own fetches of the bundle's fixed files (Pyodide fetches its runtime
 * itself) through the cache: `files` maps absolute URLs to their sha256 (or a version). */
export function cacheFetchesOf(files) {
  self.fetch = (input, init) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const method = (init && init.method) || (input instanceof Request ? input.method : "GET");
    if (method === "GET" && Object.hasOwn(files, url)) return cachedFetch(url, files[url], init);
    return network(input, init);
  };
}

/** Pyodide's runtime files as cacheFetchesOf takes them: their absolute URLs (the manifest's
 * paths, relative to the bundle's `base`) to their sha256. */
export function runtimeOf(manifest, base) {
  return Object.fromEntries((manifest.pyodide.files || []).map(
    (f) => [new URL(f.path, base).href, f.sha256]));
}

/** Delete this bundle's cached entries (URLs under `base`) that are not among `keep`
 * (absolute URLs with their sha256): what an older version of the bundle left. */
export async function prune(base, keep) {
  const cache = await open();
  if (!cache) return 0;
  const wanted = new Set(keep.map(([url, sha256]) => keyOf(url, sha256)));
  wanted.add(new URL("manifest.json", base).href);
  let removed = 0;
  try {
    for (const request of await cache.keys()) {
      if (!request.url.startsWith(base) || wanted.has(request.url)) continue;
      if (await cache.delete(request)) removed++;
    }
  } catch { /* the cache went away meanwhile: nothing to prune */ }
  return removed;
}
