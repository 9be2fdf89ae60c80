/**
 * The rate limit as the bank sees it, through the real engine, client and sandbox: every request that reaches the
 * sandbox passed the queue's gate (the client's `beforeSend`), including a row's second request (the slip PDF after
 * the charge) and a task's second request (a bill payment's own lookup, then the payment), and the starts the gate
 * let through hold every window of the setting, while the engine writes its intents between admission and request
 * (on both engines: a PostgreSQL commit is a round trip to the server). A request counts as the task's only when it
 * carries the handle the queue gave the task: one that does not reaches the sandbox without a start.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { BankClient } from '../src/bank/client.js';
import { billPaymentsKind } from '../src/batches/bill-payments.js';
import { chargesKind } from '../src/batches/charges.js';
import type { BatchKind } from '../src/batches/kind.js';
import { readBatch } from '../src/csv/reader.js';
import { buildBankSlipBarCode } from '../src/formats/index.js';
import { filesDirFor } from '../src/outbox/index.js';
import { RequestQueue } from '../src/queue/index.js';
import { type ProcessBatchOptions, processBatch } from '../src/runner/engine.js';
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

/**
 * A queue limiting `group` to N starts a W ms window, a client on the sandbox whose requests pass its gate, the starts
 * the gate let through, and every request the sandbox received during the test (method and path).
 */
function gatedBank(group: 'charges' | 'bill-payments', N: number, W: number) {
  const queue = new RequestQueue({ concurrency: 8, rateLimits: { [group]: { intervalCap: N, intervalMs: W } } });
  const client = new BankClient({
    baseUrl: sandbox.url,
    apiKey: SANDBOX_PUBLIC_API_KEY,
    maxAttempts: 1,
    beforeSend: queue.beforeSend,
  });
  const starts: number[] = [];
  queue.onStart((_g, at) => starts.push(at));
  const received: string[] = [];
  const count = (req: { method?: string; url?: string }) => {
    received.push(`${req.method} ${req.url}`);
  };
  sandbox.app.server.on('request', count);
  onTestFinished(() => {
    sandbox.app.server.off('request', count);
  });
  return { queue, client, starts, received };
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
    const { queue, client, starts, received } = gatedBank('charges', N, W);
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
    expect(received).toHaveLength(2 * rows);
    expect(starts.length).toBe(received.length);
    expect(busiestWindow(starts, W)).toBe(N);
    // 24 starts at 4 per 150 ms: the last one cannot start before 5 full windows have passed
    expect(starts.at(-1)! - starts[0]!).toBeGreaterThanOrEqual(((2 * rows) / N - 1) * W);
  }, 30_000);

  it("a bill payment's own lookup, then the payment (two requests of one task): both gated, at most N per window", async () => {
    const N = 3;
    const W = 150;
    const rows = 9;
    const first = 7_000 + 100 * engines.indexOf(engine); // bills of their own per engine, on the one sandbox
    const file = path.join(dir, `bills-${engine.name}.csv`);
    const bills = Array.from({ length: rows }, (_, i) =>
      buildBankSlipBarCode({
        bankCode: '341',
        dueDate: '2030-12-31',
        amountCents: first + i,
        freeField: `1090000123456789${String(first + i).padStart(5, '0')}0000`,
      }),
    );
    writeFileSync(
      file,
      `${['barCode,amount', ...bills.map((b, i) => `${b},${((first + i) / 100).toFixed(2)}`)].join('\n')}\n`,
    );
    const batchId = createHash('sha256').update(readFileSync(file)).digest('hex');
    const { queue, client, starts, received } = gatedBank('bill-payments', N, W);
    const store = await engine.open();
    const run = async (gate: ProcessBatchOptions['gate']) => {
      const reader = await readBatch(file, { columns: billPaymentsKind.columns });
      try {
        return await processBatch({
          store,
          kind: billPaymentsKind as unknown as BatchKind<never>,
          batchId,
          fileName: path.basename(file),
          input: reader,
          client,
          queue,
          filesDir: path.join(dir, `bill-files-${engine.name}`),
          accountId: '0001234',
          gate,
        });
      } finally {
        reader.close();
      }
    };
    try {
      // Held for approval: only the lookup step runs. Released by the next run, whose rows are read anew: the pay
      // step has no lookup of this process to reuse, so its task looks the bill up, then pays (two requests).
      const held = await run(async () => 'hold');
      expect(held.held).toBe(true);
      expect(received).toHaveLength(rows);
      const released = await run(async () => 'go');
      expect(released.counts).toMatchObject({ succeeded: rows });
    } finally {
      await store.close();
      queue.close();
      await client.close();
    }
    expect(received).toHaveLength(3 * rows); // the lookups, then in each pay task a lookup and the payment
    expect(starts.length).toBe(received.length); // every one passed the gate: none left without the task's handle
    expect(busiestWindow(starts, W)).toBe(N);
  }, 30_000);
});
