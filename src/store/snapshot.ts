/**
 * What the metrics read from the store at scrape time (src/metrics.ts): rows by kind and state, batches by state, the
 * time the last batch was answered. Read-only queries on the store's connection; never inside a transaction.
 */
import type { RetornoSnapshot, StoreSnapshot } from '../metrics.js';
import type { Store } from './store.js';
import { Things } from './things.js';

export function storeSnapshot(store: Store): StoreSnapshot {
  const db = store.db;
  const rows = db
    .prepare(
      'SELECT b.kind AS kind, r.state AS state, COUNT(*) AS count FROM rows r JOIN batches b ON b.id = r.batch_id GROUP BY b.kind, r.state',
    )
    .all() as StoreSnapshot['rows'];
  const batches = db
    .prepare('SELECT status AS state, COUNT(*) AS count FROM batches GROUP BY status')
    .all() as StoreSnapshot['batches'];
  const last = db.prepare(`SELECT MAX(finished_at) AS at FROM batches WHERE status IN ('done', 'rejected')`).get() as {
    at: string | null;
  };
  return { rows, batches, lastAnsweredAtMs: last.at ? Date.parse(last.at) : undefined };
}

/** The retorno's figures (src/store/things.ts): events applied, things by kind and status, oldest unsettled. */
export function retornoSnapshot(store: Store): RetornoSnapshot {
  const things = new Things(store.db);
  return {
    eventsApplied: things.countAppliedEvents(),
    things: things.countByKindAndStatus(),
    oldestUnsettledAtMs: things.oldestUnsettledAtMs(),
  };
}

/** Proves the store can take a write: takes SQLite's write lock and releases it at once (nothing is written). */
export function checkStoreWritable(store: Store): void {
  if (!store.isOpen) throw new Error('the store is closed');
  store.db.exec('BEGIN IMMEDIATE; ROLLBACK');
}
