/**
 * The runner's options, mapped from the configuration, and what the commands derive from them. Kept apart from
 * ./commands.ts so that `remessa validate` (./validate.ts) loads neither the bank client, the store nor the queue.
 */
import { readFileSync } from 'node:fs';
import type { BankClientOptions } from '../bank/client.js';
import type { BatchKind } from '../batches/kind.js';
import { KINDS as REGISTERED_KINDS } from '../batches/registry.js';
import { checkColumnSettings, columnSupply, headerColumns } from '../batches/supply.js';
import type { Config } from '../config.js';
import type { ReadBatchOptions } from '../csv/reader.js';
import type { Locale } from '../i18n/index.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { KindName } from '../types.js';

/** What the commands need, mapped from the configuration (see `runnerOptionsFromConfig`). */
export interface RunnerOptions {
  folders: {
    /** Watched for batches. */
    inbox: string;
    /** Answers: `<kind>/<name>.result.csv`, `.rejected.txt`, `.summary.json`, PDFs and PNGs. */
    outbox: string;
    /** Taken originals end here. */
    archive: string;
    /** The store (`remessa.sqlite`), the work area (`work/`) and the embedded sandbox's state. */
    data: string;
  };
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
  queue: {
    /** Requests in flight at once. */
    concurrency: number;
    /** Rows read ahead and queued at once. */
    maxRowsInFlight: number;
    /** Per endpoint group: at most `requests` per `intervalMs` (0 = unlimited). */
    rateLimits: Record<string, { requests: number; intervalMs: number }>;
  };
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
  /** The operator's endpoint of the daemon (/metrics, /healthz, /readyz); absent or port 0 = off. */
  metricsEndpoint?: { host: string; port: number; readyTimeoutMs: number; bankCheckCacheMs: number };
  /** Counts the bank requests (set by the daemon when its metrics endpoint is on). */
  metrics?: Metrics;
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
    apiKeyHeader: b.headers.apiKey,
    accountIdHeader: b.headers.accountId,
    idempotencyKeyHeader: b.headers.idempotencyKey,
    connectTimeoutMs: b.timeouts.connectMs,
    headersTimeoutMs: b.timeouts.headersMs,
    bodyTimeoutMs: b.timeouts.bodyMs,
    maxAttempts: b.retry.maxAttempts,
    baseDelayMs: b.retry.baseDelayMs,
    maxDelayMs: b.retry.maxDelayMs,
    maxRetryAfterMs: b.retry.maxRetryAfterMs,
    connections: b.connections,
    pixPaymentPath: b.pixPaymentPath,
    logger,
  };
  const tls = b.tls as { certFile?: string; keyFile?: string; caFile?: string };
  const readPem = (f: string | undefined) => (f ? readFileSyncText(f) : undefined);
  return {
    folders: { ...config.folders },
    bank: config.embedded
      ? {
          embedded: true,
          sandboxDataFile: config.sandbox.dataFile,
          sandboxHost: config.sandbox.host,
          sandboxPort: config.sandbox.port,
          client,
          accountId: b.accountId ?? 'sandbox',
        }
      : {
          embedded: false,
          client: {
            ...client,
            baseUrl: b.url,
            apiKey: b.apiKey!,
            tlsCert: readPem(tls.certFile),
            tlsKey: readPem(tls.keyFile),
            tlsCa: readPem(tls.caFile),
          },
          accountId: b.accountId ?? '',
        },
    intake: {
      stableMs: config.intake.stableMs,
      cutOffMs: config.intake.cutOffMs,
      requireDoneMarker: config.intake.requireDoneMarker,
      usePolling: config.intake.mode === 'poll',
      pollIntervalMs: config.intake.pollIntervalMs,
    },
    csv: {
      encoding: config.csv.encoding === 'auto' ? undefined : config.csv.encoding,
      delimiter: config.csv.delimiter === 'auto' ? undefined : config.csv.delimiter,
      decimalMark: config.csv.decimalMark === 'auto' ? undefined : config.csv.decimalMark,
    },
    queue: {
      concurrency: config.queue.concurrency,
      maxRowsInFlight: config.queue.maxRowsInFlight,
      rateLimits: { ...config.queue.rateLimits },
    },
    policy: { ...config.policy },
    mappings: { ...config.mappings } as RunnerOptions['mappings'],
    defaults: { ...config.defaults } as NonNullable<RunnerOptions['defaults']>,
    locale: config.locale,
    logger,
    progressIntervalMs: config.log.progressIntervalMs,
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

function readFileSyncText(file: string): string {
  // Certificates are read once at start-up; sync keeps the mapping a plain function.
  return readFileSync(file, 'utf8');
}

// biome-ignore lint/suspicious/noExplicitAny: kinds of every row type
const KINDS = REGISTERED_KINDS as Readonly<Record<KindName, BatchKind<any>>>;

/**
 * The reader's options for a file of `kind`: the kind's columns with their built-in header names, the configured
 * header mapping, what the kind fills for absent columns (defaults, derived ids), and the dialect.
 */
export function readOptions(
  options: Pick<RunnerOptions, 'mappings' | 'defaults' | 'csv'>,
  kind: KindName,
  displayName: string,
): ReadBatchOptions {
  const supply = columnSupply(kind, options.defaults?.[kind]);
  return {
    columns: headerColumns(KINDS[kind]),
    mapping: options.mappings[kind] ?? {},
    kind,
    ...(supply ? { supply } : {}),
    displayName,
    ...(options.csv.encoding ? { encoding: options.csv.encoding } : {}),
    ...(options.csv.delimiter ? { delimiter: options.csv.delimiter } : {}),
    ...(options.csv.decimalMark ? { decimalMark: options.csv.decimalMark } : {}),
  };
}

/** Where command output goes. */
export function out(options: Pick<RunnerOptions, 'out'>): NodeJS.WritableStream {
  return options.out ?? process.stdout;
}
