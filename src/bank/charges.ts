/**
 * Charges (spec 4.1): bank slips, bank slips with Pix, static and dynamic Pix charges.
 *
 * None of these operations takes an IdempotencyKey in the spec, so a create whose outcome is unknown is never
 * resent by the client: the caller finds out with `get(correlationId)` (the correlationId is the natural key, and a
 * second create with it is refused by the bank).
 */
import { MAX_CHARGES_PAGE_LIMIT } from '../formats/charges.js';
import { isIsoDate, oneYearAfter } from '../formats/dates.js';
import { RequestValidationError } from './errors.js';
import type { HttpTransport } from './http.js';
import {
  bankSlipChargeSchema,
  bankSlipPixChargeSchema,
  chargeActionSchema,
  chargeListSchema,
  chargeSchema,
  pixChargeSchema,
} from './schemas.js';
import type {
  BankSlipCharge,
  BankSlipChargeInput,
  BankSlipPixChargeInput,
  Charge,
  ChargeActionResult,
  ChargePatchInput,
  CreateChargeInput,
  CreatedCharge,
  ListChargesInput,
  PixCharge,
  PixDynamicChargeInput,
  PixStaticChargeInput,
  RequestOptions,
  StreamedFile,
} from './types.js';
import { bankSlipChargeBody, chargePatchBody, pixChargeBody } from './wire.js';

/** Checks a list query against spec section 8 before anything is sent. */
export function checkListChargesInput(input: ListChargesInput): void {
  for (const field of ['startDate', 'endDate'] as const) {
    if (!isIsoDate(input[field])) {
      throw new RequestValidationError(
        'BANK_DATE_INVALID',
        `${field}: expected a date yyyy-mm-dd, got ${JSON.stringify(input[field])}`,
        field,
      );
    }
  }
  if (input.endDate < input.startDate) {
    throw new RequestValidationError(
      'BANK_DATE_RANGE_INVALID',
      `endDate: expected a date on or after startDate ${input.startDate}, got ${input.endDate}`,
      'endDate',
    );
  }
  const last = oneYearAfter(input.startDate);
  if (input.endDate > last) {
    throw new RequestValidationError(
      'BANK_DATE_RANGE_TOO_LONG',
      `endDate: expected a range of at most one year (until ${last}), got ${input.startDate}..${input.endDate}`,
      'endDate',
    );
  }
  if (
    input.limit !== undefined &&
    (!Number.isInteger(input.limit) || input.limit < 1 || input.limit > MAX_CHARGES_PAGE_LIMIT)
  ) {
    throw new RequestValidationError(
      'BANK_LIMIT_TOO_HIGH',
      `limit: expected an integer from 1 to ${MAX_CHARGES_PAGE_LIMIT}, got ${input.limit}`,
      'limit',
    );
  }
  if (input.page !== undefined && (!Number.isInteger(input.page) || input.page < 0)) {
    throw new RequestValidationError(
      'BANK_PAGE_INVALID',
      `page: expected a whole number >= 0, got ${input.page}`,
      'page',
    );
  }
}

export class ChargesResource {
  readonly #http: HttpTransport;

  constructor(http: HttpTransport) {
    this.#http = http;
  }

  /**
   * POST the charge (`bank.paths.charges`). The response shape follows the type (spec 2.2 for BANKSLIP, 2.3 for Pix
   * charges); only what the pipeline writes is required (see `CreatedCharge`), and an answer without a
   * correlationId is given the one sent.
   */
  create(input: BankSlipChargeInput, options?: RequestOptions): Promise<BankSlipCharge>;
  create(input: BankSlipPixChargeInput, options?: RequestOptions): Promise<CreatedCharge>;
  create(input: PixStaticChargeInput | PixDynamicChargeInput, options?: RequestOptions): Promise<PixCharge>;
  create(input: CreateChargeInput, options?: RequestOptions): Promise<CreatedCharge>;
  async create(input: CreateChargeInput, options: RequestOptions = {}): Promise<CreatedCharge> {
    const request = {
      method: 'POST' as const,
      path: this.#http.path('charges'),
      signal: options.signal,
      task: options.task,
    };
    const sent = <T extends CreatedCharge>(charge: T): T =>
      charge.correlationId ? charge : { ...charge, correlationId: input.correlationId };
    switch (input.type) {
      case 'BANKSLIP':
        return sent(await this.#http.json({ ...request, body: bankSlipChargeBody(input) }, bankSlipChargeSchema));
      case 'BANKSLIP_PIX':
        return sent(await this.#http.json({ ...request, body: bankSlipChargeBody(input) }, bankSlipPixChargeSchema));
      case 'PIX_STATIC':
      case 'PIX_DYNAMIC':
        return sent(await this.#http.json({ ...request, body: pixChargeBody(input) }, pixChargeSchema));
      default: {
        const never: never = input;
        throw new TypeError(`charges.create: unknown type ${JSON.stringify((never as { type?: unknown }).type)}`);
      }
    }
  }

  /** GET /v1/charges/{correlationId}: the consolidated charge. Unknown id: NotFoundError. */
  get(correlationId: string, options: RequestOptions = {}): Promise<Charge> {
    return this.#http.json(
      { method: 'GET', path: this.#http.path('charge', correlationId), signal: options.signal, task: options.task },
      chargeSchema,
    );
  }

  /**
   * GET /v1/charges?startDate&endDate&page&limit. Refuses (RequestValidationError, nothing sent) a limit over 100, a
   * range over one year, an end before the start or a date that is not yyyy-mm-dd.
   */
  async list(input: ListChargesInput, options: RequestOptions = {}): Promise<Charge[]> {
    checkListChargesInput(input);
    return this.#http.json(
      {
        method: 'GET',
        path: this.#http.path('charges'),
        query: { startDate: input.startDate, endDate: input.endDate, page: input.page, limit: input.limit },
        signal: options.signal,
        task: options.task,
      },
      chargeListSchema,
    );
  }

  /** PATCH /v1/charges/{correlationId} (spec 2.4). The response is text/plain; its text is returned as is. */
  async patch(correlationId: string, patch: ChargePatchInput, options: RequestOptions = {}): Promise<string> {
    const res = await this.#http.send({
      method: 'PATCH',
      path: this.#http.path('charge', correlationId),
      body: chargePatchBody(patch),
      signal: options.signal,
      task: options.task,
    });
    return res.body;
  }

  /** POST /v1/charges/{correlationId}/void. Does not undo payments already made. Unknown id: NotFoundError. */
  void(correlationId: string, options: RequestOptions = {}): Promise<ChargeActionResult> {
    return this.#action('POST', correlationId, 'chargeVoid', options);
  }

  /**
   * GET /v1/charges/{correlationId}/stream: the bank slip PDF, streamed to `filePath` (written under a temp name in
   * the same folder, then renamed). Unknown id: NotFoundError, and no file.
   */
  streamPdf(correlationId: string, filePath: string, options: RequestOptions = {}): Promise<StreamedFile> {
    return this.#http.toFile(
      { method: 'GET', path: this.#http.path('chargePdf', correlationId), signal: options.signal, task: options.task },
      filePath,
      'application/pdf',
    );
  }

  /** POST /v1/charges/{correlationId}/pay. Staging only: simulates a payment. */
  stagingPay(correlationId: string, options: RequestOptions = {}): Promise<ChargeActionResult> {
    return this.#action('POST', correlationId, 'chargeStagingPay', options);
  }

  /** PUT /v1/charges/{correlationId}/expire. Staging only: simulates expiry (changes the original due date). */
  stagingExpire(correlationId: string, options: RequestOptions = {}): Promise<ChargeActionResult> {
    return this.#action('PUT', correlationId, 'chargeStagingExpire', options);
  }

  async #action(
    method: 'POST' | 'PUT',
    correlationId: string,
    action: 'chargeVoid' | 'chargeStagingPay' | 'chargeStagingExpire',
    options: RequestOptions,
  ): Promise<ChargeActionResult> {
    const res = await this.#http.send({
      method,
      path: this.#http.path(action, correlationId),
      signal: options.signal,
      task: options.task,
    });
    // Body not shown in the spec: any JSON object; an empty or non-JSON body counts as {}.
    let data: unknown;
    try {
      data = JSON.parse(res.body);
    } catch {
      return {};
    }
    const parsed = chargeActionSchema.safeParse(data);
    return parsed.success ? parsed.data : {};
  }
}
