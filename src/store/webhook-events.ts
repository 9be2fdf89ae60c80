/**
 * The bank's webhook events as remessa received them: table `webhook_events` (migration 007).
 *
 * The contract between the receiver (src/webhooks/receiver.ts, which writes) and the retorno (which applies):
 *
 *     (bank delivers) --insert-if-absent--> stored (applied_at NULL) --markApplied--> applied (applied_at set)
 *                     \--id already here--> ignored (the row is not touched: first delivery wins)
 *
 * What must hold:
 * - An event is on disk before the receiver answers 2xx: `insertWebhookEvent` is one statement, committed on its own
 *   and durably (SQLite synchronous=FULL, PostgreSQL synchronous_commit=on) before its promise resolves. Never call
 *   it inside a grouped write that may be committed with `durable: false`.
 * - One row per event id, whatever the number of deliveries; the receiver never changes a stored row.
 * - `applied_at` goes from NULL to a time once; marking an applied event again changes nothing.
 * - Events come in any order and may concern things remessa did not create: every one is kept. Unapplied events are
 *   listed in the order they happened (`occurred_at`), then by the time received, then by id (the tie-break both
 *   engines have: SQLite's rowid has no PostgreSQL twin), not in the order they arrived.
 */
import { utcInstant } from '../formats/dates.js';
import type { Store } from './store.js';

/** What the receiver stores for one event. */
export interface NewWebhookEvent {
  /** The bank's stable event id. */
  id: string;
  /** Event type, e.g. CHARGE_PAID. */
  type: string;
  correlationId?: string | null | undefined;
  endToEndId?: string | null | undefined;
  claimId?: string | null | undefined;
  ourNumber?: string | null | undefined;
  /** Pix payment id (PIX_PAYMENT_UPDATED). */
  paymentId?: string | null | undefined;
  txid?: string | null | undefined;
  /** When it happened by the bank's clock (ISO 8601), as sent. */
  occurredAt?: string | null | undefined;
  /** When remessa received it (ISO 8601 UTC). */
  receivedAt: string;
  /** The registration it came through (`x-webhook-id`). */
  webhookId?: string | null | undefined;
  /** The request body as received: JSON text of the envelope. */
  payload: string;
}

/** One stored event. */
export interface WebhookEventRecord {
  id: string;
  type: string;
  correlationId: string | null;
  endToEndId: string | null;
  claimId: string | null;
  ourNumber: string | null;
  paymentId: string | null;
  txid: string | null;
  occurredAt: string | null;
  receivedAt: string;
  webhookId: string | null;
  /** The body as received (JSON text); `JSON.parse` it, or use `parseWebhookEnvelope` (src/webhooks/events.ts). */
  payload: string;
  appliedAt: string | null;
}

interface WebhookEventSql {
  id: string;
  event_type: string;
  correlation_id: string | null;
  end_to_end_id: string | null;
  claim_id: string | null;
  our_number: string | null;
  payment_id: string | null;
  txid: string | null;
  occurred_at: string | null;
  received_at: string;
  webhook_id: string | null;
  payload: string;
  applied_at: string | null;
}

function toRecord(r: WebhookEventSql): WebhookEventRecord {
  return {
    id: r.id,
    type: r.event_type,
    correlationId: r.correlation_id,
    endToEndId: r.end_to_end_id,
    claimId: r.claim_id,
    ourNumber: r.our_number,
    paymentId: r.payment_id,
    txid: r.txid,
    occurredAt: r.occurred_at,
    receivedAt: r.received_at,
    webhookId: r.webhook_id,
    payload: r.payload,
    appliedAt: r.applied_at,
  };
}

/**
 * Stores an event unless its id is already stored. Returns true when stored now, false when the id was already there
 * (the stored row is left as it was). Committed, durably, when it resolves (a statement on its own).
 */
export async function insertWebhookEvent(store: Store, event: NewWebhookEvent): Promise<boolean> {
  const info = await store.sql.run(
    `INSERT INTO webhook_events (id, event_type, correlation_id, end_to_end_id, claim_id, our_number, payment_id,
       txid, occurred_at, received_at, webhook_id, payload)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (id) DO NOTHING`,
    [
      event.id,
      event.type,
      event.correlationId ?? null,
      event.endToEndId ?? null,
      event.claimId ?? null,
      event.ourNumber ?? null,
      event.paymentId ?? null,
      event.txid ?? null,
      // As a UTC instant: the order of events is the order of this text (WEBHOOK_EVENT_ORDER).
      utcInstant(event.occurredAt) ?? null,
      event.receivedAt,
      event.webhookId ?? null,
      event.payload,
    ],
  );
  return info.changes === 1;
}

/** One stored event by id. */
export async function getWebhookEvent(store: Store, id: string): Promise<WebhookEventRecord | undefined> {
  const row = await store.sql.get<WebhookEventSql>('SELECT * FROM webhook_events WHERE id = ?', [id]);
  return row ? toRecord(row) : undefined;
}

/** The order events happened in (see the top): the same text on both engines. */
export const WEBHOOK_EVENT_ORDER = 'COALESCE(occurred_at, received_at), received_at, id';

/** ` LIMIT ?` and its value when a limit is given (SQLite's `LIMIT -1` for "all" is not PostgreSQL's). */
function limitClause(limit: number | undefined): { sql: string; params: number[] } {
  return limit === undefined ? { sql: '', params: [] } : { sql: ' LIMIT ?', params: [limit] };
}

/**
 * Events not yet applied, in the order they happened (`occurred_at`, events without one by their reception time),
 * then in the order received. At most `limit` (default: all).
 */
export async function listUnappliedWebhookEvents(
  store: Store,
  options: { limit?: number } = {},
): Promise<WebhookEventRecord[]> {
  const limit = limitClause(options.limit);
  const rows = await store.sql.all<WebhookEventSql>(
    `SELECT * FROM webhook_events WHERE applied_at IS NULL ORDER BY ${WEBHOOK_EVENT_ORDER}${limit.sql}`,
    limit.params,
  );
  return rows.map(toRecord);
}

/** Every stored event, in the order they happened, then received. At most `limit` (default: all). */
export async function listWebhookEvents(store: Store, options: { limit?: number } = {}): Promise<WebhookEventRecord[]> {
  const limit = limitClause(options.limit);
  const rows = await store.sql.all<WebhookEventSql>(
    `SELECT * FROM webhook_events ORDER BY ${WEBHOOK_EVENT_ORDER}${limit.sql}`,
    limit.params,
  );
  return rows.map(toRecord);
}

/** Every stored event about one correlationId, in the order they happened. */
export async function listWebhookEventsByCorrelationId(
  store: Store,
  correlationId: string,
): Promise<WebhookEventRecord[]> {
  const rows = await store.sql.all<WebhookEventSql>(
    `SELECT * FROM webhook_events WHERE correlation_id = ? ORDER BY ${WEBHOOK_EVENT_ORDER}`,
    [correlationId],
  );
  return rows.map(toRecord);
}

/**
 * Marks events applied at `at` (default now). Events already applied keep their first time. Returns how many changed.
 * Call it in the same transaction as the state change the events caused (on that transaction's view of the store),
 * so both land or neither does.
 */
export function markWebhookEventsApplied(
  store: Store,
  ids: readonly string[],
  at: string = new Date().toISOString(),
): Promise<number> {
  return store.transaction(async (s) => {
    let changed = 0;
    for (const id of ids) {
      changed += (
        await s.sql.run('UPDATE webhook_events SET applied_at = ? WHERE id = ? AND applied_at IS NULL', [at, id])
      ).changes;
    }
    return changed;
  });
}

/** How many events are stored, and how many of them wait to be applied. */
export async function countWebhookEvents(store: Store): Promise<{ total: number; unapplied: number }> {
  const row = await store.sql.get<{ total: number; unapplied: number }>(
    `SELECT COUNT(*) AS total, COALESCE(SUM(CASE WHEN applied_at IS NULL THEN 1 ELSE 0 END), 0) AS unapplied
     FROM webhook_events`,
  );
  return { total: row!.total, unapplied: row!.unapplied };
}
