import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ServiceConnectionError,
  ServiceTimeoutError,
  UnexpectedResponseError,
  ValidationError,
} from '../src/bank/errors.js';
import { backoffDelayMs, decideRetry, isSafeToResend, type RetryInput } from '../src/bank/retry-policy.js';

const settings = { maxAttempts: 4, baseDelayMs: 100, maxDelayMs: 1000, maxRetryAfterMs: 5000 };
const NOW = Date.UTC(2026, 10, 22, 0, 0, 0);
const half = () => 0.5;

function input(partial: Partial<RetryInput>): RetryInput {
  return { attempt: 1, method: 'GET', hasIdempotencyKey: false, now: NOW, random: half, settings, ...partial };
}

const req = { method: 'POST', path: '/x' };
const refused = new ServiceConnectionError('refused', { ...req, mayHaveReachedServer: false });
const reset = new ServiceConnectionError('reset', { ...req, mayHaveReachedServer: true });
const connectTimeout = new ServiceTimeoutError('connect', { ...req, phase: 'connect' });
const headersTimeout = new ServiceTimeoutError('headers', { ...req, phase: 'headers' });
const bodyTimeout = new ServiceTimeoutError('body', { ...req, phase: 'body' });

describe('decideRetry: the decision table', () => {
  it('row 1: gives up when the attempts are exhausted, whatever the outcome', () => {
    expect(decideRetry(input({ attempt: 4, response: { status: 503, headers: {} } }))).toEqual({
      retry: false,
      reason: 'attempts-exhausted',
    });
    expect(decideRetry(input({ attempt: 4, error: refused }))).toEqual({ retry: false, reason: 'attempts-exhausted' });
  });

  it('row 2: retries a 429 for any method, even a POST without a key (it was not processed)', () => {
    for (const method of ['GET', 'POST', 'PATCH', 'PUT', 'DELETE']) {
      const d = decideRetry(input({ method, response: { status: 429, headers: {} } }));
      expect(d).toEqual({ retry: true, delayMs: 50 }); // backoff: 0.5 * min(1000, 100 * 2^0)
    }
  });

  it('row 2: honours Retry-After in seconds', () => {
    expect(decideRetry(input({ method: 'POST', response: { status: 429, headers: { 'retry-after': '3' } } }))).toEqual({
      retry: true,
      delayMs: 3000,
    });
  });

  it('row 2: honours Retry-After as an HTTP-date relative to now', () => {
    const date = new Date(NOW + 2000).toUTCString();
    expect(decideRetry(input({ response: { status: 429, headers: { 'retry-after': date } } }))).toEqual({
      retry: true,
      delayMs: 2000,
    });
    const past = new Date(NOW - 60_000).toUTCString();
    expect(decideRetry(input({ response: { status: 429, headers: { 'retry-after': past } } }))).toEqual({
      retry: true,
      delayMs: 0,
    });
  });

  it('row 2: caps Retry-After at maxRetryAfterMs (seconds and date forms)', () => {
    expect(decideRetry(input({ response: { status: 429, headers: { 'retry-after': '3600' } } }))).toEqual({
      retry: true,
      delayMs: 5000,
    });
    const far = new Date(NOW + 3_600_000).toUTCString();
    expect(decideRetry(input({ response: { status: 429, headers: { 'retry-after': far } } }))).toEqual({
      retry: true,
      delayMs: 5000,
    });
  });

  it('row 2: an unreadable Retry-After falls back to backoff', () => {
    expect(decideRetry(input({ response: { status: 429, headers: { 'retry-after': 'soon' } } }))).toEqual({
      retry: true,
      delayMs: 50,
    });
  });

  it('row 3: retries a 5xx of a GET, or of a POST carrying an IdempotencyKey', () => {
    for (const status of [500, 502, 503, 504]) {
      expect(decideRetry(input({ method: 'GET', response: { status, headers: {} } })).retry).toBe(true);
      expect(decideRetry(input({ method: 'HEAD', response: { status, headers: {} } })).retry).toBe(true);
      expect(
        decideRetry(input({ method: 'POST', hasIdempotencyKey: true, response: { status, headers: {} } })).retry,
      ).toBe(true);
    }
    expect(decideRetry(input({ method: 'GET', response: { status: 503, headers: { 'retry-after': '1' } } }))).toEqual({
      retry: true,
      delayMs: 1000,
    });
  });

  it('row 4: never retries a 5xx of a non-idempotent request without a key (outcome unknown)', () => {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      expect(decideRetry(input({ method, response: { status: 500, headers: {} } }))).toEqual({
        retry: false,
        reason: 'unsafe-outcome-unknown',
      });
    }
  });

  it('row 2b: retries a 409 "key still being processed" of a keyed request, honouring Retry-After', () => {
    const inUse = { status: 409, headers: {} };
    expect(decideRetry(input({ method: 'POST', hasIdempotencyKey: true, response: inUse, keyInUse: true }))).toEqual({
      retry: true,
      delayMs: 50,
    });
    const asked = { status: 409, headers: { 'retry-after': '2' } };
    expect(decideRetry(input({ method: 'POST', hasIdempotencyKey: true, response: asked, keyInUse: true }))).toEqual({
      retry: true,
      delayMs: 2000,
    });
  });

  it('row 2b: a 409 that is a business conflict, or comes without a key, is not retried', () => {
    const conflict = { status: 409, headers: {} };
    expect(decideRetry(input({ method: 'POST', hasIdempotencyKey: true, response: conflict }))).toEqual({
      retry: false,
      reason: 'not-retryable-status',
    });
    expect(decideRetry(input({ method: 'POST', response: conflict, keyInUse: true }))).toEqual({
      retry: false,
      reason: 'not-retryable-status',
    });
  });

  it('row 5: does not retry other statuses', () => {
    for (const status of [200, 201, 400, 401, 403, 404, 409, 422, 501, 505]) {
      expect(decideRetry(input({ method: 'GET', response: { status, headers: {} } }))).toEqual({
        retry: false,
        reason: 'not-retryable-status',
      });
    }
  });

  it('row 6: retries a failure where nothing was sent, for any method (refused, connect timeout)', () => {
    for (const error of [refused, connectTimeout]) {
      expect(decideRetry(input({ method: 'POST', error }))).toEqual({ retry: true, delayMs: 50 });
      expect(decideRetry(input({ method: 'PATCH', error })).retry).toBe(true);
    }
  });

  it('row 7: retries a failure that may have reached the server when safe', () => {
    for (const error of [reset, headersTimeout, bodyTimeout]) {
      expect(decideRetry(input({ method: 'GET', error })).retry).toBe(true);
      expect(decideRetry(input({ method: 'POST', hasIdempotencyKey: true, error })).retry).toBe(true);
    }
  });

  it('row 8: never resends a keyless POST/PUT/PATCH whose outcome is unknown', () => {
    for (const error of [reset, headersTimeout, bodyTimeout]) {
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
        expect(decideRetry(input({ method, error }))).toEqual({ retry: false, reason: 'unsafe-outcome-unknown' });
      }
    }
  });

  it('row 9: does not retry other errors', () => {
    const unexpected = new UnexpectedResponseError('bad', { ...req, status: 200, fieldPath: '$.id' });
    const validation = new ValidationError('SERVICE_VALIDATION', 'bad', { ...req, status: 400 });
    for (const error of [unexpected, validation, new Error('bug'), new DOMException('aborted', 'AbortError')]) {
      expect(decideRetry(input({ method: 'GET', error }))).toEqual({ retry: false, reason: 'not-retryable-error' });
    }
  });
});

describe('backoff', () => {
  it('is capped exponential: the ceiling doubles per attempt up to maxDelayMs', () => {
    const top = () => 0.999999;
    expect(backoffDelayMs(1, settings, top)).toBe(99);
    expect(backoffDelayMs(2, settings, top)).toBe(199);
    expect(backoffDelayMs(3, settings, top)).toBe(399);
    expect(backoffDelayMs(4, settings, top)).toBe(799);
    expect(backoffDelayMs(5, settings, top)).toBe(999);
    expect(backoffDelayMs(60, settings, top)).toBe(999);
  });

  it('full jitter: random 0 gives 0, and every delay lies in [0, ceiling)', () => {
    expect(backoffDelayMs(3, settings, () => 0)).toBe(0);
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (attempt, r) => {
          const d = backoffDelayMs(attempt, settings, () => r);
          const ceiling = Math.min(settings.maxDelayMs, settings.baseDelayMs * 2 ** (attempt - 1));
          return Number.isInteger(d) && d >= 0 && d < Math.max(ceiling, 1);
        },
      ),
    );
  });

  it('the decision uses the attempt number for the backoff', () => {
    expect(decideRetry(input({ attempt: 3, error: refused }))).toEqual({ retry: true, delayMs: 200 });
  });
});

describe('isSafeToResend', () => {
  it('GET, HEAD and OPTIONS are safe; anything else only with a key', () => {
    expect(isSafeToResend('get', false)).toBe(true);
    expect(isSafeToResend('HEAD', false)).toBe(true);
    expect(isSafeToResend('OPTIONS', false)).toBe(true);
    for (const m of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      expect(isSafeToResend(m, false)).toBe(false);
      expect(isSafeToResend(m, true)).toBe(true);
    }
  });
});
