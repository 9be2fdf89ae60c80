import fc from 'fast-check';
import { errors as undiciErrors } from 'undici';
import { describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  ConflictError,
  errorFromNetworkFailure,
  errorFromResponse,
  IdempotencyError,
  NotFoundError,
  parseRetryAfter,
  RateLimitedError,
  ServerError,
  ServiceConnectionError,
  ServiceError,
  ServiceTimeoutError,
  ServiceUnreachableError,
  ValidationError,
} from '../src/bank/errors.js';
import { RemessaError } from '../src/errors.js';

const json = { 'content-type': 'application/problem+json; charset=utf-8' };
const req = { method: 'POST', path: '/v1/charges' };

function make(status: number, body: unknown, headers: Record<string, string> = json) {
  return errorFromResponse({ ...req, status, headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
}

describe('errorFromResponse: the four shapes of spec section 7', () => {
  it('shape 1: validation problem with field errors', () => {
    const body = {
      type: 'https://tools.ietf.org/html/rfc7231#section-6.5.1',
      title: 'One or more validation errors occurred.',
      status: 400,
      traceId: '00-abc-def-00',
      errors: { '$.dueDate': ['The JSON value could not be converted to System.DateTime.'], endDate: ['required'] },
    };
    const e = make(400, body);
    expect(e).toBeInstanceOf(ValidationError);
    expect(e).toBeInstanceOf(ServiceError);
    expect(e).toBeInstanceOf(RemessaError);
    expect(e.code).toBe('SERVICE_VALIDATION');
    expect(e.status).toBe(400);
    expect(e.title).toBe('One or more validation errors occurred.');
    expect(e.traceId).toBe('00-abc-def-00');
    expect(e.type).toBe(body.type);
    expect(e.fieldErrors).toEqual(body.errors);
    expect(e.messages).toContain('$.dueDate: The JSON value could not be converted to System.DateTime.');
    expect(e.raw).toBe(JSON.stringify(body));
    expect(e.method).toBe('POST');
    expect(e.path).toBe('/v1/charges');
    expect(e.mayHaveReachedServer).toBe(true);
    expect(e.message).toContain('HTTP 400');
    expect(e.message).toContain('$.dueDate');
    expect(e.message).toContain('traceId 00-abc-def-00');
  });

  it('shape 2: not found problem', () => {
    const e = make(404, {
      type: 'https://tools.ietf.org/html/rfc7231#section-6.5.4',
      title: 'Not Found',
      status: 404,
      traceId: 't-1',
    });
    expect(e).toBeInstanceOf(NotFoundError);
    expect(e.code).toBe('SERVICE_NOT_FOUND');
    expect(e.title).toBe('Not Found');
    expect(e.traceId).toBe('t-1');
    expect(e.fieldErrors).toEqual({});
  });

  it('shape 3: Pix charge rules (errors array + errorMessage)', () => {
    const e = make(400, {
      errors: ['additionalInfo value must be at most 37 characters'],
      errorMessage: 'Invalid charge',
    });
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.messages).toEqual(['Invalid charge', 'additionalInfo value must be at most 37 characters']);
    expect(e.fieldErrors).toEqual({});
    expect(e.message).toContain('additionalInfo value must be at most 37 characters');
  });

  it('shape 4: claim cancellation (title, code, errors array)', () => {
    const claimProblem = (title: string, code: string, error: string) => ({ title, code, errors: [error] });
    const e = make(
      400,
      claimProblem('Requisição inválida', 'VALIDATION_ERROR', 'O id da reivindicação deve ser um GUID'),
    );
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.serviceCode).toBe('VALIDATION_ERROR');
    expect(e.code).toBe('SERVICE_VALIDATION');
    expect(e.messages).toEqual(['O id da reivindicação deve ser um GUID']);
    const notFound = make(404, claimProblem('Não encontrado', 'CLAIM_NOT_FOUND', 'Reivindicação não encontrada'));
    expect(notFound).toBeInstanceOf(NotFoundError);
    expect(notFound.serviceCode).toBe('CLAIM_NOT_FOUND');
    const notAllowed = make(
      409,
      claimProblem('Conflito', 'CLAIM_CANCELLATION_IS_NOT_ALLOWED', 'O status atual não permite cancelamento'),
    );
    expect(notAllowed).toBeInstanceOf(ConflictError);
    expect(notAllowed.serviceCode).toBe('CLAIM_CANCELLATION_IS_NOT_ALLOWED');
  });
});

describe('errorFromResponse: statuses', () => {
  it('maps each status to its class and stable code', () => {
    const cases: Array<[number, new (...a: never[]) => ServiceError, string]> = [
      [400, ValidationError, 'SERVICE_VALIDATION'],
      [401, AuthenticationError, 'SERVICE_AUTHENTICATION'],
      [403, AuthenticationError, 'SERVICE_AUTHENTICATION'],
      [404, NotFoundError, 'SERVICE_NOT_FOUND'],
      [409, ConflictError, 'SERVICE_CONFLICT'],
      [422, IdempotencyError, 'SERVICE_IDEMPOTENCY'],
      [429, RateLimitedError, 'SERVICE_RATE_LIMITED'],
      [500, ServerError, 'SERVICE_SERVER_ERROR'],
      [502, ServerError, 'SERVICE_SERVER_ERROR'],
      [503, ServerError, 'SERVICE_SERVER_ERROR'],
      [418, ServiceError, 'SERVICE_ERROR'],
    ];
    for (const [status, cls, code] of cases) {
      const e = make(status, { title: 'x' });
      expect(e).toBeInstanceOf(cls);
      expect(e.code).toBe(code);
      expect(e.status).toBe(status);
    }
  });

  it('a 409 or 400 about the idempotency key is an IdempotencyError', () => {
    expect(make(409, { title: 'Request with this IdempotencyKey is still being processed' })).toBeInstanceOf(
      IdempotencyError,
    );
    expect(make(400, { title: 'Bad Request', errors: { IdempotencyKey: ['must be a GUID'] } })).toBeInstanceOf(
      IdempotencyError,
    );
    expect(make(409, { code: 'IDEMPOTENCY_KEY_IN_USE' })).toBeInstanceOf(IdempotencyError);
    expect(make(409, { title: 'Conflict', errors: ['correlationId already exists'] })).toBeInstanceOf(ConflictError);
  });

  it('429 carries Retry-After in seconds or as an HTTP-date', () => {
    const now = Date.UTC(2026, 0, 1);
    const secs = errorFromResponse({ ...req, status: 429, headers: { 'retry-after': '7' }, body: '', now });
    expect((secs as RateLimitedError).retryAfterMs).toBe(7000);
    const date = errorFromResponse({
      ...req,
      status: 429,
      headers: { 'retry-after': new Date(now + 90_000).toUTCString() },
      body: '',
      now,
    });
    expect((date as RateLimitedError).retryAfterMs).toBe(90_000);
    const none = errorFromResponse({ ...req, status: 429, headers: {}, body: '', now });
    expect((none as RateLimitedError).retryAfterMs).toBeUndefined();
  });
});

describe('errorFromResponse: bodies that are not the spec shapes', () => {
  it('HTML from a proxy', () => {
    const html =
      '<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>';
    const e = make(502, html, { 'content-type': 'text/html' });
    expect(e).toBeInstanceOf(ServerError);
    expect(e.title).toBe('502 Bad Gateway');
    expect(e.raw).toBe(html);
    expect(e.messages).toEqual([]);
    expect(e.message).toContain('HTML body');
    expect(e.contentType).toBe('text/html');
  });

  it('empty body', () => {
    const e = make(503, '', {});
    expect(e).toBeInstanceOf(ServerError);
    expect(e.raw).toBe('');
    expect(e.title).toBeUndefined();
    expect(e.message).toContain('empty body');
  });

  it('invalid JSON', () => {
    const e = make(400, '{"title": "Bad', { 'content-type': 'application/json' });
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.raw).toBe('{"title": "Bad');
    expect(e.message).toContain('invalid JSON');
  });

  it('plain text', () => {
    const e = make(500, 'upstream exploded', { 'content-type': 'text/plain' });
    expect(e.messages).toEqual(['upstream exploded']);
  });

  it('a JSON array, a JSON string and a generic problem detail', () => {
    expect(make(400, ['a', 'b']).messages).toEqual(['a', 'b']);
    expect(make(400, '"oops"', { 'content-type': 'application/json' }).messages).toEqual(['oops']);
    expect(make(401, { title: 'Unauthorized', status: 401, detail: 'missing x-service-api-key' }).messages).toEqual([
      'missing x-service-api-key',
    ]);
  });

  it('keeps at most 8 KiB of raw body', () => {
    const e = make(500, 'x'.repeat(100_000), { 'content-type': 'text/plain' });
    expect(e.raw.length).toBe(8192);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.UTC(2026, 5, 1, 12, 0, 0);
  it('reads seconds, fractions, dates; ignores garbage', () => {
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter('1.5', now)).toBe(1500);
    expect(parseRetryAfter('Mon, 01 Jun 2026 12:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('', now)).toBeUndefined();
    expect(parseRetryAfter('-5', now)).toBeUndefined();
    expect(parseRetryAfter('later', now)).toBeUndefined();
  });
});

describe('errorFromNetworkFailure', () => {
  const get = { method: 'GET', path: '/v1/charges/x' };

  it('connection refused: nothing was sent', () => {
    const err = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    const e = errorFromNetworkFailure(err, get);
    expect(e).toBeInstanceOf(ServiceConnectionError);
    expect(e).toBeInstanceOf(ServiceUnreachableError);
    expect(e.code).toBe('SERVICE_UNREACHABLE');
    expect((e as ServiceUnreachableError).reason).toBe('refused');
    expect(e.mayHaveReachedServer).toBe(false);
    expect(e.cause).toBe(err);
  });

  it('an AggregateError of refused attempts (happy eyeballs): nothing was sent', () => {
    const inner = Object.assign(new Error('connect ECONNREFUSED ::1:1'), { code: 'ECONNREFUSED' });
    const e = errorFromNetworkFailure(new AggregateError([inner]), get);
    expect(e).toBeInstanceOf(ServiceConnectionError);
    expect(e.mayHaveReachedServer).toBe(false);
  });

  it('undici timeouts: connect (not sent), headers and body (may have been processed)', () => {
    const c = errorFromNetworkFailure(new undiciErrors.ConnectTimeoutError(), get);
    expect(c).toBeInstanceOf(ServiceTimeoutError);
    expect((c as ServiceTimeoutError).phase).toBe('connect');
    expect(c.mayHaveReachedServer).toBe(false);
    const h = errorFromNetworkFailure(new undiciErrors.HeadersTimeoutError(), get);
    expect(h).toBeInstanceOf(ServiceTimeoutError);
    expect(h.code).toBe('SERVICE_TIMEOUT');
    expect(h.mayHaveReachedServer).toBe(true);
    const b = errorFromNetworkFailure(new undiciErrors.BodyTimeoutError(), get);
    expect((b as ServiceTimeoutError).phase).toBe('body');
    expect(b.mayHaveReachedServer).toBe(true);
  });

  it('socket closed: may have reached the server, unless the socket wrote nothing', () => {
    const otherSideClosed = (bytesWritten: number) =>
      new undiciErrors.SocketError('other side closed', {
        bytesWritten,
      } as unknown as ConstructorParameters<typeof undiciErrors.SocketError>[1]);
    expect(errorFromNetworkFailure(otherSideClosed(120), get).mayHaveReachedServer).toBe(true);
    expect(errorFromNetworkFailure(otherSideClosed(0), get).mayHaveReachedServer).toBe(false);
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    const e = errorFromNetworkFailure(reset, get);
    expect(e).toBeInstanceOf(ServiceConnectionError);
    expect(e.mayHaveReachedServer).toBe(true);
  });

  it('a ServiceError passes through unchanged', () => {
    const e = make(500, '');
    expect(errorFromNetworkFailure(e, get)).toBe(e);
  });
});

describe('errorFromResponse never throws', () => {
  it('any status, headers and body give a ServiceError of the status, keeping the raw body', () => {
    const body = fc.oneof(
      fc.string(),
      fc.json(),
      fc.constantFrom('', '<html>', '{', 'null', '[]', '{"errors": null}', '{"errors": {"a": "not a list"}}'),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 300, max: 599 }),
        body,
        fc.option(fc.constantFrom('application/json', 'text/html', 'text/plain'), { nil: undefined }),
        fc.option(fc.string(), { nil: undefined }),
        (status, text, contentType, retryAfter) => {
          const headers: Record<string, string> = {};
          if (contentType) headers['content-type'] = contentType;
          if (retryAfter !== undefined) headers['retry-after'] = retryAfter;
          const e = errorFromResponse({ ...req, status, headers, body: text });
          return (
            e instanceof ServiceError &&
            e.status === status &&
            e.raw === text.slice(0, 8192) &&
            e.code.startsWith('SERVICE_') &&
            Array.isArray(e.messages) &&
            typeof e.fieldErrors === 'object'
          );
        },
      ),
    );
  });

  it('parseRetryAfter gives undefined or a non-negative number for any text', () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        const v = parseRetryAfter(text, 0);
        return v === undefined || (Number.isFinite(v) && v >= 0);
      }),
    );
  });
});
