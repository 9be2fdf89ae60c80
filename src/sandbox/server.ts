/**
 * The sandbox: a fastify server that plays the bank, with its state in SQLite.
 *
 * ## How route modules plug in
 * Each area has a module `src/sandbox/routes/<area>.ts` exporting a registration function of type
 * `SandboxRouteModule`:
 *
 * ```ts
 * export function registerChargeRoutes(app: FastifyInstance, ctx: SandboxContext): void { app.post(...); ... }
 * ```
 *
 * and one line in `ROUTE_MODULES` below. Modules are called in list order, directly on the root instance (not inside
 * `app.register`), so a hook a module adds (faults, idempotency) applies to every route: modules that add global
 * hooks come first in the list. Handlers throw `SandboxHttpError` (src/sandbox/problems.ts) for error answers; any
 * other thrown error becomes a 500 problem. JSON bodies may be empty (`request.body` is then undefined).
 *
 * ## Admin routes
 * Sandbox-only routes live under `SANDBOX_ADMIN_PREFIX` (`/__sandbox/`), which no route of the real service uses.
 * They need an API key like every other route. The core serves:
 * - `GET /__sandbox/health` -> `{ ok: true }`
 * - `GET /__sandbox/effects?kind=&key=` -> `[{ kind, key, count }]` (the effects ledger, for "exactly once" tests)
 * - `GET /__sandbox/events?afterSeq=&type=&limit=` -> recorded events, oldest first
 * - `GET /__sandbox/auth` -> `{ refused }`: requests refused 401 for their API key since the sandbox started
 * - `DELETE /__sandbox/idempotency-keys?key=` -> forgets stored answers of IdempotencyKeys (src/sandbox/idempotency.ts)
 */
import type { ServerOptions as HttpsServerOptions } from 'node:https';
import fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { type ApiKeyCheck, installApiKeyCheck } from './auth.js';
import { type Clock, createClock } from './clock.js';
import { openSandboxDb, type SandboxDb } from './db.js';
import { createEventLog, type EventLog } from './events.js';
import { registerFaults } from './faults.js';
import { registerIdempotencyAdmin } from './idempotency.js';
import { createLedger, type Ledger } from './ledger.js';
import { parseSandboxOptions, SANDBOX_ADMIN_PREFIX, type SandboxOptions, type SandboxOptionsInput } from './options.js';
import { httpErrors, notFoundProblem, SandboxHttpError, sendHttpError, validationProblem } from './problems.js';
import { fastifyRewriteUrl, installProfileEdge } from './profiles.js';
import { registerBillPaymentRoutes } from './routes/bill-payments.js';
import { registerChargeRoutes } from './routes/charges.js';
import { registerClaimRoutes } from './routes/claims.js';
import { registerPixPaymentRoutes } from './routes/pix-payments.js';
import { registerQrCodeRoutes } from './routes/qr-codes.js';
import { registerWebhookRoutes } from './routes/webhooks.js';

export { SANDBOX_ADMIN_PREFIX, SANDBOX_PUBLIC_API_KEY } from './options.js';

/** What every route module receives. */
export interface SandboxContext {
  db: SandboxDb;
  options: SandboxOptions;
  clock: Clock;
  events: EventLog;
  ledger: Ledger;
  /** The sandbox's logger (silent when none was configured). */
  logger: Logger | undefined;
}

/** A route module: registers its routes (and hooks) on the root instance. */
export type SandboxRouteModule = (app: FastifyInstance, ctx: SandboxContext) => void | Promise<void>;

/**
 * The route modules, in registration order. Modules adding global hooks (faults, idempotency) go first.
 * H4: add faults first, then bill-payments, pix-payments, qr-codes. H5: claims, webhooks (+ delivery start).
 */
const ROUTE_MODULES: ReadonlyArray<readonly [name: string, register: SandboxRouteModule]> = [
  ['faults', registerFaults], // H4 (global hooks: keep first)
  ['charges', registerChargeRoutes],
  ['bill-payments', registerBillPaymentRoutes], // H4
  ['pix-payments', registerPixPaymentRoutes], // H4
  ['qr-codes', registerQrCodeRoutes], // H4
  ['claims', registerClaimRoutes], // H5
  ['webhooks', registerWebhookRoutes], // H5 (also starts webhook delivery; stopped in preClose)
  ['idempotency-admin', registerIdempotencyAdmin],
];

export interface RunningSandbox {
  /** Base URL, e.g. `http://127.0.0.1:54321`, or `https://...` with `tls` (no trailing slash). */
  url: string;
  port: number;
  /** Stops listening, runs onClose hooks (webhook delivery stops there), then closes the database. */
  close(): Promise<void>;
  db: SandboxDb;
  app: FastifyInstance;
  /** The context the route modules received (clock, events, ledger, ...), for tests and the CLI. */
  ctx: SandboxContext;
}

/** Builds the fastify app with every route, without listening (tests may use `app.inject`). */
export async function buildSandboxApp(
  input: SandboxOptionsInput = {},
): Promise<{ app: FastifyInstance; ctx: SandboxContext }> {
  const options = parseSandboxOptions(input);
  const db = openSandboxDb(options.dataFile);
  const clock = createClock(options.now);
  const ctx: SandboxContext = {
    db,
    options,
    clock,
    events: createEventLog(db, clock),
    ledger: createLedger(db, clock),
    logger: options.logger,
  };

  // The provider profile is served at the edge (src/sandbox/profiles.ts): URL rewriting before routing. TLS is the
  // listener's (one setting for every profile).
  const rewriteUrl = fastifyRewriteUrl(options.profile, options.pixPaymentPath);
  const app: FastifyInstance = fastify({
    ...(options.logger ? { loggerInstance: options.logger as FastifyBaseLogger } : { logger: false }),
    ...(rewriteUrl ? { rewriteUrl } : {}),
    ...(options.tls ? { https: httpsOptions(options.tls) } : {}),
  }) as unknown as FastifyInstance;
  app.addHook('onClose', async () => {
    db.close();
  });

  installJsonParsers(app);
  const keys = installApiKeyCheck(app, options);
  installProfileEdge(app, options.profile);
  installErrorHandlers(app);
  registerAdminRoutes(app, ctx, keys);

  for (const [, register] of ROUTE_MODULES) await register(app, ctx);
  return { app, ctx };
}

/** Starts the sandbox and waits until it listens. */
export async function startSandbox(input: SandboxOptionsInput = {}): Promise<RunningSandbox> {
  const { app, ctx } = await buildSandboxApp(input);
  try {
    await app.listen({ host: ctx.options.host, port: ctx.options.port });
  } catch (err) {
    await app.close();
    throw err;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : ctx.options.port;
  const host = ctx.options.host.includes(':') ? `[${ctx.options.host}]` : ctx.options.host;
  return {
    url: `${ctx.options.tls ? 'https' : 'http'}://${host}:${port}`,
    port,
    db: ctx.db,
    app,
    ctx,
    close: () => app.close(),
  };
}

/**
 * The listener's TLS: the server certificate, and with `clientCa` a client certificate required and checked during
 * the handshake (`rejectUnauthorized`), before any route, hook or profile sees the request: a client without one, or
 * with one from another CA, gets no HTTP answer at all, as at a bank's mutual-TLS gateway.
 */
function httpsOptions(tls: NonNullable<SandboxOptions['tls']>): HttpsServerOptions {
  return {
    cert: tls.cert,
    key: tls.key,
    ...(tls.clientCa ? { ca: tls.clientCa, requestCert: true, rejectUnauthorized: true } : {}),
  };
}

/**
 * JSON bodies: an empty body is allowed (POST .../void has none, but clients often still send the content type);
 * `+json` media types are JSON too; a text/plain body that looks like JSON is parsed (lenient, as a bank gateway is).
 */
function installJsonParsers(app: FastifyInstance): void {
  const parse = (body: string): unknown => {
    if (body.trim() === '') return undefined;
    try {
      return JSON.parse(body);
    } catch (err) {
      throw new SandboxHttpError(
        400,
        validationProblem({ $: [`The body is not valid JSON: ${(err as Error).message}`] }),
      );
    }
  };
  app.removeContentTypeParser(['application/json', 'text/plain']);
  const parseJson = (_req: unknown, body: string | Buffer, done: (err: Error | null, body?: unknown) => void) => {
    try {
      done(null, parse(body.toString()));
    } catch (err) {
      done(err as Error, undefined);
    }
  };
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parseJson);
  app.addContentTypeParser(/^application\/[\w.+-]+\+json$/, { parseAs: 'string' }, parseJson);
  app.addContentTypeParser('text/plain', { parseAs: 'string' }, (_req, body, done) => {
    const text = body.toString();
    if (/^\s*[[{]/.test(text)) {
      try {
        done(null, parse(text));
      } catch (err) {
        done(err as Error, undefined);
      }
    } else done(null, text);
  });
}

function installErrorHandlers(app: FastifyInstance): void {
  app.setNotFoundHandler((_request, reply) => sendHttpError(reply, new SandboxHttpError(404, notFoundProblem())));
  app.setErrorHandler((error: FastifyError | SandboxHttpError, request, reply) => {
    if (error instanceof SandboxHttpError) return sendHttpError(reply, error);
    const status = (error as FastifyError).statusCode;
    if (status === 415) return sendHttpError(reply, httpErrors.problem(415, 'Unsupported Media Type', error.message));
    if (status === 413) return sendHttpError(reply, httpErrors.problem(413, 'Payload Too Large', error.message));
    if (status !== undefined && status >= 400 && status < 500) {
      return sendHttpError(reply, new SandboxHttpError(400, validationProblem({ $: [error.message] })));
    }
    request.log.error({ err: error }, 'sandbox route failed');
    return sendHttpError(reply, httpErrors.problem(500, 'Internal Server Error', 'The sandbox failed; see its log.'));
  });
}

function registerAdminRoutes(app: FastifyInstance, ctx: SandboxContext, keys: ApiKeyCheck): void {
  app.get(`${SANDBOX_ADMIN_PREFIX}/health`, async () => ({ ok: true }));
  app.get(`${SANDBOX_ADMIN_PREFIX}/auth`, async () => ({ refused: keys.refused() }));
  app.get(`${SANDBOX_ADMIN_PREFIX}/effects`, async (request) => {
    const q = request.query as { kind?: string; key?: string };
    return ctx.ledger.counts({ kind: q.kind, key: q.key });
  });
  app.get(`${SANDBOX_ADMIN_PREFIX}/events`, async (request) => {
    const q = request.query as { afterSeq?: string; type?: string; limit?: string };
    return ctx.events.list({
      afterSeq: q.afterSeq ? Number(q.afterSeq) : 0,
      type: q.type,
      limit: q.limit ? Number(q.limit) : undefined,
    });
  });
}
