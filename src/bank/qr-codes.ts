/**
 * QR code creation (spec 4.4): dynamic (v1 in the spec, v2 in the `delbank` profile; no idempotency key in either)
 * and static (v2; idempotencyKey in `interface`, none in `delbank`, as the provider's clients send it).
 *
 * The look-ups by correlationId (`getDynamic`, `getStatic`) are not shown in the spec (it only says the
 * correlationId is "usable to query charges and payments"): they GET the creation path + `/{correlationId}`, which
 * the sandbox serves. They let a caller recover a keyless creation whose answer was lost (`recoverStatic`).
 * The `delbank` clients GET `.../dynamic/{id}` and `.../static/{transactionIdentifier}`: whether the provider also
 * finds a code there by its correlationId is not known (docs/providers.md); `remessa doctor` shows what answers.
 */

import { NotFoundError } from './errors.js';
import type { HttpTransport } from './http.js';
import { dynamicQrSchema, staticQrSchema } from './schemas.js';
import type {
  CreateDynamicQrInput,
  CreateStaticQrInput,
  DynamicQrCode,
  QrFormatResponse,
  RequestOptions,
  StaticQrCode,
} from './types.js';
import { dynamicQrBody, staticQrBody } from './wire.js';

export class QrCodesResource {
  readonly #http: HttpTransport;

  constructor(http: HttpTransport) {
    this.#http = http;
  }

  /** POST the dynamic QR creation (spec 2.9). Not resent on an unknown outcome: query by correlationId. */
  createDynamic(input: CreateDynamicQrInput, options: RequestOptions = {}): Promise<DynamicQrCode> {
    return this.#http.json(
      {
        method: 'POST',
        path: this.#http.path('dynamicQr'),
        body: dynamicQrBody(input, this.#http.profile.dynamicQrExpiresIn, this.#http.profile.dynamicQrCity),
        signal: options.signal,
        task: options.task,
      },
      dynamicQrSchema,
    );
  }

  /** GET /baas/api/v1/pix/qrcode/dynamic/{correlationId} (not in the spec; see the top of this file). Unknown: NotFoundError. */
  getDynamic(
    correlationId: string,
    options: RequestOptions & { formatResponse?: QrFormatResponse } = {},
  ): Promise<DynamicQrCode> {
    return this.#http.json(
      {
        method: 'GET',
        path: this.#http.path('dynamicQrGet', correlationId),
        query: { formatResponse: options.formatResponse },
        signal: options.signal,
        task: options.task,
      },
      dynamicQrSchema,
    );
  }

  /** GET /baas/api/v2/pix/qrcode/static/{correlationId} (not in the spec; see the top of this file). Unknown: NotFoundError. */
  getStatic(
    correlationId: string,
    options: RequestOptions & { formatResponse?: QrFormatResponse } = {},
  ): Promise<StaticQrCode> {
    return this.#http.json(
      {
        method: 'GET',
        path: this.#http.path('staticQrGet', correlationId),
        query: { formatResponse: options.formatResponse },
        signal: options.signal,
        task: options.task,
      },
      staticQrSchema,
    );
  }

  /**
   * POST /baas/api/v2/pix/qrcode/static (spec 2.10) with the caller's idempotency key (a GUID) where the profile
   * sends one (not in `delbank`).
   */
  createStatic(
    input: CreateStaticQrInput,
    idempotencyKey: string,
    options: RequestOptions = {},
  ): Promise<StaticQrCode> {
    return this.#http.json(
      {
        method: 'POST',
        path: this.#http.path('staticQr'),
        idempotencyKey: this.#http.idempotencyKeyFor('staticQr', idempotencyKey),
        body: staticQrBody(input, this.#http.profile.staticQrBody),
        signal: options.signal,
        task: options.task,
      },
      staticQrSchema,
    );
  }

  /**
   * After an unknown outcome of `createStatic`: the code if it exists, `undefined` when it certainly does not (then
   * create it again). Where the profile sends the key, this is a resend with the same key (the bank answers the
   * first outcome, or creates it once); where it does not (`delbank`), a GET by correlationId, and 404 = absent.
   */
  async recoverStatic(
    input: CreateStaticQrInput,
    idempotencyKey: string,
    options: RequestOptions = {},
  ): Promise<StaticQrCode | undefined> {
    if (this.#http.idempotencyKeyFor('staticQr', idempotencyKey) !== undefined) {
      return this.createStatic(input, idempotencyKey, options);
    }
    try {
      return await this.getStatic(input.correlationId, {
        ...options,
        ...(input.formatResponse ? { formatResponse: input.formatResponse } : {}),
      });
    } catch (err) {
      if (err instanceof NotFoundError) return undefined;
      throw err;
    }
  }
}
