/**
 * Bills the sandbox can look up and pay (spec 4.2, records 2.5 and 2.6): bank slips (47-digit line, 44-digit bar code)
 * and utility/tax bills (48-digit line, bar code starting with 8).
 *
 * Where a bill comes from, first match wins:
 * 1. a slip made by the sandbox's own charges (any bar code a charge ever carried): its current amount and due date,
 *    status from the charge (Paid -> PAID, Voided -> BLOCKED_PAYMENT, else PENDING_PAYMENT); paying it pays the charge
 *    (CHARGE_PAID is recorded by the charges store).
 * 2. any other valid line: a synthetic bill whose amount and due date are read from the line. Its status follows the
 *    last four digits of the bar code (= of the free field), the documented fixture rule:
 *      9001 PAID | 9002 BLOCKED_PAYMENT | 9003 PAYMENT_DEADLINE_EXCEEDED | 9004 partial payment allowed |
 *      9005 early-payment discount | anything else PENDING_PAYMENT.
 *    `SANDBOX_BILL_FIXTURES` lists one line per rule (docs/sandbox.md has the table).
 * A bill with an accepted payment reads PAID once the payment went through.
 *
 * Bill payment states (the spec gives only PENDING_PAYMENT -> PAID; SCHEDULED is the sandbox's decision):
 *
 *   bill PENDING_PAYMENT --pay, no payAt or payAt <= now--> payment PAID       (bill reads PAID)
 *   bill PENDING_PAYMENT --pay, payAt later than now-----> payment SCHEDULED  (bill still reads PENDING_PAYMENT,
 *                                                                               but refuses another payment: 409)
 *   payment SCHEDULED --clock passes payAt---------------> payment PAID       (own slip: the charge is paid then;
 *                                                                               if it no longer can be: FAILED)
 *   bill in any other status --pay-----------------------> 409 BILL_NOT_PAYABLE
 *
 * What must hold: at most one PAID or SCHEDULED payment per bar code (a partial unique index enforces it), and a
 * payment, its charge update, event and ledger effect commit in one transaction.
 *
 * paymentCalculation (the sandbox's rule; the spec shows the fields only): chargedAmount = amount + interest + fine -
 * discount - rebate, as of the clock's today. Synthetic bank slips: interest 1% a month pro rata by day (30-day month)
 * and a 2% fine once overdue; fixture 9005 gives a 2% discount up to the due date. Own slips use their charge's
 * latePayment (interest), lateFine and discount. Tax bills carry no due date and no charges.
 */
import { createHash, randomUUID } from 'node:crypto';
import {
  addDays,
  arrecadacaoBarCodeToLine,
  type BillIdentifier,
  type BillStatus,
  bankSlipBarCodeToLine,
  buildArrecadacaoBarCode,
  buildBankSlipBarCode,
  centsToWire,
  daysBetween,
} from '../formats/index.js';
import {
  ChargeStateError,
  findChargeByBarCode,
  getCharge,
  markChargePaid,
  type StoredCharge,
} from './charges-store.js';
import type { SandboxContext } from './server.js';

export type BillPaymentStatus = 'PAID' | 'SCHEDULED' | 'FAILED';

/** Last four bar code digits that select a synthetic bill's status or rule. */
export const BILL_FIXTURE_SUFFIXES = {
  PAID: '9001',
  BLOCKED_PAYMENT: '9002',
  PAYMENT_DEADLINE_EXCEEDED: '9003',
  PARTIAL_PAYMENT: '9004',
  DISCOUNT: '9005',
} as const;

/** Monthly interest (percent) and fine (percent) of an overdue synthetic bank slip. */
export const SYNTHETIC_INTEREST_PERCENT_PER_MONTH = 1;
export const SYNTHETIC_FINE_PERCENT = 2;
/** Early-payment discount (percent) of fixture 9005, until the due date. */
export const SYNTHETIC_DISCOUNT_PERCENT = 2;
/** Partial payments: the minimum is this percent of the charged amount (at least 1 cent); the maximum is all of it. */
export const PARTIAL_MINIMUM_PERCENT = 10;
/** Upper bound of a payment of a bill that carries no fixed amount (amount field zero, or a reference value). */
export const OPEN_AMOUNT_MAXIMUM_CENTS = 10_000_000;

export interface BillFixture {
  /** What the line demonstrates. */
  description: string;
  type: 'BANKSLIP' | 'TAXES';
  status: BillStatus;
  barCode: string;
  digitableLine: string;
  amountCents: number;
  dueDate: string | null;
  isAllowPartialPayment: boolean;
}

function slipFixture(
  description: string,
  status: BillStatus,
  suffix: string,
  amountCents: number,
  dueDate: string,
  isAllowPartialPayment = false,
): BillFixture {
  const barCode = buildBankSlipBarCode({
    bankCode: '341',
    dueDate,
    amountCents,
    freeField: `109000012345678900000${suffix}`,
  });
  return {
    description,
    type: 'BANKSLIP',
    status,
    barCode,
    digitableLine: bankSlipBarCodeToLine(barCode),
    amountCents,
    dueDate,
    isAllowPartialPayment,
  };
}

function taxFixture(description: string, suffix: string, amountCents: number): BillFixture {
  const barCode = buildArrecadacaoBarCode({
    segment: 2,
    valueIdentifier: '8',
    value: amountCents,
    companyId: '0123',
    freeField: `202611000000000000000${suffix}`,
  });
  return {
    description,
    type: 'TAXES',
    status: 'PENDING_PAYMENT',
    barCode,
    digitableLine: arrecadacaoBarCodeToLine(barCode),
    amountCents,
    dueDate: null,
    isAllowPartialPayment: false,
  };
}

/**
 * Documented lines, one per rule, for tests and examples. Built with the formats module, so each is valid; the
 * values are fixed (same digits on every run) and listed in docs/sandbox.md.
 */
export const SANDBOX_BILL_FIXTURES = {
  PENDING_PAYMENT: slipFixture('Payable bank slip, due in the future', 'PENDING_PAYMENT', '0000', 15_000, '2030-12-31'),
  OVERDUE: slipFixture(
    'Payable bank slip past its due date: interest and fine',
    'PENDING_PAYMENT',
    '0001',
    20_000,
    '2026-01-15',
  ),
  PAID: slipFixture('Already paid', 'PAID', BILL_FIXTURE_SUFFIXES.PAID, 9_990, '2026-10-10'),
  BLOCKED_PAYMENT: slipFixture(
    'Blocked',
    'BLOCKED_PAYMENT',
    BILL_FIXTURE_SUFFIXES.BLOCKED_PAYMENT,
    5_000,
    '2030-12-31',
  ),
  PAYMENT_DEADLINE_EXCEEDED: slipFixture(
    'Past the payment deadline',
    'PAYMENT_DEADLINE_EXCEEDED',
    BILL_FIXTURE_SUFFIXES.PAYMENT_DEADLINE_EXCEEDED,
    7_500,
    '2025-06-30',
  ),
  PARTIAL_PAYMENT: slipFixture(
    'Partial payment allowed: 10% to 100% of the charged amount',
    'PENDING_PAYMENT',
    BILL_FIXTURE_SUFFIXES.PARTIAL_PAYMENT,
    100_000,
    '2030-12-31',
    true,
  ),
  DISCOUNT: slipFixture(
    'Early-payment discount of 2% until the due date',
    'PENDING_PAYMENT',
    BILL_FIXTURE_SUFFIXES.DISCOUNT,
    50_000,
    '2030-12-31',
  ),
  TAXES: taxFixture('Payable utility bill (segment 2, sanitation), no due date', '0002', 8_990),
} as const satisfies Record<string, BillFixture>;

/** An amount rule as shown in the lookup record (overduePaymentInterest, overduePaymentFine, discounts). */
export interface BillAmountRule {
  date: string;
  amount: number;
  type: 'PERCENTAGE' | 'FIXED';
}

export interface PaymentCalculation {
  rebateCents: number;
  interestCents: number;
  fineCents: number;
  discountCents: number;
  chargedCents: number;
  minimumCents: number;
  maximumCents: number;
}

interface Party {
  document: string;
  name: string;
  type: 'NATURAL' | 'LEGAL';
}

/** A bill as the sandbox sees it at one instant. */
export interface BillView {
  type: 'BANKSLIP' | 'TAXES';
  barCode: string;
  digitableLine: string;
  identifierNumber: string;
  status: BillStatus;
  amountCents: number;
  dueDate: string | null;
  isAllowPartialPayment: boolean;
  calculation: PaymentCalculation;
  interestRule: BillAmountRule | null;
  fineRule: BillAmountRule | null;
  discounts: BillAmountRule[];
  payer: Party;
  beneficiary: Party & { fantasyName: string };
  issuer: { ispb: string; name: string; nameFantasy: string };
  /** The sandbox charge behind the slip, when it is one of its own. */
  charge: StoredCharge | undefined;
  /** A SCHEDULED payment waiting for its payAt. */
  scheduledPaymentId: string | undefined;
}

const TAX_SEGMENTS: Record<number, string> = {
  1: 'PREFEITURA MUNICIPAL',
  2: 'COMPANHIA DE SANEAMENTO',
  3: 'DISTRIBUIDORA DE ENERGIA E GAS',
  4: 'OPERADORA DE TELECOMUNICACOES',
  5: 'ORGAO GOVERNAMENTAL',
  6: 'CARNES E ASSEMELHADOS',
  7: 'DEPARTAMENTO DE TRANSITO',
  9: 'USO EXCLUSIVO BANCARIO',
};

/** A stable 20-digit identifier number derived from the bar code (the spec does not say what it is). */
export function billIdentifierNumber(barCode: string): string {
  const hex = createHash('sha256').update(barCode).digest('hex').slice(0, 15);
  return BigInt(`0x${hex}`).toString().padStart(20, '0').slice(-20);
}

function percentOf(amountCents: number, percent: number): number {
  return Math.round((amountCents * percent) / 100);
}

function documentType(document: string | undefined): 'NATURAL' | 'LEGAL' {
  return (document ?? '').replace(/\D/g, '').length === 11 ? 'NATURAL' : 'LEGAL';
}

interface RawRule {
  type?: unknown;
  date?: unknown;
  amount?: unknown;
  items?: unknown;
}

function ruleType(type: unknown): 'PERCENTAGE' | 'FIXED' {
  return typeof type === 'string' && type.toUpperCase().startsWith('PERCENT') ? 'PERCENTAGE' : 'FIXED';
}

/** A charge's interest or fine as a bill calculation rule (from `defaultDate` when it names no date); null without one. */
function amountRule(rule: RawRule | undefined, defaultDate: string): BillAmountRule | null {
  if (!rule || typeof rule.amount !== 'number') return null;
  return {
    date: typeof rule.date === 'string' ? rule.date : defaultDate,
    amount: rule.amount,
    type: ruleType(rule.type),
  };
}

/** The calculation rules and parties of an own slip, from its charge. */
function ownRules(ctx: SandboxContext, charge: StoredCharge) {
  const dueDate = charge.dueDate;
  const late = charge.extras.latePayment as RawRule | undefined;
  const fine = charge.extras.lateFine as RawRule | undefined;
  const discount = charge.extras.discount as RawRule | undefined;
  const defaultDate = dueDate ? addDays(dueDate, 1) : ctx.clock.today();
  const interestRule = amountRule(late, defaultDate);
  const fineRule = amountRule(fine, defaultDate);
  const discounts: BillAmountRule[] = [];
  if (discount && Array.isArray(discount.items)) {
    for (const item of discount.items as RawRule[]) {
      if (typeof item?.date === 'string' && typeof item.amount === 'number') {
        discounts.push({ date: item.date, amount: item.amount, type: ruleType(discount.type) });
      }
    }
  }
  discounts.sort((a, b) => a.date.localeCompare(b.date));
  const payer = (charge.extras.payer ?? {}) as { name?: string; document?: string };
  return {
    interestRule,
    fineRule,
    discounts,
    payer: {
      document: payer.document ?? '',
      name: payer.name ?? '',
      type: documentType(payer.document),
    } satisfies Party,
  };
}

/**
 * The calculation as of `today`. Interest: PERCENTAGE = percent a month, pro rata by day (30-day month), simple;
 * FIXED = that amount per day. Fine: PERCENTAGE of the amount or a FIXED amount, once, from its date. Discount: the
 * first rule whose date is today or later (PERCENTAGE of the amount or FIXED).
 */
export function calculate(
  amountCents: number,
  today: string,
  rules: { interestRule: BillAmountRule | null; fineRule: BillAmountRule | null; discounts: BillAmountRule[] },
  partial: boolean,
): PaymentCalculation {
  let interestCents = 0;
  let fineCents = 0;
  let discountCents = 0;
  const { interestRule, fineRule } = rules;
  if (interestRule && today >= interestRule.date) {
    const days = daysBetween(interestRule.date, today) + 1;
    interestCents =
      interestRule.type === 'PERCENTAGE'
        ? Math.round((amountCents * interestRule.amount * days) / (100 * 30))
        : Math.round(interestRule.amount * 100) * days;
  }
  if (fineRule && today >= fineRule.date) {
    fineCents =
      fineRule.type === 'PERCENTAGE' ? percentOf(amountCents, fineRule.amount) : Math.round(fineRule.amount * 100);
  }
  const discount = rules.discounts.find((d) => d.date >= today);
  if (discount) {
    discountCents =
      discount.type === 'PERCENTAGE' ? percentOf(amountCents, discount.amount) : Math.round(discount.amount * 100);
  }
  const chargedCents = Math.max(0, amountCents + interestCents + fineCents - discountCents);
  return {
    rebateCents: 0,
    interestCents,
    fineCents,
    discountCents,
    chargedCents,
    minimumCents: partial ? Math.max(1, Math.ceil((chargedCents * PARTIAL_MINIMUM_PERCENT) / 100)) : chargedCents,
    maximumCents: chargedCents,
  };
}

interface PaymentRow {
  id: string;
  bar_code: string;
  status: BillPaymentStatus;
  amount_cents: number;
  pay_at: string | null;
  charge_correlation_id: string | null;
  record: string;
}

/**
 * How a payment of a sandbox charge's slip breaks down on `day` (yyyy-mm-dd, default the clock's today): the same
 * calculation its bill lookup shows (discount, interest, fine, charged amount). The staging pay route and the bill
 * payments of own slips record it with the payment, so CHARGE_PAID and the charge record report it.
 */
export function chargeSlipCalculation(ctx: SandboxContext, charge: StoredCharge, day?: string): PaymentCalculation {
  return calculate(
    charge.amountCents,
    day ?? ctx.clock.today(),
    ownRules(ctx, charge),
    charge.extras.allowPartialPayment === true,
  );
}

/** The breakdown recorded with a slip payment (src/sandbox/charges-store.ts). */
function breakdownOf(c: PaymentCalculation) {
  return { discountCents: c.discountCents, interestCents: c.interestCents, fineCents: c.fineCents };
}

/** Executes SCHEDULED payments whose payAt has come (lazily on every bill request, and by a timer). */
export function settleScheduledBillPayments(ctx: SandboxContext): number {
  const nowIso = ctx.clock.nowIso();
  const due = ctx.db
    .prepare(`SELECT * FROM bill_payments WHERE status = 'SCHEDULED' AND pay_at <= ? ORDER BY pay_at`)
    .all(nowIso) as PaymentRow[];
  for (const row of due) {
    ctx.db.transaction(() => {
      const at = new Date(row.pay_at!);
      let status: BillPaymentStatus = 'PAID';
      if (row.charge_correlation_id) {
        try {
          const charge = getCharge(ctx, row.charge_correlation_id);
          markChargePaid(ctx, row.charge_correlation_id, {
            amountCents: row.amount_cents,
            method: 'BANKSLIP',
            source: 'bill-payment',
            at,
            ...(charge ? { breakdown: breakdownOf(chargeSlipCalculation(ctx, charge, row.pay_at!.slice(0, 10))) } : {}),
          });
        } catch (err) {
          if (!(err instanceof ChargeStateError)) throw err;
          status = 'FAILED';
        }
      }
      const record = { ...(JSON.parse(row.record) as Record<string, unknown>), status };
      ctx.db
        .prepare('UPDATE bill_payments SET status = ?, paid_at = ?, record = ? WHERE id = ?')
        .run(status, status === 'PAID' ? row.pay_at : null, JSON.stringify(record), row.id);
    })();
  }
  return due.length;
}

/** The bill behind a validated identifier, as of the clock's now. */
export function resolveBill(ctx: SandboxContext, id: BillIdentifier): BillView {
  settleScheduledBillPayments(ctx);
  const today = ctx.clock.today();
  const payments = ctx.db
    .prepare(`SELECT * FROM bill_payments WHERE bar_code = ? AND status IN ('PAID', 'SCHEDULED')`)
    .all(id.barCode) as PaymentRow[];
  const paid = payments.some((p) => p.status === 'PAID');
  const scheduled = payments.find((p) => p.status === 'SCHEDULED');
  const o = ctx.options;
  const charge = id.type === 'BANKSLIP' ? findChargeByBarCode(ctx, id.barCode) : undefined;

  if (charge) {
    const rules = ownRules(ctx, charge);
    const partial = charge.extras.allowPartialPayment === true;
    let status: BillStatus = 'PENDING_PAYMENT';
    if (charge.status === 'Paid') status = 'PAID';
    else if (charge.status === 'Voided') status = 'BLOCKED_PAYMENT';
    return {
      type: 'BANKSLIP',
      barCode: charge.barCode ?? id.barCode,
      digitableLine: charge.digitableLine ?? id.digitableLine,
      identifierNumber: billIdentifierNumber(charge.barCode ?? id.barCode),
      status,
      amountCents: charge.amountCents,
      dueDate: charge.dueDate,
      isAllowPartialPayment: partial,
      calculation: calculate(charge.amountCents, today, rules, partial),
      interestRule: rules.interestRule,
      fineRule: rules.fineRule,
      discounts: rules.discounts,
      payer: rules.payer,
      beneficiary: {
        document: o.beneficiary.document,
        name: o.beneficiary.name,
        fantasyName: o.beneficiary.name,
        type: documentType(o.beneficiary.document),
      },
      issuer: { ispb: o.ispb, name: o.participantName, nameFantasy: o.participantName },
      charge,
      scheduledPaymentId: scheduled?.id,
    };
  }

  const suffix = id.barCode.slice(-4);
  let status: BillStatus = 'PENDING_PAYMENT';
  if (suffix === BILL_FIXTURE_SUFFIXES.PAID || paid) status = 'PAID';
  else if (suffix === BILL_FIXTURE_SUFFIXES.BLOCKED_PAYMENT) status = 'BLOCKED_PAYMENT';
  else if (suffix === BILL_FIXTURE_SUFFIXES.PAYMENT_DEADLINE_EXCEEDED) status = 'PAYMENT_DEADLINE_EXCEEDED';
  const openAmount = id.amountCents === null;
  const partial = openAmount || suffix === BILL_FIXTURE_SUFFIXES.PARTIAL_PAYMENT;
  const amountCents = id.amountCents ?? 0;
  const dueDate = id.dueDate;
  const interestRule: BillAmountRule | null =
    dueDate && id.type === 'BANKSLIP'
      ? { date: addDays(dueDate, 1), amount: SYNTHETIC_INTEREST_PERCENT_PER_MONTH, type: 'PERCENTAGE' }
      : null;
  const fineRule: BillAmountRule | null =
    dueDate && id.type === 'BANKSLIP'
      ? { date: addDays(dueDate, 1), amount: SYNTHETIC_FINE_PERCENT, type: 'PERCENTAGE' }
      : null;
  const discounts: BillAmountRule[] =
    dueDate && suffix === BILL_FIXTURE_SUFFIXES.DISCOUNT
      ? [{ date: dueDate, amount: SYNTHETIC_DISCOUNT_PERCENT, type: 'PERCENTAGE' }]
      : [];
  const calculation = calculate(amountCents, today, { interestRule, fineRule, discounts }, partial);
  if (openAmount) {
    calculation.minimumCents = 1;
    calculation.maximumCents = OPEN_AMOUNT_MAXIMUM_CENTS;
  }
  const isTax = id.type === 'TAXES';
  const beneficiaryName = isTax
    ? (TAX_SEGMENTS[id.segment ?? 9] ?? 'ARRECADADOR')
    : `BENEFICIARIO SANDBOX ${id.bankCode ?? ''}`.trim();
  return {
    type: id.type,
    barCode: id.barCode,
    digitableLine: id.digitableLine,
    identifierNumber: billIdentifierNumber(id.barCode),
    status,
    amountCents,
    dueDate,
    isAllowPartialPayment: partial,
    calculation,
    interestRule,
    fineRule,
    discounts,
    payer: { document: '52998224725', name: 'PAGADOR SANDBOX', type: 'NATURAL' },
    beneficiary: { document: '11444777000161', name: beneficiaryName, fantasyName: beneficiaryName, type: 'LEGAL' },
    issuer: isTax
      ? { ispb: o.ispb, name: o.participantName, nameFantasy: o.participantName }
      : {
          ispb: '00000000',
          name: `BANCO ${id.bankCode ?? ''}`.trim(),
          nameFantasy: `BANCO ${id.bankCode ?? ''}`.trim(),
        },
    charge: undefined,
    scheduledPaymentId: scheduled?.id,
  };
}

function calculationToWire(c: PaymentCalculation): Record<string, number> {
  return {
    rebateAmount: centsToWire(c.rebateCents),
    // Spelled so in the service's record (spec 2.5).
    interesetAmount: centsToWire(c.interestCents),
    fineAmount: centsToWire(c.fineCents),
    discountAmount: centsToWire(c.discountCents),
    chargedAmount: centsToWire(c.chargedCents),
    minimumPaymentAmount: centsToWire(c.minimumCents),
    maximumPaymentAmount: centsToWire(c.maximumCents),
  };
}

/** Due date as the record shows it: a date-time with hour and no zone (spec 2.5 sample). */
function wireDueDate(dueDate: string | null): string | null {
  return dueDate ? `${dueDate}T00:00:00` : null;
}

/** The lookup record (spec 2.5). */
export function billToWire(bill: BillView): Record<string, unknown> {
  return {
    identifierNumber: bill.identifierNumber,
    type: bill.type,
    status: bill.status,
    amount: centsToWire(bill.amountCents),
    dueDate: wireDueDate(bill.dueDate),
    barCode: bill.barCode,
    digitableLine: bill.digitableLine,
    isAllowPartialPayment: bill.isAllowPartialPayment,
    paymentCalculation: calculationToWire(bill.calculation),
    payer: bill.payer,
    overduePaymentInterest: bill.interestRule,
    overduePaymentFine: bill.fineRule,
    discounts: bill.discounts,
    beneficiary: bill.beneficiary,
    issuer: bill.issuer,
  };
}

export interface BillPaymentInput {
  amountCents: number;
  /** When to pay; absent or not later than now: at once. */
  payAt: Date | undefined;
  apiKeyId: string;
  idempotencyKey: string | undefined;
}

/** Why a bill payment is refused, besides field validation (the route turns these into 409 problems). */
export class BillPaymentRefusal extends Error {
  readonly code: 'BILL_NOT_PAYABLE' | 'BILL_PAYMENT_ALREADY_SCHEDULED';

  constructor(code: BillPaymentRefusal['code'], message: string) {
    super(message);
    this.name = 'BillPaymentRefusal';
    this.code = code;
  }
}

/**
 * Pays (or schedules) a bill whose amount the route already checked against `bill.calculation`. Returns the payment
 * result (spec 2.6). Throws BillPaymentRefusal when the bill's state forbids it, re-checked inside the transaction.
 */
export function payBill(
  ctx: SandboxContext,
  identifier: BillIdentifier,
  input: BillPaymentInput,
): Record<string, unknown> {
  return ctx.db.transaction(() => {
    const bill = resolveBill(ctx, identifier);
    if (bill.status !== 'PENDING_PAYMENT') {
      throw new BillPaymentRefusal(
        'BILL_NOT_PAYABLE',
        `Expected a bill in status PENDING_PAYMENT, got ${bill.status}.`,
      );
    }
    if (bill.scheduledPaymentId) {
      throw new BillPaymentRefusal(
        'BILL_PAYMENT_ALREADY_SCHEDULED',
        `This bill already has a scheduled payment (${bill.scheduledPaymentId}); it cannot be paid twice.`,
      );
    }
    const now = ctx.clock.now();
    const scheduled = input.payAt !== undefined && input.payAt.getTime() > now.getTime();
    const id = randomUUID();
    const status: BillPaymentStatus = scheduled ? 'SCHEDULED' : 'PAID';
    const createdAt = now.toISOString();
    const record: Record<string, unknown> = {
      id,
      identifierNumber: bill.identifierNumber,
      barCode: bill.barCode,
      digitableLine: bill.digitableLine,
      status,
      dueDate: wireDueDate(bill.dueDate),
      createdAt,
      ...(scheduled ? { payAt: input.payAt!.toISOString() } : {}),
      originalAmount: centsToWire(bill.amountCents),
      paidAmount: centsToWire(input.amountCents),
      paymentCalculation: calculationToWire(bill.calculation),
      beneficiary: bill.beneficiary,
      issuer: bill.issuer,
    };
    ctx.db
      .prepare(
        `INSERT INTO bill_payments (id, bar_code, status, amount_cents, original_amount_cents, pay_at,
           charge_correlation_id, api_key_id, idempotency_key, record, created_at, paid_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        id,
        identifier.barCode,
        status,
        input.amountCents,
        bill.amountCents,
        scheduled ? input.payAt!.toISOString() : null,
        bill.charge?.correlationId ?? null,
        input.apiKeyId,
        input.idempotencyKey ?? null,
        JSON.stringify(record),
        createdAt,
        scheduled ? null : createdAt,
      );
    if (!scheduled && bill.charge) {
      try {
        markChargePaid(ctx, bill.charge.correlationId, {
          amountCents: input.amountCents,
          method: 'BANKSLIP',
          source: 'bill-payment',
          at: now,
          breakdown: breakdownOf(bill.calculation),
        });
      } catch (err) {
        if (err instanceof ChargeStateError) {
          throw new BillPaymentRefusal('BILL_NOT_PAYABLE', `Expected a payable slip, got: ${err.message}`);
        }
        throw err;
      }
    }
    ctx.ledger.record('bill_paid', input.idempotencyKey ?? identifier.barCode, id);
    return record;
  })();
}
