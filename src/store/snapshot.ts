/**
 * What the metrics read from the store at scrape time (src/metrics.ts): rows by kind and state, batches by state, the
 * time the last batch (or file rejected as a whole) was answered. Read-only queries through the store's driver (queued behind a transaction under way, never inside one).
 */
import type { RetornoSnapshot, StoreSnapshot } from '../metrics.js';
import type { Store } from './store.js';
import { Things } from './things.js';

export async function storeSnapshot(store: Store): Promise<StoreSnapshot> {
  const rows = await store.sql.all<StoreSnapshot['rows'][number]>(
    'SELECT b.kind AS kind, r.state AS state, COUNT(*) AS count FROM rows r JOIN batches b ON b.batch_no = r.batch_no GROUP BY b.kind, r.state',
  );
  const batches = await store.sql.all<StoreSnapshot['batches'][number]>(
    'SELECT status AS state, COUNT(*) AS count FROM batches GROUP BY status',
  );
  // A file answered by its rejection alone, no batch of it stored, counts among the batches as `rejected`, as
  // `remessa status` counts it (an ERP whose every file is refused shows its files, not an empty store).
  const refused = await store.sql.get<{ count: number | string }>(
    `SELECT COUNT(*) AS count FROM intakes i
     WHERE i.answer_type = 'rejected' AND NOT EXISTS (SELECT 1 FROM batches b WHERE b.id = i.batch_id)`,
  );
  const alone = Number(refused?.count ?? 0);
  if (alone > 0) {
    const rejected = batches.find((b) => b.state === 'rejected');
    if (rejected) rejected.count = Number(rejected.count) + alone;
    else batches.push({ state: 'rejected', count: alone });
  }
  // Answered: a batch finished, or a file answered by its rejection alone (headers unreadable, cut off, ...), which
  // has no stored batch. Both are ISO 8601 UTC texts of one format: their order is their time's.
  const last = await store.sql.get<{ at: string | null }>(
    `SELECT MAX(at) AS at FROM (
       SELECT MAX(finished_at) AS at FROM batches WHERE status IN ('done', 'rejected')
       UNION ALL SELECT MAX(answered_at) AS at FROM intakes WHERE answer_type IS NOT NULL
     ) AS answered`,
  );
  return { rows, batches, lastAnsweredAtMs: last?.at ? Date.parse(last.at) : undefined };
}

/** The retorno's figures (src/store/things.ts): events applied, things by kind and status, oldest unsettled. */
export async function retornoSnapshot(store: Store): Promise<RetornoSnapshot> {
  const things = new Things(store);
  return {
    eventsApplied: await things.countAppliedEvents(),
    things: await things.countByKindAndStatus(),
    oldestUnsettledAtMs: await things.oldestUnsettledAtMs(),
  };
}

/**
 * Proves the store can take a write: an empty transaction (SQLite takes the write lock at its BEGIN IMMEDIATE and
 * releases it at once; nothing is written).
 */
export async function checkStoreWritable(store: Store): Promise<void> {
  if (!store.isOpen) throw new Error('the store is closed');
  await store.transaction(async () => undefined);
}
