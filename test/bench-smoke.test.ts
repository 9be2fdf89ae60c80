/**
 * The benchmark's data is what it claims to be (every generated charge row valid, every generated bill distinct and
 * payable at the sandbox), and the bill-payments kind makes one lookup per row, not two (the fix the benchmark led
 * to, src/batches/bill-payments.ts). No timings are asserted here: bench/run.ts measures, tests only check behaviour.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { benchBill, chargeCells, writeBillsFile, writeChargesFile } from '../bench/generate.js';
import { BankClient } from '../src/bank/client.js';
import { type BillPaymentRow, billPaymentsKind } from '../src/batches/bill-payments.js';
import type { StepContext } from '../src/batches/kind.js';
import { validateBatchFile } from '../src/runner/commands.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY, startSandbox } from '../src/sandbox/server.js';
import { openStore } from '../src/store/index.js';
import { sqliteOf } from './helpers/sqlite-of.js';

const NO_OVERRIDES = { csv: {}, mappings: {}, policy: {} };

let dir: string;
let sandbox: RunningSandbox;
let client: BankClient;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'remessa-bench-smoke-'));
  sandbox = await startSandbox({ port: 0 });
  client = new BankClient({ baseUrl: sandbox.url, apiKey: SANDBOX_PUBLIC_API_KEY, maxAttempts: 1 });
});

afterAll(async () => {
  await client?.close();
  await sandbox?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('bench data', () => {
  it('every generated charge row is valid, and row i is always the same row', async () => {
    const file = path.join(dir, 'charges-smoke.csv');
    writeChargesFile(file, 400);
    const report = await validateBatchFile(file, 'charges', NO_OVERRIDES);
    expect(report.errors).toEqual([]);
    expect(report).toMatchObject({ rows: 400, valid: 400, invalid: 0 });
    expect(chargeCells(123)).toEqual(chargeCells(123));
    const types = new Set(Array.from({ length: 10 }, (_, i) => chargeCells(i)[0]));
    expect(types).toEqual(new Set(['BANKSLIP', 'BANKSLIP_PIX', 'PIX_DYNAMIC', 'PIX_STATIC']));
  });

  it('every generated bill row is valid and distinct, and the sandbox reads the bills as payable', async () => {
    const file = path.join(dir, 'bill-payments-smoke.csv');
    writeBillsFile(file, 60);
    const report = await validateBatchFile(file, 'bill-payments', NO_OVERRIDES);
    expect(report.errors).toEqual([]);
    expect(report).toMatchObject({ rows: 60, valid: 60, invalid: 0 });
    const barCodes = new Set(Array.from({ length: 5_000 }, (_, i) => benchBill(i).barCode));
    expect(barCodes.size).toBe(5_000);
    for (const i of [0, 1, 2, 4_999]) {
      const bill = await client.billPayments.lookup(benchBill(i).digitableLine);
      expect(bill.status).toBe('PENDING_PAYMENT');
      expect(bill.chargedAmountCents).toBe(benchBill(i).amountCents);
    }
  });
});

describe('bill-payments steps', () => {
  function context(row: BillPaymentRow, resend = false, idempotencyKey = randomUUID()): StepContext<BillPaymentRow> {
    return {
      row,
      idempotencyKey,
      client,
      previous: {},
      outputPath: (name) => path.join(dir, name),
      request: {},
      resend,
    };
  }

  function parsedRow(i: number): BillPaymentRow {
    const bill = benchBill(10_000 + i);
    const parsed = billPaymentsKind.parse(
      { barCode: bill.barCode, amount: `${bill.amountCents / 100}` },
      { encoding: 'utf8', bom: false, delimiter: ',', decimalMark: '.', lineEnding: '\n' },
    );
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    return parsed.row;
  }

  function countLookups(): { count: () => number; restore: () => void } {
    const original = client.billPayments.lookup.bind(client.billPayments);
    let n = 0;
    client.billPayments.lookup = (...args) => {
      n++;
      return original(...args);
    };
    return { count: () => n, restore: () => Object.assign(client.billPayments, { lookup: original }) };
  }

  it('pays with the bill its lookup step just fetched: one lookup per row', async () => {
    const [lookupStep, payStep] = billPaymentsKind.steps;
    const row = parsedRow(1);
    const counter = countLookups();
    try {
      await lookupStep!.run(context(row));
      const paid = await payStep!.run(context(row));
      expect(paid.paymentStatus).toBe('PAID');
      expect(counter.count()).toBe(1);
    } finally {
      counter.restore();
    }
  });

  it("looks up again when resuming without the lookup; a resend reuses its first attempt's bill (same key: the first payment answers)", async () => {
    const [lookupStep, payStep] = billPaymentsKind.steps;
    const row = parsedRow(2);
    const key = randomUUID();
    const counter = countLookups();
    try {
      // Resumed at the pay step (the lookup ran in an earlier process): it looks the bill up itself.
      const first = await payStep!.run(context(row, false, key));
      expect(first.paymentStatus).toBe('PAID');
      expect(counter.count()).toBe(1);
      // A resend after an unknown outcome reuses the bill its first attempt was built from (no new lookup that could
      // fail too), and the same key brings back the first payment.
      const again = await payStep!.run(context(row, true, key));
      expect(again.paymentId).toBe(first.paymentId);
      expect(counter.count()).toBe(1);
      // A resend with no earlier attempt in this process looks up, even right after the lookup step of the row.
      const other = parsedRow(3);
      await lookupStep!.run(context(other));
      expect((await payStep!.run(context(other, true))).paymentStatus).toBe('PAID');
      expect(counter.count()).toBe(3);
    } finally {
      counter.restore();
    }
  });
});

describe('store group commit durability', () => {
  it('skips the fsync only for a group made of answers, and is FULL again after it', async () => {
    const store = await openStore(path.join(dir, 'durability.sqlite'));
    // Read inside the group's transaction: the level its commit uses (2 = FULL, 1 = NORMAL).
    const level = () => sqliteOf(store).pragma('synchronous', { simple: true }) as number;
    const levelNow = async () => level();
    try {
      expect(await store.write(levelNow)).toBe(2);
      expect(await store.write(levelNow, { durable: false })).toBe(1);
      expect(level()).toBe(2);
      // An intent (a durable write) in the same group makes the whole group FULL.
      const [answer, intent] = await Promise.all([store.write(levelNow, { durable: false }), store.write(levelNow)]);
      expect([answer, intent]).toEqual([2, 2]);
      // A failing answer-only group still leaves the connection FULL.
      await expect(
        store.write(
          async () => {
            throw new Error('boom');
          },
          { durable: false },
        ),
      ).rejects.toThrow('boom');
      expect(level()).toBe(2);
    } finally {
      await store.close();
    }
  });
});
