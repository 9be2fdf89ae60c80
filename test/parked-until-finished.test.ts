/**
 * A file the daemon parked with rows left `waiting` (the bank answered 429 to the end: nothing of theirs was sent) is
 * handed back to the intake once a later pass has ended its rows (src/runner/commands.ts `takeFinished`), so that it is
 * answered and archived, not left in the work area until the daemon's next start (what the soak of several daemons
 * saw once: a file answered by another daemon, never archived).
 *
 * Real pipeline on both engines (a store file in a temp folder, a PostgreSQL database), its embedded sandbox over HTTP
 * with faults set through the sandbox's admin route.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildBankSlipBarCode } from '../src/formats/index.js';
import type { TakenBatch } from '../src/intake/intake.js';
import { sha256File } from '../src/intake/work-area.js';
import type { Pipeline } from '../src/runner/commands.js';
import { SANDBOX_ADMIN_PREFIX, SANDBOX_PUBLIC_API_KEY } from '../src/sandbox/options.js';
import { answersOf } from './e2e-harness.js';
import { openTestPipeline } from './helpers/pipeline.js';
import { skipIfAsked, storeEngines } from './helpers/stores.js';

const engines = storeEngines();
const BAR_CODE = buildBankSlipBarCode({
  bankCode: '341',
  dueDate: '2030-12-31',
  amountCents: 4321,
  freeField: '1090000123456789000430000',
});

let dir: string;
let open: Pipeline | undefined;

beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-parked-'));
});

afterEach(async () => {
  await open?.close();
  open = undefined;
  await fs.rm(dir, { recursive: true, force: true });
});

async function setFaults(bankUrl: string, rules: unknown[]): Promise<void> {
  const res = await fetch(`${bankUrl}${SANDBOX_ADMIN_PREFIX}/faults`, {
    method: 'PUT',
    headers: { 'x-service-api-key': SANDBOX_PUBLIC_API_KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ rules }),
  });
  expect(res.status).toBe(200);
}

describe.each(engines)('a file parked with rows left waiting ($name)', (engine) => {
  skipIfAsked(engine);
  it('is handed back once a later pass ended its rows, then found answered', async () => {
    const { pipeline, folders, take } = await openTestPipeline(engine, dir, 'daemon');
    open = pipeline;
    const item = await take('bill-payments', 'bills.csv', `barCode,amount\n${BAR_CODE},43.21\n`);
    const batch: TakenBatch = { item, sha256: await sha256File(item.file), stem: 'bills' };
    const signal = new AbortController().signal;

    // Every payment answered 429 (nothing processed): the row is left waiting, the file parked, not answered.
    await setFaults(pipeline.bankUrl, [
      { route: 'POST /baas/api/v1/bill-payments', rateLimitRate: 1, retryAfterSeconds: 0 },
    ]);
    expect(await pipeline.handleBatch(batch, { signal })).toBe('parked');
    expect(await pipeline.takeFinished()).toEqual([]); // its row has not ended

    // The bank takes payments again; the daemon's retry pass sends the waiting row and writes the answer.
    await setFaults(pipeline.bankUrl, []);
    const resumed = await pipeline.resumeUncertain(signal);
    expect(resumed.map((r) => r.state)).toEqual(['done']);
    const answers = await answersOf(folders, 'bill-payments', 'bills');
    expect(answers[0]!.results).toHaveLength(1);

    // The parked file is handed back once, then handled again: answered already (no second version), so done.
    expect(await pipeline.takeFinished()).toEqual([batch]);
    expect(await pipeline.takeFinished()).toEqual([]);
    expect(await pipeline.handleBatch(batch, { signal })).toBe('done');
    expect((await answersOf(folders, 'bill-payments', 'bills'))[0]!.results).toEqual(answers[0]!.results);
    const result = await fs.readFile(answers[0]!.results[0]!, 'utf8');
    expect(result.trim().split('\n').slice(1)).toEqual([expect.stringMatching(/succeeded/)]);
  }, 90_000);
});
