/**
 * QR code creation (spec 4.4): dynamic (v1, no idempotency key in the spec) and static (v2, idempotencyKey).
 *
 * The look-ups by correlationId (`getDynamic`, `getStatic`) are not shown in the spec (it only says the
 * correlationId is "usable to query charges and payments"): they GET the creation path + `/{correlationId}`, which
 * the sandbox serves. They let a caller recover a keyless dynamic creation whose answer was lost.
 */
import { type HttpTransport, segment } from './http.js';
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

const DYNAMIC_PATH = '/baas/api/v1/pix/qrcode/dynamic';
const STATIC_PATH = '/baas/api/v2/pix/qrcode/static';

export class QrCodesResource {
  readonly #http: HttpTransport;

  constructor(http: HttpTransport) {
    this.#http = http;
  }

  /** POST /baas/api/v1/pix/qrcode/dynamic (spec 2.9). Not resent on an unknown outcome: query by correlationId. */
  createDynamic(input: CreateDynamicQrInput, options: RequestOptions = {}): Promise<DynamicQrCode> {
    return this.#http.json(
      { method: 'POST', path: DYNAMIC_PATH, body: dynamicQrBody(input), signal: options.signal },
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
        path: `${DYNAMIC_PATH}/${segment(correlationId)}`,
        query: { formatResponse: options.formatResponse },
        signal: options.signal,
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
        path: `${STATIC_PATH}/${segment(correlationId)}`,
        query: { formatResponse: options.formatResponse },
        signal: options.signal,
      },
      staticQrSchema,
    );
  }

  /** POST /baas/api/v2/pix/qrcode/static (spec 2.10) with the caller's idempotency key (a GUID). */
  createStatic(
    input: CreateStaticQrInput,
    idempotencyKey: string,
    options: RequestOptions = {},
  ): Promise<StaticQrCode> {
    return this.#http.json(
      { method: 'POST', path: STATIC_PATH, idempotencyKey, body: staticQrBody(input), signal: options.signal },
      staticQrSchema,
    );
  }
}
