/**
 * src/bank/answer-readers.ts: the bill lookup's and the bill payment's answers read without zod give what the schemas
 * give, key for key and in the same order, or send the answer to the schema; the sandbox's answers take the fast way.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import { billAnswer, billPaymentAnswer, readBill, readBillPayment } from '../src/bank/answer-readers.js';
import { UnexpectedResponseError } from '../src/bank/errors.js';
import { parseBody } from '../src/bank/http.js';
import { BILL_ANSWER_FIELDS, billPaymentSchema, billSchema } from '../src/bank/schemas.js';
import { SANDBOX_BILL_FIXTURES } from '../src/sandbox/bills.js';
import type { RunningSandbox } from '../src/sandbox/server.js';
import { SANDBOX_PUBLIC_API_KEY } from '../src/sandbox/server.js';
import { PUBLIC_KEY_JSON_HEADERS, rawRequest, sandboxPerTest } from './helpers/sandbox.js';

/** A value with its keys' order and its keys holding undefined made visible, for a comparison that sees both. */
function canon(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canon);
  if (typeof value === 'object' && value !== null) {
    return Object.keys(value).map((k) => [k, canon((value as Record<string, unknown>)[k])]);
  }
  return value === undefined ? '<undefined>' : value;
}

/** The schema's answer: its data, or how it failed (a refusal or a throw). */
function bySchema(schema: { safeParse(d: unknown): { success: boolean; data?: unknown } }, data: unknown): unknown {
  try {
    const r = schema.safeParse(data);
    return r.success ? { data: canon(r.data) } : 'refused';
  } catch {
    return 'threw';
  }
}

/** The reader agrees with the schema: its value is the schema's data, or it leaves the answer to the schema. */
function expectAgrees(read: (d: unknown) => unknown, schema: Parameters<typeof bySchema>[0], data: unknown): boolean {
  const fast = read(data);
  if (fast === undefined) return false;
  expect({ data: canon(fast) }).toEqual(bySchema(schema, data));
  return true;
}

const sandboxes = sandboxPerTest({ client: { apiKey: SANDBOX_PUBLIC_API_KEY } });
let sandbox: RunningSandbox;
beforeEach(async () => {
  ({ sandbox } = await sandboxes.setup({ now: () => new Date('2026-11-22T12:00:00.000Z') }));
});

describe("the sandbox's answers", () => {
  it('are read the fast way, with what the schemas give', async () => {
    for (const fixture of Object.values(SANDBOX_BILL_FIXTURES)) {
      const looked = await rawRequest(
        sandbox,
        'GET',
        `/baas/api/v1/bill-payments/${fixture.barCode}`,
        undefined,
        PUBLIC_KEY_JSON_HEADERS,
      );
      expect(looked.status).toBe(200);
      expect(expectAgrees(readBill, billSchema, looked.json)).toBe(true);
      if (fixture.status !== 'PENDING_PAYMENT') continue;
      const paid = await rawRequest(
        sandbox,
        'POST',
        '/baas/api/v1/bill-payments',
        { barCode: fixture.barCode, amount: looked.json.paymentCalculation.chargedAmount },
        { ...PUBLIC_KEY_JSON_HEADERS, IdempotencyKey: randomUUID() },
      );
      expect(paid.status).toBe(200);
      expect(expectAgrees(readBillPayment, billPaymentSchema, paid.json)).toBe(true);
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Generated answers: each field usual, absent, null or of another type; keys the schemas do not name; either order.

const ABSENT = Symbol('absent');
const other = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.string({ maxLength: 4 }),
  fc.constant([]),
  fc.constant({}),
  fc.constant({ a: 1 }),
);
/** Usual most of the time, else absent or anything. */
const field = (usual: fc.Arbitrary<unknown>) =>
  fc.oneof(
    { arbitrary: usual, weight: 6 },
    { arbitrary: fc.constant(ABSENT), weight: 1 },
    { arbitrary: other, weight: 1 },
  );
const cents = fc.integer({ min: 0, max: 100_000_000 }).map((c) => c / 100);
const amount = fc.oneof({ arbitrary: cents, weight: 8 }, { arbitrary: fc.constantFrom(1.234, -1, 1e20), weight: 1 });
const text = fc.string({ maxLength: 6 });
const extras = fc.dictionary(
  fc.constantFrom('zz', 'amountCents', 'originalAmountCents', 'extra', 'chargedAmountCents', '__proto__', 'a'),
  fc.jsonValue({ maxDepth: 1 }),
  { maxKeys: 2 },
);

/** An object of `fields` (ABSENT left out) and some other keys, in the order given or its reverse. */
function object(fields: Record<string, fc.Arbitrary<unknown>>, usual = false): fc.Arbitrary<Record<string, unknown>> {
  return fc
    .tuple(fc.record(fields), usual ? fc.constant({}) : extras, fc.boolean())
    .map(([named, others, reversed]) => {
      const entries = [...Object.entries(named), ...Object.entries(others)].filter(([, v]) => v !== ABSENT);
      if (reversed) entries.reverse();
      const out: Record<string, unknown> = {};
      for (const [k, v] of entries) Object.defineProperty(out, k, { value: v, enumerable: true, writable: true });
      return out;
    });
}

const partyFields = { document: field(text), name: field(text), type: field(text), fantasyName: field(text) };
const issuerFields = { ispb: field(text), name: field(text), nameFantasy: field(text) };
const calculationFields = {
  rebateAmount: field(amount),
  interesetAmount: field(amount),
  interestAmount: field(amount),
  fineAmount: field(amount),
  discountAmount: field(amount),
  chargedAmount: field(amount),
  minimumPaymentAmount: field(amount),
  maximumPaymentAmount: field(amount),
};
const ruleFields = {
  date: field(text),
  amount: field(fc.oneof(amount, fc.integer({ min: 0, max: 10 }))),
  type: field(fc.constantFrom('FIXED', 'Fixed', 'PERCENTAGE')),
};
const billFields = {
  identifierNumber: field(text),
  type: field(fc.constantFrom('BANKSLIP', 'CONCESSIONAIRE')),
  status: field(fc.constantFrom('PAID', 'PENDING_PAYMENT', 'BLOCKED_PAYMENT', 'PAYMENT_DEADLINE_EXCEEDED', 'OTHER')),
  amount: field(amount),
  dueDate: field(text),
  barCode: field(text),
  digitableLine: field(text),
  isAllowPartialPayment: field(fc.boolean()),
  paymentCalculation: field(object(calculationFields)),
  payer: field(object(partyFields)),
  overduePaymentInterest: field(object(ruleFields)),
  overduePaymentFine: field(object(ruleFields)),
  discounts: field(fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 2 })),
  beneficiary: field(object(partyFields)),
  issuer: field(object(issuerFields)),
};
const paymentFields = {
  id: field(fc.oneof(fc.uuid(), fc.integer())),
  status: field(fc.constantFrom('PAID', 'SCHEDULED', 'FAILED')),
  identifierNumber: field(text),
  barCode: field(text),
  digitableLine: field(text),
  dueDate: field(text),
  createdAt: field(text),
  originalAmount: field(amount),
  paidAmount: field(amount),
  paymentCalculation: field(object(calculationFields)),
  beneficiary: field(object(partyFields)),
  issuer: field(object(issuerFields)),
};

describe('generated answers', () => {
  it('name every field the schemas name (a field added to a schema is generated, and read, here too)', () => {
    expect(Object.keys(billFields)).toEqual(BILL_ANSWER_FIELDS.bill);
    expect(Object.keys(paymentFields)).toEqual(BILL_ANSWER_FIELDS.billPayment);
    expect(Object.keys(calculationFields)).toEqual(BILL_ANSWER_FIELDS.calculation);
    expect(Object.keys(partyFields)).toEqual(BILL_ANSWER_FIELDS.party);
    expect(Object.keys(issuerFields)).toEqual(BILL_ANSWER_FIELDS.issuer);
  });

  it('bill lookup: the reader gives what billSchema gives, or leaves the answer to it', () => {
    fc.assert(
      fc.property(fc.oneof(object(billFields), other), (data) => {
        expectAgrees(readBill, billSchema, data);
      }),
      { numRuns: 3000 },
    );
  });

  it('bill payment: the reader gives what billPaymentSchema gives, or leaves the answer to it', () => {
    fc.assert(
      fc.property(fc.oneof(object(paymentFields), other), (data) => {
        expectAgrees(readBillPayment, billPaymentSchema, data);
      }),
      { numRuns: 3000 },
    );
  });

  it('an answer of the usual shape is read the fast way', () => {
    const usual = <T>(a: fc.Arbitrary<T>) => fc.oneof(a, fc.constant(null));
    const usualParty = object({ document: text, name: text, type: text }, true);
    const bill = object(
      {
        identifierNumber: text,
        type: fc.constant('BANKSLIP'),
        status: fc.constantFrom('PAID', 'PENDING_PAYMENT'),
        amount: cents,
        dueDate: usual(text),
        barCode: text,
        digitableLine: usual(text),
        isAllowPartialPayment: fc.boolean(),
        paymentCalculation: object({ chargedAmount: cents, interesetAmount: cents, fineAmount: cents }, true),
        payer: usual(usualParty),
        overduePaymentInterest: object({ date: text, amount: cents, type: fc.constant('PERCENTAGE') }, true),
        discounts: fc.constant([]),
        beneficiary: usualParty,
        issuer: object({ ispb: text, name: text }, true),
      },
      true,
    );
    const payment = object(
      { id: fc.uuid(), status: fc.constant('PAID'), barCode: text, paidAmount: cents, createdAt: usual(text) },
      true,
    );
    fc.assert(
      fc.property(bill, payment, (b, p) => {
        expect(expectAgrees(readBill, billSchema, b)).toBe(true);
        expect(expectAgrees(readBillPayment, billPaymentSchema, p)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});

describe('parseBody with an answer schema', () => {
  const where = { method: 'GET', path: '/baas/api/v1/bill-payments/1' };
  const res = (body: unknown) => ({
    status: 200,
    headers: {},
    contentType: 'application/json',
    body: JSON.stringify(body),
  });
  const lookup = {
    type: 'BANKSLIP',
    status: 'PENDING_PAYMENT',
    amount: 10,
    barCode: '1',
    paymentCalculation: { chargedAmount: 10 },
  };

  it('reads the usual answer as the schema does', () => {
    expect(canon(parseBody(res(lookup), billAnswer, where))).toEqual(canon(billSchema.parse(lookup)));
  });

  it("fails with the schema's message and the field's path", () => {
    for (const [body, path] of [
      [{ ...lookup, amount: 10.001 }, '$.amount'],
      [{ ...lookup, status: 'LOST' }, '$.status'],
      [{ ...lookup, barCode: undefined }, '$.barCode'],
      [{ ...lookup, paymentCalculation: { chargedAmount: '10' } }, '$.paymentCalculation.chargedAmount'],
    ] as const) {
      const fast = (() => {
        try {
          parseBody(res(body), billAnswer, where);
        } catch (error) {
          return error;
        }
      })();
      expect(fast).toBeInstanceOf(UnexpectedResponseError);
      expect((fast as UnexpectedResponseError).message).toContain(path);
      expect(() => parseBody(res(body), billSchema, where)).toThrow((fast as Error).message);
    }
  });

  it("reads a payment's malformed optional field as absent, as the schema does", () => {
    const paid = { id: 7, status: 'PAID', paidAmount: 'ten', beneficiary: { name: 3 } };
    expect(readBillPayment(paid)).toBeUndefined();
    expect(parseBody(res(paid), billPaymentAnswer, where)).toEqual({
      id: '7',
      status: 'PAID',
      beneficiary: undefined,
    });
  });
});
