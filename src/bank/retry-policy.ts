/**
 * The retry decision: a pure function of the attempt that just ended. No clock, no randomness of its own, no I/O.
 *
 * "Safe" below means the request can be sent again without risk of doing its effect twice:
 *   safe = method is GET, HEAD or OPTIONS, or the request carries an IdempotencyKey (the bank deduplicates it;
 *          the client always resends the caller's same key).
 * PUT, PATCH, DELETE and POST without a key are NOT safe: a second send could pay, create or change twice.
 *
 * Decision table (first matching row wins; `attempt` counts attempts made so far, the first is 1):
 *
 * | # | Outcome of the attempt                                   | Safe? | Decision                                   |
 * |---|----------------------------------------------------------|-------|--------------------------------------------|
 * | 1 | attempt >= maxAttempts                                   | any   | give up: `attempts-exhausted`              |
 * | 2 | 429 Too Many Requests                                    | any   | retry after Retry-After (capped), else backoff (a 429 was not processed) |
 * | 2b| 409 "this IdempotencyKey is still being processed" (`keyInUse`) | key | retry after Retry-After (capped), else backoff: the first request's outcome is not known yet, and the same key will be answered with it |
 * | 3 | 5xx (not 501 / 505)                                      | yes   | retry after Retry-After (capped), else backoff |
 * | 4 | 5xx (not 501 / 505)                                      | no    | give up: `unsafe-outcome-unknown`          |
 * | 5 | any other status (2xx-4xx, 501, 505)                     | any   | give up: `not-retryable-status`            |
 * | 6 | ServiceConnectionError / ServiceTimeoutError, nothing sent (`mayHaveReachedServer` false: refused, DNS, TLS, connect timeout) | any | retry with backoff |
 * | 7 | ServiceConnectionError / ServiceTimeoutError, may have reached the server (reset, closed, headers or body timeout) | yes | retry with backoff |
 * | 8 | same as 7                                                | no    | give up: `unsafe-outcome-unknown`          |
 * | 9 | any other error (abort, bad response body, bug)          | any   | give up: `not-retryable-error`             |
 *
 * Backoff: capped exponential with full jitter (AWS "Exponential Backoff And Jitter"):
 *   delayMs = floor(random() * min(maxDelayMs, baseDelayMs * 2^(attempt - 1)))
 * Retry-After: delay-seconds or an HTTP-date, relative to `now`; a wait longer than maxRetryAfterMs is cut to it (the
 * RateLimitedError still carries the full wait so the engine can pause the endpoint group).
 */
import { parseRetryAfter, ServiceConnectionError, ServiceTimeoutError } from './errors.js';

export interface RetrySettings {
  /** Attempts allowed in total, the first included. */
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  maxRetryAfterMs: number;
}

export interface RetryInput {
  /** Attempts made so far, including the one that just ended (1 after the first). */
  attempt: number;
  method: string;
  hasIdempotencyKey: boolean;
  /** The response of the attempt, when one arrived. Header names lower-case. */
  response?: { status: number; headers: Record<string, string | string[] | undefined> };
  /**
   * The response (a 409) says the first request with this IdempotencyKey is still being processed: an
   * `IdempotencyError` with status 409. Only the caller can tell this 409 from a business conflict (the body says it).
   */
  keyInUse?: boolean;
  /** The error of the attempt, when no response arrived (already classified by `errorFromNetworkFailure`). */
  error?: unknown;
  /** Milliseconds since the epoch (for an HTTP-date Retry-After). */
  now: number;
  /** Uniform in [0, 1). */
  random: () => number;
  settings: RetrySettings;
}

export type RetryReason =
  | 'attempts-exhausted'
  | 'unsafe-outcome-unknown'
  | 'not-retryable-status'
  | 'not-retryable-error';

export type RetryDecision = { retry: true; delayMs: number } | { retry: false; reason: RetryReason };

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Whether the request can be resent without risk of a second effect. */
export function isSafeToResend(method: string, hasIdempotencyKey: boolean): boolean {
  return hasIdempotencyKey || SAFE_METHODS.has(method.toUpperCase());
}

/** Capped exponential backoff with full jitter. */
export function backoffDelayMs(attempt: number, settings: RetrySettings, random: () => number): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 30);
  const ceiling = Math.min(settings.maxDelayMs, settings.baseDelayMs * 2 ** exponent);
  return Math.floor(random() * ceiling);
}

function retryAfterHeader(headers: Record<string, string | string[] | undefined>): string | undefined {
  const v = headers['retry-after'];
  return Array.isArray(v) ? v[0] : v;
}

export function decideRetry(input: RetryInput): RetryDecision {
  const { attempt, settings } = input;
  if (attempt >= settings.maxAttempts) return { retry: false, reason: 'attempts-exhausted' };
  const safe = isSafeToResend(input.method, input.hasIdempotencyKey);

  if (input.response !== undefined) {
    const { status, headers } = input.response;
    const keyInUse = status === 409 && input.keyInUse === true && input.hasIdempotencyKey;
    const retryable = status === 429 || keyInUse || (status >= 500 && status !== 501 && status !== 505);
    if (!retryable) return { retry: false, reason: 'not-retryable-status' };
    if (status !== 429 && !safe) return { retry: false, reason: 'unsafe-outcome-unknown' };
    const asked = parseRetryAfter(retryAfterHeader(headers), input.now);
    if (asked !== undefined) return { retry: true, delayMs: Math.min(asked, settings.maxRetryAfterMs) };
    return { retry: true, delayMs: backoffDelayMs(attempt, settings, input.random) };
  }

  const err = input.error;
  if (err instanceof ServiceConnectionError || err instanceof ServiceTimeoutError) {
    if (err.mayHaveReachedServer && !safe) return { retry: false, reason: 'unsafe-outcome-unknown' };
    return { retry: true, delayMs: backoffDelayMs(attempt, settings, input.random) };
  }
  return { retry: false, reason: 'not-retryable-error' };
}
