/**
 * The two-step bill payment API: `pay` takes only what `lookup` returned, and refuses before sending what spec 4.2
 * says never to pay. A local HTTP server plays the bank so each bill status can be served as is.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LookedUpBill } from '../src/bank/bill-payments.js';
import { BankClient } from '../src/bank/client.js';
import { RequestValidationError, UnexpectedResponseError } from '../src/bank/errors.js';

const BAR_CODE = '43591166600000123450001112123456700000000001';
const LINE = '43590001161212345670400000000018916660000012345';
const KEY = '0b6f0c8e-4a43-4a5e-8d0e-2b8d7f1c9a11';

/** Bills served by identifier. */
const BILLS: Record<string, unknown> = {
  pending: {
    identifierNumber: 'pending',
    type: 'BANKSLIP',
    status: 'PENDING_PAYMENT',
    amount: 123.45,
    dueDate: '2026-12-20T00:00:00',
    barCode: BAR_CODE,
    digitableLine: LINE,
    isAllowPartialPayment: false,
    paymentCalculation: {
      rebateAmount: 0,
      interesetAmount: 1.1,
      fineAmount: 2.47,
      discountAmount: 0,
      chargedAmount: 127.02,
      minimumPaymentAmount: 127.02,
      maximumPaymentAmount: 127.02,
    },
    overduePaymentInterest: { date: '2026-12-21', amount: 1, type: 'PERCENTAGE' },
    overduePaymentFine: { date: '2026-12-21', amount: 2.47, type: 'FIXED' },
  },
  partial: {
    type: 'TAXES',
    status: 'PENDING_PAYMENT',
    amount: 500,
    digitableLine: '858000000005000000640741012345678901234567890123',
    isAllowPartialPayment: true,
    paymentCalculation: { chargedAmount: 500, minimumPaymentAmount: 100, maximumPaymentAmount: 500 },
  },
  paid: { type: 'BANKSLIP', status: 'PAID', amount: 10, barCode: BAR_CODE, isAllowPartialPayment: false },
  blocked: { type: 'BANKSLIP', status: 'BLOCKED_PAYMENT', amount: 10, barCode: BAR_CODE, isAllowPartialPayment: false },
  odd: { type: 'BANKSLIP', status: 'SOMETHING_NEW', amount: 10, barCode: BAR_CODE },
};

let server: Server;
let client: BankClient;
const posts: Array<{ headers: IncomingMessage['headers']; body: unknown }> = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => {
      raw += c.toString();
    });
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.method === 'GET') {
        const id = decodeURIComponent(req.url?.split('/').pop() ?? '');
        const bill = BILLS[id];
        res.statusCode = bill ? 200 : 404;
        res.end(JSON.stringify(bill ?? { title: 'Not Found', status: 404 }));
        return;
      }
      const body = JSON.parse(raw) as { amount: number; barCode?: string; digitableLine?: string };
      posts.push({ headers: req.headers, body });
      res.end(
        JSON.stringify({
          id: `pay-${posts.length}`,
          status: 'PAID',
          barCode: body.barCode,
          digitableLine: body.digitableLine,
          originalAmount: 123.45,
          paidAmount: body.amount,
          createdAt: '2026-11-22T00:00:00.000Z',
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  client = new BankClient({
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    apiKey: 'bills-key',
  });
});

afterAll(async () => {
  await client?.close();
  await new Promise<void>((r) => server?.close(() => r()));
});

describe('billPayments.lookup', () => {
  it('returns a LookedUpBill with amounts in cents and the interest spelled right', async () => {
    const bill = await client.billPayments.lookup('pending');
    expect(bill).toBeInstanceOf(LookedUpBill);
    expect(bill.identifier).toBe('pending');
    expect(bill.status).toBe('PENDING_PAYMENT');
    expect(bill.amountCents).toBe(12_345);
    expect(bill.chargedAmountCents).toBe(12_702);
    expect(bill.paymentCalculation?.interestAmountCents).toBe(110);
    expect(bill.record.overduePaymentInterest).toEqual({ date: '2026-12-21', type: 'PERCENTAGE', percent: 1 });
    expect(bill.record.overduePaymentFine).toEqual({ date: '2026-12-21', type: 'FIXED', amountCents: 247 });
    expect(Object.isFrozen(bill.record)).toBe(true);
  });

  it('an unknown status is an UnexpectedResponseError naming $.status', async () => {
    const err = await client.billPayments.lookup('odd').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnexpectedResponseError);
    expect((err as UnexpectedResponseError).fieldPath).toBe('$.status');
  });
});

describe('billPayments.pay', () => {
  it('pays the looked-up bill by its bar code with the caller key', async () => {
    const bill = await client.billPayments.lookup('pending');
    const before = posts.length;
    const paid = await client.billPayments.pay(bill, {
      amountCents: 12_702,
      idempotencyKey: KEY,
      payAt: '2026-12-01T10:00:00',
    });
    expect(paid.status).toBe('PAID');
    expect(paid.paidAmountCents).toBe(12_702);
    expect(paid.originalAmountCents).toBe(12_345);
    const sent = posts[before];
    expect(sent?.headers.idempotencykey).toBe(KEY);
    expect(sent?.body).toEqual({ amount: 127.02, barCode: BAR_CODE, payAt: '2026-12-01T10:00:00' });
  });

  it('uses the digitable line when the bill has no bar code; partial payment inside the range', async () => {
    const bill = await client.billPayments.lookup('partial');
    const before = posts.length;
    await client.billPayments.pay(bill, { amountCents: 10_000, idempotencyKey: KEY });
    expect(posts[before]?.body).toEqual({
      amount: 100,
      digitableLine: '858000000005000000640741012345678901234567890123',
    });
  });

  it('refuses, before sending: not looked up, wrong status, amount out of range, no key', async () => {
    const before = posts.length;
    const pending = await client.billPayments.lookup('pending');
    const partial = await client.billPayments.lookup('partial');
    const paid = await client.billPayments.lookup('paid');
    const blocked = await client.billPayments.lookup('blocked');
    const cases: Array<[Promise<unknown>, string]> = [
      // A plain object shaped like a looked-up bill is not one.
      [
        client.billPayments.pay({ ...pending, status: 'PENDING_PAYMENT' } as unknown as LookedUpBill, {
          amountCents: 12_702,
          idempotencyKey: KEY,
        }),
        'BANK_NOT_LOOKED_UP',
      ],
      [client.billPayments.pay(paid, { amountCents: 1_000, idempotencyKey: KEY }), 'BANK_BILL_NOT_PAYABLE'],
      [client.billPayments.pay(blocked, { amountCents: 1_000, idempotencyKey: KEY }), 'BANK_BILL_NOT_PAYABLE'],
      [client.billPayments.pay(pending, { amountCents: 12_345, idempotencyKey: KEY }), 'BANK_AMOUNT_OUT_OF_RANGE'],
      [client.billPayments.pay(partial, { amountCents: 99, idempotencyKey: KEY }), 'BANK_AMOUNT_OUT_OF_RANGE'],
      [client.billPayments.pay(partial, { amountCents: 50_001, idempotencyKey: KEY }), 'BANK_AMOUNT_OUT_OF_RANGE'],
      [client.billPayments.pay(pending, { amountCents: 12_702, idempotencyKey: '' }), 'BANK_IDEMPOTENCY_KEY_MISSING'],
    ];
    for (const [promise, code] of cases) {
      const err = await promise.catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RequestValidationError);
      expect((err as RequestValidationError).code).toBe(code);
    }
    expect(posts.length).toBe(before);
  });

  it('a LookedUpBill cannot be made outside lookup', () => {
    expect(() => new LookedUpBill(Symbol('LookedUpBill'), 'x', BILLS.paid as never, new Date())).toThrow(TypeError);
  });
});
