/**
 * Kind `pix-payments`: one row pays one Pix QR code from its copy-and-paste payload (spec 4.3, 2.7, 2.8). Moves
 * money out: all-or-nothing by default.
 *
 * Steps and keys:
 * - `initialize` (create, IdempotencyKey = the row's key): POST payment-initialization with the payload. A resend with
 *   the same key gets the same initialization (same endToEndId) back. In the `delbank` profile (src/formats/profiles.ts)
 *   the request carries no key, as the provider's clients send none: a resend then hands out a NEW endToEndId. That
 *   is safe because an initialization moves no money: only the last answered initialization is stored and paid, and
 *   an endToEndId that is never used simply expires.
 * - `pay` (money): the payment body is mapped from the stored initialization by the client's `toPaymentRequest`
 *   (initiationType from the QR type, transactionId and endToEndId copied, the row's amount and description). It is
 *   sent with its OWN key, UUIDv5("pix-payments/pay", row key): derived, so it is the same on every attempt and run,
 *   and distinct from the initialization's key (one key per request: a bank that remembers keys per operation or
 *   globally sees two different requests). Besides the key, the single-use endToEndId guards against a second payment.
 *   In the `delbank` profile the payment is a transfer (POST /baas/api/v2/transfers), with the same key: the
 *   provider's clients send one there too, so exactly-once holds the same way in both profiles.
 *
 * Natural key: payload + amount in cents (the same QR code paid twice with the same amount is one intent; to pay a
 * reusable static QR code twice on purpose, give each row its own `idempotencyKey`).
 * An endToEndId expires: a row resumed long after its initialization may be refused by the bank (row `failed`).
 * A refusal of the payment after an attempt of unknown outcome (END_TO_END_ID_ALREADY_USED, QR_CODE_NOT_ACTIVE: by
 * our first attempt?) is settled by `settleRefusal` (src/store/rows.ts rule 5): the payment made with the row's own
 * single-use endToEndId, looked up, makes the step done; none (404) proves the first attempt did not pay (`failed`).
 */

import type { PixInitialization, PixQrType } from '../bank/client.js';
import { NotFoundError, RequestValidationError } from '../bank/errors.js';
import { parseBrCode } from '../formats/brcode.js';
import { formatAmount } from '../formats/money.js';
import { msg } from '../i18n/index.js';
import type { Cents } from '../types.js';
import { column, FORMATS, IDEMPOTENCY_KEY_COLUMN } from './columns.js';
import { type CellReader, naturalKeyWithExplicit, recordParser, shown } from './fields.js';
import { type BatchKind, type ColumnSpec, StepOutcomeError } from './kind.js';
import { uuidV5 } from './validators.js';

export interface PixPaymentRow {
  payload: string;
  amountCents: Cents;
  description?: string;
  idempotencyKey?: string;
}

/** The code of the payment lookup's 404 when no payment used the endToEndId (docs/service-gaps.md). */
const PIX_PAYMENT_NOT_FOUND = 'PIX_PAYMENT_NOT_FOUND';

/** Name of the derived key of the `pay` step (see the top of this file). Never change it. */
export const PIX_PAY_KEY_NAME = 'pix-payments/pay';

/** The key sent with the payment request of a row whose key is `rowKey`. */
export function pixPayKey(rowKey: string): string {
  return uuidV5(PIX_PAY_KEY_NAME, rowKey);
}

const SAMPLE_PAYLOAD =
  '00020126360014br.gov.bcb.pix0114+55619999999995204000053039865406100.005802BR5913Fulano de Tal6008BRASILIA62070503***63041188';

export const PIX_PAYMENT_COLUMNS: readonly ColumnSpec[] = [
  column(
    'payload',
    'Pix copy-and-paste code (BR Code) with a valid CRC; line breaks in it are ignored',
    SAMPLE_PAYLOAD,
    { required: true },
  ),
  column('amount', `${FORMATS.amount}; must be the QR code's amount unless it allows a change`, '100,00', {
    required: true,
  }),
  column('description', 'text, at most 140 characters, sent with the payment', 'Fornecedor 123'),
  IDEMPOTENCY_KEY_COLUMN,
];

export function parsePixPayment(r: CellReader): PixPaymentRow | undefined {
  // A code copied from a banking app or a PDF may come wrapped (or a cell typed with Alt+Enter): a BR Code never holds
  // a line break or a tab, so they are dropped; its CRC still proves the rest is the code as issued.
  const payload = r.text('payload', { required: true, max: 512, dropLineBreaks: true });
  const code = payload === undefined ? undefined : r.format('payload', () => parseBrCode(payload));
  let amountCents = r.amount('amount', { required: true });
  // A static code with an amount does not let the payer change it (the bank answers allowChangeAmount false and
  // refuses another amount): known from the payload alone, so checked before sending. A dynamic code's amount lives
  // at the bank and is checked by the pay step.
  if (code?.kind === 'STATIC' && code.amountCents !== undefined && amountCents !== undefined) {
    if (amountCents !== code.amountCents) {
      r.error('amount', 'AMOUNT_MISMATCH', 'AMOUNT_MISMATCH', {
        amount: formatAmount(code.amountCents, r.dialect.decimalMark),
        got: shown(r.record.amount!),
      });
      amountCents = undefined;
    }
  }
  const description = r.text('description', { max: 140 });
  const idempotencyKey = r.guid('idempotencyKey');
  if (payload === undefined || amountCents === undefined) return undefined;
  const row: PixPaymentRow = { payload, amountCents };
  if (description !== undefined) row.description = description;
  if (idempotencyKey !== undefined) row.idempotencyKey = idempotencyKey;
  return row;
}

export const pixPaymentsKind: BatchKind<PixPaymentRow> = {
  name: 'pix-payments',
  group: 'pix',
  movesMoneyOut: true,
  columns: PIX_PAYMENT_COLUMNS,
  parse: recordParser(parsePixPayment),
  // No `mustMatch`: the key holds what defines the payment (the code paid, the amount); the description sent with it
  // does not make another payment.
  naturalKey: (row) => naturalKeyWithExplicit(`${row.payload}|${row.amountCents}`, row.idempotencyKey),
  explicitIdempotencyKey: (row) => row.idempotencyKey,
  amountCents: (row) => row.amountCents,
  steps: [
    {
      name: 'initialize',
      effect: 'create',
      usesIdempotencyKey: true,
      async run(ctx) {
        const init = await ctx.client.pixPayments.initialize(ctx.row.payload, ctx.idempotencyKey, ctx.request);
        return {
          endToEndId: init.endToEndId,
          transactionId: init.transactionId,
          qrType: init.type,
          qrStatus: init.status,
          allowChangeAmount: init.allowChangeAmount,
          qrAmount: init.amountCents ?? null,
        };
      },
    },
    {
      name: 'pay',
      effect: 'money',
      usesIdempotencyKey: true,
      async run(ctx) {
        const stored = ctx.previous.initialize;
        if (!stored || typeof stored.endToEndId !== 'string' || typeof stored.transactionId !== 'string') {
          throw new StepOutcomeError('failed', 'PIX_NOT_INITIALIZED', 'Expected a stored initialization, got none');
        }
        const init: PixInitialization = {
          endToEndId: stored.endToEndId,
          transactionId: stored.transactionId,
          type: stored.qrType as PixQrType,
          status: String(stored.qrStatus ?? ''),
          allowChangeAmount: stored.allowChangeAmount === true,
          ...(typeof stored.qrAmount === 'number' ? { amountCents: stored.qrAmount } : {}),
        };
        let request: ReturnType<typeof ctx.client.pixPayments.toPaymentRequest>;
        try {
          request = ctx.client.pixPayments.toPaymentRequest(init, {
            amountCents: ctx.row.amountCents,
            ...(ctx.row.description !== undefined ? { description: ctx.row.description } : {}),
          });
        } catch (err) {
          if (err instanceof RequestValidationError)
            throw new StepOutcomeError('failed', err.code, err.message, { cause: err, detail: err.detail });
          throw err;
        }
        const payment = await ctx.client.pixPayments.pay(request, pixPayKey(ctx.idempotencyKey), ctx.request);
        return {
          paymentId: payment.id,
          paymentStatus: payment.status,
          // The bank paid: an answer without a readable amount leaves the column empty, never fails the row.
          paidAmount: payment.amountCents ?? null,
        };
      },
      async settleRefusal(ctx) {
        // The endToEndId is single-use and came from this row's own initialization: a payment made with it is ours.
        const e2e = ctx.previous.initialize?.endToEndId;
        if (typeof e2e !== 'string') return { kind: 'unclear', evidence: msg('EVIDENCE.noInitialization') };
        try {
          const payment = await ctx.client.pixPayments.getByEndToEndId(e2e, ctx.request);
          return {
            kind: 'done',
            evidence: msg('EVIDENCE.pixPaid', { id: payment.id, e2e }),
            output: { paymentId: payment.id, paymentStatus: payment.status, paidAmount: payment.amountCents ?? null },
          };
        } catch (err) {
          // Only the lookup's own "no such payment" proves it: a bare 404 may be a bank without this route (it is
          // not in the spec), which proves nothing.
          if (err instanceof NotFoundError && err.serviceCode === PIX_PAYMENT_NOT_FOUND) {
            return { kind: 'not-done', evidence: msg('EVIDENCE.pixNotPaid', { e2e }) };
          }
          throw err;
        }
      },
    },
  ],
  resultColumns: ['endToEndId', 'transactionId', 'paymentId', 'paymentStatus', 'paidAmount'],
  resultMoneyColumns: ['paidAmount'],
  resultColumnForms: { transactionId: 'identifier', paymentId: 'identifier' },
};
