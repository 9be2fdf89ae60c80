/**
 * The two parts of undici the bank's transport uses (./http.ts): `Pool` with its request API, and `buildConnector`.
 * They are loaded from their own modules, not from undici's index. The index also loads fetch, WebSocket, cookies,
 * EventSource, the mocks and the cache stores. That costs every remessa process about 100 ms of CPU at start-up
 * (140-170 ms for the index against 50-55 ms for these parts, measured; docs/performance.md (d) seventeenth pass),
 * and a `remessa run` of a small file takes well under a second in all.
 *
 * What the index does besides loading them, done here the same way: it puts the request API (`request`, `stream`,
 * `pipeline`, `connect`, `upgrade`) on `Dispatcher.prototype` (index.js: `Object.assign(Dispatcher.prototype, api)`).
 * If a later undici moves these files, this module fails when it is loaded, at start-up, never halfway through a run.
 * The types are undici's own.
 */
import { createRequire } from 'node:module';
import type * as Undici from 'undici';

const load = createRequire(import.meta.url);

const dispatcher = load('undici/lib/dispatcher/dispatcher.js') as { prototype: object };
Object.assign(dispatcher.prototype, load('undici/lib/api/index.js') as object);

export const Pool = load('undici/lib/dispatcher/pool.js') as typeof Undici.Pool;
export const buildConnector = load('undici/lib/core/connect.js') as typeof Undici.buildConnector;

if (typeof Pool.prototype.request !== 'function' || typeof buildConnector !== 'function') {
  throw new Error('undici: Pool.request or buildConnector not found where src/bank/undici-lean.ts loads them');
}
