/**
 * Pix QR code payments (spec 4.3): initialize with the QR payload, map, pay.
 *
 * `toPixPaymentRequest` is the ONE mapping from an initialization to a payment body:
 * - initiationType = QR_CODE_STATIC for a QR_CODE_STATIC initialization, QR_CODE_DYNAMIC for
 *   DYNAMIC_IMMEDIATE_PAYMENT and DYNAMIC_PAYMENT_WITH_EXPIRATION;
 * - transactionId and endToEndId are the initialization's (the endToEndId is single use and expires);
 * - the amount is the initialization's, unless it allows a change (allowChangeAmount) and the caller gives one.
 */
import { initiationTypeFor } from '../formats/pix.js';
import { RequestValidationError } from './errors.js';
import { type HttpTransport, segment } from './http.js';
import { pixInitializationSchema, pixPaymentSchema } from './schemas.js';
import type { Cents, PixInitialization, PixPayment, PixPaymentRequest, RequestOptions } from './types.js';
import { pixPaymentBody } from './wire.js';

const INITIALIZATION_PATH = '/baas/api/v2/pix/qrcode/payment-initialization';

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
        `amountCents: expected a whole number of cents > 0, got ${overrides.amountCents}`,
        'amountCents',
      );
    }
    if (!init.allowChangeAmount && fixed !== undefined && overrides.amountCents !== fixed) {
      throw new RequestValidationError(
        'BANK_PIX_AMOUNT_FIXED',
        `amountCents: expected ${fixed} (the QR code's amount; it does not allow a change), got ${overrides.amountCents}`,
        'amountCents',
      );
    }
    amountCents = overrides.amountCents;
  } else {
    amountCents = fixed;
  }
  if (amountCents === undefined) {
    throw new RequestValidationError(
      'BANK_PIX_AMOUNT_REQUIRED',
      'amountCents: expected an amount (the QR code carries none), got nothing',
      'amountCents',
    );
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
  readonly #paymentPath: string;

  constructor(http: HttpTransport, paymentPath: string) {
    this.#http = http;
    this.#paymentPath = paymentPath;
  }

  /** POST /baas/api/v2/pix/qrcode/payment-initialization with the caller's IdempotencyKey. */
  initialize(payload: string, idempotencyKey: string, options: RequestOptions = {}): Promise<PixInitialization> {
    return this.#http.json(
      {
        method: 'POST',
        path: INITIALIZATION_PATH,
        idempotencyKey,
        body: { payload },
        signal: options.signal,
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
   * GET `{paymentPath}/{endToEndId}`: the payment as the bank knows it now (not in the spec, which shows only the
   * answer `PIX_PROCESSING`; the sandbox serves it, docs/service-gaps.md). The retorno uses it to learn a payment's
   * settlement when no PIX_PAYMENT_UPDATED event came. Unknown id: NotFoundError.
   */
  get(endToEndId: string, options: RequestOptions = {}): Promise<PixPayment> {
    return this.#http.json(
      { method: 'GET', path: `${this.#paymentPath}/${segment(endToEndId)}`, signal: options.signal },
      pixPaymentSchema,
    );
  }

  /**
   * POST to the payment path (setting `pixPaymentPath`). With an idempotencyKey the request is resent on an unknown
   * outcome (same key); without one it never is (the single-use endToEndId is then the only guard).
   */
  pay(request: PixPaymentRequest, idempotencyKey?: string, options: RequestOptions = {}): Promise<PixPayment> {
    return this.#http.json(
      {
        method: 'POST',
        path: this.#paymentPath,
        idempotencyKey,
        body: pixPaymentBody(request),
        signal: options.signal,
      },
      pixPaymentSchema,
    );
  }
}
