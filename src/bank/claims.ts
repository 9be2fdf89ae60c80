/** Pix key claims (spec 4.5; indirect Pix participants only). Every operation carries the caller's IdempotencyKey. */
import type { HttpTransport } from './http.js';
import { claimCancelSchema, claimSearchSchema, claimStartSchema } from './schemas.js';
import type {
  CancelClaimInput,
  ClaimCancelResult,
  ClaimSearchItem,
  ClaimStartResult,
  RequestOptions,
  SearchClaimsInput,
  StartClaimInput,
} from './types.js';

export class ClaimsResource {
  readonly #http: HttpTransport;

  constructor(http: HttpTransport) {
    this.#http = http;
  }

  /** POST /indirect-pix/api/v1/dict/claims (spec 2.11). */
  start(input: StartClaimInput, idempotencyKey: string, options: RequestOptions = {}): Promise<ClaimStartResult> {
    return this.#http.json(
      {
        method: 'POST',
        path: this.#http.path('claims'),
        idempotencyKey: this.#http.idempotencyKeyFor('claims', idempotencyKey),
        body: input,
        signal: options.signal,
        task: options.task,
      },
      claimStartSchema,
    );
  }

  /** POST /indirect-pix/api/v1/dict/claims/search: the claims of the account, by flow and status. */
  search(input: SearchClaimsInput, idempotencyKey: string, options: RequestOptions = {}): Promise<ClaimSearchItem[]> {
    return this.#http.json(
      {
        method: 'POST',
        path: this.#http.path('claimsSearch'),
        idempotencyKey: this.#http.idempotencyKeyFor('claimsSearch', idempotencyKey),
        body: input,
        signal: options.signal,
        task: options.task,
      },
      claimSearchSchema,
    );
  }

  /**
   * POST /indirect-pix/api/v1/dict/claims/{claimId}/cancel. Refusals come as ServiceError subclasses whose
   * `serviceCode` is CLAIM_NOT_FOUND, VALIDATION_ERROR or CLAIM_CANCELLATION_IS_NOT_ALLOWED.
   */
  cancel(
    claimId: string,
    input: CancelClaimInput,
    idempotencyKey: string,
    options: RequestOptions = {},
  ): Promise<ClaimCancelResult> {
    return this.#http.json(
      {
        method: 'POST',
        path: this.#http.path('claimCancel', claimId),
        idempotencyKey: this.#http.idempotencyKeyFor('claimCancel', idempotencyKey),
        body: input,
        signal: options.signal,
        task: options.task,
      },
      claimCancelSchema,
    );
  }
}
