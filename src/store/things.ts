/**
 * The things remessa created at the bank, and what the bank did with them afterwards (the retorno, issue 11 §2-3):
 * tables `things`, `thing_changes` and `thing_rows_seen` (migration 008).
 *
 * A **thing** is a charge, a QR code, a Pix QR payment, a bill payment or a key claim that a row created, or a Pix
 * received on a static QR code a row created (a static code is reusable and never changes status itself: each Pix
 * received on it is a thing of its own, `pix-received`, keyed by its endToEndId, ACTIVE -> RECEIVED). Things are
 * derived lazily from succeeded rows (`syncThingsFromRows`, called before every application of events and every
 * reconciliation): the row's success is already stored durably by the engine, so nothing on the hot path of a run
 * changes, a crash between a row's success and its thing loses nothing, and rows that succeeded before this table
 * existed are picked up too. Two kinds of succeeded row change a thing instead of creating one: a charge-voids row
 * (the void it made is a change of the charge: no event reports voids), and a charge-updates row (the charge's Seu
 * número, payer and amount become those it set, for the lines made from then on, and the status its confirming read
 * answered is observed: an Expired slip given a new due date is Pending again).
 *
 * THING STATUS (per thing; the bank's own status names)
 *
 *   (row succeeded) ──► S0 = the status the row's answer carried (Pending, Created, PIX_PROCESSING, PENDING, ...)
 *   S ──observation of S' ≠ S, S not final, not older than S began──► S'   (one `thing_changes` line)
 *   S ──observation of S (the same status)───────────────────────────► S    (merged into the line that set S: its
 *                                                                              event ids and missing amounts added)
 *   S final ──any other observation──► S  (ignored: `stale`)
 *   S ──observation that happened before S began (out of order)──► S  (ignored: `stale`; events delivered out of
 *                                                                    order are first given time to settle: "ORDER"
 *                                                                    in src/runner/retorno.ts)
 *   S ≠ payment ──observation of a payment (charge Paid, QR code CONCLUDED), whenever it happened──► payment
 *      (money came in: a payment told after an expiry, or after a void that did not undo it, is never ignored)
 *
 *   Final statuses: charge Paid, Voided (and Canceled/Cancelled/WrittenOff); QR code CONCLUDED; Pix payment anything
 *   but PIX_PROCESSING/PROCESSING/PENDING/SCHEDULED; bill payment anything but SCHEDULED/PENDING/PROCESSING (PAID,
 *   or FAILED when its date came and it could not go through); claim COMPLETED, CANCELED/CANCELLED; a Pix received
 *   RECEIVED. A static QR code has no final status (it stays ACTIVE; only its Pix received change).
 *   An observation comes from a webhook event (`event`), from reconciliation (`reconcile`), or from a succeeded void
 *   or update row (`row`). Whichever comes first makes the line; the others only complete it.
 *
 * UNSETTLED: something remessa asked of the bank whose final outcome the bank has not told yet: a Pix QR payment
 * still PIX_PROCESSING, a bill payment still SCHEDULED (reconciliation looks it up by id), a key claim not yet
 * COMPLETED or CANCELED (reconciliation finds it by search). An open charge or QR code waits for its payer, not for
 * the bank, and is not unsettled. `remessa status` lists unsettled things. The metric
 * `remessa_retorno_oldest_unsettled_seconds` is how long the bank has owed the oldest its outcome: counted from its
 * `due_at` (migration 011: a scheduled payment's payAt, a claim's resolutionDeadline), else from its creation, so a
 * payment scheduled for next month or a claim within its 7 days does not look late.
 *
 * RULES THAT MUST ALWAYS HOLD
 * 1. One line per change of a thing, whichever source told it and however many events told it (a Pix charge paid
 *    sends CHARGE_PAID and PIX_RECEIVED: one line with both event ids).
 * 2. A final status is never left; an observation older than the current status never overrides it. The one
 *    exception is a payment (`isPaymentStatus`): it leaves any other status, final (Voided) or newer (Expired).
 * 3. An event is marked applied in the same transaction as the change it made (so both land or neither does).
 * 4. A line's day is the Brasília day remessa learned the change: a day's retorno file only grows, and a past day's
 *    file changes only when a later source completes one of its lines (an event id or an amount). A line keeps the
 *    Seu número, payer and amount of its thing when it was made (`thing_changes.your_number`, payer_*,
 *    amount_cents): a later charge-updates row changes the lines to come, not those written.
 * 5. Every line added or completed raises its day's version in the same transaction (`retorno_days`); a day whose
 *    version is above the version last written is written again by the next pass, so a crash between a change and
 *    its file never leaves the file behind for good.
 */
import { brasiliaDay } from '../formats/brasilia-time.js';
import { utcInstant } from '../formats/dates.js';
import type { Cents } from '../types.js';
import { decodeNullable } from './outputs-codec.js';
import type { SqlParam } from './sql.js';
import type { Store } from './store.js';
import { WEBHOOK_EVENT_ORDER } from './webhook-events.js';

export const THING_KINDS = [
  'charge',
  'qr-code',
  'pix-payment',
  'bill-payment',
  'claim',
  // A static QR code (reusable: it never changes status) and each Pix received on one (migration 011).
  'static-qr-code',
  'pix-received',
] as const;
export type ThingKind = (typeof THING_KINDS)[number];

export type ObservationSource = 'event' | 'reconcile' | 'row';

/** Amounts of a change, in cents (absent: the source does not tell). */
export interface ChangeAmounts {
  paidCents?: Cents | undefined;
  discountCents?: Cents | undefined;
  interestCents?: Cents | undefined;
  fineCents?: Cents | undefined;
}

/** What one source says about one thing's status. */
export interface Observation extends ChangeAmounts {
  kind: ThingKind;
  key: string;
  status: string;
  /** When it happened (ISO 8601), by the bank's clock. */
  occurredAt: string;
  source: ObservationSource;
  eventId?: string | undefined;
  payerName?: string | undefined;
  payerDocument?: string | undefined;
}

/** What an observation did: a new line, completed the line of the same status, nothing (stale/same), or no thing. */
export type ObservationResult = 'changed' | 'merged' | 'same' | 'stale' | 'foreign';

export interface ThingRecord {
  id: number;
  kind: ThingKind;
  key: string;
  correlationId: string | null;
  endToEndId: string | null;
  claimId: string | null;
  yourNumber: string | null;
  ourNumber: string | null;
  batchId: string;
  line: number;
  amountCents: Cents | null;
  payerName: string | null;
  payerDocument: string | null;
  status: string;
  statusAt: string | null;
  /** When the bank owes its final status (see "UNSETTLED"); null: from its creation. */
  dueAt: string | null;
  settled: boolean;
  final: boolean;
  createdAt: string;
  updatedAt: string;
}

/** One line of a retorno file: a change, with its thing and the file that created it. */
export interface ThingChangeLine extends ChangeAmounts {
  seq: number;
  day: string;
  kind: ThingKind;
  /** The thing's identity at the bank (see `ThingRecord.key`: a bill payment's id, ...). */
  key: string;
  correlationId: string | null;
  endToEndId: string | null;
  claimId: string | null;
  yourNumber: string | null;
  ourNumber: string | null;
  batchId: string;
  fileName: string;
  line: number;
  dialect: string;
  oldStatus: string;
  newStatus: string;
  occurredAt: string;
  recordedAt: string;
  source: ObservationSource;
  eventIds: string[];
  payerName: string | null;
  payerDocument: string | null;
  /** What the thing asked for when the line was made (a charge's amount, a payment's); absent: not known. */
  amountCents?: Cents | undefined;
}

const CHARGE_FINAL = new Set(['paid', 'voided', 'canceled', 'cancelled', 'writtenoff']);
const PIX_PAYMENT_OPEN = new Set(['pix_processing', 'processing', 'pending', 'scheduled']);
const BILL_PAYMENT_OPEN = new Set(['scheduled', 'pending', 'processing']);
const CLAIM_FINAL = new Set(['completed', 'canceled', 'cancelled']);

/** Whether `status` is final for `kind` (never left again). */
export function isFinalStatus(kind: ThingKind, status: string): boolean {
  const s = status.toLowerCase();
  switch (kind) {
    case 'charge':
      return CHARGE_FINAL.has(s);
    case 'qr-code':
      return s === 'concluded';
    case 'pix-payment':
      return !PIX_PAYMENT_OPEN.has(s);
    case 'bill-payment':
      return !BILL_PAYMENT_OPEN.has(s);
    case 'claim':
      return CLAIM_FINAL.has(s);
    case 'static-qr-code':
      return false;
    case 'pix-received':
      return s === 'received';
  }
}

/**
 * Whether `status` says the payer paid a thing of `kind` (a charge Paid, a dynamic QR code CONCLUDED): money that
 * came in. Such an observation is never stale (rule 2's exception): a payment the bank tells after the thing expired
 * or was voided (a void does not undo a payment already made, spec 3) still makes its line.
 */
export function isPaymentStatus(kind: ThingKind, status: string): boolean {
  const s = status.toLowerCase();
  return (kind === 'charge' && s === 'paid') || (kind === 'qr-code' && s === 'concluded');
}

/** Whether the bank still owes a final outcome for a thing of `kind` in `status` (see "UNSETTLED" above). */
export function isUnsettled(kind: ThingKind, status: string): boolean {
  return (kind === 'pix-payment' || kind === 'bill-payment' || kind === 'claim') && !isFinalStatus(kind, status);
}

interface ThingSql {
  id: number;
  kind: ThingKind;
  key: string;
  correlation_id: string | null;
  end_to_end_id: string | null;
  claim_id: string | null;
  your_number: string | null;
  our_number: string | null;
  batch_id: string;
  line: number;
  amount_cents: number | null;
  payer_name: string | null;
  payer_document: string | null;
  status: string;
  status_at: string | null;
  due_at: string | null;
  settled: number;
  final: number;
  created_at: string;
  updated_at: string;
}

function toThing(r: ThingSql): ThingRecord {
  return {
    id: r.id,
    kind: r.kind,
    key: r.key,
    correlationId: r.correlation_id,
    endToEndId: r.end_to_end_id,
    claimId: r.claim_id,
    yourNumber: r.your_number,
    ourNumber: r.our_number,
    batchId: r.batch_id,
    line: r.line,
    amountCents: r.amount_cents,
    payerName: r.payer_name,
    payerDocument: r.payer_document,
    status: r.status,
    statusAt: r.status_at,
    dueAt: r.due_at,
    settled: r.settled === 1,
    final: r.final === 1,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/** A new thing, as derived from its row. */
export interface NewThing {
  kind: ThingKind;
  key: string;
  correlationId?: string | null | undefined;
  endToEndId?: string | null | undefined;
  claimId?: string | null | undefined;
  yourNumber?: string | null | undefined;
  ourNumber?: string | null | undefined;
  batchId: string;
  line: number;
  amountCents?: Cents | null | undefined;
  payerName?: string | null | undefined;
  payerDocument?: string | null | undefined;
  status: string;
  /** When the row succeeded. */
  createdAt: string;
  /** When the bank owes its final status (a scheduled payment's payAt, a claim's deadline); absent: createdAt. */
  dueAt?: string | null | undefined;
}

/**
 * A charge as a succeeded charge-updates row left it at the bank: the values it set (absent: unchanged) and the
 * status its confirming read answered (an Expired slip given a new due date is payable again).
 */
export interface ChargeUpdate {
  correlationId: string;
  yourNumber?: string | undefined;
  payerName?: string | undefined;
  payerDocument?: string | undefined;
  amountCents?: Cents | undefined;
  status?: string | undefined;
  /** When remessa stored the row's answer. */
  at: string;
}

/** What the lazy derivation makes of one succeeded row: a thing, a void or an update of a charge, or nothing. */
export type RowDerivation =
  | { thing: NewThing }
  | { void: { correlationId: string; status: string; at: string } }
  | { update: ChargeUpdate }
  | null;

export interface SucceededRow {
  batchId: string;
  line: number;
  kind: string;
  parsed: unknown;
  outputs: Record<string, unknown>;
  amountCents: Cents | null;
  updatedAt: string;
}

export interface ThingsOptions {
  /** Clock, for tests. @defaultValue () => new Date() */
  now?: () => Date;
}

/**
 * The things' state in remessa's store. Every method that writes runs in its own transaction (a savepoint when the
 * Things is bound to a transaction's view of the store: `transaction(fn)`).
 */
export class Things {
  /** The store, or the view of it bound to a transaction. */
  readonly store: Store;
  readonly #options: ThingsOptions;
  readonly #now: () => Date;

  constructor(store: Store, options: ThingsOptions = {}) {
    this.store = store;
    this.#options = options;
    this.#now = options.now ?? (() => new Date());
  }

  /** Runs fn in one transaction, with the things bound to it; fn awaits only the calls of the Things it is given. */
  transaction<T>(fn: (things: Things) => Promise<T>): Promise<T> {
    return this.store.transaction((s) => fn(new Things(s, this.#options)));
  }

  /**
   * Turns succeeded rows not looked at yet into things (and voids into changes of their charge), at most `limit` rows
   * per call, oldest first; returns the days whose retorno gained a line. `derive` says what a row makes.
   */
  async syncFromRows(
    derive: (row: SucceededRow) => RowDerivation,
    limit = 5_000,
  ): Promise<{ rows: number; days: Set<string> }> {
    const days = new Set<string>();
    const rows = await this.unseenRows(limit);
    await this.transaction(async (t) => {
      for (const r of rows) {
        const derived = derive(r);
        if (derived && 'thing' in derived) await t.#insertThing(derived.thing);
        else if (derived && 'void' in derived) {
          const result = await t.#observe({
            kind: 'charge',
            key: derived.void.correlationId,
            status: derived.void.status,
            occurredAt: derived.void.at,
            source: 'row',
          });
          if (result.day) days.add(result.day);
        } else if (derived && 'update' in derived) {
          const day = await t.#updateCharge(derived.update);
          if (day) days.add(day);
        }
        await t.store.sql.run(
          'INSERT INTO thing_rows_seen (batch_id, line) VALUES (?, ?) ON CONFLICT (batch_id, line) DO NOTHING',
          [r.batchId, r.line],
        );
      }
    });
    return { rows: rows.length, days };
  }

  /**
   * A charge-updates row's change: the charge's Seu número, payer and amount become the ones the bank now holds (the
   * lines made from now on carry them; lines already made keep theirs), and the status the row read is observed.
   */
  async #updateCharge(u: ChargeUpdate): Promise<string | undefined> {
    await this.store.sql.run(
      `UPDATE things SET your_number = COALESCE(?, your_number), payer_name = COALESCE(?, payer_name),
         payer_document = COALESCE(?, payer_document), amount_cents = COALESCE(?, amount_cents), updated_at = ?
       WHERE kind = 'charge' AND key = ?`,
      [
        u.yourNumber ?? null,
        u.payerName ?? null,
        u.payerDocument ?? null,
        u.amountCents ?? null,
        this.#now().toISOString(),
        u.correlationId,
      ],
    );
    if (u.status === undefined) return undefined;
    const r = await this.#observe({
      kind: 'charge',
      key: u.correlationId,
      status: u.status,
      occurredAt: u.at,
      source: 'row',
    });
    return r.day;
  }

  /** Succeeded rows not turned into things yet, oldest first (read only). */
  async unseenRows(limit = 5_000): Promise<SucceededRow[]> {
    const rows = await this.store.sql.all<{
      batch_id: string;
      line: number;
      kind: string;
      cells: string | null;
      parsed: string | null;
      outputs: string | null;
      amount_cents: number | null;
      updated_at: string;
    }>(
      `SELECT b.id AS batch_id, r.line, b.kind, r.cells, r.parsed, r.outputs, r.amount_cents, r.updated_at
       FROM rows r JOIN batches b ON b.batch_no = r.batch_no
       WHERE r.state = 'succeeded'
         AND NOT EXISTS (SELECT 1 FROM thing_rows_seen s WHERE s.batch_id = b.id AND s.line = r.line)
       ORDER BY r.updated_at, b.id, r.line LIMIT ?`,
      [limit],
    );
    return rows.map((r) => ({
      batchId: r.batch_id,
      line: r.line,
      kind: r.kind,
      // Either stored form (src/store/outputs-codec.ts); a compact parsed row may refer to the row's cells.
      parsed: decodeNullable(r.parsed, r.cells === null ? null : (JSON.parse(r.cells) as string[])),
      outputs: decodeNullable(r.outputs) ?? {},
      amountCents: r.amount_cents,
      updatedAt: r.updated_at,
    }));
  }

  /** Records a thing that no row makes (a Pix received on a static QR code); false when it is already recorded. */
  insert(t: NewThing): Promise<boolean> {
    return this.#insertThing(t);
  }

  async #insertThing(t: NewThing): Promise<boolean> {
    const now = this.#now().toISOString();
    const info = await this.store.sql.run(
      `INSERT INTO things (kind, key, correlation_id, end_to_end_id, claim_id, your_number, our_number, batch_id,
         line, amount_cents, payer_name, payer_document, status, status_at, due_at, settled, final, created_at,
         updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?)
       ON CONFLICT (kind, key) DO NOTHING`,
      [
        t.kind,
        t.key,
        t.correlationId ?? null,
        t.endToEndId ?? null,
        t.claimId ?? null,
        t.yourNumber ?? null,
        t.ourNumber ?? null,
        t.batchId,
        t.line,
        t.amountCents ?? null,
        t.payerName ?? null,
        t.payerDocument ?? null,
        t.status,
        t.dueAt ?? null,
        isUnsettled(t.kind, t.status) ? 0 : 1,
        isFinalStatus(t.kind, t.status) ? 1 : 0,
        t.createdAt,
        now,
      ],
    );
    return info.changes === 1;
  }

  async get(kind: ThingKind, key: string): Promise<ThingRecord | undefined> {
    const r = await this.store.sql.get<ThingSql>('SELECT * FROM things WHERE kind = ? AND key = ?', [kind, key]);
    return r && toThing(r);
  }

  /**
   * Applies one observation (the state machine at the top of this file). `markEvents` are marked applied in the same
   * transaction. Returns what it did and the retorno day whose file must be written again (when a line was added or
   * completed).
   */
  observe(
    obs: Observation,
    markEvents: readonly string[] = [],
  ): Promise<{ result: ObservationResult; day: string | undefined }> {
    return this.transaction(async (t) => {
      const out = await t.#observe(obs);
      await t.markEventsApplied(markEvents);
      return out;
    });
  }

  /** Marks webhook events applied (rule 3: call inside the transaction of the change they made). */
  async markEventsApplied(ids: readonly string[]): Promise<void> {
    const at = this.#now().toISOString();
    for (const id of ids) {
      await this.store.sql.run('UPDATE webhook_events SET applied_at = ? WHERE id = ? AND applied_at IS NULL', [
        at,
        id,
      ]);
    }
  }

  async #observe(told: Observation): Promise<{ result: ObservationResult; day: string | undefined }> {
    // Times are compared and written as text: a source's zone (a bank writing -03:00) is made UTC first.
    const obs = { ...told, occurredAt: utcInstant(told.occurredAt) ?? this.#now().toISOString() };
    // Locked until the change is written (PostgreSQL; ./store.ts `forUpdate`): an observation of the same thing
    // running side by side waits, then compares with what this one wrote.
    const locked = await this.store.sql.get<ThingSql>(
      `SELECT * FROM things WHERE kind = ? AND key = ?${this.store.forUpdate}`,
      [obs.kind, obs.key],
    );
    const thing = locked && toThing(locked);
    if (!thing) return { result: 'foreign', day: undefined };
    const now = this.#now();
    const nowIso = now.toISOString();
    if (sameStatus(obs.status, thing.status)) {
      const last = await this.store.sql.get<ChangeSql>(
        'SELECT * FROM thing_changes WHERE thing_id = ? ORDER BY seq DESC LIMIT 1',
        [thing.id],
      );
      if (!last || !sameStatus(last.new_status, thing.status)) return { result: 'same', day: undefined };
      const ids = JSON.parse(last.event_ids) as string[];
      const addId = obs.eventId !== undefined && !ids.includes(obs.eventId);
      const fills: Array<[string, unknown, unknown]> = [
        ['paid_cents', last.paid_cents, obs.paidCents],
        ['discount_cents', last.discount_cents, obs.discountCents],
        ['interest_cents', last.interest_cents, obs.interestCents],
        ['fine_cents', last.fine_cents, obs.fineCents],
        ['payer_name', last.payer_name, obs.payerName],
        ['payer_document', last.payer_document, obs.payerDocument],
      ];
      const sets: string[] = [];
      const params: SqlParam[] = [];
      for (const [column, had, given] of fills) {
        if ((had === null || had === undefined) && given !== undefined && given !== null && given !== '') {
          sets.push(`${column} = ?`);
          params.push(given as SqlParam);
        }
      }
      if (addId) {
        sets.push('event_ids = ?');
        params.push(JSON.stringify([...ids, obs.eventId]));
      }
      // A void row tells when remessa saw the void answered; the bank's own time, when a later source has it, wins.
      if (last.source === 'row' && obs.source !== 'row' && obs.occurredAt !== last.occurred_at) {
        sets.push('occurred_at = ?');
        params.push(obs.occurredAt);
      }
      if (sets.length === 0) return { result: 'same', day: undefined };
      sets.push('updated_at = ?');
      params.push(nowIso);
      await this.store.sql.run(`UPDATE thing_changes SET ${sets.join(', ')} WHERE seq = ?`, [...params, last.seq]);
      await this.#touchDay(last.day);
      return { result: 'merged', day: last.day };
    }
    // A payment is money received: told late (after an expiry, or a void that does not undo it), it is still a line.
    const payment = isPaymentStatus(thing.kind, obs.status);
    if (thing.final && !payment) return { result: 'stale', day: undefined };
    if (!payment && thing.statusAt !== null && Date.parse(obs.occurredAt) < Date.parse(thing.statusAt)) {
      return { result: 'stale', day: undefined };
    }
    const day = brasiliaDay(now);
    await this.store.sql.run(
      `INSERT INTO thing_changes (thing_id, old_status, new_status, occurred_at, recorded_at, day, source, event_ids,
         paid_cents, discount_cents, interest_cents, fine_cents, payer_name, payer_document, your_number, amount_cents,
         updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        thing.id,
        thing.status,
        obs.status,
        obs.occurredAt,
        nowIso,
        day,
        obs.source,
        JSON.stringify(obs.eventId === undefined ? [] : [obs.eventId]),
        obs.paidCents ?? null,
        obs.discountCents ?? null,
        obs.interestCents ?? null,
        obs.fineCents ?? null,
        obs.payerName || thing.payerName,
        obs.payerDocument || thing.payerDocument,
        thing.yourNumber,
        thing.amountCents,
        nowIso,
      ],
    );
    await this.store.sql.run(
      'UPDATE things SET status = ?, status_at = ?, settled = ?, final = ?, updated_at = ? WHERE id = ?',
      [
        obs.status,
        obs.occurredAt,
        isUnsettled(thing.kind, obs.status) ? 0 : 1,
        isFinalStatus(thing.kind, obs.status) ? 1 : 0,
        nowIso,
        thing.id,
      ],
    );
    await this.#touchDay(day);
    return { result: 'changed', day };
  }

  /** The day's file must be written again (see retorno_days in migration 008). */
  async #touchDay(day: string): Promise<void> {
    await this.store.sql.run(
      `INSERT INTO retorno_days (day, version) VALUES (?, 1)
       ON CONFLICT (day) DO UPDATE SET version = retorno_days.version + 1`,
      [day],
    );
  }

  /** Days whose retorno file is behind the store, with the version to write. */
  daysToWrite(): Promise<Array<{ day: string; version: number }>> {
    return this.store.sql.all<{ day: string; version: number }>(
      'SELECT day, version FROM retorno_days WHERE version > written_version ORDER BY day',
    );
  }

  /** The day's file now holds everything up to `version`. */
  async markDayWritten(day: string, version: number): Promise<void> {
    await this.store.sql.run(
      'UPDATE retorno_days SET written_version = CASE WHEN written_version > ? THEN written_version ELSE ? END WHERE day = ?',
      [version, version, day],
    );
  }

  /** Things whose status is not final, of the given kinds, oldest first (what reconciliation looks up). */
  async open(kinds: readonly ThingKind[], limit = 100_000): Promise<ThingRecord[]> {
    if (kinds.length === 0) return [];
    return (
      await this.store.sql.all<ThingSql>(
        `SELECT * FROM things WHERE final = 0 AND kind IN (${kinds.map(() => '?').join(', ')})
         ORDER BY created_at, id LIMIT ?`,
        [...kinds, limit],
      )
    ).map(toThing);
  }

  /** Things the bank still owes a final outcome for, oldest first (see "UNSETTLED"). */
  async unsettled(limit = 100): Promise<ThingRecord[]> {
    return (
      await this.store.sql.all<ThingSql>(
        'SELECT * FROM things WHERE settled = 0 ORDER BY COALESCE(due_at, created_at), id LIMIT ?',
        [limit],
      )
    ).map(toThing);
  }

  /** The lines of a retorno day, in the order remessa learned them. */
  async changesOfDay(day: string): Promise<ThingChangeLine[]> {
    return (
      await this.store.sql.all<
        ChangeSql &
          Pick<
            ThingSql,
            | 'kind'
            | 'key'
            | 'correlation_id'
            | 'end_to_end_id'
            | 'claim_id'
            | 'your_number'
            | 'our_number'
            | 'batch_id'
            | 'line'
          > & { file_name: string; dialect: string }
      >(
        `SELECT c.*, t.kind, t.key, t.correlation_id, t.end_to_end_id, t.claim_id,
           COALESCE(c.your_number, t.your_number) AS your_number, t.our_number,
           COALESCE(c.amount_cents, t.amount_cents) AS amount_cents,
           t.batch_id, t.line, b.file_name, b.dialect
         FROM thing_changes c JOIN things t ON t.id = c.thing_id JOIN batches b ON b.id = t.batch_id
         WHERE c.day = ? ORDER BY c.seq`,
        [day],
      )
    ).map((r) => ({
      seq: r.seq,
      day: r.day,
      kind: r.kind,
      key: r.key,
      correlationId: r.correlation_id,
      endToEndId: r.end_to_end_id,
      claimId: r.claim_id,
      yourNumber: r.your_number,
      ourNumber: r.our_number,
      batchId: r.batch_id,
      fileName: r.file_name,
      line: r.line,
      dialect: r.dialect,
      oldStatus: r.old_status,
      newStatus: r.new_status,
      occurredAt: r.occurred_at,
      recordedAt: r.recorded_at,
      source: r.source,
      eventIds: JSON.parse(r.event_ids) as string[],
      paidCents: r.paid_cents ?? undefined,
      discountCents: r.discount_cents ?? undefined,
      interestCents: r.interest_cents ?? undefined,
      fineCents: r.fine_cents ?? undefined,
      payerName: r.payer_name,
      payerDocument: r.payer_document,
      amountCents: r.amount_cents ?? undefined,
    }));
  }

  /** Things by kind and status (metrics). */
  countByKindAndStatus(): Promise<Array<{ kind: ThingKind; status: string; count: number }>> {
    return this.store.sql.all<{ kind: ThingKind; status: string; count: number }>(
      'SELECT kind, status, COUNT(*) AS count FROM things GROUP BY kind, status',
    );
  }

  /**
   * Since when the bank owes the oldest unsettled thing its final status (ms since epoch): its `dueAt` (a scheduled
   * payment's date, a claim's deadline), else its creation. Things not due yet do not count. Undefined when none.
   */
  async oldestUnsettledAtMs(): Promise<number | undefined> {
    const r = await this.store.sql.get<{ at: string | null }>(
      `SELECT MIN(COALESCE(due_at, created_at)) AS at FROM things
       WHERE settled = 0 AND COALESCE(due_at, created_at) <= ?`,
      [this.#now().toISOString()],
    );
    return r?.at == null ? undefined : Date.parse(r.at);
  }

  /** Webhook events applied so far (metrics: monotonic, from the store). */
  async countAppliedEvents(): Promise<number> {
    const r = await this.store.sql.get<{ n: number }>(
      'SELECT COUNT(*) AS n FROM webhook_events WHERE applied_at IS NOT NULL',
    );
    return r!.n;
  }

  /** Marks an event about something remessa did not create applied, and remembers it as foreign. */
  markForeign(event: { id: string; type: string }, subject: string | undefined): Promise<void> {
    return this.transaction(async (t) => {
      await t.store.sql.run(
        `INSERT INTO foreign_events (id, event_type, subject, marked_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (id) DO NOTHING`,
        [event.id, event.type, subject ?? null, t.#now().toISOString()],
      );
      await t.markEventsApplied([event.id]);
    });
  }

  /** Events about things remessa did not create: how many, and the latest few. */
  async foreignEvents(
    limit = 5,
  ): Promise<{ count: number; latest: Array<{ id: string; type: string; subject: string | null }> }> {
    const count = (await this.store.sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM foreign_events'))!.n;
    const latest = await this.store.sql.all<{ id: string; type: string; subject: string | null }>(
      'SELECT id, event_type AS type, subject FROM foreign_events ORDER BY marked_at DESC, id LIMIT ?',
      [limit],
    );
    return { count, latest };
  }

  /** Unapplied webhook events, in the order they happened. */
  unappliedEvents(): Promise<StoredEvent[]> {
    return this.store.sql.all<StoredEvent>(
      `SELECT id, event_type AS type, occurred_at AS "occurredAt", received_at AS "receivedAt", payload
       FROM webhook_events WHERE applied_at IS NULL ORDER BY ${WEBHOOK_EVENT_ORDER}`,
    );
  }
}

/** A webhook event as the receiver stored it (table webhook_events, migration 007). */
export interface StoredEvent {
  id: string;
  type: string;
  occurredAt: string | null;
  receivedAt: string;
  /** The envelope `{id, event, createdAt, data}` as received (JSON text). */
  payload: string;
}

interface ChangeSql {
  seq: number;
  thing_id: number;
  old_status: string;
  new_status: string;
  occurred_at: string;
  recorded_at: string;
  day: string;
  source: ObservationSource;
  event_ids: string;
  paid_cents: number | null;
  discount_cents: number | null;
  interest_cents: number | null;
  fine_cents: number | null;
  payer_name: string | null;
  payer_document: string | null;
  /** The charge's Seu número when the line was made (migration 018; NULL before it). */
  your_number: string | null;
  /** What the thing asked for when the line was made (migration 019; NULL before it). */
  amount_cents: number | null;
  updated_at: string;
}

/** Status names compare without case (the bank writes `Paid`, a void answer may say `VOIDED`). */
function sameStatus(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}
