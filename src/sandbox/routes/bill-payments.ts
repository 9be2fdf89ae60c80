/**
 * Bill payment routes (spec 4.2): look a bill up by bar code or digitable line, then pay it.
 *
 *   GET  /baas/api/v1/bill-payments/{payment_identifier}   the bill (spec 2.5)
 *   POST /baas/api/v1/bill-payments                        pay it (spec 2.6); IdempotencyKey required
 *   GET  /baas/api/v1/bill-payments/payments/{id}          a payment and its current status (sandbox addition)
 *
 * The rules live in src/sandbox/bills.ts (where bills come from, fixtures, calculation, scheduling). Answers the spec
 * does not show (docs/service-gaps.md "Bill payments"):
 * - malformed identifier, bad check digit, missing/invalid amount or payAt, an amount outside the partial range or
 *   other than chargedAmount: 400 validation problem, `errors` keyed by field (`paymentIdentifier`, `$.amount`, ...).
 * - a bill whose status is not PENDING_PAYMENT (paid, blocked, past deadline; a bill already paid here reads PAID):
 *   409 with code BILL_NOT_PAYABLE; a bill with a payment already scheduled: 409 BILL_PAYMENT_ALREADY_SCHEDULED.
 * - payAt later than now: the payment is accepted with status SCHEDULED and goes through when the clock passes it.
 */
import type { FastifyInstance } from 'fastify';
import { brasiliaDay, brasiliaWallTime } from '../../formats/brasilia-time.js';
import { type BillIdentifier, FormatError, formatAmount, parseBillIdentifier } from '../../formats/index.js';
import { BillPaymentRefusal, billToWire, payBill, resolveBill, settleScheduledBillPayments } from '../bills.js';
import { idempotencyFor } from '../idempotency.js';
import { SandboxHttpError, validationProblem } from '../problems.js';
import type { SandboxContext } from '../server.js';
import { bodyObject, codedError, FieldErrors, readAmount, readString } from './qr-codes.js';

export const BILL_PAYMENTS_PATH = '/baas/api/v1/bill-payments';
/** A payment by its id (sandbox addition; the client's `billPaymentGet` path). */
export const BILL_PAYMENT_GET_PATH = '/baas/api/v1/bill-payments/payments';
/** How often scheduled payments are checked for execution, in milliseconds. */
export const SCHEDULED_BILL_PAYMENTS_INTERVAL_MS = 1000;

function parseIdentifier(errors: FieldErrors, path: string, text: string, today: string): BillIdentifier | undefined {
  try {
    return parseBillIdentifier(text, { today });
  } catch (err) {
    if (err instanceof FormatError) {
      errors.add(path, err.message);
      return undefined;
    }
    throw err;
  }
}

/**
 * payAt: an ISO 8601 date-time, or a date. A Brazilian bank's clock: a date-time without zone is Brasília's time, a date
 * alone its midnight in Brasília; one whose day in Brasília is before today (the clock's, Brasília's) is refused.
 */
function readPayAt(errors: FieldErrors, value: unknown, today: string): Date | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') {
    errors.add('$.payAt', `Expected an ISO 8601 date-time such as 2026-12-01T10:00:00Z, got ${typeof value}.`);
    return undefined;
  }
  const at = brasiliaWallTime(value);
  if (at === undefined) {
    errors.add('$.payAt', `Expected an ISO 8601 date-time such as 2026-12-01T10:00:00Z, got ${JSON.stringify(value)}.`);
    return undefined;
  }
  if (brasiliaDay(at) < today) {
    errors.add('$.payAt', `Expected payAt today (${today}) or later, got ${JSON.stringify(value)}.`);
    return undefined;
  }
  return at;
}

export function registerBillPaymentRoutes(app: FastifyInstance, ctx: SandboxContext): void {
  app.get(`${BILL_PAYMENTS_PATH}/:paymentIdentifier`, async (request) => {
    const { paymentIdentifier } = request.params as { paymentIdentifier: string };
    const errors = new FieldErrors();
    const id = parseIdentifier(errors, 'paymentIdentifier', paymentIdentifier, ctx.clock.today());
    errors.throwIfAny();
    return billToWire(resolveBill(ctx, id!));
  });

  const idempotency = idempotencyFor(ctx);
  app.post(BILL_PAYMENTS_PATH, { ...idempotency.hooks() }, async (request) => {
    const body = bodyObject(request);
    const today = ctx.clock.today();
    const errors = new FieldErrors();
    const amountCents = readAmount(errors, '$.amount', body.amount, { required: true });
    const barCodeText = readString(errors, '$.barCode', body.barCode);
    const lineText = readString(errors, '$.digitableLine', body.digitableLine);
    let identifier: BillIdentifier | undefined;
    if (!barCodeText && !lineText) {
      if (!errors.errors['$.barCode'] && !errors.errors['$.digitableLine']) {
        errors.add('$.barCode', 'Expected barCode or digitableLine, got neither.');
      }
    } else {
      const fromBarCode = barCodeText ? parseIdentifier(errors, '$.barCode', barCodeText, today) : undefined;
      const fromLine = lineText ? parseIdentifier(errors, '$.digitableLine', lineText, today) : undefined;
      if (fromBarCode && fromLine && fromBarCode.barCode !== fromLine.barCode) {
        errors.add('$.digitableLine', 'Expected the digitable line of the same bill as barCode, got another bill.');
      }
      identifier = fromBarCode ?? fromLine;
    }
    const payAt = readPayAt(errors, body.payAt, today);
    errors.throwIfAny();

    const bill = resolveBill(ctx, identifier!);
    if (bill.status !== 'PENDING_PAYMENT') {
      throw codedError(
        409,
        'Conflict',
        'BILL_NOT_PAYABLE',
        `Expected a bill in status PENDING_PAYMENT, got ${bill.status}.`,
      );
    }
    const calc = bill.calculation;
    if (bill.isAllowPartialPayment) {
      if (amountCents! < calc.minimumCents || amountCents! > calc.maximumCents) {
        throw new SandboxHttpError(
          400,
          validationProblem({
            '$.amount': [
              `Expected an amount from ${formatAmount(calc.minimumCents, '.')} (minimumPaymentAmount) to ${formatAmount(calc.maximumCents, '.')} (maximumPaymentAmount), got ${formatAmount(amountCents!, '.')}.`,
            ],
          }),
        );
      }
    } else if (amountCents !== calc.chargedCents) {
      throw new SandboxHttpError(
        400,
        validationProblem({
          '$.amount': [
            `Expected the charged amount ${formatAmount(calc.chargedCents, '.')} (this bill does not allow partial payment), got ${formatAmount(amountCents!, '.')}.`,
          ],
        }),
      );
    }
    try {
      const key = request.headers.idempotencykey;
      // The payment and the stored answer of its key commit together (src/sandbox/idempotency.ts).
      return ctx.db.transaction(() =>
        idempotency.commitAnswer(
          request,
          payBill(ctx, identifier!, {
            amountCents: amountCents!,
            payAt,
            apiKeyId: request.sandboxAuth.keyId,
            idempotencyKey: typeof key === 'string' ? key.toLowerCase() : undefined,
          }),
        ),
      )();
    } catch (err) {
      if (err instanceof BillPaymentRefusal) throw codedError(409, 'Conflict', err.code, err.message);
      throw err;
    }
  });

  // Sandbox addition (docs/service-gaps.md "The retorno"): one payment by its id, with its current status (a SCHEDULED
  // payment becomes PAID or FAILED on its date), so a client learns how a scheduled payment ended. Only the payments
  // of the API key used; another key's id, or an unknown one, is 404 BILL_PAYMENT_NOT_FOUND.
  app.get(`${BILL_PAYMENT_GET_PATH}/:id`, async (request) => {
    settleScheduledBillPayments(ctx);
    const { id } = request.params as { id: string };
    const row = ctx.db
      .prepare('SELECT record, status, paid_at FROM bill_payments WHERE id = ? AND api_key_id = ?')
      .get(id, request.sandboxAuth.keyId) as { record: string; status: string; paid_at: string | null } | undefined;
    if (!row) throw codedError(404, 'Not Found', 'BILL_PAYMENT_NOT_FOUND', `No bill payment with id ${id}.`);
    return {
      ...(JSON.parse(row.record) as Record<string, unknown>),
      status: row.status,
      ...(row.paid_at ? { paidAt: row.paid_at } : {}),
    };
  });

  // Scheduled payments also run without a request (so CHARGE_PAID of an own slip is recorded on time).
  const timer = setInterval(() => {
    try {
      if (ctx.db.open) settleScheduledBillPayments(ctx);
    } catch (err) {
      ctx.logger?.error({ err }, 'settling scheduled bill payments failed');
    }
  }, SCHEDULED_BILL_PAYMENTS_INTERVAL_MS);
  timer.unref();
  app.addHook('preClose', async () => {
    clearInterval(timer);
  });
}
