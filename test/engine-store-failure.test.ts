/**
 * A store failure while saving the bank's answer is ours, not the bank's: it must never turn a row `failed` (rule 5 of
 * src/store/rows.ts: `failed` means certainly not done). The bank paid the bill; the commit of that answer fails
 * (a disk error, a lost PostgreSQL connection, a lease lost); the row must stay open (its step still `intent`, an
 * unknown outcome) and the next run learn the outcome by the keyed resend: succeeded, paid once. On both engines.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BankClient } from '../src/bank/client.js';
import { billPaymentsKind } from '../src/batches/bill-payments.js';
import type { BatchKind } from '../src/batches/kind.js';
import { readBatch } from '../src/csv/reader.js';
import { buildBankSlipBarCode } from '../src/formats/index.js';
import { RequestQueue } from '../src/queue/index.js';
import { type ProcessBatchResult, processBatch } from '../src/runner/engine.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY } from '../src/sandbox/server.js';
import { StoreError } from '../src/store/db.js';
import type { Store } from '../src/store/index.js';
import { sandboxPerTest } from './helpers/sandbox.js';
import { interceptWrites, skipIfAsked, storeEngines } from './helpers/stores.js';

const engines = storeEngines();

describe.each(engines)('a store failure saving an answer ($name)', (engine) => {
  skipIfAsked(engine);
  // A sandbox and a client without retries of its own (the engine owns them) per test, closed after it.
  const bank = sandboxPerTest({ sandbox: { port: 0 }, client: { apiKey: SANDBOX_PUBLIC_API_KEY } });
  let dir: string;
  let sandbox: RunningSandbox;
  let client: BankClient;
  let store: Store;
  let queue: RequestQueue;

  beforeEach(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'remessa-store-failure-'));
    store = await engine.open();
    queue = new RequestQueue({ concurrency: 2 });
    ({ sandbox, client } = await bank.setup());
  });
  afterEach(async () => {
    await store.close();
    queue.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * The next `times` commits of `step`'s answer fail as a store failure would (the transaction rolls back). A read
   * step's answer is committed with the row's next intent (rule 9 of src/store/rows.ts): that intent's commit fails.
   */
  function failAnswerOf(step: string, times: number): () => number {
    let left = times;
    // The writes chosen to fail: each fails every time it runs (the group commit may run it twice: store.ts `flush`).
    const failing = new WeakSet<object>();
    const fails = (write: object): boolean => {
      if (failing.has(write)) return true;
      if (left <= 0) return false;
      left--;
      failing.add(write);
      return true;
    };
    const fail = (): never => {
      throw new StoreError('STORE_IO', 'disk I/O error (injected)');
    };
    interceptWrites(store, {
      recordStepDone: (real, write, ...args) => (args[2] === step && fails(write) ? fail() : real(...args)),
      recordIntent: (real, write, ...args) => (args[3]?.step === step && fails(write) ? fail() : real(...args)),
    });
    return () => times - left;
  }

  async function run(file: string, batchId: string): Promise<ProcessBatchResult> {
    const reader = await readBatch(file, { columns: billPaymentsKind.columns });
    try {
      return await processBatch({
        store,
        kind: billPaymentsKind as BatchKind<never>,
        batchId,
        fileName: path.basename(file),
        input: reader,
        client,
        queue,
        filesDir: path.join(dir, 'files'),
        accountId: 'acc-1',
        retry: { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 5, maxRetryAfterMs: 10 },
      });
    } finally {
      reader.close();
    }
  }

  function billsFile(set: number): { file: string; batchId: string } {
    const bills = [0, 1, 2].map((i) =>
      buildBankSlipBarCode({
        bankCode: '341',
        dueDate: '2030-12-31',
        amountCents: 5000 + set * 10 + i,
        freeField: `1090000123456789${String(i).padStart(5, '0')}777${set}`,
      }),
    );
    const file = path.join(dir, `bill-payments-${set}.csv`);
    writeFileSync(
      file,
      `barCode,amount\n${bills.map((b, i) => `${b},${((5000 + set * 10 + i) / 100).toFixed(2)}`).join('\n')}\n`,
    );
    return { file, batchId: createHash('sha256').update(readFileSync(file)).digest('hex') };
  }

  it('a lookup answered, saving it failed: the row is not failed, the next run pays it', async () => {
    const { file, batchId } = billsFile(2);
    const failed = failAnswerOf('lookup', 1);
    const first = await run(file, batchId);
    expect(failed()).toBe(1);
    expect(first.counts).toMatchObject({ succeeded: 2, failed: 0, uncertain: 1 });
    expect(sandbox.ctx.ledger.counts({ kind: 'bill_paid' })).toHaveLength(2);
    const second = await run(file, batchId);
    expect(second.counts).toMatchObject({ succeeded: 3, failed: 0, uncertain: 0 });
    expect(sandbox.ctx.ledger.counts({ kind: 'bill_paid' }).map((e) => e.count)).toEqual([1, 1, 1]);
  });

  it('the bank paid, saving its answer failed: the row is never failed, and the next run makes it succeeded', async () => {
    const { file, batchId } = billsFile(1);
    const failed = failAnswerOf('pay', 1);

    const first = await run(file, batchId);
    expect(failed()).toBe(1);
    // The payment happened at the bank; its answer was not saved: not a no.
    expect(sandbox.ctx.ledger.counts({ kind: 'bill_paid' })).toHaveLength(3);
    expect(first.counts.failed).toBe(0);
    expect(first.counts.succeeded).toBe(2);
    expect(first.counts.uncertain).toBe(1);
    const open = (await store.rowsAfter(batchId, 0, 10)).find((r) => r.state !== 'succeeded')!;
    expect(open.state).toBe('uncertain');
    expect((await store.getSteps(batchId, open.line)).get('pay')?.state).toBe('intent');

    // The next run resends with the same key; the bank replays its first answer.
    const second = await run(file, batchId);
    expect(second.counts).toMatchObject({ succeeded: 3, failed: 0, uncertain: 0 });
    const ledger = sandbox.ctx.ledger.counts({ kind: 'bill_paid' });
    expect(ledger).toHaveLength(3);
    for (const e of ledger) expect(e.count).toBe(1);
  });
});
