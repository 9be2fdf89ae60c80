/**
 * The typed client of the bank's service (spec: shared/spec/service-interface.md).
 *
 * ```ts
 * const client = new BankClient({ baseUrl, apiKey, accountId });
 * const charge = await client.charges.create({ type: 'BANKSLIP', correlationId, dueDate, amountCents: 12345, payer });
 * const bill = await client.billPayments.lookup(digitableLine);
 * const paid = await client.billPayments.pay(bill, { amountCents: bill.amountCents, idempotencyKey });
 * await client.close();
 * ```
 *
 * What holds for every call:
 * - Money is integer cents; the wire's decimals are converted only in src/bank/wire.ts.
 * - Every request carries the API key header; an IdempotencyKey only when the caller gives one and the provider
 *   profile sends one on that operation (the client never makes one up, so every retry reuses the caller's key).
 * - Paths and header names follow the provider profile (`profile`, src/formats/profiles.ts) and its overrides.
 * - Failures are `ServiceError` subclasses (src/bank/errors.ts), or `RequestValidationError` when the client refuses
 *   a request before sending it. Retries follow src/bank/retry-policy.ts.
 */

import type { BankOperation, BankProfile } from '../formats/profiles.js';
import { BillPaymentsResource } from './bill-payments.js';
import { ChargesResource } from './charges.js';
import { ClaimsResource } from './claims.js';
import { HttpTransport } from './http.js';
import { type BankClientOptions, resolveBankClientOptions } from './options.js';
import { PixPaymentsResource } from './pix-payments.js';
import { QrCodesResource } from './qr-codes.js';
import { WebhooksResource } from './webhooks.js';

export { initiationTypeFor } from '../formats/pix.js';
export type { BankOperation, BankProfile, BankProfileName } from '../formats/profiles.js';
export { BANK_OPERATIONS, BANK_PROFILES } from '../formats/profiles.js';
export { LookedUpBill } from './bill-payments.js';
export type { BankClientOptions } from './options.js';
export { toPixPaymentRequest } from './pix-payments.js';
export * from './types.js';

export class BankClient {
  /** Spec 4.1: create (every variant), get, list, patch, void, streamPdf, stagingPay, stagingExpire. */
  readonly charges: ChargesResource;
  /** Spec 4.2: lookup, then pay the looked-up bill. */
  readonly billPayments: BillPaymentsResource;
  /** Spec 4.3: initialize, toPaymentRequest, pay. */
  readonly pixPayments: PixPaymentsResource;
  /** Spec 4.4: createDynamic, createStatic. */
  readonly qrCodes: QrCodesResource;
  /** Spec 4.5: start, search, cancel. */
  readonly claims: ClaimsResource;
  /** Spec 4.6: create, list, get, update, delete. */
  readonly webhooks: WebhooksResource;
  readonly #http: HttpTransport;

  /** The provider profile in use, every override applied (paths, header names, keyless operations). */
  get profile(): BankProfile {
    return this.#http.profile;
  }

  /** The path of `operation` with its segments filled in (for `remessa doctor`). */
  pathOf(operation: BankOperation, ...values: string[]): string {
    return this.#http.path(operation, ...values);
  }

  /** One GET, no retry, the status whatever it is (for `remessa doctor`; see HttpTransport.probe). */
  probe(
    path: string,
    options: { headers?: Record<string, string>; signal?: AbortSignal } = {},
  ): ReturnType<HttpTransport['probe']> {
    return this.#http.probe(path, options);
  }

  constructor(options: BankClientOptions) {
    const resolved = resolveBankClientOptions(options);
    this.#http = new HttpTransport(resolved);
    this.charges = new ChargesResource(this.#http);
    this.billPayments = new BillPaymentsResource(this.#http);
    this.pixPayments = new PixPaymentsResource(this.#http);
    this.qrCodes = new QrCodesResource(this.#http);
    this.claims = new ClaimsResource(this.#http);
    this.webhooks = new WebhooksResource(this.#http);
  }

  /**
   * Sends `apiKey` from the next request on: a key rotated while the daemon runs, taken on its reload
   * (src/runner/reload.ts). The account id, which names the idempotency keys, never changes so.
   */
  useApiKey(apiKey: string): void {
    this.#http.useApiKey(apiKey);
  }

  /** Closes the kept-alive connections; in-flight requests finish first. */
  close(): Promise<void> {
    return this.#http.close();
  }
}
