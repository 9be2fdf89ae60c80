/**
 * The runner's options, mapped from the configuration, and what the commands derive from them. Kept apart from
 * ./commands.ts so that `remessa validate` (./validate.ts) loads neither the bank client, the store nor the queue.
 */
import type { BankClientOptions, BankProfileName } from '../bank/client.js';
import type { BatchKind } from '../batches/kind.js';
import { KINDS as REGISTERED_KINDS } from '../batches/registry.js';
import { STATUS_COLUMNS } from '../batches/results.js';
import { checkColumnSettings, columnSupply, headerColumns } from '../batches/supply.js';
import type { Config, SandboxTls } from '../config.js';
import { type ReadBatchOptions, readBatch } from '../csv/reader.js';
import { parseAmount } from '../formats/money.js';
import type { AuthorizationScheme } from '../formats/webhook-authorization.js';
import { DEFAULT_LOCALE, type Locale } from '../i18n/index.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { ResultFormSettings } from '../outbox/cell-forms.js';
import { type StorePlace, storePlace } from '../store/place.js';
import type { Cents, KindName } from '../types.js';
import { EMBEDDED_EVENT_TYPES, type RegistrableEventType } from '../webhooks/events.js';

/** What the commands need, mapped from the configuration (see `runnerOptionsFromConfig`). */
export interface RunnerOptions {
  folders: {
    /** Watched for batches. */
    inbox: string;
    /** Answers: `<kind>/<name>.<intake id>.result.csv`, `.rejected.txt`, `.summary.json`, PDFs and PNGs (src/outbox/names.ts). */
    outbox: string;
    /** Taken originals end here. */
    archive: string;
    /** The store (`remessa.sqlite`), the work area (`work/`) and the embedded sandbox's state. */
    data: string;
  };
  /**
   * The store (src/store/place.ts): `store.url`'s PostgreSQL database, else SQLite in `folders.data`.
   * @defaultValue SQLite `<data>/remessa.sqlite`
   */
  store?: StorePlace;
  /**
   * This daemon among several sharing a PostgreSQL store (src/store/leases.ts): `store.daemonName`, `store.leaseMs`.
   * Used only when the store is PostgreSQL. @defaultValue the host's name, 30000 ms
   */
  daemon?: { name: string; leaseMs: number };
  bank:
    | {
        /** The embedded sandbox, started in-process on a free port. */
        embedded: true;
        /** Its SQLite file. @defaultValue `<data>/sandbox.sqlite` */
        sandboxDataFile?: string;
        /** Interface it listens on. @defaultValue '127.0.0.1' */
        sandboxHost?: string;
        /** Its port. @defaultValue 0 (a free port) */
        sandboxPort?: number;
        /** The dialect it serves. @defaultValue the client's profile, else 'interface' */
        sandboxProfile?: BankProfileName;
        /** HTTPS (and client certificates) for it; the client then needs `tlsCa` (and `tlsCert`/`tlsKey`). @defaultValue plain HTTP */
        sandboxTls?: SandboxTls;
        /** Settings of the client talking to it (base URL and key are filled in). */
        client?: Omit<BankClientOptionsLike, 'baseUrl' | 'apiKey'>;
        /** Account id (idempotency-key namespace). @defaultValue 'sandbox' */
        accountId?: string;
      }
    | {
        embedded: false;
        /** The client's settings (base URL, API key, timeouts, retries, TLS). */
        client: BankClientOptionsLike;
        /** The account id: namespace of the idempotency keys (and webhook header). */
        accountId: string;
      };
  intake: {
    /** Milliseconds inode, size and mtime must stay unchanged before a file is taken. */
    stableMs: number;
    /** Milliseconds a file whose last line is unfinished is waited for before it is rejected as cut off. */
    cutOffMs?: number;
    /** Take a file only when `<name>.done` appears. */
    requireDoneMarker: boolean;
    /** Poll instead of file system events (network shares). */
    usePolling: boolean;
    /** Polling interval in milliseconds. */
    pollIntervalMs: number;
    /** Files processed at once. @defaultValue 4 */
    maxConcurrentFiles?: number;
  };
  /** CSV dialect overrides; absent = detect. */
  csv: {
    encoding?: 'utf8' | 'windows-1252';
    delimiter?: ',' | ';' | '\t';
    decimalMark?: '.' | ',';
  };
  /**
   * The form of identifiers and dates in answers (src/outbox/cell-forms.ts): `auto` follows each file's dialect (a
   * Brazilian spreadsheet's gets masked lines, `="..."` digits and dd/mm/yyyy; an ERP's, bare digits and ISO).
   * Taken live on a reload. @defaultValue both `auto`
   */
  results: ResultFormSettings;
  queue: {
    /** Requests in flight at once. */
    concurrency: number;
    /** Rows read ahead and queued at once. @defaultValue 8 a connection (src/queue/request-queue.ts) */
    maxRowsInFlight?: number | undefined;
    /** Per endpoint group: at most `requests` started in any `intervalMs` (0 = unlimited). */
    rateLimits: Record<string, { requests: number; intervalMs: number }>;
    /** All groups together: at most `requests` started in any `intervalMs` (0 = unlimited). @defaultValue unlimited */
    overallRateLimit?: { requests: number; intervalMs: number };
    /** Whether a group that gets 429s lowers its rate for a while (AIMD, src/queue/rate-limit.ts). @defaultValue true */
    adaptiveRateLimits?: boolean;
    /** "auto": limits counted across every daemon when the store is PostgreSQL (src/queue/shared-rate.ts). @defaultValue "auto" */
    sharedRateLimits?: 'auto' | 'off';
  };
  /**
   * While the bank cannot be reached (config `bank.unreachable`): the waits between tries, and how long `run` waits.
   * @defaultValue DEFAULT_UNREACHABLE_DELAYS_MS (src/runner/bank-gate.ts), run waits 300000 ms
   */
  unreachable?: { retryDelaysMs: number[]; runMaxWaitMs: number };
  /**
   * While the bank refuses remessa's credentials (config `bank.credentialsRefused`): the wait between tries.
   * @defaultValue DEFAULT_CREDENTIALS_RETRY_EVERY_MS (src/runner/bank-gate.ts)
   */
  credentialsRefused?: { retryEveryMs: number };
  /** Per kind: all-or-nothing or send-valid. Absent: the kind's default. */
  policy: Partial<Record<KindName, 'all-or-nothing' | 'send-valid'>>;
  /** Per kind: source header -> column (wins over the built-in header names). Taken live on a reload. */
  mappings: Partial<Record<KindName, Record<string, string>>>;
  /**
   * Per kind: column -> constant used when a sheet has no such column (over the built-in defaults of
   * src/batches/supply.ts). Taken live on a reload. @defaultValue `{}`
   */
  defaults?: Partial<Record<KindName, Record<string, string>>>;
  /** Language of every message a person reads (config `locale`, `--locale`). Taken live on a reload. */
  locale: Locale;
  logger: Logger;
  /** Where command output (validate's errors, status) goes. @defaultValue process.stdout */
  out?: NodeJS.WritableStream;
  /** Where progress goes. @defaultValue process.stderr */
  progressStream?: NodeJS.WritableStream & { isTTY?: boolean };
  /** Time between two progress lines (plain `run`/`validate` lines, the daemon's per-batch log), in ms. @defaultValue 30000 */
  progressIntervalMs?: number;
  /**
   * The retorno's schedule in the daemon (src/runner/retorno.ts): reconcile every `everyMs` (0: never), apply the
   * received webhook events every `applyEventsEveryMs` (0: only when reconciling), each once it has been stored for
   * `eventSettleMs` (src/runner/retorno.ts, "Order"). @defaultValue both off, no settling
   */
  reconcile?: { everyMs: number; applyEventsEveryMs: number; eventSettleMs: number };
  /** The operator's endpoint of the daemon (/metrics, /healthz, /readyz); absent or port 0 = off. */
  metricsEndpoint?: { host: string; port: number; readyTimeoutMs: number; bankCheckCacheMs: number };
  /** Counts the bank requests (set by the daemon when its metrics endpoint is on). */
  metrics?: Metrics;
  /** Money controls (src/runner/approval.ts): approval and limits. Absent: no file waits, no limit. Taken live. */
  controls?: MoneyControlOptions;
  /** The daemon's webhook receiver (src/webhooks/receiver.ts); absent = off. */
  webhookReceiver?: WebhookReceiverSettings;
}

/** `webhooks.receiver.*` and `webhooks.events`, as the daemon uses them. */
export interface WebhookReceiverSettings {
  host: string;
  /** 0 picks a free port (the embedded default). */
  port: number;
  path: string;
  bodyLimitBytes: number;
  authorizationScheme: AuthorizationScheme;
  /** The credential; absent only with the embedded sandbox, where the daemon draws a random one at each start. */
  authorization?: string | undefined;
  /** Event types the embedded sandbox is registered for. */
  events: readonly RegistrableEventType[];
}
/** `approval` and `limits` of the configuration, amounts in cents. */
export interface MoneyControlOptions {
  /** Kinds whose files wait for a person's approval before any effect step. */
  approvalKinds: readonly KindName[];
  /**
   * Refuse an approver whose OS user is the file's OS owner, or when either cannot be told (src/store/approvals.ts
   * rule 3).
   */
  forbidSameAsOwner: boolean;
  /** Names that may never approve (they prepare the files). */
  makers: readonly string[];
  /**
   * Absolute folder where `.approved` markers are looked for instead of the inbox (`approval.markersFrom`): one only
   * approvers can write. Absent: beside the file in the inbox.
   */
  markersDir?: string | undefined;
  /** How often the daemon looks for decisions and `.approved` markers, in milliseconds. */
  pollMs: number;
  /** Per kind: the most one row, one file, and one calendar day (America/Sao_Paulo) may pay, in cents. */
  limits: Partial<Record<KindName, { perRow?: Cents; perFile?: Cents; perDay?: Cents }>>;
}

/** The money controls of a configuration (amounts in reais in the file, cents here). */
export function moneyControlsFromConfig(config: Pick<Config, 'approval' | 'limits'>): MoneyControlOptions {
  const limits: MoneyControlOptions['limits'] = {};
  for (const [kind, l] of Object.entries(config.limits) as Array<
    [KindName, { perRow?: string; perFile?: string; perDay?: string }]
  >) {
    const cents = (text: string | undefined) => (text === undefined ? undefined : parseAmount(text, '.'));
    const perRow = cents(l.perRow);
    const perFile = cents(l.perFile);
    const perDay = cents(l.perDay);
    limits[kind] = {
      ...(perRow !== undefined ? { perRow } : {}),
      ...(perFile !== undefined ? { perFile } : {}),
      ...(perDay !== undefined ? { perDay } : {}),
    };
  }
  return {
    approvalKinds: [...(config.approval.kinds ?? [])],
    forbidSameAsOwner: config.approval.forbidSameAsOwner,
    makers: [...config.approval.makers],
    ...(config.approval.markersFrom !== undefined ? { markersDir: config.approval.markersFrom } : {}),
    pollMs: config.approval.pollMs,
    limits,
  };
}

/** The client's options, passed through. */
export type BankClientOptionsLike = BankClientOptions;

/**
 * Maps the parsed configuration onto the runner's options. Throws ConfigError when `mappings` or `defaults` name a
 * column a kind does not have.
 */
export function runnerOptionsFromConfig(config: Config, logger: Logger): RunnerOptions {
  checkColumnSettings(KINDS, config, config.sourceFile ?? 'config');
  const b = config.bank;
  const client: Omit<BankClientOptionsLike, 'baseUrl' | 'apiKey'> = {
    accountId: b.accountId,
    profile: b.profile,
    paths: { ...b.paths },
    ...(b.pixPaymentKeyReplayed !== undefined ? { pixPaymentKeyReplayed: b.pixPaymentKeyReplayed } : {}),
    ...(b.headers.apiKey ? { apiKeyHeader: b.headers.apiKey } : {}),
    ...(b.headers.accountId ? { accountIdHeader: b.headers.accountId } : {}),
    ...(b.headers.idempotencyKey ? { idempotencyKeyHeader: b.headers.idempotencyKey } : {}),
    connectTimeoutMs: b.timeouts.connectMs,
    headersTimeoutMs: b.timeouts.headersMs,
    bodyTimeoutMs: b.timeouts.bodyMs,
    maxAttempts: b.retry.maxAttempts,
    baseDelayMs: b.retry.baseDelayMs,
    maxDelayMs: b.retry.maxDelayMs,
    maxRetryAfterMs: b.retry.maxRetryAfterMs,
    connections: b.connections,
    logger,
  };
  // Read and checked by the config (src/config.ts): a file missing or wrong never gets this far.
  const tls = config.bankTls;
  if (tls.cert !== undefined) client.tlsCert = tls.cert;
  if (tls.key !== undefined) client.tlsKey = tls.key;
  if (tls.ca !== undefined) client.tlsCa = tls.ca;
  if (tls.passphrase !== undefined) client.tlsPassphrase = tls.passphrase;
  return {
    folders: { ...config.folders },
    store: storePlace(config),
    daemon: { name: config.store.daemonName, leaseMs: config.store.leaseMs },
    bank: config.embedded
      ? {
          embedded: true,
          sandboxDataFile: config.sandbox.dataFile,
          sandboxHost: config.sandbox.host,
          sandboxPort: config.sandbox.port,
          sandboxProfile: config.sandbox.profile ?? b.profile,
          ...(config.sandboxTls ? { sandboxTls: config.sandboxTls } : {}),
          client,
          accountId: b.accountId ?? 'sandbox',
        }
      : {
          embedded: false,
          client: {
            ...client,
            baseUrl: b.url,
            apiKey: b.apiKey!,
          },
          accountId: b.accountId ?? '',
        },
    intake: {
      stableMs: config.intake.stableMs,
      cutOffMs: config.intake.cutOffMs,
      requireDoneMarker: config.intake.requireDoneMarker,
      usePolling: config.intake.mode === 'poll',
      pollIntervalMs: config.intake.pollIntervalMs,
      maxConcurrentFiles: config.intake.maxConcurrentFiles,
    },
    csv: {
      encoding: config.csv.encoding === 'auto' ? undefined : config.csv.encoding,
      delimiter: config.csv.delimiter === 'auto' ? undefined : config.csv.delimiter,
      decimalMark: config.csv.decimalMark === 'auto' ? undefined : config.csv.decimalMark,
    },
    results: { ...config.results },
    queue: {
      concurrency: config.queue.concurrency,
      maxRowsInFlight: config.queue.maxRowsInFlight,
      rateLimits: { ...config.queue.rateLimits },
      overallRateLimit: { ...config.queue.overallRateLimit },
      adaptiveRateLimits: config.queue.adaptiveRateLimits,
      sharedRateLimits: config.queue.sharedRateLimits,
    },
    unreachable: { retryDelaysMs: [...b.unreachable.retryDelaysMs], runMaxWaitMs: b.unreachable.runMaxWaitMs },
    credentialsRefused: { retryEveryMs: b.credentialsRefused.retryEveryMs },
    policy: { ...config.policy },
    reconcile: {
      everyMs: config.reconcile.everyMinutes * 60_000,
      applyEventsEveryMs: config.reconcile.applyEventsEverySeconds * 1_000,
      eventSettleMs: config.reconcile.eventSettleSeconds * 1_000,
    },
    mappings: { ...config.mappings } as RunnerOptions['mappings'],
    defaults: { ...config.defaults } as NonNullable<RunnerOptions['defaults']>,
    locale: config.locale,
    logger,
    progressIntervalMs: config.log.progressIntervalMs,
    ...(config.webhookReceiverEnabled
      ? {
          webhookReceiver: {
            host: config.webhooks.receiver.host,
            port: config.webhooks.receiver.port ?? 0,
            path: config.webhooks.receiver.path,
            bodyLimitBytes: config.webhooks.receiver.bodyLimitBytes,
            authorizationScheme: config.webhooks.receiver.authorizationScheme,
            authorization: config.webhookAuthorization,
            events: config.webhooks.events ?? EMBEDDED_EVENT_TYPES,
          },
        }
      : {}),
    controls: moneyControlsFromConfig(config),
    ...(config.metrics.port > 0
      ? {
          metricsEndpoint: {
            host: config.metrics.host,
            port: config.metrics.port,
            readyTimeoutMs: config.metrics.readyTimeoutMs,
            bankCheckCacheMs: config.metrics.readyCacheMs,
          },
        }
      : {}),
  };
}

// biome-ignore lint/suspicious/noExplicitAny: kinds of every row type
const KINDS = REGISTERED_KINDS as Readonly<Record<KindName, BatchKind<any>>>;

/** How the header of a file of `kind` is read: its columns, the configured mapping, what the kind supplies. */
function headerOptionsOf(options: Pick<RunnerOptions, 'mappings' | 'defaults'>, kind: KindName) {
  const supply = columnSupply(kind, options.defaults?.[kind]);
  return {
    columns: headerColumns(KINDS[kind]),
    mapping: options.mappings[kind] ?? {},
    ...(supply ? { supply } : {}),
    // A result file dropped again: the columns its answer added are not the input's (src/csv/headers.ts).
    answerColumns: [...STATUS_COLUMNS, ...KINDS[kind].resultColumns],
  };
}

/**
 * The reader's options for a file of `kind`: the kind's columns with their built-in header names, the configured
 * header mapping, what the kind fills for absent columns (defaults, derived ids), and the dialect.
 */
export function readOptions(
  options: Pick<RunnerOptions, 'mappings' | 'defaults' | 'csv'> & Partial<Pick<RunnerOptions, 'locale'>>,
  kind: KindName,
  displayName: string,
): ReadBatchOptions {
  return {
    ...headerOptionsOf(options, kind),
    kind,
    displayName,
    ...(options.csv.encoding ? { encoding: options.csv.encoding } : {}),
    ...(options.csv.delimiter ? { delimiter: options.csv.delimiter } : {}),
    // A one-column file's answer, in the columns of the spreadsheet of the language it speaks (Excel pt-BR: ';').
    delimiterWhenNone: (options.locale ?? DEFAULT_LOCALE) === 'pt-BR' ? ';' : ',',
    ...(options.csv.decimalMark ? { decimalMark: options.csv.decimalMark } : {}),
    // A file of another kind dropped in this kind's folder is told so (src/csv/headers.ts `inWrongFolder`).
    otherKinds: () =>
      (Object.keys(KINDS) as KindName[])
        .filter((k) => k !== kind)
        .map((k) => ({ kind: k, ...headerOptionsOf(options, k) })),
  };
}

/**
 * The kinds whose header `file` (shown as `displayName`) fits: read as each kind would read it, without its hints
 * of other kinds. For a file of no known kind (at the inbox root without a kind's name, in a folder of no kind), so
 * that its answer can say where it goes. Empty when none reads it, or the file cannot be read at all.
 */
export async function kindsReading(
  options: Pick<RunnerOptions, 'mappings' | 'defaults' | 'csv'> & Partial<Pick<RunnerOptions, 'locale'>>,
  file: string,
  displayName: string,
): Promise<KindName[]> {
  const fits: KindName[] = [];
  for (const kind of Object.keys(KINDS) as KindName[]) {
    const { otherKinds: _, ...read } = readOptions(options, kind, displayName);
    try {
      (await readBatch(file, read)).close();
      fits.push(kind);
    } catch {
      // Not this kind's header (or not readable as any): no hint from it.
    }
  }
  return fits;
}

/** Where command output goes. */
export function out(options: Pick<RunnerOptions, 'out'>): NodeJS.WritableStream {
  return options.out ?? process.stdout;
}
