/**
 * Issue 8 §3, "failed means certainly not done": after an attempt whose outcome is unknown, a refusal that the
 * earlier attempt would explain (the bill already PAID: by us?) never makes the row `failed`. The row is settled by
 * evidence (the bank's replay of its first answer; the step's own lookup) or left `uncertain` with that evidence in
 * its message. The sandbox runs in process; its effects ledger says who really paid.
 */
import { request } from 'undici';
import { beforeEach, describe, expect, it } from 'vitest';
import { billPaymentsKind } from '../src/batches/bill-payments.js';
import { claimsKind } from '../src/batches/claims.js';
import type { BatchKind } from '../src/batches/kind.js';
import { pixPaymentsKind } from '../src/batches/pix-payments.js';
import { buildBankSlipBarCode } from '../src/formats/index.js';
import type { Locale } from '../src/i18n/index.js';
import { ENGINE_CODES } from '../src/runner/engine.js';
import { SANDBOX_BILL_FIXTURES } from '../src/sandbox/bills.js';
import { faultsFor } from '../src/sandbox/faults.js';
import { SANDBOX_PUBLIC_API_KEY } from '../src/sandbox/server.js';
import { engineFilePerTest } from './helpers/engine-file.js';
import { skipIfAsked, storeEngines } from './helpers/stores.js';

const engines = storeEngines();

// A sandbox, a client without retries of its own (the engine owns them) and the test's store, per test.
const ef = engineFilePerTest('refusal');

const PAY = 'POST /baas/api/v1/bill-payments';
const BAR_CODE = buildBankSlipBarCode({
  bankCode: '341',
  dueDate: '2030-12-31',
  amountCents: 4321,
  freeField: '1090000123456789000420000',
});

async function admin(method: string, route: string): Promise<unknown> {
  const res = await request(`${ef.sandbox.url}/__sandbox${route}`, {
    method: method as 'DELETE',
    headers: { 'x-service-api-key': SANDBOX_PUBLIC_API_KEY },
  });
  return res.body.json();
}

/** One bill payment row through the engine; `between` runs in the wait between two attempts. */
function payOneBill(between: () => Promise<void> = async () => undefined) {
  return ef.runFile(billPaymentsKind as BatchKind<never>, `barCode,amount\n${BAR_CODE},43.21\n`, { between });
}

describe.each(engines)('a refusal after an attempt of unknown outcome ($name)', (engine) => {
  skipIfAsked(engine);
  beforeEach(async () => {
    ef.useStore(await engine.open());
  });

  it('bill paid by our first attempt, answer lost, the bank forgot the key: uncertain with the evidence, not failed', async () => {
    faultsFor(ef.sandbox.ctx).set([{ route: PAY, dropAfterCommitRate: 1, times: 1 }]);
    // Between the lost answer and the resend, the bank forgets the key (its retention ran out, or it is a bank that
    // does not commit the answer with the payment): the resend runs afresh and is refused, the bill reads PAID.
    const { row } = await payOneBill(async () => {
      await admin('DELETE', '/idempotency-keys');
    });
    // The ledger: paid exactly once, under this row's own key.
    expect(ef.sandbox.ctx.ledger.counts({ kind: 'bill_paid' })).toEqual([
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
    expect(ef.sandbox.ctx.ledger.counts({ kind: 'bill_paid' })).toHaveLength(1);
  });

  it('the bank replays its first answer: the resend gets the payment, the row succeeds', async () => {
    faultsFor(ef.sandbox.ctx).set([{ route: PAY, dropAfterCommitRate: 1, times: 1 }]);
    const { row } = await payOneBill();
    expect(row.state).toBe('succeeded');
    expect(row.outputs.paymentStatus).toBe('PAID');
    expect(ef.sandbox.ctx.ledger.counts({ kind: 'bill_paid' })).toEqual([
      { kind: 'bill_paid', key: row.idempotencyKey, count: 1 },
    ]);
  });

  it('a refusal the bank replays is the first attempt own answer: failed is true then', async () => {
    // Our first payment waits 300 ms before the bank processes it; meanwhile someone else pays the bill. Ours is
    // refused, and that refusal's answer is lost: the resend gets it replayed (Idempotent-Replayed).
    faultsFor(ef.sandbox.ctx).set([{ route: PAY, latencyMs: 300, dropAfterCommitRate: 1, times: 1 }]);
    const running = payOneBill();
    for (let i = 0; i < 200 && faultsFor(ef.sandbox.ctx).state().rules[0]?.remaining !== 0; i++) {
      await new Promise((r) => setTimeout(r, 5));
    }
    const other = await ef.client.billPayments.pay(await ef.client.billPayments.lookup(BAR_CODE), {
      amountCents: 4321,
      idempotencyKey: '0f3a4b5c-6d7e-4f80-9a1b-2c3d4e5f6a7b',
    });
    expect(other.status).toBe('PAID');
    const { row } = await running;
    expect(row.state).toBe('failed');
    expect(row.errorMessage).toContain('BILL_NOT_PAYABLE');
    expect(row.errorMessage).toContain('first attempt was refused too');
    expect(ef.sandbox.ctx.ledger.counts({ kind: 'bill_paid' })).toEqual([
      { kind: 'bill_paid', key: '0f3a4b5c-6d7e-4f80-9a1b-2c3d4e5f6a7b', count: 1 },
    ]);
  });

  it('Pix QR payment paid by our first attempt, answer lost, key forgotten: the lookup by endToEndId settles it', async () => {
    const qr = await ef.client.qrCodes.createDynamic({
      correlationId: '7c1e5b0a-3f2d-4e8a-9b6c-1d2e3f4a5b6c',
      amountCents: 2500,
      description: 'refusal test',
    });
    faultsFor(ef.sandbox.ctx).set([
      { route: 'POST /baas/api/v2/pix/qrcode/payment', dropAfterCommitRate: 1, times: 1 },
    ]);
    const { row } = await ef.runFile(
      pixPaymentsKind as BatchKind<never>,
      `payload,amount\n${qr.qrCodePayload},25.00\n`,
      {
        between: async () => {
          await admin('DELETE', '/idempotency-keys');
        },
      },
    );
    // The resend was refused (END_TO_END_ID_ALREADY_USED: by our own first attempt); the payment made with the row's
    // own endToEndId is the evidence: succeeded, with that payment. Before: failed, and paid again by hand.
    expect(row.state, String(row.errorMessage)).toBe('succeeded');
    const paid = ef.sandbox.ctx.ledger.counts({ kind: 'pix_paid' });
    expect(paid).toHaveLength(1);
    expect(paid[0]!.count).toBe(1);
    expect(row.outputs.paymentStatus).toBeTruthy();
  });

  it('claim started by our first attempt, answer lost, key forgotten: the open claim of the key settles it', async () => {
    faultsFor(ef.sandbox.ctx).set([
      { route: 'POST /indirect-pix/api/v1/dict/claims', dropAfterCommitRate: 1, times: 1 },
    ]);
    const { row } = await ef.runFile(
      claimsKind as BatchKind<never>,
      'type,key,account.number,account.branch,account.type,account.holder.document,account.holder.name,account.holder.type\n' +
        'EMAIL,refusal@example.com,123456-7,0001,CURRENT,123.456.789-09,Maria da Silva,NATURAL\n',
      {
        between: async () => {
          await admin('DELETE', '/idempotency-keys');
        },
      },
    );
    // The resend was refused CLAIM_ALREADY_OPEN (by our own claim): found by the search, the row has that claim.
    expect(row.state, String(row.errorMessage)).toBe('succeeded');
    const created = ef.sandbox.ctx.ledger.counts({ kind: 'claim_created' });
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
    ef.useStore(await engine.open());
  });
  const bill = (barCode: string, amount: string, locale: Locale) =>
    ef.runFile(billPaymentsKind as BatchKind<never>, `barCode,amount\n${barCode},${amount}\n`, { locale });

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
