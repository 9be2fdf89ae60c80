import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import type { BankClient } from '../src/bank/client.js';
import { ConflictError, ValidationError } from '../src/bank/errors.js';
import { parseBillIdentifier } from '../src/formats/index.js';
import { type BillAmountRule, calculate, SANDBOX_BILL_FIXTURES } from '../src/sandbox/bills.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY } from '../src/sandbox/server.js';
import {
  PAYER_ADDRESS,
  PUBLIC_KEY_JSON_HEADERS,
  type RawMethod,
  rawRequest,
  sandboxPerTest,
} from './helpers/sandbox.js';

const sandboxes = sandboxPerTest({ client: { apiKey: SANDBOX_PUBLIC_API_KEY } });
let sandbox: RunningSandbox;
let client: BankClient;
let now: Date;

beforeEach(async () => {
  now = new Date('2026-11-22T12:00:00.000Z');
  ({ sandbox, client } = await sandboxes.setup({ now: () => now }));
});

const raw = (method: RawMethod, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  rawRequest(sandbox, method, path, body, { ...PUBLIC_KEY_JSON_HEADERS, ...headers });

const pay = (body: unknown, key: string = randomUUID()) =>
  raw('POST', '/baas/api/v1/bill-payments', body, { IdempotencyKey: key });

describe('fixture lines', () => {
  it('are valid and give their documented status, by line and by bar code', async () => {
    for (const fixture of Object.values(SANDBOX_BILL_FIXTURES)) {
      expect(parseBillIdentifier(fixture.digitableLine).barCode).toBe(fixture.barCode);
      const byLine = await client.billPayments.lookup(fixture.digitableLine);
      const byBarCode = await client.billPayments.lookup(fixture.barCode);
      expect(byLine.status).toBe(fixture.status);
      expect(byBarCode.record).toEqual(byLine.record);
      expect(byLine.record.type).toBe(fixture.type);
      expect(byLine.amountCents).toBe(fixture.amountCents);
      expect(byLine.isAllowPartialPayment).toBe(fixture.isAllowPartialPayment);
      expect(byLine.barCode).toBe(fixture.barCode);
      expect(byLine.digitableLine).toBe(fixture.digitableLine);
    }
  });

  it('are listed in docs/sandbox.md', () => {
    const doc = readFileSync(new URL('../docs/sandbox.md', import.meta.url), 'utf8');
    for (const fixture of Object.values(SANDBOX_BILL_FIXTURES)) {
      expect(doc).toContain(fixture.digitableLine);
      expect(doc).toContain(fixture.barCode);
    }
  });

  it('computes interest (interesetAmount) and fine after the due date, and a discount before it', async () => {
    const overdue = await raw('GET', `/baas/api/v1/bill-payments/${SANDBOX_BILL_FIXTURES.OVERDUE.digitableLine}`);
    expect(overdue.status).toBe(200);
    // Due 2026-01-15, today 2026-11-22: 311 days late; 1% a month pro rata on 200.00 = 20.73; fine 2% = 4.00.
    expect(overdue.json.paymentCalculation).toEqual({
      rebateAmount: 0,
      interesetAmount: 20.73,
      fineAmount: 4,
      discountAmount: 0,
      chargedAmount: 224.73,
      minimumPaymentAmount: 224.73,
      maximumPaymentAmount: 224.73,
    });
    expect(overdue.json.dueDate).toBe('2026-01-15T00:00:00');
    expect(overdue.json.overduePaymentInterest).toEqual({ date: '2026-01-16', amount: 1, type: 'PERCENTAGE' });
    expect(overdue.json.overduePaymentFine).toEqual({ date: '2026-01-16', amount: 2, type: 'PERCENTAGE' });
    const discount = await client.billPayments.lookup(SANDBOX_BILL_FIXTURES.DISCOUNT.barCode);
    expect(discount.paymentCalculation).toMatchObject({ discountAmountCents: 1_000, chargedAmountCents: 49_000 });
    const taxes = await raw('GET', `/baas/api/v1/bill-payments/${SANDBOX_BILL_FIXTURES.TAXES.digitableLine}`);
    expect(taxes.json).toMatchObject({ type: 'TAXES', dueDate: null, amount: 89.9 });
    expect(taxes.json.paymentCalculation.chargedAmount).toBe(89.9);
  });

  it('refuses bad check digits and wrong lengths with 400 and a clear message', async () => {
    const line = SANDBOX_BILL_FIXTURES.PENDING_PAYMENT.digitableLine;
    const broken = line.slice(0, 9) + String((Number(line[9]) + 1) % 10) + line.slice(10);
    const res = await raw('GET', `/baas/api/v1/bill-payments/${broken}`);
    expect(res.status).toBe(400);
    expect(res.json.errors.paymentIdentifier[0]).toMatch(/check digit|field 1/i);
    const tax = SANDBOX_BILL_FIXTURES.TAXES.barCode;
    const badTax = tax.slice(0, 3) + String((Number(tax[3]) + 1) % 10) + tax.slice(4);
    expect((await raw('GET', `/baas/api/v1/bill-payments/${badTax}`)).status).toBe(400);
    const short = await raw('GET', '/baas/api/v1/bill-payments/12345');
    expect(short.json.errors.paymentIdentifier[0]).toMatch(/got 5 digits/);
    await expect(client.billPayments.lookup(broken)).rejects.toBeInstanceOf(ValidationError);
  });

  it('reads any other valid line as a pending synthetic bill with the amount and due date of the line', async () => {
    const id = parseBillIdentifier('43590001161200000060900005206370510380000000010');
    const bill = await client.billPayments.lookup('43590001161200000060900005206370510380000000010');
    expect(bill.status).toBe('PENDING_PAYMENT');
    expect(bill.amountCents).toBe(id.amountCents);
    expect(bill.record.dueDate).toBe(`${id.dueDate}T00:00:00`);
  });
});

describe('payment calculation (property)', () => {
  const rule = (type: 'PERCENTAGE' | 'FIXED'): fc.Arbitrary<BillAmountRule> =>
    fc.record({
      date: fc.integer({ min: 0, max: 400 }).map((d) => new Date(Date.UTC(2026, 0, 1 + d)).toISOString().slice(0, 10)),
      amount: fc.integer({ min: 0, max: 2_000 }).map((n) => n / 100),
      type: fc.constant(type),
    });
  it('charges amount + interest + fine - discount, never negative, with minimum <= maximum', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1_000_000_00 }),
        fc.integer({ min: 0, max: 400 }).map((d) => new Date(Date.UTC(2026, 0, 1 + d)).toISOString().slice(0, 10)),
        fc.option(fc.oneof(rule('PERCENTAGE'), rule('FIXED')), { nil: null }),
        fc.option(fc.oneof(rule('PERCENTAGE'), rule('FIXED')), { nil: null }),
        fc.array(fc.oneof(rule('PERCENTAGE'), rule('FIXED')), { maxLength: 3 }),
        fc.boolean(),
        (amount, today, interestRule, fineRule, discounts, partial) => {
          const c = calculate(amount, today, { interestRule, fineRule, discounts }, partial);
          for (const v of Object.values(c)) expect(Number.isSafeInteger(v) && v >= 0).toBe(true);
          expect(c.chargedCents).toBe(Math.max(0, amount + c.interestCents + c.fineCents - c.discountCents));
          expect(c.minimumCents).toBeLessThanOrEqual(Math.max(c.maximumCents, 1));
          expect(c.maximumCents).toBe(c.chargedCents);
          if (!partial) expect(c.minimumCents).toBe(c.chargedCents);
          if (interestRule === null || today < interestRule.date) expect(c.interestCents).toBe(0);
        },
      ),
    );
  });
});

describe('paying bills', () => {
  it('pays a pending fixture once; the bill then reads PAID and a second payment is refused (409)', async () => {
    const bill = await client.billPayments.lookup(SANDBOX_BILL_FIXTURES.PENDING_PAYMENT.digitableLine);
    const key = randomUUID();
    const paid = await client.billPayments.pay(bill, { amountCents: bill.chargedAmountCents, idempotencyKey: key });
    expect(paid.status).toBe('PAID');
    expect(paid.paidAmountCents).toBe(15_000);
    expect(paid.originalAmountCents).toBe(15_000);
    const again = await client.billPayments.lookup(SANDBOX_BILL_FIXTURES.PENDING_PAYMENT.barCode);
    expect(again.status).toBe('PAID');
    // The same request with the same key is a replay, not a second payment.
    const replay = await client.billPayments.pay(bill, { amountCents: bill.chargedAmountCents, idempotencyKey: key });
    expect(replay.id).toBe(paid.id);
    const second = pay({ amount: 150, digitableLine: SANDBOX_BILL_FIXTURES.PENDING_PAYMENT.digitableLine });
    expect((await second).status).toBe(409);
    expect((await second).json.code).toBe('BILL_NOT_PAYABLE');
    await expect(
      client.billPayments.pay(bill, { amountCents: 15_000, idempotencyKey: randomUUID() }),
    ).rejects.toBeInstanceOf(ConflictError);
    expect(sandbox.ctx.ledger.count('bill_paid', key)).toBe(1);
  });

  it('refuses bills that are not PENDING_PAYMENT with 409 BILL_NOT_PAYABLE', async () => {
    for (const f of [
      SANDBOX_BILL_FIXTURES.PAID,
      SANDBOX_BILL_FIXTURES.BLOCKED_PAYMENT,
      SANDBOX_BILL_FIXTURES.PAYMENT_DEADLINE_EXCEEDED,
    ]) {
      const res = await pay({ amount: f.amountCents / 100, barCode: f.barCode });
      expect(res.status).toBe(409);
      expect(res.json.code).toBe('BILL_NOT_PAYABLE');
      expect(res.json.detail).toContain(f.status);
    }
  });

  it('requires the charged amount unless partial payment is allowed, then enforces the range', async () => {
    const overdue = SANDBOX_BILL_FIXTURES.OVERDUE;
    const wrong = await pay({ amount: 200, barCode: overdue.barCode });
    expect(wrong.status).toBe(400);
    expect(wrong.json.errors['$.amount'][0]).toMatch(/Expected the charged amount 224.73.*got 200.00/);

    const partial = await client.billPayments.lookup(SANDBOX_BILL_FIXTURES.PARTIAL_PAYMENT.digitableLine);
    expect(partial.paymentCalculation).toMatchObject({
      minimumPaymentAmountCents: 10_000,
      maximumPaymentAmountCents: 100_000,
    });
    const below = await pay({ amount: 99.99, barCode: SANDBOX_BILL_FIXTURES.PARTIAL_PAYMENT.barCode });
    expect(below.status).toBe(400);
    expect(below.json.errors['$.amount'][0]).toMatch(/from 100.00 \(minimumPaymentAmount\) to 1000.00/);
    const above = await pay({ amount: 1000.01, barCode: SANDBOX_BILL_FIXTURES.PARTIAL_PAYMENT.barCode });
    expect(above.status).toBe(400);
    const ok = await client.billPayments.pay(partial, { amountCents: 25_000, idempotencyKey: randomUUID() });
    expect(ok).toMatchObject({ status: 'PAID', paidAmountCents: 25_000, originalAmountCents: 100_000 });
  });

  it('validates the body: amount, identifier, payAt, idempotency key', async () => {
    const res = await pay({ amount: -1, barCode: '123', payAt: 'tomorrow' });
    expect(res.status).toBe(400);
    expect(Object.keys(res.json.errors).sort()).toEqual(['$.amount', '$.barCode', '$.payAt']);
    const neither = await pay({ amount: 1 });
    expect(neither.json.errors['$.barCode'][0]).toMatch(/neither/);
    const mismatch = await pay({
      amount: 150,
      barCode: SANDBOX_BILL_FIXTURES.PENDING_PAYMENT.barCode,
      digitableLine: SANDBOX_BILL_FIXTURES.OVERDUE.digitableLine,
    });
    expect(mismatch.json.errors['$.digitableLine']).toBeDefined();
    const past = await pay({
      amount: 150,
      barCode: SANDBOX_BILL_FIXTURES.PENDING_PAYMENT.barCode,
      payAt: '2026-11-01',
    });
    expect(past.json.errors['$.payAt'][0]).toMatch(/today \(2026-11-22\) or later/);
    const noKey = await raw('POST', '/baas/api/v1/bill-payments', {
      amount: 150,
      barCode: SANDBOX_BILL_FIXTURES.PENDING_PAYMENT.barCode,
    });
    expect(noKey.status).toBe(400);
    expect(noKey.json.code).toBe('IDEMPOTENCY_KEY_MISSING');
  });

  it('schedules with a future payAt (SCHEDULED), refuses another payment, and pays when the clock passes payAt', async () => {
    const f = SANDBOX_BILL_FIXTURES.PENDING_PAYMENT;
    const scheduled = await pay({ amount: 150, digitableLine: f.digitableLine, payAt: '2026-11-25T09:00:00Z' });
    expect(scheduled.status).toBe(200);
    expect(scheduled.json).toMatchObject({ status: 'SCHEDULED', payAt: '2026-11-25T09:00:00.000Z', paidAmount: 150 });
    expect((await client.billPayments.lookup(f.barCode)).status).toBe('PENDING_PAYMENT');
    const twice = await pay({ amount: 150, digitableLine: f.digitableLine });
    expect(twice.status).toBe(409);
    expect(twice.json.code).toBe('BILL_PAYMENT_ALREADY_SCHEDULED');
    now = new Date('2026-11-25T09:00:00.000Z');
    expect((await client.billPayments.lookup(f.barCode)).status).toBe('PAID');
  });
});

describe("the sandbox's own slips", () => {
  it('looks up a charge slip as PENDING_PAYMENT; paying it marks the charge paid and records CHARGE_PAID once', async () => {
    const correlationId = randomUUID();
    const charge = await client.charges.create({
      type: 'BANKSLIP',
      correlationId,
      dueDate: '2026-12-10',
      amountCents: 12_345,
      payer: { name: 'Maria Silva', document: '52998224725', address: PAYER_ADDRESS },
    });
    const line = (charge as { digitableLine?: string }).digitableLine!;
    const bill = await client.billPayments.lookup(line);
    expect(bill.status).toBe('PENDING_PAYMENT');
    expect(bill.amountCents).toBe(12_345);
    expect(bill.record.payer).toMatchObject({ document: '52998224725', name: 'Maria Silva', type: 'NATURAL' });
    const paid = await client.billPayments.pay(bill, { amountCents: 12_345, idempotencyKey: randomUUID() });
    expect(paid.status).toBe('PAID');
    const after = await raw('GET', `/v1/charges/${correlationId}`);
    expect(after.json.status).toBe('Paid');
    expect((await client.billPayments.lookup(line)).status).toBe('PAID');
    const events = sandbox.ctx.events.list({ type: 'CHARGE_PAID' });
    expect(events.filter((e) => e.payload.correlationId === correlationId)).toHaveLength(1);
    expect(sandbox.ctx.ledger.count('charge_paid', correlationId)).toBe(1);
  });

  it('applies the charge lateFine and latePayment after the due date, and a voided slip is BLOCKED_PAYMENT', async () => {
    const correlationId = randomUUID();
    now = new Date('2026-11-10T12:00:00.000Z');
    const created = await raw('POST', '/v1/charges', {
      type: 'BANKSLIP',
      correlationId,
      dueDate: '2026-11-12',
      Amount: 100,
      payer: { name: 'Empresa X', document: '11222333000181', address: PAYER_ADDRESS },
      lateFine: { type: 'Percentage', date: '2026-11-13', amount: 2 },
      latePayment: { type: 'Fixed', date: '2026-11-13', amount: 0.1 },
    });
    expect(created.json).toMatchObject({ correlationId });
    now = new Date('2026-11-22T12:00:00.000Z');
    const bill = await raw('GET', `/baas/api/v1/bill-payments/${created.json.barCode}`);
    // 10 days late (13th to 22nd): 10 x 0.10 interest, 2% fine.
    expect(bill.json.paymentCalculation).toMatchObject({ interesetAmount: 1, fineAmount: 2, chargedAmount: 103 });
    expect(bill.json.payer.type).toBe('LEGAL');
    expect((await raw('POST', `/v1/charges/${correlationId}/void`)).status).toBe(200);
    expect((await raw('GET', `/baas/api/v1/bill-payments/${created.json.barCode}`)).json.status).toBe(
      'BLOCKED_PAYMENT',
    );
  });
});

describe('garbage in (property, over HTTP)', () => {
  it('a lookup answers 200 or a 400 validation problem, never anything else', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.stringMatching(/^[0-9]{44,48}$/),
          fc.stringMatching(/^8[0-9]{47}$/),
          fc.string({ minLength: 1, maxLength: 60 }),
        ),
        async (text) => {
          const res = await raw('GET', `/baas/api/v1/bill-payments/${encodeURIComponent(text)}`);
          expect([200, 400, 404]).toContain(res.status);
          if (res.status === 400) expect(res.json.errors).toBeDefined();
        },
      ),
      { numRuns: 60 },
    );
  });
});
