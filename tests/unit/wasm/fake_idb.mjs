// An in-memory IndexedDB for the worker's modules under Node (snapshot_store.js): one database
// of object stores with out-of-line keys; get, put, delete, getAllKeys; requests answer on a
// later task, and a transaction completes once its requests have (or aborts on the first
// failure, with what it wrote before kept, as a store that fails between writes).
// `refuse(key, value)` returning an error makes that put fail (a quota error, say).
export function fakeIndexedDB({ refuse = () => null } = {}) {
  const stores = new Map();
  const log = []; // ["put"|"delete", key] in the order they were applied
  const later = (fn) => setTimeout(fn, 0);

  function transaction() {
    const tx = { pending: 0, error: null, ended: false };
    const settle = () => {
      if (tx.pending || tx.ended) return;
      tx.ended = true;
      later(() => (tx.error ? tx.onabort?.() : tx.oncomplete?.()));
    };
    const track = (fn) => {
      const request = {};
      tx.pending++;
      later(() => {
        try {
          if (tx.error) throw tx.error;
          request.result = fn();
          request.onsuccess?.();
        } catch (err) {
          request.error = err;
          tx.error = tx.error || err;
          request.onerror?.();
        }
        tx.pending--;
        settle();
      });
      return request;
    };
    tx.objectStore = (name) => {
      const data = stores.get(name);
      if (!data) throw new Error(`no object store ${name}`);
      return {
        get: (key) => track(() => data.get(key)),
        getAllKeys: () => track(() => [...data.keys()].sort()),
        put: (value, key) => track(() => {
          const err = refuse(key, value);
          if (err) throw err;
          data.set(key, value);
          log.push(["put", key]);
          return key;
        }),
        delete: (key) => track(() => { data.delete(key); log.push(["delete", key]); }),
      };
    };
    later(settle); // a transaction with no requests completes too
    return tx;
  }

  const db = {
    createObjectStore: (name) => { stores.set(name, new Map()); },
    transaction: (name, mode) => transaction(name, mode),
    close() {},
  };
  let version = 0;
  return {
    stores, log,
    open(name, v) {
      const request = {};
      later(() => {
        request.result = db;
        if (version < v) { version = v; request.onupgradeneeded?.(); }
        request.onsuccess?.();
      });
      return request;
    },
  };
}
