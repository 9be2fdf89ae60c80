/**
 * Issue 8 §3, "failed means certainly not done": after an attempt whose outcome is unknown, a refusal that the
 * earlier attempt would explain (the bill already PAID: by us?) never makes the row `failed`. The row is settled by
 * evidence (the bank's replay of its first answer; the step's own lookup) or left `uncertain` with that evidence in
 * its message. The sandbox runs in process; its effects ledger says who really paid.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BankClient } from '../src/bank/client.js';
import { billPaymentsKind } from '../src/batches/bill-payments.js';
import { claimsKind } from '../src/batches/claims.js';
import type { BatchKind } from '../src/batches/kind.js';
import { pixPaymentsKind } from '../src/batches/pix-payments.js';
import { readBatch } from '../src/csv/reader.js';
import { buildBankSlipBarCode } from '../src/formats/index.js';
import type { Locale } from '../src/i18n/index.js';
import { RequestQueue } from '../src/queue/index.js';
import { ENGINE_CODES, processBatch } from '../src/runner/engine.js';
import { SANDBOX_BILL_FIXTURES } from '../src/sandbox/bills.js';
import { faultsFor } from '../src/sandbox/faults.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY } from '../src/sandbox/server.js';
import type { Store } from '../src/store/index.js';
import { sandboxPerTest } from './helpers/sandbox.js';
import { skipIfAsked, storeEngines } from './helpers/stores.js';

const engines = storeEngines();

// A sandbox and a client without retries of its own (the engine owns them) per test, closed after it.
const bank = sandboxPerTest({ sandbox: { port: 0 }, client: { apiKey: SANDBOX_PUBLIC_API_KEY } });
let dir: string;
let sandbox: RunningSandbox;
let client: BankClient;
let store: Store;
let queue: RequestQueue;

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'remessa-refusal-'));
  queue = new RequestQueue({ concurrency: 2 });
  ({ sandbox, client } = await bank.setup());
});
afterEach(async () => {
  await store?.close();
  queue.close();
  rmSync(dir, { recursive: true, force: true });
});

const PAY = 'POST /baas/api/v1/bill-payments';
const BAR_CODE = buildBankSlipBarCode({
  bankCode: '341',
  dueDate: '2030-12-31',
  amountCents: 4321,
  freeField: '1090000123456789000420000',
});

async function admin(method: string, route: string): Promise<unknown> {
  const res = await request(`${sandbox.url}/__sandbox${route}`, {
    method: method as 'DELETE',
    headers: { 'x-service-api-key': SANDBOX_PUBLIC_API_KEY },
  });
  return res.body.json();
}

/** One bill payment row through the engine; `between` runs in the wait between two attempts. */
function payOneBill(between: () => Promise<void> = async () => undefined) {
  return runOne(billPaymentsKind as BatchKind<never>, `barCode,amount\n${BAR_CODE},43.21\n`, between);
}

/** One row of `kind` (the file `csv`) through the engine; `between` runs in the wait between two attempts. */
async function runOne(
  kind: BatchKind<never>,
  csv: string,
  between: () => Promise<void> = async () => undefined,
  locale: Locale = 'en',
) {
  const file = path.join(dir, `${kind.name}.csv`);
  writeFileSync(file, csv);
  const batchId = createHash('sha256').update(readFileSync(file)).digest('hex');
  const reader = await readBatch(file, { columns: kind.columns });
  try {
    const result = await processBatch({
      store,
      kind,
      batchId,
      fileName: path.basename(file),
      input: reader,
      client,
      queue,
      filesDir: path.join(dir, 'files'),
      accountId: 'acc-1',
      retry: { maxAttempts: 4, baseDelayMs: 10, maxDelayMs: 20, maxRetryAfterMs: 10 },
      random: () => 0.5,
      sleep: async () => between(),
      // The refusal rules' assertions read the English words; remessa's own checks are read in both languages.
      locale,
    });
    return { result, row: (await store.getRow(batchId, 2))! };
  } finally {
    reader.close();
  }
}

describe.each(engines)('a refusal after an attempt of unknown outcome ($name)', (engine) => {
  skipIfAsked(engine);
  beforeEach(async () => {
    store = await engine.open();
  });

  it('bill paid by our first attempt, answer lost, the bank forgot the key: uncertain with the evidence, not failed', async () => {
    faultsFor(sandbox.ctx).set([{ route: PAY, dropAfterCommitRate: 1, times: 1 }]);
    // Between the lost answer and the resend, the bank forgets the key (its retention ran out, or it is a bank that
    // does not commit the answer with the payment): the resend runs afresh and is refused, the bill reads PAID.
    const { row } = await payOneBill(async () => {
      await admin('DELETE', '/idempotency-keys');
    });
    // The ledger: paid exactly once, under this row's own key.
    expect(sandbox.ctx.ledger.counts({ kind: 'bill_paid' })).toEqual([
      { kind: 'bill_paid', key: row.idempotencyKey, count: 1 },
    ]);
    // Before: failed / BILL_NOT_PAYABLE: got PAID, and a finance person pays the bill again by hand.
    expect(row.state).toBe('uncertain');
    expect(row.errorCode).toBe(ENGINE_CODES.refusedAfterUnknown);
    expect(row.errorMessage).toContain('BILL_NOT_PAYABLE');
    expect(row.errorMessage).toContain(`the bill ${BAR_CODE} now reads PAID`);
    expect(row.errorMessage).toContain(row.idempotencyKey!);
    // The next run resends with the same key: the bank now replays the refusal it gave the resend, which is not the
    // first attempt's answer: still uncertain, never failed, never paid twice.
    const again = await payOneBill();
    expect(again.row.state).toBe('uncertain');
    expect(again.row.errorMessage).toContain('UND_ERR_SOCKET');
    expect(sandbox.ctx.ledger.counts({ kind: 'bill_paid' })).toHaveLength(1);
  });

  it('the bank replays its first answer: the resend gets the payment, the row succeeds', async () => {
    faultsFor(sandbox.ctx).set([{ route: PAY, dropAfterCommitRate: 1, times: 1 }]);
    const { row } = await payOneBill();
    expect(row.state).toBe('succeeded');
    expect(row.outputs.paymentStatus).toBe('PAID');
    expect(sandbox.ctx.ledger.counts({ kind: 'bill_paid' })).toEqual([
      { kind: 'bill_paid', key: row.idempotencyKey, count: 1 },
    ]);
  });

  it('a refusal the bank replays is the first attempt own answer: failed is true then', async () => {
    // Our first payment waits 300 ms before the bank processes it; meanwhile someone else pays the bill. Ours is
    // refused, and that refusal's answer is lost: the resend gets it replayed (Idempotent-Replayed).
    faultsFor(sandbox.ctx).set([{ route: PAY, latencyMs: 300, dropAfterCommitRate: 1, times: 1 }]);
    const running = payOneBill();
    for (let i = 0; i < 200 && faultsFor(sandbox.ctx).state().rules[0]?.remaining !== 0; i++) {
      await new Promise((r) => setTimeout(r, 5));
    }
    const other = await client.billPayments.pay(await client.billPayments.lookup(BAR_CODE), {
      amountCents: 4321,
      idempotencyKey: '0f3a4b5c-6d7e-4f80-9a1b-2c3d4e5f6a7b',
    });
    expect(other.status).toBe('PAID');
    const { row } = await running;
    expect(row.state).toBe('failed');
    expect(row.errorMessage).toContain('BILL_NOT_PAYABLE');
    expect(row.errorMessage).toContain('first attempt was refused too');
    expect(sandbox.ctx.ledger.counts({ kind: 'bill_paid' })).toEqual([
      { kind: 'bill_paid', key: '0f3a4b5c-6d7e-4f80-9a1b-2c3d4e5f6a7b', count: 1 },
    ]);
  });

  it('Pix QR payment paid by our first attempt, answer lost, key forgotten: the lookup by endToEndId settles it', async () => {
    const qr = await client.qrCodes.createDynamic({
      correlationId: '7c1e5b0a-3f2d-4e8a-9b6c-1d2e3f4a5b6c',
      amountCents: 2500,
      description: 'refusal test',
    });
    faultsFor(sandbox.ctx).set([{ route: 'POST /baas/api/v2/pix/qrcode/payment', dropAfterCommitRate: 1, times: 1 }]);
    const { row } = await runOne(
      pixPaymentsKind as BatchKind<never>,
      `payload,amount\n${qr.qrCodePayload},25.00\n`,
      async () => {
        await admin('DELETE', '/idempotency-keys');
      },
    );
    // The resend was refused (END_TO_END_ID_ALREADY_USED: by our own first attempt); the payment made with the row's
    // own endToEndId is the evidence: succeeded, with that payment. Before: failed, and paid again by hand.
    expect(row.state, String(row.errorMessage)).toBe('succeeded');
    const paid = sandbox.ctx.ledger.counts({ kind: 'pix_paid' });
    expect(paid).toHaveLength(1);
    expect(paid[0]!.count).toBe(1);
    expect(row.outputs.paymentStatus).toBeTruthy();
  });

  it('claim started by our first attempt, answer lost, key forgotten: the open claim of the key settles it', async () => {
    faultsFor(sandbox.ctx).set([{ route: 'POST /indirect-pix/api/v1/dict/claims', dropAfterCommitRate: 1, times: 1 }]);
    const { row } = await runOne(
      claimsKind as BatchKind<never>,
      'type,key,account.number,account.branch,account.type,account.holder.document,account.holder.name,account.holder.type\n' +
        'EMAIL,refusal@example.com,123456-7,0001,CURRENT,123.456.789-09,Maria da Silva,NATURAL\n',
      async () => {
        await admin('DELETE', '/idempotency-keys');
      },
    );
    // The resend was refused CLAIM_ALREADY_OPEN (by our own claim): found by the search, the row has that claim.
    expect(row.state, String(row.errorMessage)).toBe('succeeded');
    const created = sandbox.ctx.ledger.counts({ kind: 'claim_created' });
    expect(created).toEqual([{ kind: 'claim_created', key: row.idempotencyKey, count: 1 }]);
    expect(typeof row.outputs.claimId).toBe('string');
  });
});

/**
 * What remessa's own checks before a payment tell a person (src/bank/bill-payments.ts `checkBillPayment`): said in the
 * user's language, money as a person reads it. Regression: a bill row with the wrong amount was answered, under
 * pt-BR, "amountCents: expected the charged amount 4321 cents (bill ... does not allow partial payment), got 123":
 * English, an internal field name, and cents.
 */
describe.each(engines)("remessa's own checks before paying a bill ($name)", (engine) => {
  skipIfAsked(engine);
  beforeEach(async () => {
    store = await engine.open();
  });
  const bill = (barCode: string, amount: string, locale: Locale) =>
    runOne(billPaymentsKind as BatchKind<never>, `barCode,amount\n${barCode},${amount}\n`, undefined, locale);

  it('a wrong amount: the charged amount and the row amount in reais, in pt-BR and in English', async () => {
    const { row } = await bill(BAR_CODE, '1.23', 'pt-BR');
    expect(row.state).toBe('failed');
    expect(row.errorCode).toBe('BANK_AMOUNT_OUT_OF_RANGE');
    expect(row.errorMessage).toBe(
      'Esperava o valor cobrado do boleto, R$ 43,21 (este boleto não aceita pagamento parcial), veio R$ 1,23',
    );
    const en = await bill(BAR_CODE, '1.24', 'en');
    expect(en.row.errorMessage).toBe(
      'Expected the charged amount of the bill, R$43.21 (this bill does not allow partial payment), got R$1.24',
    );
  });

  it('a bill that is not payable: its status as the bank gave it, explained', async () => {
    const { row } = await bill(SANDBOX_BILL_FIXTURES.BLOCKED_PAYMENT.barCode, '50.00', 'pt-BR');
    expect(row.state).toBe('failed');
    expect(row.errorCode).toBe('BANK_BILL_NOT_PAYABLE');
    expect(row.errorMessage).toBe(
      'Esperava um boleto em aberto, a pagar (PENDING_PAYMENT); a consulta ao banco diz BLOCKED_PAYMENT: nada foi enviado',
    );
  });
});
