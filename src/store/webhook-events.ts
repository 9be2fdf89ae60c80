/**
 * The bank's webhook events as remessa received them: table `webhook_events` (migration 007).
 *
 * The contract between the receiver (src/webhooks/receiver.ts, which writes) and the retorno (which applies):
 *
 *     (bank delivers) --insert-if-absent--> stored (applied_at NULL) --markApplied--> applied (applied_at set)
 *                     \--id already here--> ignored (the row is not touched: first delivery wins)
 *
 * What must hold:
 * - An event is on disk before the receiver answers 2xx: `insertWebhookEvent` is one synchronous statement, committed
 *   on its own on a `synchronous = FULL` connection (src/store/db.ts). Never call it inside a grouped write that may
 *   be committed with NORMAL.
 * - One row per event id, whatever the number of deliveries; the receiver never changes a stored row.
 * - `applied_at` goes from NULL to a time once; marking an applied event again changes nothing.
 * - Events come in any order and may concern things remessa did not create: every one is kept. Unapplied events are
 *   listed in the order they happened (`occurred_at`, then the order received), not in the order they arrived.
 */
import type { SqliteDatabase } from './db.js';

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
 * (the stored row is left as it was). Committed when it returns (autocommit on a FULL connection).
 */
export function insertWebhookEvent(db: SqliteDatabase, event: NewWebhookEvent): boolean {
  const info = db
    .prepare(
      `INSERT INTO webhook_events (id, event_type, correlation_id, end_to_end_id, claim_id, our_number, payment_id,
         txid, occurred_at, received_at, webhook_id, payload)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO NOTHING`,
    )
    .run(
      event.id,
      event.type,
      event.correlationId ?? null,
      event.endToEndId ?? null,
      event.claimId ?? null,
      event.ourNumber ?? null,
      event.paymentId ?? null,
      event.txid ?? null,
      event.occurredAt ?? null,
      event.receivedAt,
      event.webhookId ?? null,
      event.payload,
    );
  return info.changes === 1;
}

/** One stored event by id. */
export function getWebhookEvent(db: SqliteDatabase, id: string): WebhookEventRecord | undefined {
  const row = db.prepare('SELECT * FROM webhook_events WHERE id = ?').get(id) as WebhookEventSql | undefined;
  return row ? toRecord(row) : undefined;
}

/**
 * Events not yet applied, in the order they happened (`occurred_at`, events without one by their reception time),
 * then in the order received. At most `limit` (default: all).
 */
export function listUnappliedWebhookEvents(db: SqliteDatabase, options: { limit?: number } = {}): WebhookEventRecord[] {
  const rows = db
    .prepare(
      `SELECT * FROM webhook_events WHERE applied_at IS NULL
       ORDER BY COALESCE(occurred_at, received_at), rowid LIMIT ?`,
    )
    .all(options.limit ?? -1) as WebhookEventSql[];
  return rows.map(toRecord);
}

/** Every stored event, in the order they happened, then received. At most `limit` (default: all). */
export function listWebhookEvents(db: SqliteDatabase, options: { limit?: number } = {}): WebhookEventRecord[] {
  const rows = db
    .prepare('SELECT * FROM webhook_events ORDER BY COALESCE(occurred_at, received_at), rowid LIMIT ?')
    .all(options.limit ?? -1) as WebhookEventSql[];
  return rows.map(toRecord);
}

/** Every stored event about one correlationId, in the order they happened. */
export function listWebhookEventsByCorrelationId(db: SqliteDatabase, correlationId: string): WebhookEventRecord[] {
  const rows = db
    .prepare(`SELECT * FROM webhook_events WHERE correlation_id = ? ORDER BY COALESCE(occurred_at, received_at), rowid`)
    .all(correlationId) as WebhookEventSql[];
  return rows.map(toRecord);
}

/**
 * Marks events applied at `at` (default now). Events already applied keep their first time. Returns how many changed.
 * Call it in the same transaction as the state change the events caused, so both land or neither does.
 */
export function markWebhookEventsApplied(
  db: SqliteDatabase,
  ids: readonly string[],
  at: string = new Date().toISOString(),
): number {
  const stmt = db.prepare('UPDATE webhook_events SET applied_at = ? WHERE id = ? AND applied_at IS NULL');
  let changed = 0;
  db.transaction(() => {
    for (const id of ids) changed += stmt.run(at, id).changes;
  })();
  return changed;
}

/** How many events are stored, and how many of them wait to be applied. */
export function countWebhookEvents(db: SqliteDatabase): { total: number; unapplied: number } {
  const row = db
    .prepare(
      `SELECT COUNT(*) AS total, COALESCE(SUM(CASE WHEN applied_at IS NULL THEN 1 ELSE 0 END), 0) AS unapplied
       FROM webhook_events`,
    )
    .get() as { total: number; unapplied: number };
  return { total: row.total, unapplied: row.unapplied };
}
