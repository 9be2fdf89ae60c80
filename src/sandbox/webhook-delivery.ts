/**
 * Webhook delivery: every recorded event (src/sandbox/events.ts) is POSTed to every webhook registered for its type,
 * with retries, and the state of each delivery is kept in SQLite.
 *
 * One delivery = (event, webhook). Its state machine:
 *
 *     (fan-out) --> pending --2xx--> delivered
 *                    |  ^
 *        non-2xx,    |  | next attempt after min(backoffBaseMs * 2^(attempts-1), backoffMaxMs)
 *        conn. error v  |
 *                   (attempts < maxAttempts) ----- attempts = maxAttempts ----> failed
 *
 * What must hold:
 * - Fan-out and cursor move in one transaction: an event is fanned out exactly once, even across restarts.
 * - A webhook receives only events recorded after it was registered (`since_event_seq`, compared with the event's
 *   `seq`, not with timestamps, so a test clock cannot reorder them). Events are not scoped by API key: the
 *   sandbox plays one account, and every webhook of a type receives every event of that type.
 * - A delivery is marked delivered only after a 2xx answer, in its own transaction: a restart resumes every pending
 *   delivery and never repeats a delivered one. The one gap is a crash between the receiver's 2xx and that commit:
 *   the event is then sent again (at-least-once), with the same event id so the receiver can drop it.
 * - An attempt cut short by `stop()` is not counted: the delivery stays pending and is retried after a restart.
 * - Scheduling reads the real clock (`Date.now()`), never the sandbox's test clock: retries are about a real receiver.
 *
 * The envelope of every event: `{ id, event, createdAt, data }` where `id` is the stable event id, `event` the type,
 * `createdAt` when the event happened (sandbox clock) and `data` the payload the recording area chose.
 * Headers: `content-type: application/json`, `x-webhook-event-id`, `x-webhook-event-type`, `x-webhook-id`,
 * `x-webhook-attempt` (1-based), and the authorization header of the webhook's scheme (see `authorizationHeaders`).
 */
import { lookup as dnsLookup } from 'node:dns';
import type { Logger } from 'pino';
import { Agent, request } from 'undici';
import { WEBHOOK_EVENT_TYPES } from '../formats/events.js';
import { isMalformedALabel } from '../formats/punycode.js';
import {
  ATTEMPT_HEADER,
  type AuthorizationScheme,
  authorizationHeaders,
  EVENT_ID_HEADER,
  EVENT_TYPE_HEADER,
  WEBHOOK_ID_HEADER,
} from '../formats/webhook-authorization.js';
import { registerSecret } from '../log.js';
import type { SandboxDb } from './db.js';
import type { EventLog, SandboxEvent } from './events.js';

/** Event types a webhook can be registered for in the sandbox: the spec's (section 6) and the sandbox's own. */
export const SANDBOX_WEBHOOK_EVENT_TYPES = [
  ...WEBHOOK_EVENT_TYPES,
  // Sandbox addition (spec 6 lists no expiry event, but the staging expire route exists "to validate notifications").
  'CHARGE_EXPIRED',
] as const;
export type SandboxWebhookEventType = (typeof SANDBOX_WEBHOOK_EVENT_TYPES)[number];

export {
  ATTEMPT_HEADER,
  AUTHORIZATION_SCHEMES,
  type AuthorizationScheme,
  authorizationHeaders,
  authorizationProblem,
  EVENT_ID_HEADER,
  EVENT_TYPE_HEADER,
  splitHeaderAuthorization,
  WEBHOOK_ID_HEADER,
} from '../formats/webhook-authorization.js';

/** Registers with the log scrubber every form of an authorization value that goes on the wire. */
export function registerAuthorizationSecret(scheme: AuthorizationScheme | null, value: string | null): void {
  if (!value) return;
  registerSecret(value);
  for (const v of Object.values(authorizationHeaders(scheme, value))) {
    registerSecret(v);
    registerSecret(v.replace(/^(Basic|Bearer) /, ''));
  }
}

/** Masks an authorization value for responses: never the value, at most its last 4 characters. */
export function maskAuthorization(value: string | null): string | null {
  if (value === null) return null;
  return value.length >= 12 ? `****${value.slice(-4)}` : '****';
}

const MAX_HOST_LENGTH = 256;
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i;
const TLD = /^[a-z]{1,6}$/i;
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Checks a webhook url against spec section 8: starts with `http://` or `https://` (lower case, as written); a
 * valid domain name of 1 to 256 characters whose top-level domain has 1 to 6 letters; optional port, path, query
 * and fragment. No user info, no spaces, no IP address (an IP is not a domain name), unless `allowLoopback` lets `localhost`, `127.0.0.1`
 * and `[::1]` through (a sandbox setting for local receivers).
 * Returns an "Expected X, got Y" message, or undefined when the url is acceptable.
 */
export function webhookUrlProblem(url: string, options: { allowLoopback?: boolean } = {}): string | undefined {
  const m = /^(https?):\/\/([^/?#\s]*)([/?#]\S*)?$/i.exec(url);
  if (!m || !/^https?:\/\//.test(url)) {
    return `Expected a url starting with http:// or https:// and without spaces, got ${JSON.stringify(url)}.`;
  }
  const authority = m[2]!;
  if (authority.includes('@')) return 'Expected no user information (user:password@) in the url.';
  const hp = /^(\[[^\]]*\]|[^:]*)(?::(\d{1,5}))?$/.exec(authority);
  if (!hp) return `Expected host[:port] after the scheme, got ${JSON.stringify(authority)}.`;
  const host = hp[1]!.toLowerCase();
  const port = hp[2];
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) {
    return `Expected a port from 1 to 65535, got ${port}.`;
  }
  if (host.length < 1 || host.length > MAX_HOST_LENGTH) {
    return `Expected a domain name of 1 to ${MAX_HOST_LENGTH} characters, got ${host.length}.`;
  }
  const labels = host.split('.');
  // An `xn--` label that is not valid Punycode makes the url malformed too; Node 24's parser lets it through.
  if (!URL.canParse(url) || labels.some(isMalformedALabel)) {
    return `Expected a well-formed url, got ${JSON.stringify(url)}.`;
  }
  if (options.allowLoopback && LOOPBACK_HOSTS.has(host)) return undefined;
  if (labels.length < 2) return `Expected a domain name with a top-level domain (example.com), got ${host}.`;
  if (!labels.every((l) => LABEL.test(l))) return `Expected a valid domain name, got ${host}.`;
  const tld = labels[labels.length - 1]!;
  if (!TLD.test(tld)) return `Expected a top-level domain of 1 to 6 letters, got ${tld}.`;
  return undefined;
}

/** Delay before attempt `failedAttempts + 1`: `min(baseMs * 2^(failedAttempts - 1), maxMs)`; no jitter (replayable). */
export function retryDelayMs(failedAttempts: number, baseMs: number, maxMs: number): number {
  const exp = Math.min(Math.max(failedAttempts - 1, 0), 30);
  return Math.min(baseMs * 2 ** exp, maxMs);
}

/** The JSON body POSTed for an event. */
export interface WebhookEnvelope {
  /** Stable event id (also in the `x-webhook-event-id` header): the same on every attempt and every webhook. */
  id: string;
  /** Event type (spec section 6). */
  event: string;
  /** When the event happened: ISO 8601 UTC with milliseconds. */
  createdAt: string;
  /** The event's data (shape per type: docs/sandbox.md). */
  data: Record<string, unknown>;
}

export function webhookEnvelope(event: SandboxEvent): WebhookEnvelope {
  return { id: event.id, event: event.type, createdAt: event.occurredAt, data: event.payload };
}

/** Delivery settings (the sandbox options `webhook*` map onto these). */
export interface WebhookDeliveryOptions {
  /** How often the loop looks for events to fan out and deliveries due, in ms (it also wakes on each new event). @defaultValue 1000 */
  pollIntervalMs: number;
  /** Attempts per delivery before it is marked failed. @defaultValue 8 */
  maxAttempts: number;
  /** Delay after the first failed attempt, in ms; doubled after each further failure. @defaultValue 1000 */
  backoffBaseMs: number;
  /** Upper bound of the delay between attempts, in ms. @defaultValue 300000 (5 minutes) */
  backoffMaxMs: number;
  /** Time allowed for one attempt (connect, headers and body), in ms. @defaultValue 10000 */
  timeoutMs: number;
  /** Deliveries attempted at the same time. @defaultValue 4 */
  concurrency: number;
  /**
   * Host name -> IP address used instead of DNS when delivering (like `curl --resolve`), so a test can register a
   * url with a real domain name and receive it on a local port. @defaultValue {}
   */
  hostAddresses: Readonly<Record<string, string>>;
}

export const DEFAULT_WEBHOOK_DELIVERY_OPTIONS: Readonly<WebhookDeliveryOptions> = Object.freeze({
  pollIntervalMs: 1000,
  maxAttempts: 8,
  backoffBaseMs: 1000,
  backoffMaxMs: 300_000,
  timeoutMs: 10_000,
  concurrency: 4,
  hostAddresses: {},
});

export type DeliveryState = 'pending' | 'delivered' | 'failed';

/** A delivery as the admin route shows it. */
export interface DeliveryRecord {
  eventId: string;
  eventType: string;
  webhookId: string;
  state: DeliveryState;
  attempts: number;
  /** Real-clock time of the next attempt (pending only), ISO 8601. */
  nextAttemptAt: string | null;
  /** HTTP status of the last attempt, null for a connection error or no attempt yet. */
  lastStatus: number | null;
  lastError: string | null;
  deliveredAt: string | null;
}

interface DeliveryRow {
  event_id: string;
  event_seq: number;
  webhook_id: string;
  state: DeliveryState;
  attempts: number;
  next_attempt_at: number;
  last_status: number | null;
  last_error: string | null;
  delivered_at: string | null;
}

interface WebhookRow {
  id: string;
  url: string;
  authorization_scheme: AuthorizationScheme | null;
  authorization: string | null;
}

export interface WebhookDelivery {
  /** Starts the background loop (idempotent). */
  start(): void;
  /** Stops the loop, aborts attempts in flight (not counted) and waits for the current pass to end. */
  stop(): Promise<void>;
  /**
   * One pass now: fan out new events, attempt every delivery due (every pending one with `ignoreBackoff`, as an
   * operator's "retry now"). Resolves with the number of attempts made, after any pass already running.
   */
  runOnce(options?: { ignoreBackoff?: boolean }): Promise<number>;
  /** Deliveries, newest event first, optionally filtered. */
  list(filter?: { eventId?: string; webhookId?: string; state?: DeliveryState }): DeliveryRecord[];
}

export interface WebhookDeliveryDeps {
  db: SandboxDb;
  events: EventLog;
  logger?: Logger | undefined;
  /** Real clock in ms; injectable for unit tests. @defaultValue Date.now */
  nowMs?: () => number;
}

export function createWebhookDelivery(
  deps: WebhookDeliveryDeps,
  input: Partial<WebhookDeliveryOptions> = {},
): WebhookDelivery {
  const options: WebhookDeliveryOptions = { ...DEFAULT_WEBHOOK_DELIVERY_OPTIONS, ...input };
  const { db, events, logger } = deps;
  const nowMs = deps.nowMs ?? Date.now;

  const lookupOverrides = new Map(Object.entries(options.hostAddresses).map(([h, a]) => [h.toLowerCase(), a]));
  const agent = new Agent({
    connections: Math.max(options.concurrency, 1),
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    connectTimeout: options.timeoutMs,
    // Never follow redirects or keep idle sockets to receivers long: a test receiver closes between runs.
    keepAliveTimeout: 1000,
    connect:
      lookupOverrides.size > 0
        ? {
            lookup: ((hostname: string, opts: { all?: boolean }, callback: (...args: unknown[]) => void) => {
              const address = lookupOverrides.get(hostname.toLowerCase());
              if (address === undefined) {
                dnsLookup(hostname, opts as never, callback as never);
                return;
              }
              const family = address.includes(':') ? 6 : 4;
              if (opts?.all) callback(null, [{ address, family }]);
              else callback(null, address, family);
            }) as never,
          }
        : undefined,
  });

  const selectCursor = db.prepare('SELECT last_event_seq AS seq FROM webhook_fanout WHERE id = 1');
  const updateCursor = db.prepare('UPDATE webhook_fanout SET last_event_seq = ? WHERE id = 1');
  const insertDelivery = db.prepare(
    `INSERT OR IGNORE INTO webhook_deliveries (event_id, event_seq, webhook_id, state, attempts, next_attempt_at)
     SELECT ?, ?, id, 'pending', 0, ? FROM webhooks WHERE event_type = ? AND since_event_seq < ?`,
  );
  const selectDue = db.prepare(
    `SELECT * FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= ?
     ORDER BY next_attempt_at, event_seq LIMIT ?`,
  );
  const selectWebhook = db.prepare('SELECT id, url, authorization_scheme, authorization FROM webhooks WHERE id = ?');
  const markDelivered = db.prepare(
    `UPDATE webhook_deliveries SET state = 'delivered', attempts = attempts + 1, last_status = ?, last_error = NULL,
       delivered_at = ? WHERE event_id = ? AND webhook_id = ? AND state = 'pending'`,
  );
  const markFailedAttempt = db.prepare(
    `UPDATE webhook_deliveries SET attempts = attempts + 1, last_status = ?, last_error = ?,
       state = CASE WHEN attempts + 1 >= ? THEN 'failed' ELSE 'pending' END, next_attempt_at = ?
     WHERE event_id = ? AND webhook_id = ? AND state = 'pending'`,
  );

  const FANOUT_BATCH = 500;
  /** Fans out events recorded since the cursor; cursor and rows move in one transaction. */
  const fanOut = db.transaction((): number => {
    const cursor = (selectCursor.get() as { seq: number }).seq;
    const batch = events.list({ afterSeq: cursor, limit: FANOUT_BATCH });
    const now = nowMs();
    for (const e of batch) insertDelivery.run(e.id, e.seq, now, e.type, e.seq);
    if (batch.length > 0) updateCursor.run(batch[batch.length - 1]!.seq);
    return batch.length;
  });

  let timer: NodeJS.Timeout | undefined;
  let running: Promise<number> | undefined;
  let rerun = false;
  /** The background loop runs. */
  let stopped = true;
  /** stop() was called: no further attempts (the agent is closed). */
  let closing = false;
  const inFlight = new Set<AbortController>();
  let unsubscribe: (() => void) | undefined;

  async function attempt(row: DeliveryRow): Promise<void> {
    const webhook = selectWebhook.get(row.webhook_id) as WebhookRow | undefined;
    if (!webhook) return; // deleted meanwhile: ON DELETE CASCADE removed the delivery too
    const event = events.get(row.event_id);
    if (!event) return;
    const attemptNo = row.attempts + 1;
    const body = JSON.stringify(webhookEnvelope(event));
    const controller = new AbortController();
    inFlight.add(controller);
    let status: number | null = null;
    let error: string | null = null;
    try {
      const response = await request(webhook.url, {
        method: 'POST',
        dispatcher: agent,
        signal: controller.signal,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'remessa-sandbox-webhooks/1',
          [EVENT_ID_HEADER]: event.id,
          [EVENT_TYPE_HEADER]: event.type,
          [WEBHOOK_ID_HEADER]: webhook.id,
          [ATTEMPT_HEADER]: String(attemptNo),
          ...authorizationHeaders(webhook.authorization_scheme, webhook.authorization),
        },
        body,
      });
      status = response.statusCode;
      await response.body.dump();
    } catch (err) {
      if (controller.signal.aborted) return; // stopping: not an attempt, retried after restart
      error = (err as Error).message || String(err);
    } finally {
      inFlight.delete(controller);
    }
    if (status !== null && status >= 200 && status < 300) {
      markDelivered.run(status, new Date(nowMs()).toISOString(), row.event_id, row.webhook_id);
      logger?.debug({ eventId: event.id, webhookId: webhook.id, attempt: attemptNo, status }, 'webhook delivered');
      return;
    }
    const next = nowMs() + retryDelayMs(attemptNo, options.backoffBaseMs, options.backoffMaxMs);
    markFailedAttempt.run(status, error ?? `HTTP ${status}`, options.maxAttempts, next, row.event_id, row.webhook_id);
    logger?.info(
      { eventId: event.id, webhookId: webhook.id, attempt: attemptNo, status, error },
      attemptNo >= options.maxAttempts ? 'webhook delivery failed for good' : 'webhook delivery failed; will retry',
    );
  }

  async function pass(ignoreBackoff: boolean): Promise<number> {
    while (fanOut() === FANOUT_BATCH) {
      // keep going until the cursor reaches the newest event
    }
    const due = selectDue.all(ignoreBackoff ? Number.MAX_SAFE_INTEGER : nowMs(), 1000) as DeliveryRow[];
    let attempts = 0;
    let index = 0;
    const worker = async () => {
      while (!closing) {
        const row = due[index++];
        if (!row) return;
        await attempt(row);
        attempts++;
      }
    };
    await Promise.all(Array.from({ length: Math.max(options.concurrency, 1) }, worker));
    return attempts;
  }

  let rerunIgnoringBackoff = false;

  function runOnce(runOptions: { ignoreBackoff?: boolean } = {}): Promise<number> {
    if (closing) return Promise.resolve(0);
    if (running) {
      rerun = true;
      rerunIgnoringBackoff ||= runOptions.ignoreBackoff === true;
      return running;
    }
    running = (async () => {
      let total = 0;
      let ignoreBackoff = runOptions.ignoreBackoff === true;
      try {
        do {
          rerun = false;
          total += await pass(ignoreBackoff);
          ignoreBackoff = rerunIgnoringBackoff;
          rerunIgnoringBackoff = false;
        } while (rerun && !closing);
      } catch (err) {
        logger?.error({ err }, 'webhook delivery pass failed');
      } finally {
        running = undefined;
      }
      return total;
    })();
    return running;
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      timer = undefined;
      void runOnce().finally(schedule);
    }, options.pollIntervalMs);
    timer.unref();
  }

  return {
    start() {
      if (!stopped || closing) return;
      stopped = false;
      unsubscribe = events.onRecorded(() => {
        if (!stopped) void runOnce();
      });
      void runOnce();
      schedule();
    },
    async stop() {
      stopped = true;
      closing = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      unsubscribe?.();
      unsubscribe = undefined;
      for (const c of inFlight) c.abort();
      if (running) await running;
      await agent.close().catch(() => undefined);
    },
    runOnce,
    list(filter = {}) {
      const where: string[] = [];
      const args: string[] = [];
      if (filter.eventId) {
        where.push('d.event_id = ?');
        args.push(filter.eventId);
      }
      if (filter.webhookId) {
        where.push('d.webhook_id = ?');
        args.push(filter.webhookId);
      }
      if (filter.state) {
        where.push('d.state = ?');
        args.push(filter.state);
      }
      const rows = db
        .prepare(
          `SELECT d.*, e.type AS event_type FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
           ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY d.event_seq DESC, d.webhook_id`,
        )
        .all(...args) as Array<DeliveryRow & { event_type: string }>;
      return rows.map((r) => ({
        eventId: r.event_id,
        eventType: r.event_type,
        webhookId: r.webhook_id,
        state: r.state,
        attempts: r.attempts,
        nextAttemptAt: r.state === 'pending' ? new Date(r.next_attempt_at).toISOString() : null,
        lastStatus: r.last_status,
        lastError: r.last_error,
        deliveredAt: r.delivered_at,
      }));
    },
  };
}
