/**
 * Webhook routes (spec 4.6, 2.12, 5, 8) and the start of webhook delivery (src/sandbox/webhook-delivery.ts).
 *
 * Decisions (the spec shows no bodies; docs/service-gaps.md "Webhooks and events"):
 * - A webhook belongs to the API key that registered it; list, get, update and delete see only that key's webhooks
 *   (another key's webhook id answers 404).
 * - The public test key may not configure webhooks: POST, PATCH and DELETE with it answer 403. GET works (it lists
 *   nothing, since nothing can be registered with it).
 * - `x-service-account-id` is required on POST and PATCH (the two that carry the registration payload): missing or
 *   blank answers 400 (a validation problem naming the header; the API key itself was fine, so not 401).
 * - Check order: API key (401), public key (403), account id (400), body (400), webhook id (404).
 * - Bodies: POST 200 and PATCH 200 answer the webhook view; GET one answers it; GET list answers an array of them,
 *   oldest first; DELETE answers 204 with no body. The view:
 *   `{ id, eventType, url, authorizationScheme, authorization, accountId, createdAt, updatedAt }` where
 *   `authorization` is masked (`****` plus at most the last 4 characters) or null: the value is never echoed.
 * - PATCH takes the registration fields, each optional; a field present replaces the stored one (null removes the
 *   authorization pair). Scheme and value must end up both set or both absent. Changing `eventType` means only events
 *   recorded after the change are delivered to it.
 * - Errors use the validation problem shape (`errors` keyed `$.field` or the header name), 403/404 the problem shape.
 *
 * Admin (sandbox only): `GET /__sandbox/webhook-deliveries?eventId=&webhookId=&state=` lists deliveries;
 * `POST /__sandbox/webhook-deliveries/run[?ignoreBackoff=true]` makes one delivery pass now (every pending delivery
 * with `ignoreBackoff`) and answers `{ attempts }`.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { SANDBOX_ADMIN_PREFIX } from '../options.js';
import { httpErrors, SandboxHttpError, validationProblem } from '../problems.js';
import type { SandboxContext } from '../server.js';
import {
  AUTHORIZATION_SCHEMES,
  type AuthorizationScheme,
  authorizationProblem,
  createWebhookDelivery,
  type DeliveryState,
  maskAuthorization,
  registerAuthorizationSecret,
  SANDBOX_WEBHOOK_EVENT_TYPES,
  type WebhookDelivery,
  webhookUrlProblem,
} from '../webhook-delivery.js';

export const WEBHOOKS_PATH = '/baas/api/v1/webhooks';
export const ACCOUNT_ID_HEADER = 'x-service-account-id';

declare module 'fastify' {
  interface FastifyInstance {
    /** The sandbox's webhook delivery loop (started with the app, stopped on close). */
    webhookDelivery: WebhookDelivery;
  }
}

interface WebhookRow {
  id: string;
  owner: string;
  account_id: string;
  event_type: string;
  url: string;
  authorization_scheme: AuthorizationScheme | null;
  authorization: string | null;
  since_event_seq: number;
  created_at: string;
  updated_at: string;
}

/** A registered webhook as the sandbox returns it. */
export interface WebhookView {
  id: string;
  eventType: string;
  url: string;
  authorizationScheme: AuthorizationScheme | null;
  /** Masked: `****` plus at most the last 4 characters; null when none. */
  authorization: string | null;
  accountId: string;
  createdAt: string;
  updatedAt: string;
}

function view(row: WebhookRow): WebhookView {
  return {
    id: row.id,
    eventType: row.event_type,
    url: row.url,
    authorizationScheme: row.authorization_scheme,
    authorization: maskAuthorization(row.authorization),
    accountId: row.account_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

type Obj = Record<string, unknown>;

function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  return JSON.stringify(v)?.slice(0, 80) ?? String(v);
}

interface WebhookFields {
  eventType?: string;
  url?: string;
  /** undefined: not sent; null: remove. */
  authorizationScheme?: AuthorizationScheme | null;
  authorization?: string | null;
}

/** Validates the registration fields; `partial` (PATCH) makes every field optional. Throws 400 listing every problem. */
function parseFields(
  body: unknown,
  partial: boolean,
  current: WebhookRow | undefined,
  allowLoopback: boolean,
): WebhookFields {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new SandboxHttpError(400, validationProblem({ $: [`Expected a JSON object, got ${describe(body)}.`] }));
  }
  const b = body as Obj;
  const errors: Record<string, string[]> = {};
  const bad = (field: string, message: string) => {
    errors[`$.${field}`] = [...(errors[`$.${field}`] ?? []), message];
  };
  const out: WebhookFields = {};

  if (b.eventType !== undefined || !partial) {
    if (typeof b.eventType !== 'string' || !(SANDBOX_WEBHOOK_EVENT_TYPES as readonly string[]).includes(b.eventType)) {
      bad('eventType', `Expected one of ${SANDBOX_WEBHOOK_EVENT_TYPES.join(', ')}, got ${describe(b.eventType)}.`);
    } else out.eventType = b.eventType;
  }
  if (b.url !== undefined || !partial) {
    if (typeof b.url !== 'string') bad('url', `Expected an http:// or https:// url, got ${describe(b.url)}.`);
    else {
      const problem = webhookUrlProblem(b.url, { allowLoopback });
      if (problem) bad('url', problem);
      else out.url = b.url;
    }
  }
  if (b.authorizationScheme !== undefined) {
    if (b.authorizationScheme === null) out.authorizationScheme = null;
    else if (
      typeof b.authorizationScheme !== 'string' ||
      !(AUTHORIZATION_SCHEMES as readonly string[]).includes(b.authorizationScheme)
    ) {
      bad('authorizationScheme', `Expected BASIC, BEARER or HEADER, got ${describe(b.authorizationScheme)}.`);
    } else out.authorizationScheme = b.authorizationScheme as AuthorizationScheme;
  }
  if (b.authorization !== undefined) {
    if (b.authorization === null) out.authorization = null;
    // Never echo the value: it is a secret.
    else if (typeof b.authorization !== 'string') bad('authorization', 'Expected a string.');
    else out.authorization = b.authorization;
  }
  if (!errors['$.authorizationScheme'] && !errors['$.authorization']) {
    const scheme =
      out.authorizationScheme !== undefined ? out.authorizationScheme : (current?.authorization_scheme ?? null);
    const value = out.authorization !== undefined ? out.authorization : (current?.authorization ?? null);
    if (scheme && !value) bad('authorization', `Expected an authorization value with authorizationScheme ${scheme}.`);
    else if (!scheme && value)
      bad('authorizationScheme', 'Expected BASIC, BEARER or HEADER with an authorization value.');
    else if (scheme && value) {
      const problem = authorizationProblem(scheme, value);
      if (problem) bad('authorization', problem);
    }
  }
  if (Object.keys(errors).length > 0) throw new SandboxHttpError(400, validationProblem(errors));
  return out;
}

export function registerWebhookRoutes(app: FastifyInstance, ctx: SandboxContext): void {
  const { db, clock, options } = ctx;

  const byId = db.prepare('SELECT * FROM webhooks WHERE id = ? AND owner = ?');
  const listByOwner = db.prepare('SELECT * FROM webhooks WHERE owner = ? ORDER BY created_at, rowid');
  const maxSeq = db.prepare('SELECT COALESCE(MAX(seq), 0) AS seq FROM events');
  const insert = db.prepare(
    `INSERT INTO webhooks (id, owner, account_id, event_type, url, authorization_scheme, authorization,
       since_event_seq, created_at, updated_at)
     VALUES (@id, @owner, @account_id, @event_type, @url, @authorization_scheme, @authorization,
       @since_event_seq, @now, @now)`,
  );
  const update = db.prepare(
    `UPDATE webhooks SET account_id = @account_id, event_type = @event_type, url = @url,
       authorization_scheme = @authorization_scheme, authorization = @authorization,
       since_event_seq = @since_event_seq, updated_at = @now
     WHERE id = @id AND owner = @owner`,
  );
  const remove = db.prepare('DELETE FROM webhooks WHERE id = ? AND owner = ?');

  // Values stored by an earlier run must be scrubbed from logs as well.
  for (const row of db.prepare('SELECT authorization_scheme, authorization FROM webhooks').all() as WebhookRow[]) {
    registerAuthorizationSecret(row.authorization_scheme, row.authorization);
  }

  const forbidPublic = (request: FastifyRequest) => {
    if (request.sandboxAuth.isPublic) {
      throw httpErrors.problem(
        403,
        'Forbidden',
        'The public test API key cannot configure webhooks (spec section 5); use an API key of your own.',
      );
    }
  };
  const accountId = (request: FastifyRequest): string => {
    const raw = request.headers[ACCOUNT_ID_HEADER];
    const value = (Array.isArray(raw) ? raw[0] : raw)?.trim();
    if (!value) {
      throw new SandboxHttpError(
        400,
        validationProblem({ [ACCOUNT_ID_HEADER]: ['Expected the bank account number in this header, got nothing.'] }),
      );
    }
    if (value.length > 64) {
      throw new SandboxHttpError(
        400,
        validationProblem({ [ACCOUNT_ID_HEADER]: [`Expected at most 64 characters, got ${value.length}.`] }),
      );
    }
    return value;
  };
  const found = (request: FastifyRequest): WebhookRow => {
    const { id } = request.params as { id: string };
    const row = byId.get(id.toLowerCase(), request.sandboxAuth.keyId) as WebhookRow | undefined;
    if (!row) throw httpErrors.notFound();
    return row;
  };

  app.post(WEBHOOKS_PATH, async (request) => {
    forbidPublic(request);
    const account = accountId(request);
    const fields = parseFields(request.body, false, undefined, options.webhookAllowLoopbackUrls);
    const scheme = fields.authorizationScheme ?? null;
    const value = fields.authorization ?? null;
    registerAuthorizationSecret(scheme, value);
    const id = randomUUID();
    db.transaction(() => {
      insert.run({
        id,
        owner: request.sandboxAuth.keyId,
        account_id: account,
        event_type: fields.eventType,
        url: fields.url,
        authorization_scheme: scheme,
        authorization: value,
        since_event_seq: (maxSeq.get() as { seq: number }).seq,
        now: clock.nowIso(),
      });
    })();
    return view(byId.get(id, request.sandboxAuth.keyId) as WebhookRow);
  });

  app.get(WEBHOOKS_PATH, async (request) => (listByOwner.all(request.sandboxAuth.keyId) as WebhookRow[]).map(view));

  app.get(`${WEBHOOKS_PATH}/:id`, async (request) => view(found(request)));

  app.patch(`${WEBHOOKS_PATH}/:id`, async (request) => {
    forbidPublic(request);
    const account = accountId(request);
    const current = found(request);
    const fields = parseFields(request.body ?? {}, true, current, options.webhookAllowLoopbackUrls);
    const scheme = fields.authorizationScheme !== undefined ? fields.authorizationScheme : current.authorization_scheme;
    const value = fields.authorization !== undefined ? fields.authorization : current.authorization;
    registerAuthorizationSecret(scheme, value);
    db.transaction(() => {
      const eventType = fields.eventType ?? current.event_type;
      update.run({
        id: current.id,
        owner: current.owner,
        account_id: account,
        event_type: eventType,
        url: fields.url ?? current.url,
        authorization_scheme: scheme,
        authorization: value,
        since_event_seq:
          eventType === current.event_type ? current.since_event_seq : (maxSeq.get() as { seq: number }).seq,
        now: clock.nowIso(),
      });
    })();
    return view(byId.get(current.id, current.owner) as WebhookRow);
  });

  app.delete(`${WEBHOOKS_PATH}/:id`, async (request, reply) => {
    forbidPublic(request);
    const row = found(request);
    remove.run(row.id, row.owner); // pending deliveries go with it (ON DELETE CASCADE)
    return reply.code(204).send();
  });

  // --- delivery ---
  const delivery = createWebhookDelivery(
    { db, events: ctx.events, logger: ctx.logger },
    {
      pollIntervalMs: options.webhookPollIntervalMs,
      maxAttempts: options.webhookMaxAttempts,
      backoffBaseMs: options.webhookBackoffBaseMs,
      backoffMaxMs: options.webhookBackoffMaxMs,
      timeoutMs: options.webhookTimeoutMs,
      concurrency: options.webhookConcurrency,
      hostAddresses: options.webhookHostAddresses,
    },
  );
  app.decorate('webhookDelivery', delivery);
  // preClose runs before the database is closed (the core closes it in onClose): stop and await the loop first.
  app.addHook('preClose', async () => {
    await delivery.stop();
  });
  delivery.start();

  app.get(`${SANDBOX_ADMIN_PREFIX}/webhook-deliveries`, async (request) => {
    const q = request.query as { eventId?: string; webhookId?: string; state?: string };
    return delivery.list({
      eventId: q.eventId,
      webhookId: q.webhookId,
      state: q.state as DeliveryState | undefined,
    });
  });
  app.post(`${SANDBOX_ADMIN_PREFIX}/webhook-deliveries/run`, async (request) => {
    const q = request.query as { ignoreBackoff?: string };
    return { attempts: await delivery.runOnce({ ignoreBackoff: q.ignoreBackoff === 'true' }) };
  });
}
