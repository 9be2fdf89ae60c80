/**
 * Idempotency for every sandbox route that takes the `IdempotencyKey` header (spec section 5): bill payment, QR
 * payment initialization, QR payment, static QR creation, claim start, search and cancel.
 *
 * The record of one key (scoped per API key and per route pattern) moves through:
 *
 *   (none) --first request, key claimed--> processing --response produced--> done (status, content type, body)
 *                                              |
 *                                              +--response not cacheable (model), or the request never
 *                                                 produced a response--> (none)  [the key may be used again]
 *
 * Answers, in this order:
 * - key missing (where required) or not a GUID: 400 validation problem, nothing stored.
 * - key known with another fingerprint (method, URL or canonical JSON body differ): 422, code IDEMPOTENCY_KEY_REUSED.
 * - key known and still processing: 409, code IDEMPOTENCY_KEY_IN_USE.
 * - key known and done: the stored response byte for byte (status, content type, body) plus the header
 *   `Idempotent-Replayed: true`. The handler does not run again.
 *
 * What must hold:
 * - A key is claimed (row inserted) in one synchronous SQLite transaction before the handler runs, so two concurrent
 *   requests can never both execute; the stored body is exactly the bytes the first client was sent.
 * - A handler that commits an effect stores its answer IN THE SAME TRANSACTION (`commitAnswer`, called inside the
 *   transaction that performs the effect), as a real bank does: however the process dies, either the effect and its
 *   answer are both on disk (a keyed resend replays the first outcome) or neither is (the resend runs afresh). A
 *   handler that stored its answer this way sends exactly those bytes. Answers without an effect (refusals, searches)
 *   are stored when sent (`onSend`): losing one in a crash only lets the resend run again, which changes nothing.
 * - Records survive a restart; 'processing' rows left by a crash are dropped at start (nothing is running any more,
 *   and by the rule above a 'processing' key has no committed effect).
 *
 * The model (setting `idempotencyModel`): 'all-outcomes' (default) stores every response produced once the key was
 * claimed, errors included (Stripe's model); 'successes-only' stores only 2xx responses and frees the key otherwise,
 * so a corrected retry with the same key runs again. Faults injected before processing (src/sandbox/faults.ts) never
 * claim a key, so they are never replayed.
 *
 * Use it on a route by spreading the hooks into the route options:
 *   app.post('/path', { ...ctx.idempotency.hooks() }, handler)
 * or, where the key is optional (the QR payment), `ctx.idempotency.hooks({ required: false })`.
 */
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteShorthandOptions } from 'fastify';
import { isGuid } from '../formats/ids.js';
import { apiKeyId } from './auth.js';
import type { Clock } from './clock.js';
import type { SandboxDb } from './db.js';
import { SANDBOX_ADMIN_PREFIX } from './options.js';
import { problem, SandboxHttpError, sendHttpError, validationProblem } from './problems.js';
import type { SandboxContext } from './server.js';

/** Header carrying the key (spec section 5). HTTP header names are case-insensitive, so `idempotencyKey` matches. */
export const IDEMPOTENCY_KEY_HEADER = 'IdempotencyKey';
/** Header set on a replayed response. */
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';

export const IDEMPOTENCY_MODELS = ['all-outcomes', 'successes-only'] as const;
export type IdempotencyModel = (typeof IDEMPOTENCY_MODELS)[number];

/** Stable codes in the error bodies this module sends. */
export const IDEMPOTENCY_ERROR_CODES = {
  missing: 'IDEMPOTENCY_KEY_MISSING',
  invalid: 'IDEMPOTENCY_KEY_INVALID',
  reused: 'IDEMPOTENCY_KEY_REUSED',
  inUse: 'IDEMPOTENCY_KEY_IN_USE',
} as const;

export interface IdempotencyOptions {
  /**
   * Which responses are stored for replay.
   * @defaultValue 'all-outcomes'
   */
  model?: IdempotencyModel;
}

export interface IdempotencyRouteOptions {
  /**
   * Whether a request without the header is refused (400). When false, a request without a key simply runs
   * without idempotency; a key that is present must still be a GUID.
   * @defaultValue true
   */
  required?: boolean;
}

/** A stored response, as replayed. */
export interface StoredResponse {
  statusCode: number;
  contentType: string | null;
  body: Buffer;
}

/** The outcome of trying to claim a key. */
export type ClaimResult =
  | { kind: 'claimed' }
  | { kind: 'replay'; response: StoredResponse }
  | { kind: 'mismatch' }
  | { kind: 'in-progress' };

export interface IdempotencyKeyRef {
  /** Non-secret id of the API key. */
  scope: string;
  /** `METHOD /route/pattern`. */
  route: string;
  /** The GUID, lower-cased. */
  key: string;
}

export interface Idempotency {
  readonly model: IdempotencyModel;
  /** Claims a key or says why not (synchronous, one transaction). */
  claim(ref: IdempotencyKeyRef, fingerprint: string): ClaimResult;
  /** Stores the response of a claimed key (or frees the key when the model does not cache this status). */
  complete(ref: IdempotencyKeyRef, response: StoredResponse): void;
  /** Frees a claimed key whose request produced no response. */
  release(ref: IdempotencyKeyRef): void;
  /**
   * Stores `body` (as JSON, with `statusCode`) as the answer of the request's claimed key. Call it INSIDE the
   * transaction that commits the request's effect, so both commit together; the same bytes are then sent. A request
   * without a claimed key (optional key absent) is left alone. Returns `body`.
   */
  commitAnswer<T>(request: FastifyRequest, body: T, statusCode?: number): T;
  /** Route hooks that apply idempotency; spread them into the route options. */
  hooks(options?: IdempotencyRouteOptions): Pick<RouteShorthandOptions, 'preHandler' | 'onSend' | 'onResponse'>;
}

/** JSON with object keys sorted at every depth, so `{a,b}` and `{b,a}` hash alike. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value)) ?? 'null';
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object' && !(value instanceof Buffer)) {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value as Record<string, unknown>).sort()) {
      // defineProperty, not assignment: a key named "__proto__" must stay a key of the body (assigning it would set
      // the object's prototype and drop it, so two different bodies would share one fingerprint).
      Object.defineProperty(out, k, {
        value: sortKeys((value as Record<string, unknown>)[k]),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }
  return value;
}

/** SHA-256 over method, URL (path and query) and the canonical JSON body. */
export function requestFingerprint(method: string, url: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method.toUpperCase()} ${url}\n${canonicalJson(body ?? null)}`)
    .digest('hex');
}

interface RequestState {
  ref: IdempotencyKeyRef;
  completed: boolean;
  /** The answer stored with the effect (`commitAnswer`): these bytes are what is sent. */
  committed?: Buffer;
}

/** Content type of the JSON answers fastify sends (and `commitAnswer` stores). */
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

interface Row {
  fingerprint: string;
  state: 'processing' | 'done';
  status_code: number | null;
  content_type: string | null;
  body: Buffer | null;
}

export function createIdempotency(db: SandboxDb, clock: Clock, options: IdempotencyOptions = {}): Idempotency {
  const model: IdempotencyModel = options.model ?? 'all-outcomes';
  // Nothing runs at start-up: a 'processing' row is a request that died with the previous process.
  db.prepare(`DELETE FROM idempotency_keys WHERE state = 'processing'`).run();

  const select = db.prepare(
    'SELECT fingerprint, state, status_code, content_type, body FROM idempotency_keys WHERE scope = ? AND route = ? AND idempotency_key = ?',
  );
  const insert = db.prepare(
    `INSERT INTO idempotency_keys (scope, route, idempotency_key, fingerprint, state, created_at) VALUES (?, ?, ?, ?, 'processing', ?)`,
  );
  const finish = db.prepare(
    `UPDATE idempotency_keys SET state = 'done', status_code = ?, content_type = ?, body = ?, completed_at = ?
     WHERE scope = ? AND route = ? AND idempotency_key = ? AND state = 'processing'`,
  );
  const remove = db.prepare(
    `DELETE FROM idempotency_keys WHERE scope = ? AND route = ? AND idempotency_key = ? AND state = 'processing'`,
  );

  const claimTx = db.transaction((ref: IdempotencyKeyRef, fingerprint: string): ClaimResult => {
    const row = select.get(ref.scope, ref.route, ref.key) as Row | undefined;
    if (!row) {
      insert.run(ref.scope, ref.route, ref.key, fingerprint, clock.nowIso());
      return { kind: 'claimed' };
    }
    if (row.fingerprint !== fingerprint) return { kind: 'mismatch' };
    if (row.state === 'processing') return { kind: 'in-progress' };
    return {
      kind: 'replay',
      response: {
        statusCode: row.status_code ?? 200,
        contentType: row.content_type,
        body: row.body ?? Buffer.alloc(0),
      },
    };
  });

  const states = new WeakMap<FastifyRequest, RequestState>();

  const api: Idempotency = {
    model,
    claim: (ref, fingerprint) => claimTx(ref, fingerprint),
    complete(ref, response) {
      const cacheable = model === 'all-outcomes' || (response.statusCode >= 200 && response.statusCode < 300);
      if (cacheable) {
        finish.run(
          response.statusCode,
          response.contentType,
          response.body,
          clock.nowIso(),
          ref.scope,
          ref.route,
          ref.key,
        );
      } else {
        remove.run(ref.scope, ref.route, ref.key);
      }
    },
    release(ref) {
      remove.run(ref.scope, ref.route, ref.key);
    },
    commitAnswer(request, body, statusCode = 200) {
      const state = states.get(request);
      if (!state || state.completed) return body;
      if (!db.inTransaction) {
        // A bug in a route: the answer would not commit with the effect. Never silently store it apart.
        throw new Error('commitAnswer must be called inside the transaction that commits the effect');
      }
      const bytes = Buffer.from(JSON.stringify(body) ?? 'null', 'utf8');
      api.complete(state.ref, { statusCode, contentType: JSON_CONTENT_TYPE, body: bytes });
      state.completed = true;
      state.committed = bytes;
      return body;
    },
    hooks(routeOptions = {}) {
      const required = routeOptions.required ?? true;
      const preHandler = async (request: FastifyRequest, reply: FastifyReply) => {
        const raw = request.headers[IDEMPOTENCY_KEY_HEADER.toLowerCase()];
        const value = (Array.isArray(raw) ? raw[0] : raw)?.trim();
        if (!value) {
          if (!required) return;
          return sendHttpError(
            reply,
            keyError(IDEMPOTENCY_ERROR_CODES.missing, [
              `The ${IDEMPOTENCY_KEY_HEADER} header is required: expected a GUID, new for each request, got nothing.`,
            ]),
          );
        }
        if (!isGuid(value)) {
          return sendHttpError(
            reply,
            keyError(IDEMPOTENCY_ERROR_CODES.invalid, [
              `Expected a GUID such as 3f2b8c1e-9d4a-4f6b-8e2a-1c5d7e9f0a1b, got ${JSON.stringify(value.slice(0, 64))}.`,
            ]),
          );
        }
        const ref: IdempotencyKeyRef = {
          scope: request.sandboxAuth?.keyId ?? apiKeyId(String(request.headers['x-service-api-key'] ?? '')),
          route: `${request.method} ${request.routeOptions.url ?? request.url.split('?')[0]}`,
          key: value.toLowerCase(),
        };
        const result = api.claim(ref, requestFingerprint(request.method, request.url, request.body));
        switch (result.kind) {
          case 'claimed':
            states.set(request, { ref, completed: false });
            return;
          case 'mismatch':
            return sendHttpError(
              reply,
              codedProblem(
                422,
                'Idempotency key reused',
                IDEMPOTENCY_ERROR_CODES.reused,
                `The ${IDEMPOTENCY_KEY_HEADER} ${ref.key} was already used on this route with a different request; expected the same body and URL as the first request, or a new key.`,
              ),
            );
          case 'in-progress':
            return sendHttpError(
              reply,
              codedProblem(
                409,
                'Request in progress',
                IDEMPOTENCY_ERROR_CODES.inUse,
                `A request with ${IDEMPOTENCY_KEY_HEADER} ${ref.key} is still being processed; retry after it finishes.`,
              ),
            );
          case 'replay': {
            const stored = result.response;
            reply.code(stored.statusCode).header(IDEMPOTENT_REPLAYED_HEADER, 'true');
            if (stored.contentType) reply.header('content-type', stored.contentType);
            return reply.send(stored.body);
          }
        }
      };

      const onSend = async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
        const state = states.get(request);
        if (state?.committed) {
          // Stored with the effect: send exactly the bytes a replay will send.
          reply.header('content-type', JSON_CONTENT_TYPE);
          return state.committed;
        }
        if (!state || state.completed) return payload;
        state.completed = true;
        let body: Buffer | undefined;
        if (typeof payload === 'string') body = Buffer.from(payload, 'utf8');
        else if (Buffer.isBuffer(payload)) body = payload;
        else if (payload === null || payload === undefined) body = Buffer.alloc(0);
        if (body === undefined) {
          // A streamed body cannot be stored; free the key rather than replay something else.
          api.release(state.ref);
          return payload;
        }
        const contentType = reply.getHeader('content-type');
        api.complete(state.ref, {
          statusCode: reply.statusCode,
          contentType: contentType === undefined ? null : String(contentType),
          body,
        });
        return payload;
      };

      const onResponse = async (request: FastifyRequest) => {
        const state = states.get(request);
        if (state && !state.completed) {
          state.completed = true;
          api.release(state.ref);
        }
      };

      return { preHandler, onSend, onResponse };
    },
  };
  return api;
}

function keyError(code: string, messages: string[]): SandboxHttpError {
  return new SandboxHttpError(400, { ...validationProblem({ [IDEMPOTENCY_KEY_HEADER]: messages }), code });
}

function codedProblem(status: number, title: string, code: string, detail: string): SandboxHttpError {
  return new SandboxHttpError(status, { ...problem(status, title, detail), code });
}

const perContext = new WeakMap<object, Idempotency>();

/**
 * The idempotency store of a sandbox, created on first use (per context, so per database). Every area uses this one:
 * `app.post(path, { ...idempotencyFor(ctx).hooks() }, handler)`.
 */
export function idempotencyFor(ctx: SandboxContext): Idempotency {
  let store = perContext.get(ctx);
  if (!store) {
    store = createIdempotency(ctx.db, ctx.clock, { model: ctx.options.idempotencyModel });
    perContext.set(ctx, store);
  }
  return store;
}

/**
 * Route module: `DELETE {admin}/idempotency-keys` forgets every stored answer (or only `?key=GUID`), as a bank does
 * once its key retention has run out. A keyed resend then runs afresh: tests use it to show what a client does when
 * the bank no longer replays (a payment refused as already paid, perhaps by the client's own first attempt).
 * Answers `{ forgotten: n }`.
 */
export function registerIdempotencyAdmin(app: FastifyInstance, ctx: SandboxContext): void {
  app.delete(`${SANDBOX_ADMIN_PREFIX}/idempotency-keys`, async (request) => {
    const { key } = request.query as { key?: string };
    const result = key
      ? ctx.db
          .prepare(`DELETE FROM idempotency_keys WHERE state = 'done' AND idempotency_key = ?`)
          .run(key.toLowerCase())
      : ctx.db.prepare(`DELETE FROM idempotency_keys WHERE state = 'done'`).run();
    return { forgotten: result.changes };
  });
}
