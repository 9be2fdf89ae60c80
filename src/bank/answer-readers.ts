/**
 * The two answers every bill row reads (the lookup, spec 2.5, and the payment, spec 2.6), read without zod when they
 * have their usual shape: a run of bill payments parses two of them a row, and zod's parse of the lookup alone
 * allocates some 9 KB (docs/performance.md, eighth and ninth passes).
 *
 * The contract, checked by test/answer-readers.test.ts against the schemas themselves on generated answers:
 * `read(data)` returns what `schema.safeParse(data)` returns as its data (the same keys in the same order, the same
 * values), or `undefined` when the answer is not of the usual shape. It never decides anything on its own:
 * - every field the schema checks is checked here with the same types; a field of any other type, a missing required
 *   field, an amount in fractions of a cent, a bill with neither bar code nor digitable line: `undefined`;
 * - `undefined` sends the answer through the schema (src/bank/http.ts `parseBody`), which then gives its own
 *   output (the lenient fields of a payment's answer read as absent) or its failure with the field's path.
 * So the schemas in ./schemas.ts stay the one definition of what an answer may be; this file is a faster way to the
 * same result for the shape the bank sends every time.
 */
import type { z } from 'zod';
import { BILL_STATUSES } from '../formats/bills.js';
import {
  BILL_ANSWER_FIELDS,
  billPaymentSchema,
  billSchema,
  calculationFromWire,
  type WireCalculation,
} from './schemas.js';
import type { Bill, BillPayment, PaymentCalculation } from './types.js';
import { amountRuleFromWire, wireMoneyOrUndefined } from './wire.js';

/** A response schema with a reader of its usual shape (see the top). `parseBody` takes either. */
export class AnswerSchema<T> {
  constructor(
    readonly schema: z.ZodType<T>,
    readonly read: (data: unknown) => T | undefined,
  ) {}
}

/** What a field's reader returns when the field is not of the usual shape: the whole answer goes to the schema. */
const NOT_USUAL: unique symbol = Symbol('not the usual shape');
type Read<T> = T | typeof NOT_USUAL;
type Obj = Record<string, unknown>;

function isObject(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An amount as `wireMoney` reads it, or NOT_USUAL for what it refuses (the schema then says why). */
function money(value: unknown): Read<number> {
  return wireMoneyOrUndefined(value) ?? NOT_USUAL;
}

/**
 * The keys of `input` the shape does not name, copied after the named ones as a loose zod object does; false when
 * one of them cannot be copied as zod copies it (`__proto__`).
 */
function copyOthers(input: Obj, named: ReadonlySet<string>, out: Obj): boolean {
  for (const key of Object.keys(input)) {
    if (named.has(key)) continue;
    if (key === '__proto__') return false;
    out[key] = input[key];
  }
  return true;
}

/**
 * A loose object whose named fields are all optional strings (`party`, `issuer` of ./schemas.ts): null or another
 * type is NOT_USUAL, since `z.string().optional()` refuses it.
 */
function stringsObject(value: unknown, keys: readonly string[], named: ReadonlySet<string>): Read<Obj> {
  if (!isObject(value)) return NOT_USUAL;
  const out: Obj = {};
  for (const key of keys) {
    const v = value[key];
    if (v === undefined) {
      if (Object.hasOwn(value, key)) return NOT_USUAL;
      continue;
    }
    if (typeof v !== 'string') return NOT_USUAL;
    out[key] = v;
  }
  return copyOthers(value, named, out) ? out : NOT_USUAL;
}

const PARTY_KEYS = BILL_ANSWER_FIELDS.party;
const PARTY_NAMED: ReadonlySet<string> = new Set(PARTY_KEYS);
const ISSUER_KEYS = BILL_ANSWER_FIELDS.issuer;
const ISSUER_NAMED: ReadonlySet<string> = new Set(ISSUER_KEYS);

/** `paymentCalculationSchema`: every amount a number of whole cents or absent, `chargedAmount` required. */
function calculation(value: unknown): Read<PaymentCalculation> {
  if (!isObject(value)) return NOT_USUAL;
  const amounts: Partial<Record<string, number>> = {};
  for (const key of BILL_ANSWER_FIELDS.calculation) if (!readAmount(value, key, amounts)) return NOT_USUAL;
  if (amounts.chargedAmount === undefined) return NOT_USUAL;
  return calculationFromWire(amounts as unknown as WireCalculation);
}

/** An optional amount of a payment calculation into `amounts`; false when present and not whole cents. */
function readAmount(value: Obj, key: string, amounts: Partial<Record<string, number>>): boolean {
  const v = value[key];
  if (v === undefined) return !Object.hasOwn(value, key);
  const cents = money(v);
  if (cents === NOT_USUAL) return false;
  amounts[key] = cents;
  return true;
}

/** `amountRule` of ./schemas.ts: date and type strings, amount a number, each null or absent too. */
function amountRule(value: unknown): Read<ReturnType<typeof amountRuleFromWire>> {
  if (!isObject(value)) return NOT_USUAL;
  const date = value.date;
  const amount = value.amount;
  const type = value.type;
  if (!nullishOf(value, 'date', 'string') || !nullishOf(value, 'amount', 'number')) return NOT_USUAL;
  if (!nullishOf(value, 'type', 'string')) return NOT_USUAL;
  try {
    return amountRuleFromWire({
      date: (date ?? undefined) as string | undefined,
      amount: (amount ?? undefined) as number | undefined,
      type: (type ?? undefined) as string | undefined,
    });
  } catch {
    return NOT_USUAL;
  }
}

/** Whether `value[key]` is of `type`, null, or absent (an own key holding undefined is not: JSON has none). */
function nullishOf(value: Obj, key: string, type: 'string' | 'number'): boolean {
  const v = value[key];
  if (v === undefined) return !Object.hasOwn(value, key);
  return v === null || typeof v === type;
}

/**
 * A nullable field (`nullish(...)`, `lenient(...)` of ./schemas.ts) into `out`, in the schema's key order: absent
 * stays absent, null is kept as present and undefined (as the schema keeps it), anything else through `read`.
 */
function nullable(input: Obj, key: string, out: Obj, read: (v: unknown) => unknown): boolean {
  const v = input[key];
  if (v === undefined) return !Object.hasOwn(input, key);
  if (v === null) {
    out[key] = undefined;
    return true;
  }
  const r = read(v);
  if (r === NOT_USUAL) return false;
  out[key] = r;
  return true;
}

const asString = (v: unknown): Read<string> => (typeof v === 'string' ? v : NOT_USUAL);
const party = (v: unknown) => stringsObject(v, PARTY_KEYS, PARTY_NAMED);
const issuer = (v: unknown) => stringsObject(v, ISSUER_KEYS, ISSUER_NAMED);
const discounts = (v: unknown) => (Array.isArray(v) ? v.slice() : NOT_USUAL);
const STATUSES: ReadonlySet<unknown> = new Set(BILL_STATUSES);

const BILL_NAMED: ReadonlySet<string> = new Set(BILL_ANSWER_FIELDS.bill);

/** `billSchema` on its usual shape (see the top). */
export function readBill(data: unknown): Bill | undefined {
  if (!isObject(data)) return undefined;
  const out: Obj = {};
  const identifierNumber = data.identifierNumber;
  if (identifierNumber !== undefined) {
    if (typeof identifierNumber !== 'string') return undefined;
    out.identifierNumber = identifierNumber;
  } else if (Object.hasOwn(data, 'identifierNumber')) return undefined;
  if (typeof data.type !== 'string' || !STATUSES.has(data.status)) return undefined;
  out.type = data.type;
  out.status = data.status;
  const amount = money(data.amount);
  if (amount === NOT_USUAL) return undefined;
  if (!nullable(data, 'dueDate', out, asString)) return undefined;
  if (!nullable(data, 'barCode', out, asString)) return undefined;
  if (!nullable(data, 'digitableLine', out, asString)) return undefined;
  if (out.barCode === undefined && out.digitableLine === undefined) return undefined;
  const partial = data.isAllowPartialPayment;
  if (partial === undefined) {
    if (Object.hasOwn(data, 'isAllowPartialPayment')) return undefined;
    out.isAllowPartialPayment = false;
  } else if (typeof partial === 'boolean') out.isAllowPartialPayment = partial;
  else return undefined;
  if (!nullable(data, 'paymentCalculation', out, calculation)) return undefined;
  if (!nullable(data, 'payer', out, party)) return undefined;
  if (!nullable(data, 'overduePaymentInterest', out, amountRule)) return undefined;
  if (!nullable(data, 'overduePaymentFine', out, amountRule)) return undefined;
  if (!nullable(data, 'discounts', out, discounts)) return undefined;
  if (!nullable(data, 'beneficiary', out, party)) return undefined;
  if (!nullable(data, 'issuer', out, issuer)) return undefined;
  if (!copyOthers(data, BILL_NAMED, out)) return undefined;
  out.amountCents = amount;
  return out as unknown as Bill;
}

const PAYMENT_NAMED: ReadonlySet<string> = new Set(BILL_ANSWER_FIELDS.billPayment);

/**
 * `billPaymentSchema` on its usual shape (see the top). Its lenient fields are read here only when well-formed or
 * null: one of another type sends the answer to the schema, which reads it as absent.
 */
export function readBillPayment(data: unknown): BillPayment | undefined {
  if (!isObject(data)) return undefined;
  const out: Obj = {};
  const id = data.id;
  if (typeof id === 'string') out.id = id;
  else if (typeof id === 'number') out.id = String(id);
  else return undefined;
  if (typeof data.status !== 'string') return undefined;
  out.status = data.status;
  for (const key of ['identifierNumber', 'barCode', 'digitableLine', 'dueDate', 'createdAt']) {
    if (!nullable(data, key, out, asString)) return undefined;
  }
  if (!nullable(data, 'originalAmount', out, money)) return undefined;
  if (!nullable(data, 'paidAmount', out, money)) return undefined;
  if (!nullable(data, 'paymentCalculation', out, calculation)) return undefined;
  if (!nullable(data, 'beneficiary', out, party)) return undefined;
  if (!nullable(data, 'issuer', out, issuer)) return undefined;
  if (!copyOthers(data, PAYMENT_NAMED, out)) return undefined;
  // The schema's transform: the two amounts leave their places and come back, renamed, at the end.
  const { originalAmount, paidAmount, ...rest } = out;
  const payment = rest as unknown as BillPayment;
  if (originalAmount !== undefined) payment.originalAmountCents = originalAmount as number;
  if (paidAmount !== undefined) payment.paidAmountCents = paidAmount as number;
  return payment;
}

/** The bill lookup's answer: `billSchema`, read by `readBill` when usual. */
export const billAnswer = new AnswerSchema<Bill>(billSchema, readBill);
/** A bill payment's answer: `billPaymentSchema`, read by `readBillPayment` when usual. */
export const billPaymentAnswer = new AnswerSchema<BillPayment>(billPaymentSchema, readBillPayment);
