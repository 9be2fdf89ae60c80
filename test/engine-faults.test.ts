/**
 * The engine against a misbehaving sandbox (faults: 5xx, resets, 429, answers dropped after the effect committed):
 * every row ends once, and the bank's effects ledger shows each charge and each payment exactly once.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BankClient } from '../src/bank/client.js';
import { billPaymentsKind } from '../src/batches/bill-payments.js';
import { chargesKind } from '../src/batches/charges.js';
import type { BatchKind } from '../src/batches/kind.js';
import { readBatch } from '../src/csv/reader.js';
import { buildBankSlipBarCode } from '../src/formats/index.js';
import { RequestQueue } from '../src/queue/index.js';
import { type ProcessBatchResult, processBatch } from '../src/runner/engine.js';
import type { FaultRuleInput } from '../src/sandbox/faults.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY } from '../src/sandbox/server.js';
import type { Store } from '../src/store/index.js';
import { sandboxPerTest } from './helpers/sandbox.js';
import { skipIfAsked, storeEngines } from './helpers/stores.js';

const engines = storeEngines();

let dir: string;
let sandbox: RunningSandbox;
let client: BankClient;
let store: Store;
let queue: RequestQueue;

// No retries in the client: the engine owns them (and short timeouts, for hangs). Closed after each test.
const bank = sandboxPerTest({
  sandbox: { port: 0, faultSeed: 42 },
  client: { apiKey: SANDBOX_PUBLIC_API_KEY, headersTimeoutMs: 2000 },
});

async function setup(faults: FaultRuleInput[]) {
  ({ sandbox, client } = await bank.setup({ faults }));
}
beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'remessa-faults-'));
  queue = new RequestQueue({ concurrency: 6 });
});
afterEach(async () => {
  await store?.close();
  queue.close();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * A bill payments batch: the header and `count` bank slips of the same bank and due date, the i-th for
 * `firstAmountCents + i` cents (so every bar code and amount differs).
 */
function billRows(count: number, firstAmountCents: number): string[] {
  const bills = Array.from({ length: count }, (_, i) =>
    buildBankSlipBarCode({
      bankCode: '341',
      dueDate: '2030-12-31',
      amountCents: firstAmountCents + i,
      freeField: `1090000123456789${String(i).padStart(5, '0')}0000`,
    }),
  );
  return ['barCode,amount', ...bills.map((b, i) => `${b},${((firstAmountCents + i) / 100).toFixed(2)}`)];
}

/** The sandbox's effects ledger holds `count` effects of `kind`, each exactly once. */
function expectEachOnceInLedger(kind: 'charge_created' | 'bill_paid', count: number): void {
  const ledger = sandbox.ctx.ledger.counts({ kind });
  expect(ledger).toHaveLength(count);
  expect(ledger.every((e) => e.count === 1)).toBe(true);
}

async function runUntilDone(kind: BatchKind<never>, lines: string[], maxRuns = 6): Promise<ProcessBatchResult[]> {
  const file = path.join(dir, `${kind.name}.csv`);
  writeFileSync(file, `${lines.join('\n')}\n`);
  const batchId = createHash('sha256').update(readFileSync(file)).digest('hex');
  const results: ProcessBatchResult[] = [];
  for (let i = 0; i < maxRuns; i++) {
    const reader = await readBatch(file, { columns: kind.columns });
    try {
      const r = await processBatch({
        store,
        kind,
        batchId,
        fileName: path.basename(file),
        input: reader,
        client,
        queue,
        filesDir: path.join(dir, 'files'),
        accountId: 'acc-1',
        retry: { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 5, maxRetryAfterMs: 10 },
      });
      results.push(r);
      if (r.counts.uncertain === 0 && r.complete) break;
    } finally {
      reader.close();
    }
  }
  return results;
}

describe.each(engines)('engine against sandbox faults ($name)', (engine) => {
  skipIfAsked(engine);
  beforeEach(async () => {
    store = await engine.open();
  });

  it('charges: 5xx, resets, 429 and lost answers; every charge created exactly once', async () => {
    await setup([
      {
        route: 'POST /v1/charges',
        errorRate: 0.15,
        resetRate: 0.1,
        rateLimitRate: 0.1,
        retryAfterSeconds: 0,
        dropAfterCommitRate: 0.2,
      },
      { route: 'GET /v1/charges/:correlationId', errorRate: 0.1 },
    ]);
    const ids = Array.from({ length: 40 }, (_, i) => `F-${i}`);
    const results = await runUntilDone(chargesKind as BatchKind<never>, [
      'type,correlationId,amount',
      ...ids.map((id) => `PIX_STATIC,${id},1.00`),
    ]);
    const last = results.at(-1)!;
    expect(last.counts).toMatchObject({ succeeded: 40, uncertain: 0, failed: 0 });
    expectEachOnceInLedger('charge_created', 40);
    // the faults did fire: some rows needed a lookup or a second attempt
    const attempts = results.reduce((n, r) => n + r.attempts, 0);
    expect(attempts).toBeGreaterThan(80);
  });

  it('bill payments: 5xx, resets and 429 before processing; each bill paid exactly once', async () => {
    await setup([
      {
        route: 'POST /baas/api/v1/bill-payments',
        errorRate: 0.2,
        resetRate: 0.1,
        rateLimitRate: 0.2,
        retryAfterSeconds: 0,
      },
    ]);
    const results = await runUntilDone(billPaymentsKind as BatchKind<never>, billRows(25, 1000));
    const last = results.at(-1)!;
    expect(last.counts).toMatchObject({ succeeded: 25, uncertain: 0, failed: 0 });
    expectEachOnceInLedger('bill_paid', 25);
  });

  it('bill payments with answers lost after the payment committed: never paid twice', async () => {
    await setup([{ route: 'POST /baas/api/v1/bill-payments', dropAfterCommitRate: 0.4 }]);
    const results = await runUntilDone(billPaymentsKind as BatchKind<never>, billRows(15, 2000));
    const last = results.at(-1)!;
    // A lost answer is either replayed by the bank for the same key, or (the kind's choice) left uncertain for a
    // person when the bill already reads PAID: never failed, never paid again.
    expect(last.counts.failed).toBe(0);
    expect(last.counts.succeeded + last.counts.uncertain).toBe(15);
    expectEachOnceInLedger('bill_paid', 15);
  });
});

describe('a row whose answers were all lost, read in Portuguese', () => {
  it('says what happened in Portuguese, not undici English', async () => {
    // Before: "Etapa pay: resultado desconhecido depois de 4 tentativa(s): POST /baas/api/v1/bill-payments: connection
    // failed (UND_ERR_SOCKET); the request may have been processed; tentada de novo na próxima execução".
    store = await engines[0]!.open();
    await setup([{ route: 'POST /baas/api/v1/bill-payments', dropAfterCommitRate: 1 }]);
    const [result] = await runUntilDone(billPaymentsKind as BatchKind<never>, billRows(1, 3000), 1);
    expect(result!.counts.uncertain).toBe(1);
    const batchId = createHash('sha256')
      .update(readFileSync(path.join(dir, 'bill-payments.csv')))
      .digest('hex');
    const row = (await store.rowsAfter(batchId, 0, 10))[0]!;
    expect(row.errorMessage).toMatch(
      /^Etapa pay: resultado desconhecido depois de \d tentativa\(s\): POST \/baas\/api\/v1\/bill-payments: a conexão caiu sem resposta \(UND_ERR_SOCKET\); o pedido pode ter sido processado; tentada de novo/,
    );
    expect(row.errorMessage).not.toMatch(/connection failed|may have been processed/);
    expectEachOnceInLedger('bill_paid', 1);
  });
});
