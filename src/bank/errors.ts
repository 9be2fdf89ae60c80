/**
 * The one hierarchy of the service's errors, built by one factory (after stripe-node's `generateV1Error`).
 *
 * ```
 * RemessaError (src/errors.ts)
 * ├── ServiceError                 SERVICE_ERROR        the bank answered with an error status not listed below
 * │   ├── ValidationError          SERVICE_VALIDATION   400
 * │   ├── AuthenticationError      SERVICE_AUTHENTICATION 401, 403
 * │   ├── NotFoundError            SERVICE_NOT_FOUND    404
 * │   ├── ConflictError            SERVICE_CONFLICT     409
 * │   ├── IdempotencyError         SERVICE_IDEMPOTENCY  422, or a 400/409 whose body speaks of idempotency
 * │   ├── RateLimitedError         SERVICE_RATE_LIMITED 429 (retryAfterMs)
 * │   ├── ServerError              SERVICE_SERVER_ERROR 5xx
 * │   ├── UnexpectedResponseError  SERVICE_UNEXPECTED_RESPONSE  a success whose body fails its schema
 * │   ├── ServiceConnectionError   SERVICE_CONNECTION   no response: the connection broke (reset, closed) after it
 * │   │   │                                             was made: the request may have been processed
 * │   │   └── ServiceUnreachableError SERVICE_UNREACHABLE the connection was never made (refused, DNS, network,
 * │   │                                                 TLS handshake): certainly nothing was sent
 * │   └── ServiceTimeoutError      SERVICE_TIMEOUT      no (complete) response in time (phase `connect`: nothing sent)
 * └── RequestValidationError       BANK_*               the client refused to send (limit > 100, ...)
 * ```
 *
 * Rules that must hold:
 * - `code` is remessa's stable code (above); the bank's own code (e.g. CLAIM_NOT_FOUND) is `serviceCode`.
 * - `mayHaveReachedServer` says whether the bank may have acted on the request. It is false only when we know
 *   nothing was sent: the failure happened while the connection was being made (the transport's connector tags it:
 *   refused, DNS, unreachable network, TLS handshake, connect timeout), or the socket wrote no byte. A TLS error
 *   AFTER the handshake (a TLS 1.3 alert once the request was written) may have reached the server. A money-moving
 *   request without an idempotency key is never resent while this is true. `isCertainlyNotSent` is the one test.
 * - "certainly not sent" means the bank is unreachable, not that it said no: the engine keeps such rows `waiting`
 *   and sends them when it is back (src/runner/engine.ts). A 401/403 (`isCredentialsRefusal`) is a refusal before
 *   any processing, of remessa's key and not of the row: such rows wait too, until the bank accepts the key again.
 * - No secret in any field: the path carries no credentials, and the raw body and messages pass through the log
 *   scrubber's `scrubSecrets` before they are stored.
 */
import { RemessaError } from '../errors.js';
import { type Message, type MessageKey, msg, render } from '../i18n/index.js';
import { scrubSecrets } from '../log.js';

/** What the factory needs to know about the request that failed. */
export interface RequestDescription {
  method: string;
  /** Path and query, without origin or credentials. */
  path: string;
}

export interface ServiceErrorDetails extends RequestDescription {
  /** The sentence for a person (src/i18n), when remessa words it itself (no answer came: a network failure). */
  detail?: Message;
  /** HTTP status, undefined when no response arrived. */
  status?: number;
  title?: string;
  traceId?: string;
  /** The service's own code (claim errors: CLAIM_NOT_FOUND, VALIDATION_ERROR, ...). */
  serviceCode?: string;
  /** `type` of a problem body (a URI in the samples). */
  type?: string;
  /** Field path (`$.dueDate`, `endDate`) -> messages. */
  fieldErrors?: Record<string, string[]>;
  /** Every human message found in the body, in order. */
  messages?: string[];
  /** The response body as text (truncated to RAW_BODY_LIMIT characters). */
  raw?: string;
  /** Response content type. */
  contentType?: string;
  mayHaveReachedServer?: boolean;
  /** The answer is the bank's replay of the first answer to this IdempotencyKey (`Idempotent-Replayed: true`). */
  replayed?: boolean;
  cause?: unknown;
}

/** Longest raw body kept on an error, in characters. */
export const RAW_BODY_LIMIT = 8192;

export class ServiceError extends RemessaError {
  readonly method: string;
  readonly path: string;
  readonly status: number | undefined;
  readonly title: string | undefined;
  readonly traceId: string | undefined;
  readonly serviceCode: string | undefined;
  readonly type: string | undefined;
  readonly fieldErrors: Record<string, string[]>;
  readonly messages: string[];
  readonly raw: string;
  readonly contentType: string | undefined;
  /** Whether the bank may have acted on the request (always true when it answered). */
  readonly mayHaveReachedServer: boolean;
  /**
   * The bank said this answer is the replay of the first answer to the request's IdempotencyKey (header
   * `Idempotent-Replayed: true`): a refusal replayed is the first attempt's own refusal, so that attempt did nothing.
   */
  readonly replayed: boolean;

  constructor(code: string, message: string, details: ServiceErrorDetails) {
    super(code, scrubSecrets(message), {
      ...(details.cause === undefined ? {} : { cause: details.cause }),
      ...(details.detail === undefined ? {} : { detail: details.detail }),
    });
    this.method = details.method;
    this.path = scrubSecrets(details.path);
    this.status = details.status;
    this.title = details.title;
    this.traceId = details.traceId;
    this.serviceCode = details.serviceCode;
    this.type = details.type;
    this.fieldErrors = details.fieldErrors ?? {};
    this.messages = (details.messages ?? []).map(scrubSecrets);
    this.raw = scrubSecrets((details.raw ?? '').slice(0, RAW_BODY_LIMIT));
    this.contentType = details.contentType;
    this.mayHaveReachedServer = details.mayHaveReachedServer ?? details.status !== undefined;
    this.replayed = details.replayed ?? false;
  }
}

/** 400: the request body or query was refused (field errors in `fieldErrors`, Pix rule messages in `messages`). */
export class ValidationError extends ServiceError {}
/** 401 or 403: missing, unknown or insufficient API key. */
export class AuthenticationError extends ServiceError {}
/** 404: unknown resource (charge, bill, claim, webhook). */
export class NotFoundError extends ServiceError {}
/** 409: the resource already exists (e.g. a second charge with the same correlationId). */
export class ConflictError extends ServiceError {}
/** 422 (same key, different body), or 409/400 about the idempotency key (in progress, missing, not a GUID). */
export class IdempotencyError extends ServiceError {}
/** 5xx: the outcome of a non-GET request is unknown. */
export class ServerError extends ServiceError {}

/** 429. `retryAfterMs` is the wait the service asked for (Retry-After), undefined when it gave none. */
export class RateLimitedError extends ServiceError {
  readonly retryAfterMs: number | undefined;

  constructor(message: string, details: ServiceErrorDetails & { retryAfterMs?: number }) {
    super('SERVICE_RATE_LIMITED', message, details);
    this.retryAfterMs = details.retryAfterMs;
  }
}

/** A success response whose body does not match what the client relies on. `fieldPath` names the field. */
export class UnexpectedResponseError extends ServiceError {
  readonly fieldPath: string;

  constructor(message: string, details: ServiceErrorDetails & { fieldPath: string }) {
    super('SERVICE_UNEXPECTED_RESPONSE', message, { ...details, mayHaveReachedServer: true });
    this.fieldPath = details.fieldPath;
  }
}

/** No response: the connection broke, or (the subclass) could not be made. */
export class ServiceConnectionError extends ServiceError {
  constructor(
    message: string,
    details: ServiceErrorDetails & { mayHaveReachedServer: boolean },
    code = 'SERVICE_CONNECTION',
  ) {
    super(code, message, details);
  }
}

/** Why a connection could not be made. */
export type UnreachableReason = 'refused' | 'dns' | 'network' | 'tls' | 'connect';

/** The connection to the bank could not be made: certainly nothing of the request was sent. */
export class ServiceUnreachableError extends ServiceConnectionError {
  readonly reason: UnreachableReason;

  constructor(message: string, details: ServiceErrorDetails & { reason: UnreachableReason }) {
    super(message, { ...details, mayHaveReachedServer: false }, 'SERVICE_UNREACHABLE');
    this.reason = details.reason;
  }
}

/** Whether a failed attempt certainly sent nothing (the bank is unreachable; not a refusal, not a lost answer). */
export function isCertainlyNotSent(error: unknown): boolean {
  return (
    (error instanceof ServiceConnectionError || error instanceof ServiceTimeoutError) && !error.mayHaveReachedServer
  );
}

/**
 * Whether the bank refused the request for remessa's credentials (401/403: missing, unknown or insufficient API key):
 * a refusal before any processing, the same for every request until a person acts. Never a row's outcome: the engine
 * closes its bank gate (src/runner/bank-gate.ts) and the row waits.
 */
export function isCredentialsRefusal(error: unknown): boolean {
  return error instanceof AuthenticationError && (error.status === 401 || error.status === 403);
}

/** Which wait ran out. */
export type TimeoutPhase = 'connect' | 'headers' | 'body';

/** No (complete) response in time. Only a connect timeout guarantees nothing was sent. */
export class ServiceTimeoutError extends ServiceError {
  readonly phase: TimeoutPhase;

  constructor(message: string, details: ServiceErrorDetails & { phase: TimeoutPhase }) {
    super('SERVICE_TIMEOUT', message, { ...details, mayHaveReachedServer: details.phase !== 'connect' });
    this.phase = details.phase;
  }
}

/** The client refused to send a request that breaks a rule of the spec (nothing was sent). */
export class RequestValidationError extends RemessaError {
  /** The input field at fault, e.g. `limit`, `endDate`, `amountCents`. */
  readonly field: string | undefined;

  /**
   * `message` is the developer's English; or, for a refusal a person reads (a row's result), a catalogue message
   * (src/i18n): then `message` is its English and `describe(locale)` says it in the reader's words.
   */
  constructor(code: string, message: string | Message, field?: string) {
    super(code, typeof message === 'string' ? message : render('en', message), {
      ...(typeof message === 'string' ? {} : { detail: message }),
    });
    this.field = field;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The factory

/** A response as the factory reads it. Header names lower-case. */
export interface ErrorResponse extends RequestDescription {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The body as text ('' when empty). */
  body: string;
  /** Milliseconds since the epoch, to turn an HTTP-date Retry-After into a wait. @defaultValue Date.now() */
  now?: number;
}

function header(headers: ErrorResponse['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Milliseconds to wait from a Retry-After value: delay-seconds (`120`, `1.5`) or an HTTP-date. Undefined when
 * absent or unreadable; a date in the past gives 0.
 */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (text === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const at = Date.parse(text);
  if (Number.isNaN(at) || !/[a-z]/i.test(text)) return undefined;
  return Math.max(0, at - now);
}

interface ParsedBody {
  title?: string;
  traceId?: string;
  serviceCode?: string;
  type?: string;
  fieldErrors: Record<string, string[]>;
  messages: string[];
  /** What the body was, for the message when it is not JSON. */
  kind: 'json' | 'empty' | 'html' | 'text' | 'invalid-json';
}

function asString(v: unknown): string | undefined {
  return typeof v === 'string' && v.length > 0 ? v : undefined;
}

function toMessages(v: unknown): string[] {
  if (Array.isArray(v)) return v.flatMap((x) => (typeof x === 'string' ? [x] : x == null ? [] : [JSON.stringify(x)]));
  if (typeof v === 'string') return [v];
  return [];
}

/** Reads the four error shapes of spec section 7, RFC 7807 problems, and whatever else comes (HTML, text, nothing). */
export function parseErrorBody(body: string, contentType: string | undefined): ParsedBody {
  const text = body.trim();
  if (text === '') return { fieldErrors: {}, messages: [], kind: 'empty' };
  const looksJson = text.startsWith('{') || text.startsWith('[') || /json/i.test(contentType ?? '');
  if (looksJson) {
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      return { fieldErrors: {}, messages: [], kind: 'invalid-json' };
    }
    if (Array.isArray(data)) return { fieldErrors: {}, messages: toMessages(data), kind: 'json' };
    if (data === null || typeof data !== 'object') {
      return { fieldErrors: {}, messages: toMessages(String(data)), kind: 'json' };
    }
    const o = data as Record<string, unknown>;
    const fieldErrors: Record<string, string[]> = {};
    const messages: string[] = [];
    const errorMessage = asString(o.errorMessage);
    if (errorMessage) messages.push(errorMessage);
    const errors = o.errors;
    if (Array.isArray(errors) || typeof errors === 'string') {
      // Shapes 3 (Pix charge rules) and 4 (claim cancellation): a list of messages.
      messages.push(...toMessages(errors));
    } else if (errors !== null && typeof errors === 'object') {
      // Shape 1 (validation problem): field path -> messages.
      for (const [field, msgs] of Object.entries(errors as Record<string, unknown>)) {
        const list = toMessages(msgs);
        fieldErrors[field] = list;
        for (const m of list) messages.push(`${field}: ${m}`);
      }
    }
    for (const k of ['detail', 'message', 'error_description'] as const) {
      const m = asString(o[k]);
      if (m && !messages.includes(m)) messages.push(m);
    }
    if (typeof o.error === 'string' && !messages.includes(o.error)) messages.push(o.error);
    const parsed: ParsedBody = { fieldErrors, messages, kind: 'json' };
    const title = asString(o.title);
    if (title) parsed.title = title;
    const traceId = asString(o.traceId) ?? asString(o.traceid) ?? asString(o.trace_id);
    if (traceId) parsed.traceId = traceId;
    const code = asString(o.code) ?? (typeof o.code === 'number' ? String(o.code) : undefined);
    if (code) parsed.serviceCode = code;
    const type = asString(o.type);
    if (type) parsed.type = type;
    return parsed;
  }
  if (/html/i.test(contentType ?? '') || /^<(!doctype|html|head|body|\?xml)/i.test(text)) {
    const titleMatch = /<title[^>]*>([^<]*)<\/title>/i.exec(text);
    const title = titleMatch?.[1]?.trim();
    const parsed: ParsedBody = { fieldErrors: {}, messages: [], kind: 'html' };
    if (title) parsed.title = title;
    return parsed;
  }
  return { fieldErrors: {}, messages: [text.slice(0, 200)], kind: 'text' };
}

const IDEMPOTENCY_WORDS = /idempot/i;
/** Response header (lower-case) by which the bank says an answer is the replay of a key's first answer. */
export const IDEMPOTENT_REPLAYED_HEADER = 'idempotent-replayed';

function describeBody(parsed: ParsedBody, contentType: string | undefined, length: number): string {
  switch (parsed.kind) {
    case 'empty':
      return 'empty body';
    case 'html':
      return `HTML body (${contentType ?? 'no content type'}, ${length} bytes)${parsed.title ? `: ${parsed.title}` : ''}`;
    case 'invalid-json':
      return `invalid JSON body (${length} bytes)`;
    default:
      return '';
  }
}

/**
 * THE factory: turns any non-success HTTP response into the right `ServiceError` subclass. Never throws.
 */
export function errorFromResponse(response: ErrorResponse): ServiceError {
  const { status, method, path } = response;
  const contentType = header(response.headers, 'content-type');
  const parsed = parseErrorBody(response.body, contentType);
  const details: ServiceErrorDetails = {
    method,
    path,
    status,
    fieldErrors: parsed.fieldErrors,
    messages: parsed.messages,
    raw: response.body,
    mayHaveReachedServer: true,
    replayed: header(response.headers, IDEMPOTENT_REPLAYED_HEADER)?.trim().toLowerCase() === 'true',
  };
  if (parsed.title !== undefined) details.title = parsed.title;
  if (parsed.traceId !== undefined) details.traceId = parsed.traceId;
  if (parsed.serviceCode !== undefined) details.serviceCode = parsed.serviceCode;
  if (parsed.type !== undefined) details.type = parsed.type;
  if (contentType !== undefined) details.contentType = contentType;

  const summary = [
    parsed.kind === 'json' ? parsed.title : undefined,
    parsed.serviceCode,
    parsed.messages.length > 0 ? parsed.messages.join('; ') : undefined,
    describeBody(parsed, contentType, response.body.length) || undefined,
  ]
    .filter((x): x is string => x !== undefined && x !== '')
    .join(': ');
  const message = `${method} ${path} failed with HTTP ${status}${summary ? `: ${summary}` : ''}${
    parsed.traceId ? ` (traceId ${parsed.traceId})` : ''
  }`;

  const aboutIdempotency =
    IDEMPOTENCY_WORDS.test(parsed.serviceCode ?? '') ||
    IDEMPOTENCY_WORDS.test(parsed.title ?? '') ||
    IDEMPOTENCY_WORDS.test(parsed.type ?? '') ||
    parsed.messages.some((m) => IDEMPOTENCY_WORDS.test(m)) ||
    Object.keys(parsed.fieldErrors).some((k) => IDEMPOTENCY_WORDS.test(k));

  if (status === 422 || ((status === 409 || status === 400) && aboutIdempotency)) {
    return new IdempotencyError('SERVICE_IDEMPOTENCY', message, details);
  }
  if (status === 400) return new ValidationError('SERVICE_VALIDATION', message, details);
  if (status === 401 || status === 403) return new AuthenticationError('SERVICE_AUTHENTICATION', message, details);
  if (status === 404) return new NotFoundError('SERVICE_NOT_FOUND', message, details);
  if (status === 409) return new ConflictError('SERVICE_CONFLICT', message, details);
  if (status === 429) {
    const retryAfterMs = parseRetryAfter(header(response.headers, 'retry-after'), response.now ?? Date.now());
    return new RateLimitedError(message, retryAfterMs === undefined ? details : { ...details, retryAfterMs });
  }
  if (status >= 500) return new ServerError('SERVICE_SERVER_ERROR', message, details);
  return new ServiceError('SERVICE_ERROR', message, details);
}

// ---------------------------------------------------------------------------------------------------------------
// Failures without a response

/**
 * Failures of the connector (the connection being made) carry this mark (`markConnectFailure`, set by the transport):
 * whatever their code, no byte of the request was written.
 */
const CONNECT_FAILURES = new WeakSet<object>();

/** Marks an error thrown while the connection was being made (src/bank/http.ts wraps undici's connector). */
export function markConnectFailure(err: unknown): void {
  if (err !== null && typeof err === 'object') CONNECT_FAILURES.add(err);
}

function isConnectFailure(err: unknown): boolean {
  if (err === null || typeof err !== 'object') return false;
  if (CONNECT_FAILURES.has(err)) return true;
  const cause = (err as { cause?: unknown }).cause;
  return cause !== undefined && cause !== err && isConnectFailure(cause);
}

function unreachableReason(code: string | undefined): UnreachableReason {
  if (code === 'ECONNREFUSED') return 'refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'dns';
  if (code?.startsWith('ERR_TLS') || code?.startsWith('ERR_SSL') || (code !== undefined && TLS_CERT_CODES.has(code)))
    return 'tls';
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH' || code === 'EADDRNOTAVAIL') return 'network';
  return 'connect';
}

/** Certificate verification codes (OpenSSL): raised during the handshake. */
const TLS_CERT_CODES = new Set([
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
]);

/** Error codes (Node and undici) that can only come from making the connection: nothing reached the server. */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'ERR_SSL_WRONG_VERSION_NUMBER',
]);

function errorCode(err: unknown): string | undefined {
  if (err === null || typeof err !== 'object') return undefined;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  // Happy-eyeballs connects (autoSelectFamily) fail with an AggregateError of the attempts.
  if (err instanceof AggregateError) return err.errors.map(errorCode).find((c) => c !== undefined);
  const cause = (err as { cause?: unknown }).cause;
  return cause !== undefined && cause !== err ? errorCode(cause) : undefined;
}

function bytesWritten(err: unknown): number | undefined {
  const socket = (err as { socket?: { bytesWritten?: unknown } } | null)?.socket;
  return typeof socket?.bytesWritten === 'number' ? socket.bytesWritten : undefined;
}

/**
 * Classifies a failure that left no response (thrown by undici) into `ServiceTimeoutError` or
 * `ServiceConnectionError`, deciding `mayHaveReachedServer`. Anything already a `ServiceError` is returned as is.
 */
export function errorFromNetworkFailure(err: unknown, request: RequestDescription): ServiceError {
  if (err instanceof ServiceError) return err;
  const code = errorCode(err);
  const text = err instanceof Error ? err.message : String(err);
  const where = `${request.method} ${request.path}`;
  const base = { method: request.method, path: request.path, cause: err };
  // Worded once, in the catalogue: the log reads the English, a row's result the reader's language.
  const said = (key: MessageKey, reason?: string) => {
    const detail = msg(key, { where, reason });
    return { message: render('en', detail), detail };
  };
  switch (code) {
    case 'UND_ERR_CONNECT_TIMEOUT': {
      const { message, detail } = said('BANK_NETWORK.connectTimeout', text);
      return new ServiceTimeoutError(message, { ...base, detail, phase: 'connect' });
    }
    case 'UND_ERR_HEADERS_TIMEOUT': {
      const { message, detail } = said('BANK_NETWORK.headersTimeout');
      return new ServiceTimeoutError(message, { ...base, detail, phase: 'headers' });
    }
    case 'UND_ERR_BODY_TIMEOUT': {
      const { message, detail } = said('BANK_NETWORK.bodyTimeout');
      return new ServiceTimeoutError(message, { ...base, detail, phase: 'body' });
    }
  }
  if (isConnectFailure(err) || (code !== undefined && NOT_SENT_CODES.has(code))) {
    const reason = unreachableReason(code);
    const { message, detail } = said(reason === 'tls' ? 'BANK_NETWORK.tls' : 'BANK_NETWORK.unreachable', code ?? text);
    return new ServiceUnreachableError(message, { ...base, detail, reason });
  }
  // Reset or closed: the request may have been written and acted on, unless the socket says it wrote nothing.
  const written = bytesWritten(err);
  const reached = written === undefined || written > 0;
  const { message, detail } = said(reached ? 'BANK_NETWORK.dropped' : 'BANK_NETWORK.droppedNotSent', code ?? text);
  return new ServiceConnectionError(message, { ...base, detail, mayHaveReachedServer: reached });
}
