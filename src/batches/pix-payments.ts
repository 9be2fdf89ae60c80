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
 *   provider's clients send one there too; but whether the provider answers a repeat with the first transfer is not
 *   known, so there a resend after an unknown outcome waits for the lookup's proof (below).
 *
 * Natural key: payload + amount in cents (the same QR code paid twice with the same amount is one intent; to pay a
 * reusable static QR code twice on purpose, give each row its own `idempotencyKey`).
 * An endToEndId expires: a row resumed long after its initialization may be refused by the bank (row `failed`).
 *
 * `pay` after an attempt of unknown outcome (timeout, connection reset, 5xx, a crash after its intent; the engine runs
 * it again with `ctx.resend`): it finds out first, by the one identifier of the payment it holds before the answer,
 * the endToEndId of the row's own initialization (single use: a payment made with it is this row's; the payment's
 * `id` comes only in the lost answer, and the QR code's transactionId is shared by every payment of a static code):
 *
 *   GET pixPaymentGet/{endToEndId} ──found──────────────────────────► done with that payment, nothing resent
 *        ├──certainly none (PIX_PAYMENT_NOT_FOUND)─────────────────► sent again, same key
 *        └──cannot tell (a bare 404) ──key replayed by the bank─────► sent again, same key
 *                                    └─not known to be (`delbank`)─► row `uncertain` (PIX_PAYMENT_NOT_LOOKED_UP),
 *                                                                    for a person; never `failed`, never resent
 *   (the lookup times out, 5xx: an unknown outcome again, retried; 401/403: the bank gate, as any request)
 *
 * Whether the bank answers a repeated key with the first payment is `client.pixPayments.keyReplayed` (the profile's,
 * config `bank.pixPaymentKeyReplayed`: src/formats/profiles.ts). The next run of an `uncertain` row looks it up again.
 * A refusal of the payment after an attempt of unknown outcome (END_TO_END_ID_ALREADY_USED, QR_CODE_NOT_ACTIVE: by
 * our first attempt?) is settled by `settleRefusal` (src/store/rows.ts rule 5) with the same lookup: found makes the
 * step done; certainly none proves the first attempt did not pay (`failed`); cannot tell leaves it `uncertain`.
 */

import type { PixInitialization, PixPayment, PixQrType } from '../bank/client.js';
import { RequestValidationError } from '../bank/errors.js';
import { parseBrCode } from '../formats/brcode.js';
import { formatAmount } from '../formats/money.js';
import { msg, t } from '../i18n/index.js';
import type { Cents } from '../types.js';
import { column, FORMATS, IDEMPOTENCY_KEY_COLUMN } from './columns.js';
import { type CellReader, naturalKeyWithExplicit, recordParser, shown } from './fields.js';
import { type BatchKind, type ColumnSpec, StepOutcomeError, type StepOutput } from './kind.js';
import { uuidV5 } from './validators.js';

export interface PixPaymentRow {
  payload: string;
  amountCents: Cents;
  description?: string;
  idempotencyKey?: string;
}

/** The row's code when a payment of unknown outcome could not be looked up and is not resent (see the top). */
export const PIX_PAYMENT_NOT_LOOKED_UP = 'PIX_PAYMENT_NOT_LOOKED_UP';

/** The pay step's output from the bank's payment record (its answer, or the payment looked up). */
function paidOutput(payment: PixPayment): StepOutput {
  return {
    paymentId: payment.id,
    paymentStatus: payment.status,
    // The bank paid: an answer without a readable amount leaves the column empty, never fails the row.
    paidAmount: payment.amountCents ?? null,
  };
}

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
        const payKey = pixPayKey(ctx.idempotencyKey);
        if (ctx.resend) {
          // An earlier attempt may have paid: find out before sending again (see the top of this file).
          const found = await ctx.client.pixPayments.findByEndToEndId(init.endToEndId, ctx.request);
          if (found.kind === 'found') return paidOutput(found.payment);
          if (found.kind === 'cannot-tell' && !ctx.client.pixPayments.keyReplayed) {
            const values = { e2e: init.endToEndId, key: payKey, reason: found.error.message };
            throw new StepOutcomeError(
              'uncertain',
              PIX_PAYMENT_NOT_LOOKED_UP,
              t('en', 'PIX_PAYMENT_NOT_LOOKED_UP', values),
              { cause: found.error, detail: msg('PIX_PAYMENT_NOT_LOOKED_UP', values) },
            );
          }
        }
        return paidOutput(await ctx.client.pixPayments.pay(request, payKey, ctx.request));
      },
      async settleRefusal(ctx) {
        // The endToEndId is single-use and came from this row's own initialization: a payment made with it is ours.
        const e2e = ctx.previous.initialize?.endToEndId;
        if (typeof e2e !== 'string') return { kind: 'unclear', evidence: msg('EVIDENCE.noInitialization') };
        const found = await ctx.client.pixPayments.findByEndToEndId(e2e, ctx.request);
        if (found.kind === 'found') {
          return {
            kind: 'done',
            evidence: msg('EVIDENCE.pixPaid', { id: found.payment.id, e2e }),
            output: paidOutput(found.payment),
          };
        }
        if (found.kind === 'absent') return { kind: 'not-done', evidence: msg('EVIDENCE.pixNotPaid', { e2e }) };
        // A bare 404 may be a bank that does not find payments by endToEndId there: it proves nothing.
        throw found.error;
      },
    },
  ],
  resultColumns: ['endToEndId', 'transactionId', 'paymentId', 'paymentStatus', 'paidAmount'],
  resultMoneyColumns: ['paidAmount'],
  resultColumnForms: { transactionId: 'identifier', paymentId: 'identifier' },
};
