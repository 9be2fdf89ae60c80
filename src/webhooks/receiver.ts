/**
 * remessa's webhook receiver: a small fastify server in the daemon (`webhooks.receiver.*`) to which the bank POSTs
 * its events (envelope `{id, event, createdAt, data}`, src/webhooks/events.ts).
 *
 * One delivery's fate:
 *
 *     POST <path> --authorization wrong or missing--> 401, nothing read further, nothing stored     (rejected)
 *          |      --body over bodyLimitBytes-------> 413, nothing stored                              (rejected)
 *          |      --not JSON / not an envelope / id header != body id--> 400, nothing stored         (rejected)
 *          |      --store cannot write-----------> 503, nothing stored: the bank retries
 *          v
 *     INSERT .. ON CONFLICT (id) DO NOTHING, committed with synchronous = FULL
 *          |--row inserted------> 200 {"result":"stored"}                                          (stored)
 *          \--id already there--> 200 {"result":"duplicate"}, the stored row untouched           (duplicate)
 *
 * What must hold:
 * - 2xx only after the event is on disk: the insert is one autocommit statement on the receiver's own store
 *   connection (WAL, `synchronous = FULL`, src/store/db.ts), awaited before the reply is sent. A crash at any instant
 *   before the reply leaves the bank without a 2xx, so it delivers again (at least once); a crash after it loses
 *   nothing. The receiver's connection is its own so that no grouped NORMAL commit of the engine can carry it.
 * - The same event id delivered twice is stored once; the second delivery still gets 2xx (else the bank would retry
 *   it for ever). First delivery wins: a stored row is never rewritten.
 * - Events are kept whatever their order and whether or not remessa created the thing they are about: deciding what
 *   an event means is the retorno's job (reading `webhook_events` where `applied_at` is NULL), not the receiver's.
 * - The authorization is checked before the body is read, in constant time (./authorization.ts). Neither the
 *   authorization value nor any request header is logged; a refused request logs only its status and reason.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import fastify, { type FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { type AuthorizationScheme, EVENT_ID_HEADER, WEBHOOK_ID_HEADER } from '../formats/webhook-authorization.js';
import type { Logger } from '../log.js';
import type { WebhookReceiverResult } from '../metrics.js';
import { type StorePlace, sqliteStorePlace } from '../store/place.js';
import { SqliteDriver } from '../store/sqlite-driver.js';
import type { Store } from '../store/store.js';
import { insertWebhookEvent } from '../store/webhook-events.js';
import { authorizationChecker, registerAuthorizationSecrets } from './authorization.js';
import { eventIdentifiers, webhookEnvelopeSchema } from './events.js';

/** How one delivery ended, as counted by `remessa_webhook_events_total{result}` (src/metrics.ts). */
export type ReceiverResult = WebhookReceiverResult;

export interface WebhookReceiverOptions {
  /** The store's SQLite file; the receiver opens its own connection to it. */
  /** The store (src/store/place.ts); or `storeFile`, a SQLite file. */
  store?: StorePlace;
  storeFile?: string;
  /** Interface to listen on. @defaultValue '127.0.0.1' */
  host?: string;
  /** TCP port; 0 picks a free one. @defaultValue 0 */
  port?: number;
  /** The path the bank POSTs to. @defaultValue '/webhooks/bank' */
  path?: string;
  /** The registration's scheme and value the bank sends. */
  authorizationScheme: AuthorizationScheme;
  authorization: string;
  /** Largest body accepted, in bytes; larger is 413. @defaultValue 262144 */
  bodyLimitBytes?: number;
  logger?: Logger | undefined;
  /** Called once per request with its result (metrics). */
  onResult?: ((result: ReceiverResult) => void) | undefined;
  /** The clock of `received_at`. @defaultValue () => new Date() */
  now?: () => Date;
}

export interface RunningWebhookReceiver {
  /** `http://host:port` it listens on. */
  url: string;
  /** The local url of the events path (`url` + path). */
  eventsUrl: string;
  port: number;
  /** Stops taking requests, waits for those in progress, closes its connection to the store. */
  close(): Promise<void>;
}

export const DEFAULT_RECEIVER_PATH = '/webhooks/bank';
export const DEFAULT_BODY_LIMIT_BYTES = 256 * 1024;

/** Answers of the receiver: small JSON bodies, never echoing a header or the body. */
function problem(status: number, detail: string) {
  return { status, detail };
}

function firstHeader(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function describeZod(error: z.ZodError): string {
  return error.issues
    .map((i) => `${i.path.length ? `$.${i.path.join('.')}` : '$'}: ${i.message.replace(/^Invalid input: /, '')}`)
    .join('; ');
}

export async function startWebhookReceiver(o: WebhookReceiverOptions): Promise<RunningWebhookReceiver> {
  const routePath = o.path ?? DEFAULT_RECEIVER_PATH;
  const bodyLimit = o.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  const log = o.logger;
  const now = o.now ?? (() => new Date());
  registerAuthorizationSecrets(o.authorizationScheme, o.authorization);
  const authorized = authorizationChecker(o.authorizationScheme, o.authorization);
  const place = o.store ?? sqliteStorePlace(o.storeFile ?? '');
  const store: Store = await place.open();
  if (store.driver instanceof SqliteDriver && store.driver.database.pragma('synchronous', { simple: true }) !== 2) {
    await store.close();
    throw new Error('The webhook receiver needs its store connection at synchronous = FULL');
  }

  // fastify's own logger stays off: its request lines would carry urls and, on errors, headers.
  const app: FastifyInstance = fastify({ logger: false, bodyLimit, return503OnClosing: true });
  const count = (result: ReceiverResult) => o.onResult?.(result);

  // Every body is read as text (the stored payload is the body as received) whatever its content type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit }, (_req, body, done) => done(null, body));

  app.addHook('onRequest', async (request, reply) => {
    if (request.method !== 'POST' || request.url.split('?')[0] !== routePath) return;
    if (!authorized(request.headers)) {
      count('rejected');
      log?.warn({ status: 401, ip: request.ip }, 'webhook delivery refused: wrong or missing authorization');
      return reply.code(401).send(problem(401, 'Wrong or missing authorization.'));
    }
  });

  app.setErrorHandler((error: { statusCode?: number; code?: string; message: string }, request, reply) => {
    const status = error.statusCode ?? 500;
    if (status === 413 || error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      count('rejected');
      log?.warn({ status: 413, limitBytes: bodyLimit }, 'webhook delivery refused: body too large');
      return reply.code(413).send(problem(413, `Expected a body of at most ${bodyLimit} bytes.`));
    }
    if (status >= 400 && status < 500) {
      if (request.url.split('?')[0] === routePath) count('rejected');
      return reply.code(status).send(problem(status, error.message));
    }
    log?.error({ err: error }, 'webhook receiver failed');
    return reply.code(500).send(problem(500, 'Internal error.'));
  });

  app.post(routePath, async (request, reply) => {
    const raw = typeof request.body === 'string' ? request.body : '';
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      count('rejected');
      return reply.code(400).send(problem(400, 'Expected a JSON body, got text that is not JSON.'));
    }
    const envelope = webhookEnvelopeSchema.safeParse(parsed);
    if (!envelope.success) {
      count('rejected');
      const detail = `Expected an event {id, event, createdAt, data}: ${describeZod(envelope.error)}`;
      log?.warn({ status: 400, detail }, 'webhook delivery refused: not an event');
      return reply.code(400).send(problem(400, detail));
    }
    const event = envelope.data;
    const headerId = firstHeader(request.headers, EVENT_ID_HEADER);
    if (headerId !== undefined && headerId.trim() !== event.id) {
      count('rejected');
      return reply
        .code(400)
        .send(problem(400, `Expected the ${EVENT_ID_HEADER} header to equal the body's id, got another id.`));
    }
    const ids = eventIdentifiers(event);
    let stored: boolean;
    try {
      stored = await insertWebhookEvent(store, {
        id: event.id,
        type: event.event,
        ...ids,
        occurredAt: event.createdAt ?? null,
        receivedAt: now().toISOString(),
        webhookId: firstHeader(request.headers, WEBHOOK_ID_HEADER) ?? null,
        payload: raw,
      });
    } catch (err) {
      // Not stored: no 2xx, so the bank delivers it again later.
      log?.error({ err, eventId: event.id }, 'webhook event could not be stored; the bank will retry');
      return reply.code(503).send(problem(503, 'The event could not be stored now; retry later.'));
    }
    const result: ReceiverResult = stored ? 'stored' : 'duplicate';
    count(result);
    log?.info(
      { eventId: event.id, type: event.event, correlationId: ids.correlationId, endToEndId: ids.endToEndId, result },
      stored ? 'webhook event stored' : 'webhook event already stored; ignored',
    );
    return reply.code(200).send({ result });
  });

  app.addHook('onClose', async () => {
    await store.close();
  });

  try {
    await app.listen({ host: o.host ?? '127.0.0.1', port: o.port ?? 0 });
  } catch (err) {
    await app.close().catch(() => undefined);
    throw err;
  }
  const { port } = app.server.address() as AddressInfo;
  const host = o.host ?? '127.0.0.1';
  const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const url = `http://${shown}:${port}`;
  return {
    url,
    eventsUrl: `${url}${routePath}`,
    port,
    close: () => app.close(),
  };
}
