/**
 * Pix QR code payments (spec 4.3): initialize with the QR payload, map, pay.
 *
 * `toPixPaymentRequest` is the ONE mapping from an initialization to a payment body:
 * - initiationType = QR_CODE_STATIC for a QR_CODE_STATIC initialization, QR_CODE_DYNAMIC for
 *   DYNAMIC_IMMEDIATE_PAYMENT and DYNAMIC_PAYMENT_WITH_EXPIRATION;
 * - transactionId and endToEndId are the initialization's (the endToEndId is single use and expires);
 * - the amount is the initialization's, unless it allows a change (allowChangeAmount) and the caller gives one.
 *
 * Per profile (src/formats/profiles.ts): `interface` POSTs the spec's body to `pixPayment` (a setting; the spec shows no
 * path); `delbank` POSTs it as a transfer (`/baas/api/v2/transfers`, body with type "Pix", saveFavorite false, empty
 * tags and splitInstructions, no transferAt: pay now), as the official clients do. The payment carries the caller's
 * IdempotencyKey in both. The initialization carries it only in `interface`: in `delbank` it goes without (the
 * clients send none), which is safe because an initialization moves no money (a resend hands out a new endToEndId).
 *
 * Read back (`findByEndToEndId`): GET `pixPaymentGet/{endToEndId}` (a sandbox addition in `interface`; the provider's
 * `GET /baas/api/v2/transfers/{id}` in `delbank`, whose clients pass a "transfer identifier": whether the provider
 * finds a transfer there by its endToEndId is not known, docs/providers.md). The endToEndId is what remessa holds
 * before the payment's answer (it comes from its own initialization; the transfer's `id` comes only in the answer),
 * and it is single use: a payment made with it is this row's. Only the lookup's own "no such payment"
 * (`PIX_PAYMENT_NOT_FOUND`) proves none; a bare 404 may be a bank that does not find payments that way.
 */
import { initiationTypeFor } from '../formats/pix.js';
import { money, msg } from '../i18n/index.js';
import { NotFoundError, RequestValidationError } from './errors.js';
import type { HttpTransport } from './http.js';
import { pixInitializationSchema, pixPaymentSchema } from './schemas.js';
import type { Cents, PixInitialization, PixPayment, PixPaymentRequest, RequestOptions } from './types.js';
import { pixPaymentBody, pixTransferBody } from './wire.js';

/** The code of the payment lookup's 404 when no payment used the endToEndId (docs/service-gaps.md). */
export const PIX_PAYMENT_NOT_FOUND = 'PIX_PAYMENT_NOT_FOUND';

/** What the lookup by endToEndId tells (see the top of this file). */
export type PixPaymentLookup =
  /** The payment made with that endToEndId. */
  | { kind: 'found'; payment: PixPayment }
  /** Certainly none: the lookup's own PIX_PAYMENT_NOT_FOUND. */
  | { kind: 'absent' }
  /** A 404 that proves nothing (no service code, or another one): the bank may not find payments this way. */
  | { kind: 'cannot-tell'; error: NotFoundError };

/**
 * Builds the payment body from an initialization. Refuses (RequestValidationError) an amount different from a fixed
 * QR amount (BANK_PIX_AMOUNT_FIXED), and a missing amount when the QR code carries none (BANK_PIX_AMOUNT_REQUIRED).
 */
export function toPixPaymentRequest(
  init: PixInitialization,
  overrides: { amountCents?: Cents; description?: string } = {},
): PixPaymentRequest {
  const fixed = init.amountCents !== undefined && init.amountCents > 0 ? init.amountCents : undefined;
  let amountCents: Cents | undefined;
  if (overrides.amountCents !== undefined) {
    if (!Number.isSafeInteger(overrides.amountCents) || overrides.amountCents <= 0) {
      throw new RequestValidationError(
        'BANK_PIX_AMOUNT_INVALID',
        msg('BANK_AMOUNT_NOT_WHOLE_CENTS', { got: overrides.amountCents }),
        'amountCents',
      );
    }
    if (!init.allowChangeAmount && fixed !== undefined && overrides.amountCents !== fixed) {
      throw new RequestValidationError(
        'BANK_PIX_AMOUNT_FIXED',
        msg('BANK_PIX_AMOUNT_FIXED', { amount: money(fixed), got: money(overrides.amountCents) }),
        'amountCents',
      );
    }
    amountCents = overrides.amountCents;
  } else {
    amountCents = fixed;
  }
  if (amountCents === undefined) {
    throw new RequestValidationError('BANK_PIX_AMOUNT_REQUIRED', msg('BANK_PIX_AMOUNT_REQUIRED'), 'amountCents');
  }
  const request: PixPaymentRequest = {
    amountCents,
    endToEndId: init.endToEndId,
    transactionId: init.transactionId,
    initiationType: initiationTypeFor(init.type),
  };
  if (overrides.description !== undefined) request.description = overrides.description;
  return request;
}

export class PixPaymentsResource {
  readonly #http: HttpTransport;

  constructor(http: HttpTransport) {
    this.#http = http;
  }

  /**
   * POST /baas/api/v2/pix/qrcode/payment-initialization, with the caller's IdempotencyKey where the profile sends one
   * (see the top of this file).
   */
  initialize(payload: string, idempotencyKey: string, options: RequestOptions = {}): Promise<PixInitialization> {
    return this.#http.json(
      {
        method: 'POST',
        path: this.#http.path('pixPaymentInitialization'),
        idempotencyKey: this.#http.idempotencyKeyFor('pixPaymentInitialization', idempotencyKey),
        body: { payload },
        signal: options.signal,
        task: options.task,
      },
      pixInitializationSchema,
    );
  }

  /** See `toPixPaymentRequest`. */
  toPaymentRequest(
    init: PixInitialization,
    overrides: { amountCents?: Cents; description?: string } = {},
  ): PixPaymentRequest {
    return toPixPaymentRequest(init, overrides);
  }

  /**
   * POST to the profile's payment path (`bank.paths.pixPayment`; a transfer in `delbank`). With an idempotencyKey
   * the request is resent on an unknown outcome (same key); without one it never is (the single-use endToEndId is
   * then the only guard).
   */
  pay(request: PixPaymentRequest, idempotencyKey?: string, options: RequestOptions = {}): Promise<PixPayment> {
    return this.#http.json(
      {
        method: 'POST',
        path: this.#http.path('pixPayment'),
        idempotencyKey: this.#http.idempotencyKeyFor('pixPayment', idempotencyKey),
        body: this.#http.profile.pixPaymentBody === 'transfer' ? pixTransferBody(request) : pixPaymentBody(request),
        signal: options.signal,
        task: options.task,
      },
      pixPaymentSchema,
    );
  }

  /**
   * GET `{pixPaymentPath}/{endToEndId}`: the payment made with that endToEndId, or NotFoundError. Not in the spec
   * (served by the sandbox; docs/service-gaps.md): the evidence, after a refused resend, of whether our own first
   * attempt paid (an endToEndId is single-use and comes from our own initialization).
   */
  getByEndToEndId(endToEndId: string, options: RequestOptions = {}): Promise<PixPayment> {
    return this.#http.json(
      { method: 'GET', path: this.#http.path('pixPaymentGet', endToEndId), signal: options.signal, task: options.task },
      pixPaymentSchema,
    );
  }

  /**
   * `getByEndToEndId`, its 404 told apart: certainly none (the lookup's own PIX_PAYMENT_NOT_FOUND) or cannot tell.
   * Any other failure (timeout, 5xx, 401) is thrown as is.
   */
  async findByEndToEndId(endToEndId: string, options: RequestOptions = {}): Promise<PixPaymentLookup> {
    try {
      return { kind: 'found', payment: await this.getByEndToEndId(endToEndId, options) };
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
      return err.serviceCode === PIX_PAYMENT_NOT_FOUND ? { kind: 'absent' } : { kind: 'cannot-tell', error: err };
    }
  }

  /**
   * Whether the bank answers a payment sent again with the same IdempotencyKey with the first payment (the profile's
   * `pixPaymentKeyReplayed`, config `bank.pixPaymentKeyReplayed`).
   */
  get keyReplayed(): boolean {
    return this.#http.profile.pixPaymentKeyReplayed;
  }
}
