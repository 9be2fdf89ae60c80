/**
 * The rate limit as the bank sees it, through the real engine, client and sandbox: every request that reaches the
 * sandbox passed the queue's gate (the client's `beforeSend`), including a row's second request (the slip PDF after
 * the charge), and the starts the gate let through hold every window of the setting, while the engine writes its
 * intents between admission and request (on both engines: a PostgreSQL commit is a round trip to the server).
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { BankClient } from '../src/bank/client.js';
import { chargesKind } from '../src/batches/charges.js';
import { readBatch } from '../src/csv/reader.js';
import { filesDirFor } from '../src/outbox/index.js';
import { RequestQueue } from '../src/queue/index.js';
import { processBatch } from '../src/runner/engine.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY, startSandbox } from '../src/sandbox/server.js';
import { skipIfAsked, storeEngines } from './helpers/stores.js';

const engines = storeEngines();

const HEADER =
  'type,correlationId,amount,dueDate,yourNumber,payer.name,payer.document,payer.address.zipCode,payer.address.publicPlace,payer.address.city,payer.address.state';
const slip = (id: string) =>
  `BANKSLIP,${id},150.00,2027-01-15,NF-1,Maria da Silva,529.982.247-25,01310-100,Av Paulista 1000,Sao Paulo,SP`;

let dir: string;
let sandbox: RunningSandbox;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'remessa-engine-rate-'));
  sandbox = await startSandbox({ port: 0 });
});
afterAll(async () => {
  await sandbox?.close();
  rmSync(dir, { recursive: true, force: true });
});

function busiestWindow(starts: readonly number[], windowMs: number): number {
  const s = [...starts].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; i < s.length; i++) {
    while (j < s.length && s[j]! < s[i]! + windowMs) j++;
    best = Math.max(best, j - i);
  }
  return best;
}

describe.each(engines)('rate limit through the engine, the client and the sandbox ($name)', (engine) => {
  skipIfAsked(engine);
  it('every request passes the gate; at most N starts in any window; the run takes as long as the limit says', async () => {
    const N = 4;
    const W = 150;
    const rows = 12; // each: create the charge, then fetch its PDF: 24 requests
    // One sandbox for the file: each engine's charges of their own.
    const file = path.join(dir, `charges-${engine.name}.csv`);
    const ids = Array.from({ length: rows }, (_, i) => `rate-${engine.name}-${i}`);
    writeFileSync(file, `${[HEADER, ...ids.map(slip)].join('\r\n')}\r\n`);
    const batchId = createHash('sha256').update(readFileSync(file)).digest('hex');
    const queue = new RequestQueue({ concurrency: 8, rateLimits: { charges: { intervalCap: N, intervalMs: W } } });
    const client = new BankClient({
      baseUrl: sandbox.url,
      apiKey: SANDBOX_PUBLIC_API_KEY,
      maxAttempts: 1,
      beforeSend: queue.beforeSend,
    });
    const starts: number[] = [];
    queue.onStart((_g, at) => starts.push(at));
    let received = 0;
    const count = () => {
      received++;
    };
    sandbox.app.server.on('request', count);
    onTestFinished(() => {
      sandbox.app.server.off('request', count);
    });
    const store = await engine.open();
    const reader = await readBatch(file, { columns: chargesKind.columns });
    try {
      const result = await processBatch({
        store,
        kind: chargesKind,
        batchId,
        fileName: path.basename(file),
        input: reader,
        client,
        queue,
        filesDir: filesDirFor(path.join(dir, 'outbox'), 'charges', path.basename(file, '.csv')),
        accountId: '0001234',
      });
      expect(result.counts).toMatchObject({ succeeded: rows });
    } finally {
      reader.close();
      await store.close();
      queue.close();
      await client.close();
    }
    expect(received).toBe(2 * rows);
    expect(starts.length).toBe(received);
    expect(busiestWindow(starts, W)).toBe(N);
    // 24 starts at 4 per 150 ms: the last one cannot start before 5 full windows have passed
    expect(starts.at(-1)! - starts[0]!).toBeGreaterThanOrEqual(((2 * rows) / N - 1) * W);
  }, 30_000);
});
