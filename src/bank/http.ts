/**
 * The transport under every resource: one undici `Pool` kept alive to the bank's origin, JSON in and out, the
 * retry loop, and streaming of files.
 *
 * What must hold:
 * - Every request carries the API key header. The IdempotencyKey header is sent only when the caller gave a key
 *   (and the profile sends one on that operation: `idempotencyKeyFor`), and every retry of the request sends that
 *   same key: the transport never makes one up.
 * - Paths and header names come from the provider profile (src/formats/profiles.ts) with the user's overrides.
 * - Whether to retry is decided only by `decideRetry` (src/bank/retry-policy.ts).
 * - Error statuses become errors only through `errorFromResponse`, thrown failures only through
 *   `errorFromNetworkFailure` (src/bank/errors.ts). Failures while the connection is being made are marked by the
 *   connector (`markingConnectFailures`): that is how "certainly nothing was sent" is known, not by error codes alone.
 * - A streamed file appears under its final name only when complete (temp name in the same folder, then rename).
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { rootCertificates } from 'node:tls';
import type { buildConnector as BuildConnector, Dispatcher, Pool as UndiciPool } from 'undici';
import type { z } from 'zod';
import { type BankOperation, type BankProfile, fillPath, type KeyedOperation } from '../formats/profiles.js';
import { registerSecret } from '../log.js';
import { AnswerSchema } from './answer-readers.js';
import {
  errorFromNetworkFailure,
  errorFromResponse,
  IdempotencyError,
  markConnectFailure,
  type RequestDescription,
  type ServiceError,
  UnexpectedResponseError,
} from './errors.js';
import type { ResolvedBankClientOptions } from './options.js';
import { decideRetry, type RetrySettings } from './retry-policy.js';
import type { StreamedFile } from './types.js';
import { buildConnector, Pool } from './undici-lean.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface TransportRequest {
  method: HttpMethod;
  /** Path of the operation, starting with '/', dynamic segments already encoded (build it with `path()`). */
  path: string;
  query?: Record<string, string | number | undefined>;
  /** Sent as JSON. */
  body?: unknown;
  /** The caller's key; absent means no IdempotencyKey header. */
  idempotencyKey?: string | undefined;
  /** Send the account id header (webhook operations; a profile may send it on every request). */
  withAccountId?: boolean;
  signal?: AbortSignal | undefined;
  /** The caller's `RequestOptions.task`, handed to `beforeSend` as is (the request queue's task handle). */
  task?: object | undefined;
}

/** A success response, body read as text. */
export interface TransportResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  contentType: string | undefined;
  body: string;
}

const USER_AGENT = 'remessa/0.1 (+undici)';

export class HttpTransport {
  readonly #options: ResolvedBankClientOptions;
  readonly #pool: UndiciPool;
  readonly #prefix: string;
  readonly #retry: RetrySettings;
  /** The API key sent: the options' until `useApiKey` (a key rotated while the daemon runs). */
  #apiKey: string;
  /** The headers every request carries (`#headers`), for the API key in `#apiKey`. */
  #everyRequest: string[];

  constructor(options: ResolvedBankClientOptions) {
    this.#options = options;
    this.#apiKey = options.apiKey;
    this.#everyRequest = this.#makeEveryRequest();
    registerSecret(options.apiKey);
    if (typeof options.tlsKey === 'string') registerSecret(options.tlsKey);
    if (options.tlsPassphrase !== undefined) registerSecret(options.tlsPassphrase);
    const url = new URL(options.baseUrl);
    this.#prefix = url.pathname.replace(/\/+$/, '');
    const connect: Record<string, unknown> = { timeout: options.connectTimeoutMs };
    if (options.tlsCert !== undefined) connect.cert = options.tlsCert;
    if (options.tlsKey !== undefined) connect.key = options.tlsKey;
    if (options.tlsPassphrase !== undefined) connect.passphrase = options.tlsPassphrase;
    if (options.tlsCa !== undefined) {
      // `ca` replaces Node's roots; the setting is an EXTRA CA, so keep the built-in ones too.
      connect.ca = [...rootCertificates, ...(Array.isArray(options.tlsCa) ? options.tlsCa : [options.tlsCa])];
    }
    this.#pool = new Pool(url.origin, {
      connections: options.connections,
      keepAliveTimeout: options.keepAliveTimeoutMs,
      headersTimeout: options.headersTimeoutMs,
      bodyTimeout: options.bodyTimeoutMs,
      connect: markingConnectFailures(buildConnector(connect)),
    });
    this.#retry = {
      maxAttempts: options.maxAttempts,
      baseDelayMs: options.baseDelayMs,
      maxDelayMs: options.maxDelayMs,
      maxRetryAfterMs: options.maxRetryAfterMs,
    };
  }

  /** Sends `apiKey` from the next request on (requests already sent keep theirs). Registered as a secret first. */
  useApiKey(apiKey: string): void {
    if (apiKey.length === 0) throw new TypeError('useApiKey: expected a non-empty string, got nothing');
    registerSecret(apiKey);
    this.#apiKey = apiKey;
    this.#everyRequest = this.#makeEveryRequest();
  }

  /** Sends the request (with retries) and returns the success response with its body as text. */
  send(req: TransportRequest): Promise<TransportResponse> {
    return this.#execute(req, 'application/json', async (res, contentType) => ({
      status: res.statusCode,
      headers: res.headers,
      contentType,
      body: await res.body.text(),
    }));
  }

  /** Sends the request and parses the JSON body with `schema`; a mismatch is an UnexpectedResponseError. */
  async json<T>(req: TransportRequest, schema: z.ZodType<T> | AnswerSchema<T>): Promise<T> {
    const res = await this.send(req);
    return parseBody(res, schema, describe(req.method, this.#pathWithQuery(req)));
  }

  /**
   * Streams a success response body to `filePath` (temp name in the same folder, then rename), never holding it
   * whole in memory. A failed or partial download leaves no file behind. A content type other than `accept` is an
   * UnexpectedResponseError (nothing written).
   */
  toFile(req: TransportRequest, filePath: string, accept: string): Promise<StreamedFile> {
    return this.#execute(req, accept, async (res, contentType) => {
      if (!contentType?.toLowerCase().startsWith(accept)) {
        const text = await res.body.text();
        const request = describe(req.method, this.#pathWithQuery(req));
        throw new UnexpectedResponseError(
          `${request.method} ${request.path}: expected content type ${accept}, got ${contentType ?? 'none'}`,
          { ...request, status: res.statusCode, raw: text, fieldPath: 'content-type' },
        );
      }
      const temp = `${filePath}.tmp-${randomBytes(6).toString('hex')}`;
      let bytes = 0;
      const counter = new Transform({
        transform(chunk: Buffer, _enc, cb) {
          bytes += chunk.length;
          cb(null, chunk);
        },
      });
      // Our side's failures (folder missing, disk full) are told apart from the bank's where they happen, since a
      // socket's error has the same `syscall` as a file's. The pipeline hands the body's error (the bank's) to the
      // file stream too: only the file's own is marked.
      let bodyError: unknown;
      res.body.once('error', (err) => {
        bodyError = err;
      });
      const file = createWriteStream(temp, { flags: 'wx' });
      file.once('error', (err) => {
        if (err !== bodyError) markLocalFileError(err);
      });
      try {
        await pipeline(res.body, counter, file);
        await rename(temp, filePath).catch((err: unknown) => {
          markLocalFileError(err);
          throw err;
        });
      } catch (err) {
        await rm(temp, { force: true });
        throw err;
      }
      return { filePath, bytes, contentType: contentType ?? 'application/octet-stream' };
    });
  }

  close(): Promise<void> {
    return this.#pool.close();
  }

  /** The provider profile in use, overrides applied. */
  get profile(): BankProfile {
    return this.#options.profile;
  }

  /** The path of `operation` in the profile, `{...}` segments filled in order with encoded `values`. */
  path(operation: BankOperation, ...values: string[]): string {
    return fillPath(this.#options.profile.paths[operation], ...values);
  }

  /** The key to send on `operation`: the caller's, or undefined where the profile's clients send none. */
  idempotencyKeyFor(operation: KeyedOperation, key: string | undefined): string | undefined {
    return this.#options.profile.keyless.has(operation) ? undefined : key;
  }

  /**
   * One GET, no retry, never thrown on an HTTP status: for `remessa doctor`. `headers` replace the profile's
   * authentication headers (to try another header name). Connection failures are returned as `error`.
   */
  async probe(
    path: string,
    options: { headers?: Record<string, string>; signal?: AbortSignal } = {},
  ): Promise<{ status?: number; contentType?: string; body?: string; error?: string }> {
    const headers: Record<string, string> = options.headers ?? this.#authHeaders();
    try {
      const res = await this.#pool.request({
        method: 'GET',
        path: `${this.#prefix}${path}`,
        headers: { ...headers, accept: 'application/json', 'user-agent': USER_AGENT },
        signal: options.signal,
      });
      const body = await res.body.text();
      const contentType = firstHeader(res.headers['content-type']);
      return { status: res.statusCode, body: body.slice(0, 2000), ...(contentType ? { contentType } : {}) };
    } catch (err) {
      const failure = errorFromNetworkFailure(err, describe('GET', path));
      return { error: `${failure.code}: ${failure.message}`.replaceAll(this.#apiKey, '***') };
    }
  }

  /** The API key header, and the account id header where the profile sends it on every request. */
  #authHeaders(): Record<string, string> {
    const o = this.#options;
    const headers: Record<string, string> = { [o.apiKeyHeader]: this.#apiKey };
    if (o.profile.accountIdOn === 'all' && o.accountId !== undefined) headers[o.accountIdHeader] = o.accountId;
    return headers;
  }

  #pathWithQuery(req: TransportRequest): string {
    let path = `${this.#prefix}${req.path}`;
    if (req.query) {
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(req.query)) if (v !== undefined) params.set(k, String(v));
      const qs = params.toString();
      if (qs) path += `?${qs}`;
    }
    return path;
  }

  /**
   * A request's headers as undici's flat list (`[name, value, ...]`): the ones every request carries, made once
   * (`#everyRequest`), then this request's own. One array copied a request, instead of two objects spread.
   */
  #headers(req: TransportRequest, accept: string): string[] {
    const o = this.#options;
    const headers = this.#everyRequest.slice();
    headers.push('accept', accept);
    if (req.body !== undefined) headers.push('content-type', 'application/json');
    if (req.idempotencyKey !== undefined) headers.push(o.idempotencyKeyHeader, req.idempotencyKey);
    if (req.withAccountId) {
      if (o.accountId === undefined)
        throw new TypeError('BankClientOptions.accountId: required for webhook operations, got nothing');
      // Sent once: a profile that sends it on every request has it in `#everyRequest` already.
      if (o.profile.accountIdOn !== 'all') headers.push(o.accountIdHeader, o.accountId);
    }
    return headers;
  }

  /** The authentication headers and the user agent, as a flat list: made again when the API key changes. */
  #makeEveryRequest(): string[] {
    const list: string[] = [];
    for (const [name, value] of Object.entries(this.#authHeaders())) list.push(name, value);
    list.push('user-agent', USER_AGENT);
    return list;
  }

  async #execute<T>(
    req: TransportRequest,
    accept: string,
    onSuccess: (res: Dispatcher.ResponseData, contentType: string | undefined) => Promise<T>,
  ): Promise<T> {
    const path = this.#pathWithQuery(req);
    const description = describe(req.method, path);
    const headers = this.#headers(req, accept);
    const body = req.body === undefined ? undefined : JSON.stringify(req.body);
    const log = this.#options.logger;
    for (let attempt = 1; ; attempt++) {
      throwIfAborted(req.signal);
      // The rate limiter's gate: undefined means "start now", in this same synchronous run; a promise means wait, then
      // ask again (src/queue/request-queue.ts).
      const gate = { method: req.method, path, signal: req.signal, task: req.task };
      for (let wait = this.#options.beforeSend?.(gate); wait; wait = this.#options.beforeSend?.(gate)) await wait;
      const started = performance.now();
      let failure: ServiceError;
      let response: { status: number; headers: Record<string, string | string[] | undefined> } | undefined;
      try {
        const res = await this.#pool.request({
          method: req.method,
          path,
          headers,
          body,
          signal: req.signal,
        });
        const contentType = firstHeader(res.headers['content-type']);
        if (res.statusCode >= 200 && res.statusCode < 300) {
          const result = await onSuccess(res, contentType);
          this.#options.onAttempt?.({
            method: req.method,
            path,
            status: res.statusCode,
            durationMs: performance.now() - started,
          });
          if (log?.isLevelEnabled('debug'))
            log.debug(
              {
                method: req.method,
                path,
                status: res.statusCode,
                attempt,
                durationMs: Math.round(performance.now() - started),
              },
              'bank request',
            );
          return result;
        }
        const text = await res.body.text();
        response = { status: res.statusCode, headers: res.headers };
        failure = errorFromResponse({ ...description, status: res.statusCode, headers: res.headers, body: text });
      } catch (err) {
        throwIfAborted(req.signal);
        if (err instanceof UnexpectedResponseError || isLocalFileError(err)) throw err;
        failure = errorFromNetworkFailure(err, description);
      }
      this.#options.onAttempt?.({
        method: req.method,
        path,
        status: response?.status,
        errorCode: failure.code,
        durationMs: performance.now() - started,
      });
      const decision = decideRetry({
        attempt,
        method: req.method,
        hasIdempotencyKey: req.idempotencyKey !== undefined,
        ...(response ? { response, keyInUse: failure instanceof IdempotencyError } : { error: failure }),
        now: Date.now(),
        random: this.#options.random,
        settings: this.#retry,
      });
      if (!decision.retry) {
        if (log?.isLevelEnabled('debug'))
          log.debug(
            { method: req.method, path, status: failure.status, code: failure.code, attempt, reason: decision.reason },
            'bank request failed',
          );
        throw failure;
      }
      log?.warn(
        { method: req.method, path, status: failure.status, code: failure.code, attempt, delayMs: decision.delayMs },
        'bank request failed; retrying',
      );
      await this.#options.sleep(decision.delayMs, req.signal);
    }
  }
}

/**
 * undici's connector, with every failure to make the connection (refused, DNS, TLS handshake, connect timeout) marked
 * as such: no byte of the request can have been written then, whatever the error's code (src/bank/errors.ts).
 */
function markingConnectFailures(connector: BuildConnector.connector): BuildConnector.connector {
  return (opts, callback) =>
    connector(opts, (...args) => {
      if (args[0]) markConnectFailure(args[0]);
      callback(...args);
    });
}

/**
 * The failures of writing a streamed file on our side (folder missing, disk full), marked where they happen
 * (`toFile`): not the bank's, never retried. Not told by the error's `syscall`: a socket reset while the request was
 * being written is `write ECONNRESET` too, and it is the bank's connection (a resend or a lookup, as any reset).
 */
const LOCAL_FILE_ERRORS = new WeakSet<object>();

function markLocalFileError(err: unknown): void {
  if (typeof err === 'object' && err !== null) LOCAL_FILE_ERRORS.add(err);
}

/** Whether `err` is a failure of our side's file (see LOCAL_FILE_ERRORS). */
export function isLocalFileError(err: unknown): boolean {
  return typeof err === 'object' && err !== null && LOCAL_FILE_ERRORS.has(err);
}

function describe(method: string, path: string): RequestDescription {
  return { method, path };
}

function firstHeader(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/**
 * Parses a JSON success body with `schema`; every failure names the field path (UnexpectedResponseError). An
 * `AnswerSchema` reads the body's usual shape without zod and sends any other to its schema (./answer-readers.ts).
 */
export function parseBody<T>(
  res: TransportResponse,
  answer: z.ZodType<T> | AnswerSchema<T>,
  request: RequestDescription,
): T {
  const where = `${request.method} ${request.path}`;
  let data: unknown;
  try {
    data = isBlank(res.body) ? undefined : JSON.parse(res.body);
  } catch (err) {
    throw new UnexpectedResponseError(`${where}: expected a JSON body, got invalid JSON (${res.body.length} bytes)`, {
      ...request,
      status: res.status,
      raw: res.body,
      fieldPath: '$',
      cause: err,
      ...(res.contentType ? { contentType: res.contentType } : {}),
    });
  }
  let schema: z.ZodType<T>;
  if (answer instanceof AnswerSchema) {
    const usual = answer.read(data);
    if (usual !== undefined) return usual;
    schema = answer.schema;
  } else schema = answer;
  const parsed = schema.safeParse(data);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const fieldPath = issue && issue.path.length > 0 ? `$.${issue.path.map(String).join('.')}` : '$';
  const found = issue ? describeFound(data, issue.path) : 'nothing';
  throw new UnexpectedResponseError(
    `${where}: unexpected response body at ${fieldPath}: ${issue?.message ?? 'invalid'} (got ${found})`,
    {
      ...request,
      status: res.status,
      raw: res.body,
      fieldPath,
      cause: parsed.error,
      ...(res.contentType ? { contentType: res.contentType } : {}),
    },
  );
}

/** `text.trim() === ''`, without trimming the usual body (a JSON object or array, which starts with `{` or `[`). */
function isBlank(text: string): boolean {
  const first = text.charCodeAt(0);
  if (first === 0x7b || first === 0x5b) return false;
  return text.trim() === '';
}

function describeFound(data: unknown, path: readonly PropertyKey[]): string {
  let cur: unknown = data;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return 'nothing';
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  if (cur === undefined) return 'nothing';
  if (cur === null) return 'null';
  if (typeof cur === 'object') return Array.isArray(cur) ? 'an array' : 'an object';
  const text = JSON.stringify(cur);
  return `${typeof cur} ${text.length > 60 ? `${text.slice(0, 60)}...` : text}`;
}
