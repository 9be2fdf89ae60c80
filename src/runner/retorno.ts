/**
 * The retorno's glue (issue 11 §2-3): derive things from succeeded rows, apply the webhook events the receiver
 * stored, reconcile with the bank, and write the day's retorno files. The rules of the things' state are drawn in
 * src/store/things.ts; the file in src/outbox/retorno.ts.
 *
 * One pass (`retornoPass`), run by `remessa reconcile`, by the daemon on a schedule (`reconcile.everyMinutes`) and,
 * events only, every `reconcile.applyEventsEverySeconds`:
 *
 *   1. things from succeeded rows not seen yet (lazily: src/store/things.ts says why);
 *   2. unapplied webhook events, in the order they happened, each marked applied with the change it made. An event
 *      about something remessa did not create stays unapplied for FOREIGN_GRACE_MS (its row may still be storing its
 *      success: a Pix payment's PIX_PAYMENT_UPDATED can arrive before the pay step's answer is stored), then is
 *      marked applied without a change and remembered as foreign (`foreign_events`, listed by `remessa status`);
 *   3. reconciliation (not in the events-only pass):
 *      - charges: `GET /v1/charges?startDate&endDate&page&limit` over the creation dates of the open charges (or
 *        --since/--until), in windows of at most one year, pages of 100, until a short page; each charge listed that
 *        remessa created is observed. Open charges the pages did not show are looked up by correlationId;
 *      - dynamic QR codes not CONCLUDED: looked up by correlationId (`qrCodes.getDynamic`);
 *      - Pix QR payments still PIX_PROCESSING (or another open status): looked up by endToEndId (`pixPayments.get`);
 *      - bill payments still SCHEDULED whose date has come: looked up by id (`billPayments.get`, a sandbox addition);
 *      - key claims not COMPLETED or CANCELED: one claims search per status (no event, no look-up by id);
 *      - static QR codes created since --since (default the last STATIC_QR_LOOKBACK_DAYS days): looked up by
 *        correlationId for the Pix received on them (each one a `pix-received` thing of its own, made on first sight
 *        by an event or a look-up: `observeOf`);
 *      a charge record gives its history by its times: `expiredAt` (Expired), then `paidAt` (Paid, with the payment's
 *      amount) or `voidedAt` (Voided), so a charge expired then paid is two lines, as the events would have told;
 *   4. the retorno files of the days that gained or completed a line since they were last written are written
 *      again (`retorno_days`: also the days a crash left behind).
 *
 * ORDER. The bank's deliveries do not arrive in the order things happened: a delivery that failed is retried on its
 * own schedule, several go out at once, and a slip expired then paid may be told paid first. Applied as they came,
 * the payment would make the expiry stale (rule 2 of src/store/things.ts: nothing older than the status it has
 * overrides it) and the Expired line would never be written. So an events pass takes the stored events in the order
 * they happened (`WEBHOOK_EVENT_ORDER`) and stops at the first one stored less than `eventSettleMs` ago
 * (`reconcile.eventSettleSeconds`, 5 s): no event is applied before one that happened earlier and is still settling.
 * An event delivered later than that after a newer one is stale, as rule 2 says, and its change is not written (the
 * newer status stands; a payment is never lost this way: rule 2's exception). The settling holds back only the last
 * seconds' events, never a pass: the next pass applies them.
 *
 * Reconciliation and events converge: both observe the same statuses with the same times (the charge's `paidAt` is
 * the event's `paidAt`), and an observation of the status a thing already has only completes its line (one line per
 * change, rule 1 of src/store/things.ts). Failing look-ups are logged and counted; the pass goes on with the rest.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { BankClient } from '../bank/client.js';
import { NotFoundError } from '../bank/errors.js';
import type { BillPayment, Charge, ClaimSearchItem, RequestOptions } from '../bank/types.js';
import { brasiliaWallTime } from '../formats/brasilia-time.js';
import { utcInstant } from '../formats/dates.js';
import { wireToCents } from '../formats/money.js';
import { instant, type Locale, type Message, msg } from '../i18n/index.js';
import type { Logger } from '../log.js';
import type { ResultFormSettings } from '../outbox/cell-forms.js';
import { writeRetornoDay } from '../outbox/retorno.js';
import type { RequestQueue } from '../queue/request-queue.js';
import { shortBatchId } from '../store/intakes.js';
import type { Store } from '../store/store.js';
import {
  isUnsettled,
  type Observation,
  type RowDerivation,
  type StoredEvent,
  type SucceededRow,
  type ThingKind,
  type ThingRecord,
  Things,
} from '../store/things.js';
import type { EndpointGroup } from '../types.js';

/** How long an event about an unknown thing waits for its row before it is marked applied as foreign. */
export const FOREIGN_GRACE_MS = 3_600_000;
/** Most charges a page of the charge list may hold (spec 8). */
export const RECONCILE_PAGE_LIMIT = 100;

export interface RetornoPassOptions {
  store: Store;
  /** Needed for reconciliation; without it only rows and events are applied. */
  client?: BankClient | undefined;
  /** The pipeline's request queue: reconciliation's requests then keep to the endpoint groups' rate limits. */
  queue?: RequestQueue | undefined;
  outboxDir: string;
  logger: Logger;
  /** Reconcile with the bank (steps 3) too. @defaultValue false */
  reconcile?: boolean;
  /** First creation date (yyyy-mm-dd) of the charges to list. @defaultValue the oldest open charge's */
  since?: string | undefined;
  /** Last creation date (yyyy-mm-dd) of the charges to list. @defaultValue today (UTC) */
  until?: string | undefined;
  signal?: AbortSignal | undefined;
  now?: () => Date;
  /** The language of the summaries' amounts (`R$ 1.234,56`). @defaultValue pt-BR */
  locale?: Locale | undefined;
  /** How long a stored event settles before it is applied (see "ORDER" above), in ms. @defaultValue 0 */
  eventSettleMs?: number | undefined;
  /** The form of identifiers and dates in the day files (config `results`). @defaultValue both `auto` */
  results?: Partial<ResultFormSettings> | undefined;
}

export interface RetornoPassResult {
  rowsSeen: number;
  eventsApplied: number;
  eventsForeign: number;
  changes: number;
  chargesListed: number;
  lookedUp: number;
  lookupErrors: number;
  /** The retorno files written. */
  files: string[];
}

/** What a succeeded row makes (see src/store/things.ts). Exported for tests. */
export function deriveFromRow(row: SucceededRow): RowDerivation {
  const out = row.outputs;
  const parsed = (row.parsed ?? {}) as Record<string, unknown>;
  const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
  const base = { batchId: row.batchId, line: row.line, createdAt: row.updatedAt, amountCents: row.amountCents };
  switch (row.kind) {
    case 'charges': {
      const input = (parsed.input ?? {}) as Record<string, unknown>;
      const payer = (input.payer ?? {}) as Record<string, unknown>;
      const correlationId = str(input.correlationId);
      if (!correlationId) return null;
      return {
        thing: {
          ...base,
          kind: 'charge',
          key: correlationId,
          correlationId,
          yourNumber: str(input.yourNumber),
          ourNumber: str(out.ourNumber),
          payerName: str(payer.name),
          payerDocument: str(payer.document),
          status: str(out.chargeStatus) ?? 'Pending',
        },
      };
    }
    case 'qr-codes': {
      const input = (parsed.input ?? {}) as Record<string, unknown>;
      const payer = (input.payer ?? {}) as Record<string, unknown>;
      const correlationId = str(input.correlationId);
      if (!correlationId) return null;
      // A static code is reusable and never changes status: what is followed is each Pix received on it.
      if (parsed.type === 'PIX_STATIC') {
        return {
          thing: { ...base, kind: 'static-qr-code', key: correlationId, correlationId, status: 'ACTIVE' },
        };
      }
      if (parsed.type !== 'PIX_DYNAMIC') return null;
      return {
        thing: {
          ...base,
          kind: 'qr-code',
          key: correlationId,
          correlationId,
          payerName: str(payer.name),
          payerDocument: str(payer.document),
          status: str(out.qrStatus) ?? 'PENDING',
        },
      };
    }
    case 'pix-payments': {
      const endToEndId = str(out.endToEndId);
      if (!endToEndId) return null;
      return {
        thing: {
          ...base,
          kind: 'pix-payment',
          key: endToEndId,
          endToEndId,
          amountCents: typeof out.paidAmount === 'number' ? out.paidAmount : row.amountCents,
          status: str(out.paymentStatus) ?? 'PIX_PROCESSING',
        },
      };
    }
    case 'bill-payments': {
      const id = str(out.paymentId);
      if (!id) return null;
      const status = str(out.paymentStatus) ?? 'PAID';
      // A scheduled payment is owed on its date: payAt is sent without a zone, Brasília's wall time, as the bank reads it.
      const payAt = str(parsed.payAt);
      const dueAt = status.toUpperCase() === 'SCHEDULED' && payAt ? brasiliaWallTime(payAt)?.toISOString() : undefined;
      return { thing: { ...base, kind: 'bill-payment', key: id, status, dueAt } };
    }
    case 'claims': {
      const id = str(out.claimId);
      if (!id) return null;
      // A claim is owed its outcome by its resolutionDeadline.
      const dueAt = utcInstant(str(out.resolutionDeadline));
      return {
        thing: { ...base, kind: 'claim', key: id, claimId: id, status: str(out.claimStatus) ?? 'PENDING', dueAt },
      };
    }
    case 'charge-voids': {
      const correlationId = str(parsed.correlationId);
      if (!correlationId) return null;
      // The bank's time of the void when its answer gave one, else when remessa stored the answer.
      return {
        void: { correlationId, status: str(out.chargeStatus) ?? 'Voided', at: str(out.voidedAt) ?? row.updatedAt },
      };
    }
    case 'charge-updates': {
      const correlationId = str(parsed.correlationId);
      if (!correlationId) return null;
      const patch = (parsed.patch ?? {}) as Record<string, unknown>;
      const payer = (patch.payer ?? {}) as Record<string, unknown>;
      // What the row set at the bank, and the status its confirming read answered (an Expired slip given a new due
      // date is payable again), when remessa stored that answer.
      return {
        update: {
          correlationId,
          yourNumber: str(patch.yourNumber),
          payerName: str(payer.name),
          payerDocument: str(payer.document),
          amountCents: typeof patch.amountCents === 'number' ? patch.amountCents : undefined,
          status: str(out.chargeStatus),
          at: row.updatedAt,
        },
      };
    }
    default:
      return null;
  }
}

// ------------------------------------------------------------------------------------------------ events

const money = z
  .union([
    z.number(),
    z
      .string()
      .regex(/^\d+(\.\d+)?$/)
      .transform(Number),
  ])
  .transform((n) => wireToCents(n))
  .optional()
  .catch(undefined);
const text = z.string().optional().catch(undefined);

/** The envelope of docs/sandbox.md "Delivery" (tolerates added fields; every field of `data` optional). */
const envelopeSchema = z.looseObject({
  id: z.string(),
  event: z.string(),
  createdAt: text,
  data: z
    .looseObject({
      correlationId: text,
      endToEndId: text,
      status: text,
      amount: money,
      paidAt: text,
      expiredAt: text,
      voidedAt: text,
      receivedAt: text,
      updatedAt: text,
      payment: z
        .looseObject({
          amount: money,
          paidAt: text,
          discountAmount: money,
          interestAmount: money,
          fineAmount: money,
          payer: z.looseObject({ name: text, document: text }).optional().catch(undefined),
        })
        .optional()
        .catch(undefined),
    })
    .catch({}),
});

type Envelope = z.infer<typeof envelopeSchema>;

/** The observations an event makes, by type; [] for a type the retorno does not follow. */
export async function observationsOfEvent(envelope: Envelope, things: Things): Promise<ObservationOf[]> {
  const d = envelope.data;
  const when = (...candidates: Array<string | undefined>) =>
    candidates.map(utcInstant).find((c) => c !== undefined) ?? new Date().toISOString();
  const common = { source: 'event' as const, eventId: envelope.id };
  switch (envelope.event) {
    case 'CHARGE_PAID': {
      if (!d.correlationId) return [];
      const p = d.payment;
      return [
        {
          ...common,
          kind: 'charge',
          key: d.correlationId,
          status: d.status ?? 'Paid',
          occurredAt: when(d.paidAt, p?.paidAt, envelope.createdAt),
          // The payment's amount only: the event's own `amount` is the charge's (what it asked, not what was paid).
          paidCents: p?.amount,
          discountCents: p?.discountAmount,
          interestCents: p?.interestAmount,
          fineCents: p?.fineAmount,
          payerName: p?.payer?.name,
          payerDocument: p?.payer?.document,
        },
      ];
    }
    case 'CHARGE_EXPIRED':
      if (!d.correlationId) return [];
      return [
        {
          ...common,
          kind: 'charge',
          key: d.correlationId,
          status: d.status ?? 'Expired',
          occurredAt: when(d.expiredAt, envelope.createdAt),
        },
      ];
    case 'PIX_RECEIVED': {
      if (!d.correlationId) return [];
      const at = when(d.receivedAt, envelope.createdAt);
      // A Pix charge (or BANKSLIP_PIX) paid: the same change as its CHARGE_PAID. A dynamic QR code paid: CONCLUDED.
      if (await things.get('charge', d.correlationId)) {
        return [
          { ...common, kind: 'charge', key: d.correlationId, status: 'Paid', occurredAt: at, paidCents: d.amount },
        ];
      }
      // A static QR code paid: a Pix received of its own (the code stays ACTIVE), keyed by its endToEndId.
      if (d.endToEndId && (await things.get('static-qr-code', d.correlationId))) {
        return [
          {
            ...common,
            kind: 'pix-received',
            key: d.endToEndId,
            staticQrCode: d.correlationId,
            status: RECEIVED,
            occurredAt: at,
            paidCents: d.amount,
          },
        ];
      }
      return [
        { ...common, kind: 'qr-code', key: d.correlationId, status: 'CONCLUDED', occurredAt: at, paidCents: d.amount },
      ];
    }
    case 'PIX_PAYMENT_UPDATED':
      if (!d.endToEndId || !d.status) return [];
      return [
        {
          ...common,
          kind: 'pix-payment',
          key: d.endToEndId,
          status: d.status,
          occurredAt: when(d.updatedAt, envelope.createdAt),
          // A failed payment paid nothing: its amount is not a paid amount.
          ...(pixPaymentWentThrough(d.status) ? { paidCents: d.amount } : {}),
        },
      ];
    default:
      return [];
  }
}

/** Words of a status that say a Pix payment's money went. */
const PIX_DONE_WORDS = new Set([
  'EXECUTED',
  'SETTLED',
  'COMPLETED',
  'CONCLUDED',
  'CONFIRMED',
  'PAID',
  'DONE',
  'SUCCESS',
  'SUCCEEDED',
  'SUCCESSFUL',
]);
/** Words that deny or undo it, wherever they stand (NOT_PAID, PAID_RETURNED, EXECUTED_WITH_ERROR...). */
const PIX_NOT_DONE_WORDS = new Set([
  'NOT',
  'NO',
  'NON',
  'FAILED',
  'FAILURE',
  'ERROR',
  'REJECTED',
  'CANCELED',
  'CANCELLED',
  'RETURNED',
  'REFUNDED',
  'REVERSED',
  'DEVOLVED',
]);

/**
 * Whether a Pix QR payment's final status says the money went (the spec shows only PIX_PROCESSING; the sandbox's
 * PIX_EXECUTED, and the usual words of a done payment). Read word by word (split at `_`, `-`, spaces and camel case),
 * never as a substring: UNPAID, NOT_PAID, UNSUCCESSFUL or UNCONFIRMED hold a word of success but deny it. Any other
 * final status (a failure, a return) reports no paid amount: the retorno never shows a failed payment as paid.
 */
export function pixPaymentWentThrough(status: string): boolean {
  const words = status
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toUpperCase()
    .split(/[^A-Z0-9]+/)
    .filter(Boolean);
  return words.some((w) => PIX_DONE_WORDS.has(w)) && !words.some((w) => PIX_NOT_DONE_WORDS.has(w));
}

/** The status of a Pix received on a static QR code (its thing goes ACTIVE -> RECEIVED). */
export const RECEIVED = 'RECEIVED';

/** An observation; a Pix received names the static QR code it was paid on (its thing is made on first sight). */
export type ObservationOf = Observation & { staticQrCode?: string | undefined };

/** Whether remessa follows what `o` is about: its thing, or the static QR code of a Pix received. */
async function isKnown(things: Things, o: ObservationOf): Promise<boolean> {
  if (await things.get(o.kind, o.key)) return true;
  return o.staticQrCode !== undefined && (await things.get('static-qr-code', o.staticQrCode)) !== undefined;
}

/**
 * Applies an observation; a Pix received on a static QR code first gets its thing (the code's row is its source
 * line), so its first observation makes its one line (ACTIVE -> RECEIVED).
 */
async function observeOf(things: Things, o: ObservationOf): ReturnType<Things['observe']> {
  if (o.staticQrCode !== undefined && !(await things.get(o.kind, o.key))) {
    const code = await things.get('static-qr-code', o.staticQrCode);
    if (code) {
      await things.insert({
        kind: 'pix-received',
        key: o.key,
        correlationId: code.correlationId,
        endToEndId: o.key,
        batchId: code.batchId,
        line: code.line,
        amountCents: o.paidCents ?? null,
        status: 'ACTIVE',
        createdAt: o.occurredAt,
      });
    }
  }
  const { staticQrCode: _, ...observation } = o;
  return things.observe(observation);
}

/**
 * Applies the unapplied events in the order they happened, up to the first one stored less than `settleMs` ago (see
 * "ORDER" in the header); returns counts.
 */
export async function applyEvents(
  things: Things,
  logger: Logger,
  now: () => Date = () => new Date(),
  settleMs = 0,
): Promise<{ applied: number; foreign: number; changes: number; settling: number }> {
  let applied = 0;
  let foreign = 0;
  let changes = 0;
  const events = await things.unappliedEvents();
  const settledBefore = now().getTime() - settleMs;
  for (const [i, e] of events.entries()) {
    if (settleMs > 0 && Date.parse(e.receivedAt) > settledBefore) {
      const settling = events.length - i;
      logger.debug({ applied, settling, eventId: e.id }, 'webhook events left to settle for the next pass');
      return { applied, foreign, changes, settling };
    }
    const observations = await observationsFor(e, things, logger);
    if (observations.length === 0) {
      // A type the retorno does not follow, or an unreadable body: nothing to apply (the row stays for a person).
      await things.markEventsApplied([e.id]);
      applied++;
      continue;
    }
    const known: ObservationOf[] = [];
    for (const o of observations) if (await isKnown(things, o)) known.push(o);
    if (known.length === 0) {
      if (now().getTime() - Date.parse(e.receivedAt) < FOREIGN_GRACE_MS) continue;
      const subject = observations[0]?.key;
      await things.markForeign(e, subject);
      logger.info({ eventId: e.id, type: e.type, subject }, 'webhook event about something remessa did not create');
      foreign++;
      applied++;
      continue;
    }
    await things.transaction(async (t) => {
      for (const o of known) {
        const r = await observeOf(t, o);
        if (r.result === 'changed') changes++;
      }
      await t.markEventsApplied([e.id]);
    });
    applied++;
  }
  if (applied > 0) logger.debug({ applied, foreign, changes }, 'webhook events applied');
  return { applied, foreign, changes, settling: 0 };
}

async function observationsFor(e: StoredEvent, things: Things, logger: Logger): Promise<ObservationOf[]> {
  let json: unknown;
  try {
    json = JSON.parse(e.payload);
  } catch {
    logger.warn({ eventId: e.id, type: e.type }, 'webhook event body is not JSON: left applied without a change');
    return [];
  }
  const parsed = envelopeSchema.safeParse(json);
  if (!parsed.success) {
    logger.warn({ eventId: e.id, type: e.type }, 'webhook event body is not an event envelope: left without a change');
    return [];
  }
  return observationsOfEvent(parsed.data, things);
}

// ------------------------------------------------------------------------------------------------ reconciliation

/** The observations a charge record makes, in the order they happened (see the header). */
export function observationsOfCharge(charge: Charge): Observation[] {
  const c = charge as Charge & Record<string, unknown>;
  const t = (v: unknown): string | undefined => utcInstant(typeof v === 'string' ? v : undefined);
  const key = charge.correlationId;
  const base = { kind: 'charge' as const, key, source: 'reconcile' as const };
  const out: Observation[] = [];
  const expiredAt = t(c.expiredAt);
  const paidAt = t(c.paidAt);
  const voidedAt = t(c.voidedAt);
  const status = charge.status;
  const s = status.toLowerCase();
  const endAt = s === 'paid' ? paidAt : s === 'voided' ? voidedAt : undefined;
  if (expiredAt && s !== 'expired' && endAt && Date.parse(expiredAt) <= Date.parse(endAt)) {
    out.push({ ...base, status: 'Expired', occurredAt: expiredAt });
  }
  if (s === 'paid') {
    const payment = (charge.payments ?? [])[0] as (Record<string, unknown> & { amountCents?: number }) | undefined;
    const cents = (v: unknown) => (typeof v === 'number' ? safeCents(v) : undefined);
    const payer = (payment?.payer ?? {}) as Record<string, unknown>;
    out.push({
      ...base,
      status,
      occurredAt: paidAt ?? t(payment?.paidAt) ?? t(c.updatedAt) ?? new Date().toISOString(),
      paidCents: payment?.amountCents ?? cents(payment?.amount),
      discountCents: cents(payment?.discountAmount),
      interestCents: cents(payment?.interestAmount),
      fineCents: cents(payment?.fineAmount),
      payerName: typeof payer.name === 'string' ? payer.name : undefined,
      payerDocument: typeof payer.document === 'string' ? payer.document : undefined,
    });
  } else {
    // A Pix charge past its expiry reads Expired without an expire order: it happened at its `expiresAt`.
    const at =
      (s === 'expired' ? (expiredAt ?? t(c.expiresAt)) : s === 'voided' ? voidedAt : undefined) ?? t(c.updatedAt);
    out.push({ ...base, status, occurredAt: at ?? new Date().toISOString() });
  }
  return out;
}

function safeCents(n: number): number | undefined {
  try {
    return wireToCents(n);
  } catch {
    return undefined;
  }
}

function dayBefore(day: string): string {
  const d = new Date(`${day}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() - 1);
  return d.toISOString().slice(0, 10);
}

/** Date windows of at most one year (spec 8) covering since..until, both yyyy-mm-dd. */
export function yearWindows(since: string, until: string): Array<{ startDate: string; endDate: string }> {
  const out: Array<{ startDate: string; endDate: string }> = [];
  let start = since;
  while (start <= until) {
    const d = new Date(`${start}T00:00:00Z`);
    // The same day next year minus one: strictly inside the one-year limit (29 Feb -> 27 Feb).
    const nextYear = new Date(Date.UTC(d.getUTCFullYear() + 1, d.getUTCMonth(), Math.min(d.getUTCDate(), 28)));
    nextYear.setUTCDate(nextYear.getUTCDate() - 1);
    const last = nextYear.toISOString().slice(0, 10);
    const end = last < until ? last : until;
    out.push({ startDate: start, endDate: end });
    const next = new Date(`${end}T00:00:00Z`);
    next.setUTCDate(next.getUTCDate() + 1);
    start = next.toISOString().slice(0, 10);
  }
  return out;
}

async function reconcile(
  things: Things,
  client: BankClient,
  options: RetornoPassOptions,
  result: RetornoPassResult,
): Promise<void> {
  const log = options.logger;
  const signal = options.signal;
  const now = options.now ?? (() => new Date());
  const observe = async (o: ObservationOf) => {
    const r = await observeOf(things, o);
    if (r.result === 'changed') result.changes++;
  };
  // Every request goes through the queue when there is one (rate limits of its endpoint group, 429 pauses): `fn` makes
  // its request with the options it is given, which carry the queue task's handle the gate counts it by.
  const call = <T>(group: EndpointGroup, fn: (request: RequestOptions) => Promise<T>): Promise<T> =>
    options.queue ? options.queue.run(group, (task) => fn({ signal, task }), signal ? { signal } : {}) : fn({ signal });
  const openCharges = await things.open(['charge']);
  // The day before the oldest open charge's success: its creation (bank clock, UTC date) may be just before midnight.
  const since = options.since ?? (openCharges[0] ? dayBefore(openCharges[0].createdAt.slice(0, 10)) : undefined);
  const until = options.until ?? now().toISOString().slice(0, 10);
  const seen = new Set<string>();
  if (since !== undefined && since <= until) {
    try {
      await listCharges(since, until);
    } catch (err) {
      // The look-ups below still settle every open charge, one by one.
      result.lookupErrors++;
      log.error({ err, since, until }, 'reconciliation: listing the charges failed');
    }
  }
  async function listCharges(since: string, until: string): Promise<void> {
    for (const window of yearWindows(since, until)) {
      let previousFirst: string | undefined;
      for (let page = 1; ; page++) {
        if (signal?.aborted) return;
        const charges = await call('charges', (request) =>
          client.charges.list({ ...window, page, limit: RECONCILE_PAGE_LIMIT }, request),
        );
        // A bank that ignores `page` would answer the same page for ever: stop (the look-ups below cover the rest).
        if (charges.length > 0 && charges[0]!.correlationId === previousFirst) {
          log.warn({ window, page }, 'reconciliation: the charge list repeated a page; paging stopped');
          break;
        }
        previousFirst = charges[0]?.correlationId;
        result.chargesListed += charges.length;
        for (const charge of charges) {
          if (!(await things.get('charge', charge.correlationId))) continue;
          seen.add(charge.correlationId);
          for (const o of observationsOfCharge(charge)) await observe(o);
        }
        if (charges.length < RECONCILE_PAGE_LIMIT) break;
      }
    }
  }
  const lookUp = async (thing: ThingRecord, get: () => Promise<ObservationOf[]>) => {
    if (signal?.aborted) return;
    result.lookedUp++;
    try {
      for (const o of await get()) await observe(o);
    } catch (err) {
      result.lookupErrors++;
      const level = err instanceof NotFoundError ? 'warn' : 'error';
      log[level]({ err, kind: thing.kind, key: thing.key }, 'reconciliation: look-up failed');
    }
  };
  // What the pages did not settle: open charges they did not show (outside --since/--until, or missed).
  for (const thing of await things.open(['charge'])) {
    if (seen.has(thing.key)) continue;
    await lookUp(thing, async () =>
      observationsOfCharge(await call('charges', (request) => client.charges.get(thing.key, request))),
    );
  }
  for (const thing of await things.open(['qr-code'])) {
    await lookUp(thing, async () => {
      const qr = (await call('pix', (request) => client.qrCodes.getDynamic(thing.key, request))) as unknown as Record<
        string,
        unknown
      >;
      const status = typeof qr.status === 'string' ? qr.status : undefined;
      if (!status) return [];
      const expired = status.toUpperCase() === 'EXPIRED';
      const at = (expired ? [qr.expiresAt, qr.updatedAt] : [qr.paidAt, qr.concludedAt, qr.updatedAt]).find(
        (v): v is string => typeof v === 'string',
      );
      return [
        {
          kind: 'qr-code',
          key: thing.key,
          status,
          source: 'reconcile',
          occurredAt: at ?? now().toISOString(),
          ...(status.toUpperCase() === 'CONCLUDED' && typeof qr.amountCents === 'number'
            ? { paidCents: qr.amountCents }
            : {}),
        },
      ];
    });
  }
  for (const thing of await things.open(['pix-payment'])) {
    await lookUp(thing, async () => {
      const payment = (await call('pix', (request) =>
        client.pixPayments.getByEndToEndId(thing.key, request),
      )) as unknown as Record<string, unknown> & {
        status: string;
        amountCents: number;
      };
      const at = [payment.updatedAt, payment.settledAt, payment.createdAt].find(
        (v): v is string => typeof v === 'string',
      );
      return [
        {
          kind: 'pix-payment',
          key: thing.key,
          status: payment.status,
          source: 'reconcile',
          occurredAt: at ?? now().toISOString(),
          ...(pixPaymentWentThrough(payment.status) ? { paidCents: payment.amountCents } : {}),
        },
      ];
    });
  }
  // Bill payments still SCHEDULED whose date has come: looked up by id (`billPayments.get`, docs/service-gaps.md).
  for (const thing of await things.open(['bill-payment'])) {
    if (thing.dueAt !== null && Date.parse(thing.dueAt) > now().getTime()) continue;
    await lookUp(thing, async () => {
      const payment = (await call('bill-payments', (request) =>
        client.billPayments.get(thing.key, request),
      )) as BillPayment & Record<string, unknown>;
      const at = [payment.paidAt, payment.updatedAt, payment.payAt].find(
        (v): v is string => typeof v === 'string' && !Number.isNaN(Date.parse(v)),
      );
      const paid = payment.status.toUpperCase() === 'PAID';
      return [
        {
          kind: 'bill-payment',
          key: thing.key,
          status: payment.status,
          source: 'reconcile',
          occurredAt: at ?? now().toISOString(),
          ...(paid ? { paidCents: payment.paidAmountCents } : {}),
          ...(paid && payment.paymentCalculation
            ? {
                discountCents: payment.paymentCalculation.discountAmountCents,
                interestCents: payment.paymentCalculation.interestAmountCents,
                fineCents: payment.paymentCalculation.fineAmountCents,
              }
            : {}),
        },
      ];
    });
  }
  // Key claims not COMPLETED or CANCELED: the interface has no look-up by id, only the search by status (spec 4.5):
  // one search per status, as CLAIMANT (remessa starts claims), each with a fresh IdempotencyKey (a search acts on
  // nothing); a claim is matched by id.
  const openClaims = await things.open(['claim']);
  if (openClaims.length > 0 && !signal?.aborted) {
    const found = new Map<string, ClaimSearchItem>();
    try {
      for (const status of CLAIM_SEARCH_STATUSES) {
        const items = await call('claims', (request) =>
          client.claims.search({ participationFlowType: 'CLAIMANT', status }, randomUUID(), request),
        );
        for (const item of items) found.set(item.id, item);
      }
    } catch (err) {
      result.lookupErrors++;
      log.error({ err }, 'reconciliation: searching the key claims failed');
    }
    for (const thing of openClaims) {
      const item = found.get(thing.key);
      if (!item) continue;
      result.lookedUp++;
      // PENDIG and PENDING are one status (spec 2.11 spells it both ways): the thing keeps its own spelling.
      const pending = (v: string) => ['PENDIG', 'PENDING'].includes(v.toUpperCase());
      const status = pending(item.status) && pending(thing.status) ? thing.status : item.status;
      await observe({
        kind: 'claim',
        key: thing.key,
        status,
        source: 'reconcile',
        occurredAt: utcInstant(item.updatedAt) ?? now().toISOString(),
      });
    }
  }
  // Static QR codes created in the window (or the last STATIC_QR_LOOKBACK_DAYS days): the Pix received on each, by
  // its look-up by correlationId (`qrCodes.getStatic`; its `payments`, docs/service-gaps.md).
  const staticSince = options.since ?? dayBefore(daysAgo(now(), STATIC_QR_LOOKBACK_DAYS));
  for (const thing of await things.open(['static-qr-code'])) {
    if (thing.createdAt.slice(0, 10) < staticSince) continue;
    await lookUp(thing, async () => {
      const qr = (await call('pix', (request) =>
        client.qrCodes.getStatic(thing.key, { ...request, formatResponse: 'ONLY_PAYLOAD' }),
      )) as unknown as {
        payments?: unknown;
      };
      const out: ObservationOf[] = [];
      for (const p of Array.isArray(qr.payments) ? (qr.payments as Array<Record<string, unknown>>) : []) {
        const e2e = typeof p.endToEndId === 'string' ? p.endToEndId : undefined;
        // When it was received: `receivedAt` (the sandbox's interface dialect) or `createdAt` (the provider's
        // QrCodePaymentDTO, provider-delbank.md).
        const when = [p.receivedAt, p.createdAt].find((v): v is string => typeof v === 'string');
        const at = utcInstant(when);
        if (!e2e || !at) continue;
        out.push({
          kind: 'pix-received',
          key: e2e,
          staticQrCode: thing.key,
          status: RECEIVED,
          source: 'reconcile',
          occurredAt: at,
          paidCents: typeof p.amount === 'number' ? safeCents(p.amount) : undefined,
        });
      }
      return out;
    });
  }
}

/** Claim statuses searched by reconciliation (PENDING: the search accepts both spellings, spec 2.11). */
const CLAIM_SEARCH_STATUSES = ['PENDING', 'AWAITING_RESOLUTION', 'CONFIRMED', 'COMPLETED', 'CANCELED'] as const;
/** How far back reconciliation looks for Pix received on static QR codes when no --since is given. */
export const STATIC_QR_LOOKBACK_DAYS = 31;

function daysAgo(now: Date, days: number): string {
  return new Date(now.getTime() - days * 86_400_000).toISOString().slice(0, 10);
}

/** One pass of the retorno (see the header). */
export async function retornoPass(options: RetornoPassOptions): Promise<RetornoPassResult> {
  const now = options.now ?? (() => new Date());
  const things = new Things(options.store, { now });
  const result: RetornoPassResult = {
    rowsSeen: 0,
    eventsApplied: 0,
    eventsForeign: 0,
    changes: 0,
    chargesListed: 0,
    lookedUp: 0,
    lookupErrors: 0,
    files: [],
  };
  for (;;) {
    const synced = await things.syncFromRows(deriveFromRow);
    result.rowsSeen += synced.rows;
    if (synced.rows === 0) break;
  }
  const events = await applyEvents(things, options.logger, now, options.eventSettleMs ?? 0);
  result.eventsApplied = events.applied;
  result.eventsForeign = events.foreign;
  result.changes += events.changes;
  if (options.reconcile && options.client) {
    await reconcile(things, options.client, options, result);
  }
  // Every day behind the store, not only the days touched now: a crash after a change and before its file is mended.
  for (const { day, version } of await things.daysToWrite()) {
    const file = await writeRetornoDay(things, options.outboxDir, day, now, options.locale, options.results);
    await things.markDayWritten(day, version);
    if (file) result.files.push(file);
  }
  return result;
}

/** A line of `remessa status` about the retorno, in catalogue words; `item` lines are listed under a heading. */
export interface UnsettledLine {
  message: Message;
  item?: true;
}

/** Unsettled things as `remessa status` shows them (said in the locale by src/runner/status.ts). */
export async function describeUnsettled(store: Store, limit = 50): Promise<UnsettledLine[]> {
  const things = new Things(store);
  // Read only (status takes no lock): rows whose things are not derived yet are derived here, in memory.
  const pending: ThingRecord[] = [];
  for (const row of await things.unseenRows(limit + 1)) {
    const d = deriveFromRow(row);
    if (d && 'thing' in d && isUnsettled(d.thing.kind, d.thing.status)) {
      pending.push({
        ...d.thing,
        id: 0,
        correlationId: d.thing.correlationId ?? null,
        endToEndId: d.thing.endToEndId ?? null,
        claimId: d.thing.claimId ?? null,
        dueAt: d.thing.dueAt ?? null,
        yourNumber: d.thing.yourNumber ?? null,
        ourNumber: d.thing.ourNumber ?? null,
        amountCents: d.thing.amountCents ?? null,
        payerName: d.thing.payerName ?? null,
        payerDocument: d.thing.payerDocument ?? null,
        statusAt: null,
        settled: false,
        final: false,
        updatedAt: d.thing.createdAt,
      });
    }
  }
  const rows = [...(await things.unsettled(limit + 1)), ...pending];
  const lines: UnsettledLine[] = [];
  const foreign = await things.foreignEvents();
  if (foreign.count > 0) {
    lines.push({ message: msg('STATUS.foreign', { count: foreign.count }) });
    for (const f of foreign.latest) {
      lines.push({
        message: msg('STATUS.foreignEvent', { type: f.type, subject: f.subject ?? '-', id: f.id }),
        item: true,
      });
    }
  }
  lines.push({ message: msg('STATUS.waitingFinal', { count: rows.length > limit ? `${limit}+` : rows.length }) });
  const files = new Map<string, string>();
  for (const t of rows.slice(0, limit)) {
    let file = files.get(t.batchId);
    if (file === undefined) {
      file = (await store.getBatch(t.batchId))?.fileName ?? shortBatchId(t.batchId);
      files.set(t.batchId, file);
    }
    const thing = { kind: t.kind, key: t.key, status: t.status, since: instant(t.createdAt), file, line: t.line };
    const message = t.dueAt
      ? msg('STATUS.waitingThingDue', { ...thing, due: instant(t.dueAt) })
      : msg('STATUS.waitingThing', thing);
    lines.push({ message, item: true });
  }
  return lines;
}

export { retornoSnapshot } from '../store/snapshot.js';
export type { ThingKind };
