/**
 * Options of the bank client (`new BankClient(options)`).
 *
 * The dialect (header names, every path, which operations carry a key) is a provider profile (src/formats/profiles.ts),
 * with each header and path overridable one by one, because a real provider differs from the spec (docs/providers.md).
 * Everything else has a default that suits a batch daemon talking to one bank: few connections kept alive, bounded
 * timeouts, a handful of retries.
 */

import {
  BANK_PROFILE_DEFINITIONS,
  type BankOperation,
  type BankProfile,
  type BankProfileName,
  resolveBankProfile,
} from '../formats/profiles.js';
import type { Logger } from '../log.js';

export interface BankClientOptions {
  /** Base address of the service, e.g. `https://api.bank.example` or the sandbox's `http://127.0.0.1:4010`. Paths of the spec are appended to it (a path prefix in it is kept). */
  baseUrl: string;
  /** The API key sent on every request (header `apiKeyHeader`). Registered as a secret for the logs at once. */
  apiKey: string;
  /** The bank account number sent on webhook operations (header `accountIdHeader`). Required only for webhooks. */
  accountId?: string;
  /** The provider's dialect (src/formats/profiles.ts). @defaultValue 'interface' */
  profile?: BankProfileName;
  /** Paths that differ from the profile's, one by one (`{...}` segments are filled in order). @defaultValue {} */
  paths?: Partial<Record<BankOperation, string>>;
  /** Header that carries the API key. @defaultValue the profile's ('x-service-api-key' for interface) */
  apiKeyHeader?: string;
  /** Header that carries the account id. @defaultValue the profile's ('x-service-account-id' for interface) */
  accountIdHeader?: string;
  /** Header that carries the caller's idempotency key. @defaultValue the profile's ('IdempotencyKey') */
  idempotencyKeyHeader?: string;
  /**
   * Whether the bank answers a Pix QR payment sent again with the same IdempotencyKey with the first payment: then a
   * payment of unknown outcome that the lookup by endToEndId cannot find out about is resent; else it is left
   * `uncertain` (src/formats/profiles.ts). @defaultValue the profile's (true for interface, false for delbank)
   */
  pixPaymentKeyReplayed?: boolean;
  /** Milliseconds to establish a TCP (and TLS) connection. @defaultValue 10000 */
  connectTimeoutMs?: number;
  /** Milliseconds between sending the request and receiving the complete response headers. @defaultValue 30000 */
  headersTimeoutMs?: number;
  /** Milliseconds of silence allowed between two chunks of the response body. @defaultValue 30000 */
  bodyTimeoutMs?: number;
  /** Milliseconds an idle kept-alive connection stays open (the server's Keep-Alive hint wins when lower). @defaultValue 4000 */
  keepAliveTimeoutMs?: number;
  /** Client certificate (PEM) for mutual TLS. Needs `tlsKey`. */
  tlsCert?: string | Buffer;
  /** Private key (PEM) of `tlsCert`. Registered as a secret when given as a string. */
  tlsKey?: string | Buffer;
  /** Extra CA certificate(s) (PEM) trusted in addition to Node's built-in roots (e.g. the bank's private CA). */
  tlsCa?: string | Buffer | Array<string | Buffer>;
  /** Passphrase of an encrypted `tlsKey`. Registered as a secret. @defaultValue none (the key is not encrypted) */
  tlsPassphrase?: string;
  /** Maximum attempts of one request, the first included (1 disables retries). @defaultValue 4 */
  maxAttempts?: number;
  /** Base of the exponential backoff, in milliseconds (full jitter: a delay is random in [0, min(max, base * 2^n))). @defaultValue 500 */
  baseDelayMs?: number;
  /** Upper bound of one backoff delay, in milliseconds. @defaultValue 10000 */
  maxDelayMs?: number;
  /** Upper bound of a wait asked by Retry-After, in milliseconds; a longer wait is cut to this. @defaultValue 60000 */
  maxRetryAfterMs?: number;
  /** Maximum simultaneous connections to the bank's origin. @defaultValue 8 */
  connections?: number;
  /**
   * Called right before each HTTP request leaves (every attempt). Undefined: the request is handed to the connection
   * pool in the same synchronous run. A promise: the transport waits for it and calls again. The request queue's rate
   * limiter (`RequestQueue.beforeSend`) plugs in here, so that what it counts is the moment requests start; it
   * knows whose request it is by the `task` the caller passed in the request's options. A rejection is thrown as is:
   * nothing was sent.
   * @defaultValue none
   */
  beforeSend?: (request: {
    method: string;
    path: string;
    signal?: AbortSignal | undefined;
    /** The caller's `RequestOptions.task`: which task of the queue the request belongs to. */
    task?: object | undefined;
  }) => Promise<void> | undefined;
  /** Where attempts, retries and failures are logged (debug/warn). Secrets are scrubbed by src/log.ts. @defaultValue silent */
  logger?: Logger;
  /**
   * Source of randomness for backoff jitter, in [0, 1). Tests pass a fixed one.
   * @defaultValue Math.random
   */
  random?: () => number;
  /**
   * How the client waits between attempts. Tests may pass a fast one.
   * @defaultValue a timer honouring the request's AbortSignal
   */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Told of every finished attempt (metrics): method, path, status or error code, duration. @defaultValue none */
  onAttempt?: (attempt: AttemptObservation) => void;
}

/** One finished attempt of a request, for an observer (src/metrics.ts). */
export interface AttemptObservation {
  method: string;
  path: string;
  /** HTTP status, or undefined when no response came. */
  status: number | undefined;
  /** The error's stable code when the attempt failed. */
  errorCode?: string | undefined;
  durationMs: number;
}

export const DEFAULT_API_KEY_HEADER = BANK_PROFILE_DEFINITIONS.interface.headers.apiKey;
export const DEFAULT_ACCOUNT_ID_HEADER = BANK_PROFILE_DEFINITIONS.interface.headers.accountId;
export const DEFAULT_IDEMPOTENCY_KEY_HEADER = BANK_PROFILE_DEFINITIONS.interface.headers.idempotencyKey;
export const DEFAULT_PIX_PAYMENT_PATH = BANK_PROFILE_DEFINITIONS.interface.paths.pixPayment;

/** The options with every default filled in, as the transport uses them. */
export interface ResolvedBankClientOptions
  extends Required<
    Omit<
      BankClientOptions,
      | 'accountId'
      | 'tlsCert'
      | 'tlsKey'
      | 'tlsCa'
      | 'tlsPassphrase'
      | 'logger'
      | 'profile'
      | 'paths'
      | 'pixPaymentKeyReplayed'
      | 'onAttempt'
      | 'beforeSend'
    >
  > {
  onAttempt: ((attempt: AttemptObservation) => void) | undefined;
  /** The profile with every override applied: the headers above are its headers. */
  profile: BankProfile;
  accountId: string | undefined;
  tlsCert: string | Buffer | undefined;
  tlsKey: string | Buffer | undefined;
  tlsCa: string | Buffer | Array<string | Buffer> | undefined;
  tlsPassphrase: string | undefined;
  logger: Logger | undefined;
  beforeSend: BankClientOptions['beforeSend'];
}

function positiveInt(name: string, value: number | undefined, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < min) {
    throw new TypeError(`BankClientOptions.${name}: expected an integer >= ${min}, got ${String(value)}`);
  }
  return value;
}

/** Fills defaults and checks the values ("Expected X, got Y"). Throws a TypeError on a programming mistake. */
export function resolveBankClientOptions(options: BankClientOptions): ResolvedBankClientOptions {
  let url: URL;
  try {
    url = new URL(options.baseUrl);
  } catch {
    throw new TypeError(
      `BankClientOptions.baseUrl: expected an absolute http(s) URL, got ${JSON.stringify(options.baseUrl)}`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`BankClientOptions.baseUrl: expected http: or https:, got ${url.protocol}`);
  }
  if (typeof options.apiKey !== 'string' || options.apiKey.length === 0) {
    throw new TypeError('BankClientOptions.apiKey: expected a non-empty string, got nothing');
  }
  if (options.tlsCert !== undefined && options.tlsKey === undefined) {
    throw new TypeError('BankClientOptions.tlsKey: expected the private key of tlsCert, got nothing');
  }
  let profile: BankProfile;
  try {
    profile = resolveBankProfile(options.profile ?? 'interface', {
      paths: options.paths,
      pixPaymentKeyReplayed: options.pixPaymentKeyReplayed,
      headers: {
        apiKey: options.apiKeyHeader,
        accountId: options.accountIdHeader,
        idempotencyKey: options.idempotencyKeyHeader,
      },
    });
  } catch (err) {
    throw new TypeError(`BankClientOptions: ${(err as Error).message}`);
  }
  return {
    baseUrl: options.baseUrl,
    apiKey: options.apiKey,
    accountId: options.accountId,
    profile,
    apiKeyHeader: profile.headers.apiKey,
    accountIdHeader: profile.headers.accountId,
    idempotencyKeyHeader: profile.headers.idempotencyKey,
    connectTimeoutMs: positiveInt('connectTimeoutMs', options.connectTimeoutMs, 10_000),
    headersTimeoutMs: positiveInt('headersTimeoutMs', options.headersTimeoutMs, 30_000),
    bodyTimeoutMs: positiveInt('bodyTimeoutMs', options.bodyTimeoutMs, 30_000),
    keepAliveTimeoutMs: positiveInt('keepAliveTimeoutMs', options.keepAliveTimeoutMs, 4_000),
    tlsCert: options.tlsCert,
    tlsKey: options.tlsKey,
    tlsCa: options.tlsCa,
    tlsPassphrase: options.tlsPassphrase,
    maxAttempts: positiveInt('maxAttempts', options.maxAttempts, 4),
    baseDelayMs: positiveInt('baseDelayMs', options.baseDelayMs, 500, 0),
    maxDelayMs: positiveInt('maxDelayMs', options.maxDelayMs, 10_000, 0),
    maxRetryAfterMs: positiveInt('maxRetryAfterMs', options.maxRetryAfterMs, 60_000, 0),
    connections: positiveInt('connections', options.connections, 8),
    logger: options.logger,
    onAttempt: options.onAttempt,
    beforeSend: options.beforeSend,
    random: options.random ?? Math.random,
    sleep: options.sleep ?? defaultSleep,
  };
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
