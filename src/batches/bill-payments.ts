/**
 * Kind `bill-payments`: one row pays one bank slip or utility/tax bill, given by its bar code or digitable line
 * (spec 4.2, 2.5, 2.6). Moves money out: all-or-nothing by default (one invalid row and nothing is sent).
 *
 * Steps:
 * - `lookup` (read): GET the bill, then check what spec 4.2 requires before paying: status PENDING_PAYMENT; with
 *   isAllowPartialPayment the amount within minimum..maximumPaymentAmount, otherwise exactly the charged amount. A
 *   bill that fails a check ends the row `failed` (StepOutcomeError, not retried) with the reason.
 * - `pay` (money, IdempotencyKey = the row's key): the client only pays a bill object it has just looked up. When the
 *   `lookup` step of this same row ran in this process less than LOOKUP_REUSE_MS ago, its bill is paid (checked
 *   again): a second GET per row would cost a third of the requests of a bill payment for nothing (bench/,
 *   docs/performance.md). Otherwise (the row resumed after a crash between the steps, an old lookup, or any second
 *   attempt) the step looks the bill up again (a read: harmless, and it sees a status changed since), checks again
 *   and pays. When this is a resend after an unknown outcome (`ctx.resend`: timeout, dropped connection, crash after
 *   the intent) it reuses the bill its earlier attempt in this process was built from (after a restart it looks the
 *   bill up again: the client pays only a looked-up bill) and resends the payment with the
 *   SAME IdempotencyKey, without the status and range checks (`resendOfUnknownOutcome`): our first attempt may be
 *   what paid the bill, so it may now read PAID or SCHEDULED, and the bank answers the repeated key with that first
 *   outcome instead of paying again. If the bank refuses that resend anyway (it lost or expired the key, and the bill
 *   now reads PAID: by our first attempt, or by someone else?), the row is NOT failed (src/store/rows.ts rule 5):
 *   `settleRefusal` looks the bill up; a bill still PENDING_PAYMENT (and no payAt) proves no payment went through
 *   (row `failed`); anything else leaves the row `uncertain`, with the bill's status in its message, for a person to
 *   check before paying by hand. Never a second payment, never a `failed` that was paid.
 *
 * Natural key: the bill's 44-digit bar code (a digitable line is converted, so line and bar code of one bill are one
 * key) + amount in cents + payAt. Paying the same bill twice for the same amount on the same date is one intent.
 */

import type { LookedUpBill } from '../bank/bill-payments.js';
import { RequestValidationError } from '../bank/errors.js';
import { brasiliaDay } from '../formats/brasilia-time.js';
import { parseDate } from '../formats/dates.js';
import { formatError } from '../formats/errors.js';
import { day, msg } from '../i18n/index.js';
import type { Cents } from '../types.js';
import { column, FORMATS, IDEMPOTENCY_KEY_COLUMN } from './columns.js';
import { CELL_ERROR_CODES, type CellReader, naturalKeyWithExplicit, recordParser, shown } from './fields.js';
import { type BatchKind, type ColumnSpec, type StepContext, StepOutcomeError, type StepOutput } from './kind.js';
import { parseBillIdentifier } from './validators.js';

export interface BillPaymentRow {
  /** What is sent to the lookup: the digits the row gave (bar code or digitable line). */
  identifier: string;
  /** The bill's 44-digit bar code (from either column): the natural key's first part. */
  barCode: string;
  billType: 'BANKSLIP' | 'TAXES';
  amountCents: Cents;
  /** `yyyy-mm-ddTHH:mm:ss` (no zone, as the spec's sample datetimes), or absent: the next business hour. */
  payAt?: string;
  idempotencyKey?: string;
}

export const BILL_PAYMENT_COLUMNS: readonly ColumnSpec[] = [
  column(
    'barCode',
    '44 digits with valid check digits (bank slip, or utility/tax bill starting with 8)',
    '43594939800000003250001112000000200000311672',
    {
      requiredWhen: 'when digitableLine is empty',
    },
  ),
  column(
    'digitableLine',
    '47 digits (bank slip) or 48 digits starting with 8 (utility/tax bill), dots and spaces allowed, valid check digits',
    '43590001161200000020300003116720493980000000325',
    { requiredWhen: 'when barCode is empty' },
  ),
  column(
    'amount',
    `${FORMATS.amount}; the charged amount, or within the partial payment range when the bill allows it`,
    '3,25',
    {
      required: true,
    },
  ),
  column(
    'payAt',
    `${FORMATS.date}, optionally with a time (yyyy-mm-ddTHH:mm or dd/mm/yyyy HH:mm), today or later; schedules the payment`,
    '2026-12-15',
  ),
  IDEMPOTENCY_KEY_COLUMN,
];

const DATE_TIME = /^(.+?)[T ](\d{2}):(\d{2})(?::(\d{2}))?$/;

/** payAt as `yyyy-mm-ddTHH:mm:ss`. */
export function parsePayAt(text: string): string {
  const m = DATE_TIME.exec(text.trim());
  const date = parseDate(m ? m[1]! : text);
  if (!m) return `${date}T00:00:00`;
  const [h, min, s] = [Number(m[2]), Number(m[3]), Number(m[4] ?? '0')];
  if (h > 23 || min > 59 || s > 59) {
    throw formatError('INVALID_DATE', 'INVALID_DATE.time', { got: JSON.stringify(text) });
  }
  return `${date}T${m[2]}:${m[3]}:${m[4] ?? '00'}`;
}

export function parseBillPayment(r: CellReader): BillPaymentRow | undefined {
  const hasBar = r.has('barCode');
  const hasLine = r.has('digitableLine');
  if (!hasBar && !hasLine) {
    r.errorAnyOf(['barCode', 'digitableLine'], CELL_ERROR_CODES.required, 'REQUIRED.billOneOf');
  }
  const bar = hasBar ? r.format('barCode', () => parseBillIdentifier(r.record.barCode!, 'barCode')) : undefined;
  const line = hasLine
    ? r.format('digitableLine', () => parseBillIdentifier(r.record.digitableLine!, 'digitableLine'))
    : undefined;
  if (bar && line && bar.barCode !== line.barCode) {
    r.error('digitableLine', CELL_ERROR_CODES.conflict, 'CONFLICT.otherBill', { barCode: shown(line.barCode) });
  }
  const amountCents = r.amount('amount', { required: true });
  let payAt = r.has('payAt') ? r.format('payAt', () => parsePayAt(r.record.payAt!)) : undefined;
  // The bank refuses a payment scheduled for a day already past: its days are Brasília's (docs/service-gaps.md).
  if (payAt !== undefined) {
    const today = brasiliaDay(new Date());
    if (payAt.slice(0, 10) < today) {
      // The cell as typed and today as the person's locale writes a date (it said `veio 2026-11-01` for `01/11/2026`).
      r.error('payAt', CELL_ERROR_CODES.dateOutOfRange, 'DATE_OUT_OF_RANGE.payAt', {
        today: day(today),
        got: shown(r.record.payAt!),
      });
      payAt = undefined;
    }
  }
  const idempotencyKey = r.guid('idempotencyKey');
  const id = bar ?? line;
  if (!id || amountCents === undefined) return undefined;
  const identifier = (hasBar ? r.record.barCode! : r.record.digitableLine!).replace(/[.\s-]/g, '');
  const row: BillPaymentRow = { identifier, barCode: id.barCode, billType: id.type, amountCents };
  if (payAt !== undefined) row.payAt = payAt;
  if (idempotencyKey !== undefined) row.idempotencyKey = idempotencyKey;
  return row;
}

/**
 * The bank module holding the spec 4.2 checks, loaded on first use: it brings the HTTP client and the response
 * schemas, which `validate` (parsing only, never paying) does not need; a run has loaded them already.
 */
let bankChecks: Promise<typeof import('../bank/bill-payments.js')> | undefined;

/** Runs the spec 4.2 checks; a refusal ends the row `failed` with the check's code. */
async function checkOrFail(bill: LookedUpBill, amountCents: Cents): Promise<void> {
  bankChecks ??= import('../bank/bill-payments.js');
  const { checkBillPayment } = await bankChecks;
  try {
    checkBillPayment(bill, amountCents);
  } catch (err) {
    if (err instanceof RequestValidationError) {
      throw new StepOutcomeError('failed', err.code, err.message, { cause: err, detail: err.detail });
    }
    throw err;
  }
}

function lookupOutput(bill: LookedUpBill): StepOutput {
  const r = bill.record;
  return {
    billType: r.type ?? null,
    billStatus: bill.status,
    billAmount: bill.amountCents,
    chargedAmount: bill.chargedAmountCents,
    // Who gets the money and when it is due: shown in the preview of a file that waits for approval.
    beneficiary: r.beneficiary?.name ?? r.beneficiary?.fantasyName ?? r.issuer?.name ?? null,
    beneficiaryDocument: r.beneficiary?.document ?? null,
    dueDate: r.dueDate ?? null,
  };
}

async function lookup(ctx: StepContext<BillPaymentRow>): Promise<LookedUpBill> {
  return ctx.client.billPayments.lookup(ctx.row.identifier, ctx.request);
}

/** How long the `lookup` step's answer may stand in for the `pay` step's own lookup, in milliseconds. */
export const LOOKUP_REUSE_MS = 30_000;

/** The `lookup` step's bill, per row object (the engine hands both steps of a row the same parsed row). */
const recentLookups = new WeakMap<BillPaymentRow, LookedUpBill>();

/** The bill the `lookup` step of `row` just fetched, used at most once and only while fresh; else undefined. */
function takeRecentLookup(row: BillPaymentRow): LookedUpBill | undefined {
  const bill = recentLookups.get(row);
  recentLookups.delete(row);
  if (!bill) return undefined;
  return Date.now() - bill.lookedUpAt.getTime() <= LOOKUP_REUSE_MS ? bill : undefined;
}

/**
 * The bill the last payment attempt of `row` was built from, in this process. A resend (same key, no status checks)
 * only needs it for the bar code the first request carried, which does not change: looking it up again would add one
 * more request that can fail to every resend.
 */
const attemptedBills = new WeakMap<BillPaymentRow, LookedUpBill>();

async function billToPay(ctx: StepContext<BillPaymentRow>): Promise<LookedUpBill> {
  const known = ctx.resend ? attemptedBills.get(ctx.row) : takeRecentLookup(ctx.row);
  const bill = known ?? (await lookup(ctx));
  attemptedBills.set(ctx.row, bill);
  return bill;
}

export const billPaymentsKind: BatchKind<BillPaymentRow> = {
  name: 'bill-payments',
  group: 'bill-payments',
  movesMoneyOut: true,
  columns: BILL_PAYMENT_COLUMNS,
  parse: recordParser(parseBillPayment),
  // No `mustMatch`: the key holds every field that defines the payment (the bill, the amount, the date), so a row
  // with an owned key is the same payment (the digitable line or bar code it was written with aside).
  naturalKey: (row) =>
    naturalKeyWithExplicit(`${row.barCode}|${row.amountCents}|${row.payAt ?? ''}`, row.idempotencyKey),
  explicitIdempotencyKey: (row) => row.idempotencyKey,
  amountCents: (row) => row.amountCents,
  steps: [
    {
      name: 'lookup',
      effect: 'read',
      usesIdempotencyKey: false,
      async run(ctx) {
        const bill = await lookup(ctx);
        await checkOrFail(bill, ctx.row.amountCents);
        recentLookups.set(ctx.row, bill);
        return lookupOutput(bill);
      },
    },
    {
      name: 'pay',
      effect: 'money',
      usesIdempotencyKey: true,
      async run(ctx) {
        const bill = await billToPay(ctx);
        if (!ctx.resend) await checkOrFail(bill, ctx.row.amountCents);
        const input = {
          amountCents: ctx.row.amountCents,
          idempotencyKey: ctx.idempotencyKey,
          ...(ctx.row.payAt ? { payAt: ctx.row.payAt } : {}),
          ...(ctx.resend ? { resendOfUnknownOutcome: true } : {}),
        };
        const payment = await ctx.client.billPayments.pay(bill, input, ctx.request);
        return {
          paymentId: payment.id,
          paymentStatus: payment.status,
          paidAmount: payment.paidAmountCents ?? null,
        };
      },
      async settleRefusal(ctx, refusal) {
        // The bank offers no lookup of a payment by IdempotencyKey: the bill's status is the only evidence.
        const bill = await lookup(ctx);
        const shown = msg('EVIDENCE.billReads', { barCode: ctx.row.barCode, status: bill.status });
        if (
          bill.status === 'PENDING_PAYMENT' &&
          ctx.row.payAt === undefined &&
          refusal.serviceCode !== 'BILL_PAYMENT_ALREADY_SCHEDULED'
        ) {
          // Unpaid, and this row schedules nothing: no payment of it went through, ours included.
          return { kind: 'not-done', evidence: msg('EVIDENCE.billNotPaid', { bill: shown }) };
        }
        return {
          kind: 'unclear',
          evidence:
            bill.status === 'PAID' || bill.status === 'PENDING_PAYMENT'
              ? msg('EVIDENCE.billMaybePaid', { bill: shown })
              : shown,
        };
      },
    },
  ],
  resultColumns: ['billType', 'billStatus', 'paymentId', 'paymentStatus', 'paidAmount'],
  resultMoneyColumns: ['paidAmount'],
  resultColumnForms: { paymentId: 'identifier' },
};
