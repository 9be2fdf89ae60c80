/**
 * What the metrics read from the store (src/store/snapshot.ts), on both engines: the last answer's time counts a file
 * answered only by its rejection (no stored batch), not only batches finished.
 */
import { describe, expect, it } from 'vitest';
import { storeSnapshot } from '../src/store/snapshot.js';
import { skipIfAsked, storeEngines } from './helpers/stores.js';

const engines = storeEngines();

describe.each(engines)('storeSnapshot ($name)', (engine) => {
  it('the last answer is a rejection-only answer when it is the latest', async () => {
    skipIfAsked(engine);
    const store = await engine.open();
    try {
      expect((await storeSnapshot(store)).lastAnsweredAtMs).toBeUndefined();
      await store.sql.run(
        `INSERT INTO intakes (id, batch_id, folder, file_name, source, content_sha256, taken_at, answer_name,
           answer_type, answer_version, answered_at)
         VALUES ('i1', NULL, 'charges', 'x.csv', 'charges/x.csv', 'ab', '2026-11-20T10:00:00.000Z', 'x.i1',
           'rejected', 1, '2026-11-20T10:00:01.000Z')`,
      );
      expect((await storeSnapshot(store)).lastAnsweredAtMs).toBe(Date.parse('2026-11-20T10:00:01.000Z'));
    } finally {
      await store.close();
    }
  });
});
