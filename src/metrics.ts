/**
 * Every metric remessa exports, declared in this one module so an operator finds them all in one place.
 *
 * Conventions (Prometheus): the `remessa_` prefix, base units (`_seconds`, `_bytes`), `_total` for counters, and label
 * values from closed sets only (kinds, row states, batch states, endpoint groups, HTTP status codes, error codes of the
 * client's hierarchy), so a series count never grows with the data.
 *
 * Two sources:
 * - events counted as they happen (bank requests and their latency, intake errors), since the process started;
 * - state read at scrape time (rows by kind and state, batches by state, queue depth, paused groups, the time of the
 *   last batch answered), from the store and the queue, so the figures survive a restart and never drift.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { VACUUM_RESULTS, type VacuumStats } from './store/vacuum.js';
import { ENDPOINT_GROUPS, type EndpointGroup } from './types.js';

/** Results of a delivery to the webhook receiver: the label values of `remessa_webhook_events_total`. */
export const WEBHOOK_RECEIVER_RESULTS = ['stored', 'duplicate', 'rejected'] as const;
export type WebhookReceiverResult = (typeof WEBHOOK_RECEIVER_RESULTS)[number];

/** One finished attempt of a bank request, as the transport reports it. */
export interface RequestObservation {
  method: string;
  /** The request's path (classified into an endpoint group; never used as a label). */
  path: string;
  /** HTTP status, or undefined when no response came (connection error, timeout). */
  status: number | undefined;
  /** The client error's stable code when the attempt failed (e.g. SERVICE_CONNECTION). */
  errorCode?: string | undefined;
  durationMs: number;
}

/** What the scrape-time gauges read. Each source is optional: a command without a store has none. */
export interface MetricsSources {
  /** Rows by kind and state, batches by state, the time the last batch was answered (ms since epoch). */
  storeSnapshot?: () => StoreSnapshot | Promise<StoreSnapshot>;
  /** The request queue's depth. */
  queueStats?: () => { waiting: number; running: number; rowsHeld: number };
  /** Whether an endpoint group is paused by a 429. */
  isPaused?: (group: EndpointGroup) => boolean;
  /** Whether the bank refuses remessa's credentials now (401/403: the bank gate is closed for them). */
  credentialsRefused?: () => boolean;
  /** Files the intake could not take or handle since the process started. */
  intakeErrors?: () => number;
  /** The retorno's state (src/store/things.ts). */
  retornoSnapshot?: () => RetornoSnapshot | Promise<RetornoSnapshot>;
  /** The daemons sharing a PostgreSQL store and what each holds (src/store/leases.ts `listDaemons`). */
  daemonsSnapshot?: () => Promise<DaemonHolds[]>;
  /** A PostgreSQL store's own vacuums since the process started, by how each ended (src/store/vacuum.ts). */
  storeVacuums?: () => Readonly<VacuumStats> | undefined;
}

/** One daemon sharing the store, for `remessa_daemon_holds` and `remessa_daemons_alive`. */
export interface DaemonHolds {
  name: string;
  alive: boolean;
  rows: number;
  files: number;
  answers: number;
}

export interface RetornoSnapshot {
  /** Webhook events applied to the things' state, ever (the store keeps them: monotonic across restarts). */
  eventsApplied: number;
  /** Things by kind and status as last known from the bank. */
  things: Array<{ kind: string; status: string; count: number }>;
  /** When the oldest thing still waiting for its final status from the bank was created (ms since epoch). */
  oldestUnsettledAtMs: number | undefined;
}

/**
 * Status label values of `remessa_things`: the bank's status names folded to a closed set (anything else is `other`),
 * so a bank inventing statuses cannot grow the series count.
 */
export const THING_STATUS_LABELS = [
  'pending',
  'created',
  'paid',
  'expired',
  'voided',
  'concluded',
  'pix_processing',
  'pix_executed',
  'scheduled',
  'completed',
  'canceled',
  'awaiting_resolution',
  'confirmed',
  'failed',
  'active',
  'received',
] as const;

function thingStatusLabel(status: string): string {
  const s = status.toLowerCase() === 'pendig' ? 'pending' : status.toLowerCase();
  return (THING_STATUS_LABELS as readonly string[]).includes(s) ? s : 'other';
}

export interface StoreSnapshot {
  rows: Array<{ kind: string; state: string; count: number }>;
  batches: Array<{ state: string; count: number }>;
  lastAnsweredAtMs: number | undefined;
}

/** The endpoint group of a bank path, or `webhooks` / `other`: a bounded label from an unbounded path. */
export function endpointGroupOf(path: string): EndpointGroup | 'webhooks' | 'other' {
  const p = path.split('?')[0] ?? '';
  if (/\/webhooks?(\/|$)/.test(p)) return 'webhooks';
  if (/\/charges(\/|$)/.test(p)) return 'charges';
  if (/\/bill-?payments?(\/|$)|\/bills?(\/|$)/.test(p)) return 'bill-payments';
  if (/\/claims?(\/|$)|\/dict(\/|$)/.test(p)) return 'claims';
  if (/\/pix(\/|$)|\/qr-?codes?(\/|$)|\/qrcode(\/|$)/i.test(p)) return 'pix';
  return 'other';
}

export class Metrics {
  readonly registry = new Registry();
  readonly #requests: Counter<'group' | 'method' | 'status'>;
  readonly #latency: Histogram<'group'>;
  readonly #webhookEvents: Counter<'result'>;
  #sources: MetricsSources = {};

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'remessa_' });
    this.#requests = new Counter({
      name: 'remessa_bank_requests_total',
      help: 'Attempts of requests to the bank, by endpoint group, method and HTTP status (or the client error code when no response came).',
      labelNames: ['group', 'method', 'status'],
      registers,
    });
    this.#latency = new Histogram({
      name: 'remessa_bank_request_duration_seconds',
      help: 'Time from sending a request to the bank to its complete answer (or failure), by endpoint group.',
      labelNames: ['group'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.#webhookEvents = new Counter({
      name: 'remessa_webhook_events_total',
      help: 'Deliveries to the webhook receiver, by result: stored (new event, on disk), duplicate (event id already stored), rejected (401 authorization, 413 body too large, 400 not an event).',
      labelNames: ['result'],
      registers,
    });
    for (const result of WEBHOOK_RECEIVER_RESULTS) this.#webhookEvents.inc({ result }, 0);
    const self = this;
    new Counter({
      name: 'remessa_intake_errors_total',
      help: 'Files the intake could not take from the inbox or could not handle (they stay in the work area).',
      registers,
      collect() {
        // The intake counts them; a counter read at scrape time stays monotonic because its source is.
        this.reset();
        this.inc(self.#sources.intakeErrors?.() ?? 0);
      },
    });
    new Counter({
      name: 'remessa_store_vacuums_total',
      help: "A PostgreSQL store's vacuums of its rows and steps tables run by this daemon as its rows end, by result: done, skipped (another vacuum held a table), failed (logged at warn; no row is affected). None on SQLite or with store.vacuumEveryRows 0.",
      labelNames: ['result'],
      registers,
      collect() {
        // The store counts them; read at scrape time, monotonic because its source is.
        this.reset();
        const stats = self.#sources.storeVacuums?.();
        for (const result of VACUUM_RESULTS) this.inc({ result }, stats?.[result] ?? 0);
      },
    });
    new Gauge({
      name: 'remessa_rows',
      help: 'Rows in the store, by batch kind and row state (pending, in_flight, succeeded, failed, rejected, duplicate, uncertain, ...).',
      labelNames: ['kind', 'state'],
      registers,
      collect() {
        this.reset();
        for (const r of self.#snapshot()?.rows ?? []) this.set({ kind: r.kind, state: r.state }, r.count);
      },
    });
    new Gauge({
      name: 'remessa_rows_uncertain',
      help: 'Rows whose outcome remessa cannot tell yet (all kinds); each needs a later run or a person.',
      registers,
      collect() {
        const rows = self.#snapshot()?.rows ?? [];
        this.set(rows.filter((r) => r.state === 'uncertain').reduce((n, r) => n + r.count, 0));
      },
    });
    new Gauge({
      name: 'remessa_batches',
      help: 'Batches (taken files) in the store, by state; a file rejected as a whole, no row of it stored, counts as rejected.',
      labelNames: ['state'],
      registers,
      collect() {
        this.reset();
        for (const b of self.#snapshot()?.batches ?? []) this.set({ state: b.state }, b.count);
      },
    });
    new Gauge({
      name: 'remessa_last_batch_answered_timestamp_seconds',
      help: 'When the last batch (or a file rejected as a whole) was answered (Unix time); absent before the first.',
      registers,
      collect() {
        this.reset();
        const at = self.#snapshot()?.lastAnsweredAtMs;
        if (at !== undefined) this.set(at / 1000);
      },
    });
    new Gauge({
      name: 'remessa_queue_waiting_requests',
      help: 'Requests waiting in the queue for their rate limit or a free connection.',
      registers,
      collect() {
        this.set(self.#sources.queueStats?.().waiting ?? 0);
      },
    });
    new Gauge({
      name: 'remessa_queue_running_requests',
      help: 'Requests in flight to the bank.',
      registers,
      collect() {
        this.set(self.#sources.queueStats?.().running ?? 0);
      },
    });
    new Gauge({
      name: 'remessa_rows_in_flight',
      help: 'Rows held in memory being driven through their steps (all batches).',
      registers,
      collect() {
        this.set(self.#sources.queueStats?.().rowsHeld ?? 0);
      },
    });
    new Counter({
      name: 'remessa_retorno_events_applied_total',
      help: 'Webhook events the retorno applied to the state of the things remessa created (read from the store).',
      registers,
      collect() {
        this.reset();
        this.inc(self.#retorno()?.eventsApplied ?? 0);
      },
    });
    new Gauge({
      name: 'remessa_things',
      help: 'Charges, QR codes, payments and claims remessa created, by kind and status as last known from the bank.',
      labelNames: ['kind', 'status'],
      registers,
      collect() {
        this.reset();
        const sums = new Map<string, { kind: string; status: string; count: number }>();
        for (const t of self.#retorno()?.things ?? []) {
          const status = thingStatusLabel(t.status);
          const k = `${t.kind}|${status}`;
          const cur = sums.get(k) ?? { kind: t.kind, status, count: 0 };
          cur.count += t.count;
          sums.set(k, cur);
        }
        for (const t of sums.values()) this.set({ kind: t.kind, status: t.status }, t.count);
      },
    });
    new Gauge({
      name: 'remessa_retorno_oldest_unsettled_seconds',
      help: 'Age of the oldest payment remessa made whose final outcome the bank has not told yet (0 when none).',
      registers,
      collect() {
        const at = self.#retorno()?.oldestUnsettledAtMs;
        this.set(at === undefined ? 0 : Math.max(0, (Date.now() - at) / 1000));
      },
    });
    new Gauge({
      name: 'remessa_daemons_alive',
      help: 'Daemons sharing the (PostgreSQL) store whose lease is live; 0 on SQLite (one daemon, no leases).',
      registers,
      collect() {
        this.reset();
        const daemons = self.#daemonsCache?.value;
        if (daemons !== undefined) this.set(daemons.filter((d) => d.alive).length);
      },
    });
    new Gauge({
      name: 'remessa_daemon_holds',
      help: 'What each daemon sharing the store holds: unfinished rows, files taken, answers being written.',
      labelNames: ['daemon', 'what'],
      registers,
      collect() {
        this.reset();
        for (const d of self.#daemonsCache?.value ?? []) {
          this.set({ daemon: d.name, what: 'rows' }, d.rows);
          this.set({ daemon: d.name, what: 'files' }, d.files);
          this.set({ daemon: d.name, what: 'answers' }, d.answers);
        }
      },
    });
    new Gauge({
      name: 'remessa_bank_credentials_refused',
      help: "Whether the bank refuses remessa's credentials now (1: it answered 401/403; rows wait, one asks again every bank.credentialsRefused.retryEveryMs) or not (0).",
      registers,
      collect() {
        this.set(self.#sources.credentialsRefused?.() ? 1 : 0);
      },
    });
    new Gauge({
      name: 'remessa_group_paused',
      help: 'Whether an endpoint group is paused after a 429 (1) or not (0).',
      labelNames: ['group'],
      registers,
      collect() {
        for (const g of ENDPOINT_GROUPS) this.set({ group: g }, self.#sources.isPaused?.(g) ? 1 : 0);
      },
    });
  }

  /** Connects the scrape-time gauges to the running pipeline. */
  attach(sources: MetricsSources): void {
    this.#sources = { ...this.#sources, ...sources };
  }

  /** Counts one attempt of a bank request (the transport's observer). */
  observeRequest(o: RequestObservation): void {
    const group = endpointGroupOf(o.path);
    const status = o.status !== undefined ? String(o.status) : (o.errorCode ?? 'NO_RESPONSE');
    this.#requests.inc({ group, method: o.method, status });
    this.#latency.observe({ group }, o.durationMs / 1000);
  }

  /** Counts one delivery to the webhook receiver (src/webhooks/receiver.ts) by its result. */
  observeWebhookEvent(result: WebhookReceiverResult): void {
    this.#webhookEvents.inc({ result });
  }

  /** The text exposition format. The store is read first (asynchronously), once per scrape at most every 500 ms. */
  async render(): Promise<string> {
    await this.#refresh();
    return this.registry.metrics();
  }

  /** Reads the store's snapshots that the gauges show (their `collect` is synchronous: they read the cache). */
  async #refresh(): Promise<void> {
    const now = Date.now();
    if (!this.#snapshotCache || now - this.#snapshotCache.at >= 500) {
      this.#snapshotCache = { at: now, value: await this.#sources.storeSnapshot?.() };
    }
    if (!this.#retornoCache || now - this.#retornoCache.at >= 500) {
      this.#retornoCache = { at: now, value: await this.#sources.retornoSnapshot?.() };
    }
    if (!this.#daemonsCache || now - this.#daemonsCache.at >= 500) {
      this.#daemonsCache = { at: now, value: await this.#sources.daemonsSnapshot?.() };
    }
  }

  #daemonsCache: { at: number; value: DaemonHolds[] | undefined } | undefined;

  get contentType(): string {
    return this.registry.contentType;
  }

  #retornoCache: { at: number; value: RetornoSnapshot | undefined } | undefined;

  /** The retorno as read for this scrape (`render`). */
  #retorno(): RetornoSnapshot | undefined {
    return this.#retornoCache?.value;
  }

  #snapshotCache: { at: number; value: StoreSnapshot | undefined } | undefined;

  /** The store as read for this scrape (`render`), shared by the gauges that need it. */
  #snapshot(): StoreSnapshot | undefined {
    return this.#snapshotCache?.value;
  }
}
