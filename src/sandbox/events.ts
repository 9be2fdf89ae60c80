/**
 * Events the sandbox causes (CHARGE_PAID, PIX_RECEIVED, CHARGE_EXPIRED, ...), recorded in the `events` table for the
 * webhook delivery (src/sandbox/webhook-delivery.ts) to send.
 *
 * What must hold: an event is recorded in the same SQLite transaction as the state change that causes it (call
 * `record` inside the caller's `db.transaction`), so a committed change always has its event and a rolled-back one
 * never does. The event id is a UUID fixed at recording time: receivers use it to drop duplicates.
 * Listeners run after the current synchronous work (setImmediate), i.e. after the caller's transaction committed.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from './clock.js';
import type { SandboxDb } from './db.js';

export interface SandboxEvent {
  /** Stable event id (UUID). */
  id: string;
  /** Order of recording, strictly increasing. */
  seq: number;
  /** Event type of spec section 6, or a sandbox type such as CHARGE_EXPIRED (see docs/service-gaps.md). */
  type: string;
  /** The event's data (shape per type, see docs/service-gaps.md "Webhooks and events"). */
  payload: Record<string, unknown>;
  /** ISO 8601 UTC with milliseconds. */
  occurredAt: string;
}

export type EventListener = (event: SandboxEvent) => void;

export interface EventLog {
  /** Records an event; call inside the transaction that makes the change. */
  record(type: string, payload: Record<string, unknown>, at?: Date): SandboxEvent;
  /** Events after `afterSeq` (exclusive), oldest first, optionally of one type. */
  list(filter?: { afterSeq?: number; type?: string; limit?: number }): SandboxEvent[];
  /** One event by id. */
  get(id: string): SandboxEvent | undefined;
  /** Called for each event recorded from now on, after the recording transaction. Returns an unsubscribe function. */
  onRecorded(listener: EventListener): () => void;
}

interface EventRow {
  seq: number;
  id: string;
  type: string;
  payload: string;
  occurred_at: string;
}

function fromRow(row: EventRow): SandboxEvent {
  return {
    id: row.id,
    seq: row.seq,
    type: row.type,
    payload: JSON.parse(row.payload) as Record<string, unknown>,
    occurredAt: row.occurred_at,
  };
}

export function createEventLog(db: SandboxDb, clock: Clock): EventLog {
  const insert = db.prepare('INSERT INTO events (id, type, payload, occurred_at) VALUES (?, ?, ?, ?)');
  const byId = db.prepare('SELECT * FROM events WHERE id = ?');
  const listeners = new Set<EventListener>();
  return {
    record(type, payload, at) {
      const id = randomUUID();
      const occurredAt = (at ?? clock.now()).toISOString();
      const info = insert.run(id, type, JSON.stringify(payload), occurredAt);
      const event: SandboxEvent = { id, seq: Number(info.lastInsertRowid), type, payload, occurredAt };
      if (listeners.size > 0) {
        setImmediate(() => {
          // Only announce events whose transaction committed (and not after the sandbox closed).
          if (!db.open || !byId.get(id)) return;
          for (const l of listeners) l(event);
        });
      }
      return event;
    },
    list(filter = {}) {
      const rows = db
        .prepare(`SELECT * FROM events WHERE seq > ? ${filter.type ? 'AND type = ?' : ''} ORDER BY seq LIMIT ?`)
        .all(
          ...(filter.type
            ? [filter.afterSeq ?? 0, filter.type, filter.limit ?? -1]
            : [filter.afterSeq ?? 0, filter.limit ?? -1]),
        ) as EventRow[];
      return rows.map(fromRow);
    },
    get(id) {
      const row = byId.get(id) as EventRow | undefined;
      return row ? fromRow(row) : undefined;
    },
    onRecorded(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
