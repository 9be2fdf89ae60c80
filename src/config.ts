/**
 * Configuration: one JSONC file (comments allowed), parsed once at start-up by a strict zod schema, then frozen.
 *
 * Sources, in order of precedence for each value:
 * 1. environment variables for secrets: REMESSA_API_KEY, REMESSA_ACCOUNT_ID (and REMESSA_BANK_URL for the URL);
 * 2. secret files: `bank.apiKeyFile` / `bank.accountIdFile`, or systemd credentials `remessa-api-key` and
 *    `remessa-account-id` in $CREDENTIALS_DIRECTORY (LoadCredential=); the client certificate and key from
 *    `bank.tls.certFile` / `keyFile` or the credentials `remessa-tls-cert` / `remessa-tls-key`, the key's passphrase
 *    from REMESSA_TLS_PASSPHRASE, `bank.tls.passphraseFile` or the credential `remessa-tls-passphrase`; the
 *    PostgreSQL store's password from `store.passwordFile` or the credential `remessa-store-password`;
 * 3. the config file (`--config`, REMESSA_CONFIG, or `config/remessa.jsonc` when it exists);
 * 4. the defaults below.
 *
 * Unknown keys are an error that names the key: a misspelt setting must never be silently ignored. Every file a
 * setting names is read and checked here, once (src/config-files.ts): a missing, unreadable or wrong file is one
 * line naming the setting, never a stack trace at the first request.
 * Every setting is documented where it stands, in config/remessa.jsonc.
 */

import { existsSync } from 'node:fs';
import path from 'node:path';
import { type ParseError, parse as parseJsonc, printParseErrorCode } from 'jsonc-parser';
import { z } from 'zod';
import {
  checkCertificates,
  checkTlsPair,
  readCredential,
  readIfSet,
  readSettingFile,
  type SettingText,
} from './config-files.js';
import { ConfigError } from './errors.js';
import { BANK_OPERATIONS, BANK_PROFILES } from './formats/profiles.js';
import { AUTHORIZATION_SCHEMES, authorizationProblem } from './formats/webhook-authorization.js';
import { DEFAULT_LOCALE, LOCALES } from './i18n/index.js';
import { LOG_FORMATS, registerSecret } from './log.js';
import { DAEMON_NAME, DEFAULT_LEASE_MS, defaultDaemonName, MAX_LEASE_MS, MIN_LEASE_MS } from './store/daemon-name.js';
import { parsePgUrl } from './store/pg-url.js';
import { KIND_NAMES } from './types.js';
import { REGISTRABLE_EVENT_TYPES } from './webhooks/events.js';

/** The value of `bank.url` (or no value) that selects the embedded sandbox. */
export const EMBEDDED = 'embedded';

export const DEFAULT_CONFIG_FILE = 'config/remessa.jsonc';

const positiveInt = z.number().int().positive();
const nonNegativeInt = z.number().int().nonnegative();

const rateLimitSchema = z.strictObject({
  /** Requests started per interval; 0 = no limit. */
  requests: nonNegativeInt,
  /** Interval in milliseconds. */
  intervalMs: positiveInt,
});

const kindRecord = <T extends z.ZodType>(value: T) =>
  z.partialRecord(z.enum(KIND_NAMES), value).default({} as Partial<Record<(typeof KIND_NAMES)[number], z.infer<T>>>);

/** An amount in reais as the config writes it: a decimal string with "." (`"5000.00"`, `"250"`). Cents inside. */
const reaisText = z
  .string()
  .regex(/^\d{1,12}(\.\d{1,2})?$/, 'Expected an amount in reais as a decimal string with "." (e.g. "5000.00")');

/** The kinds that move money out: their files wait for approval by default against a real bank. */
export const MONEY_OUT_KINDS = ['bill-payments', 'pix-payments'] as const;

export const configSchema = z.strictObject({
  /** Language of every message a person reads (row errors, notes, validate, status, progress): pt-BR or en. */
  locale: z.enum(LOCALES).default(DEFAULT_LOCALE),
  folders: z
    .strictObject({
      /**
       * The folder every relative path of the config file (folders, sandbox.dataFile, bank.apiKeyFile,
       * bank.accountIdFile, bank.tls.*) is resolved against; itself relative to the config file's folder.
       * @defaultValue the config file's folder (the working directory when there is no config file)
       */
      base: z.string().min(1).optional(),
      inbox: z.string().min(1).default('inbox'),
      outbox: z.string().min(1).default('outbox'),
      archive: z.string().min(1).default('archive'),
      data: z.string().min(1).default('data'),
    })
    .prefault({}),
  // Where remessa keeps its state (issue 13; src/store/place.ts, docs/postgres.md). Absent url: SQLite in
  // folders.data, the default. With url: the daemon and every command use that PostgreSQL database, which several
  // daemons may share (docs/postgres.md).
  store: z
    .strictObject({
      // postgres://user@host:port/database[?sslmode=require|verify-full][&host=/socket/folder&port=N]; no password.
      url: z
        .string()
        .regex(/^postgres(ql)?:\/\//, 'Expected a URL postgres://user@host:port/database')
        .optional(),
      // The role's password, from a file (or the systemd credential remessa-store-password).
      passwordFile: z.string().min(1).optional(),
      // Most connections one daemon opens to PostgreSQL.
      maxConnections: positiveInt.max(1_000).default(10),
      // Named prepared statements for the statements sent again (src/store/pg-driver.ts): PostgreSQL parses and plans
      // each once a connection. false for a pooler in transaction mode that does not keep them.
      preparedStatements: z.boolean().default(true),
      // Several daemons on one PostgreSQL store (src/store/leases.ts): this daemon's name, unique among them (its
      // lease, what it holds, `remessa status`); the host's name by default. Ignored on SQLite (one daemon).
      daemonName: z
        .string()
        .regex(DAEMON_NAME, 'Expected 1 to 63 letters, digits, ".", "_" or "-", starting with a letter or digit')
        .default(() => defaultDaemonName()),
      // How long a daemon's lease lasts without renewal (renewed every third of it): a daemon silent for that long
      // is dead to the others, which take over its rows, files and answers.
      leaseMs: z.number().int().min(MIN_LEASE_MS).max(MAX_LEASE_MS).default(DEFAULT_LEASE_MS),
      // The commit window (src/store/store.ts "The commit window"): how long a row's write may wait, in milliseconds,
      // for the other rows in flight to queue theirs, so that one commit (one fsync) holds them; 0 = off. Absent: the
      // store's default (DEFAULT_COMMIT_WINDOW_MS, 20).
      commitWindowMs: z.number().int().min(0).max(50).optional(),
      // PostgreSQL: the daemon vacuums its hot tables (rows, steps) itself, each this many rows of its own ended, on a
      // connection of its own, never awaited by a row (src/store/vacuum.ts, docs/postgres.md); 0 = never. Absent: the
      // store's default (DEFAULT_VACUUM_EVERY_ROWS, 500). Ignored on SQLite, which has no dead row versions to free
      // (a changed page is written over, a freed one reused): refusing it there would refuse the default.
      vacuumEveryRows: z.number().int().min(0).max(10_000_000).optional(),
    })
    .prefault({}),
  bank: z
    .strictObject({
      url: z.string().min(1).default(EMBEDDED),
      apiKey: z.string().min(1).optional(),
      apiKeyFile: z.string().min(1).optional(),
      accountId: z.string().min(1).optional(),
      accountIdFile: z.string().min(1).optional(),
      // The provider's dialect (src/formats/profiles.ts, docs/providers.md); headers and paths override it one by one.
      profile: z.enum(BANK_PROFILES).default('interface'),
      headers: z
        .strictObject({
          apiKey: z.string().min(1).optional(),
          accountId: z.string().min(1).optional(),
          idempotencyKey: z.string().min(1).optional(),
        })
        .prefault({}),
      paths: z.partialRecord(z.enum(BANK_OPERATIONS), z.string().startsWith('/')).default({}),
      // Whether the bank answers a Pix QR payment sent again with the same IdempotencyKey with the first payment
      // (src/formats/profiles.ts); absent: the profile's (interface true, delbank false).
      pixPaymentKeyReplayed: z.boolean().optional(),
      tls: z
        .strictObject({
          certFile: z.string().min(1).optional(),
          keyFile: z.string().min(1).optional(),
          caFile: z.string().min(1).optional(),
          passphraseFile: z.string().min(1).optional(),
        })
        .prefault({}),
      timeouts: z
        .strictObject({
          connectMs: positiveInt.default(10_000),
          headersMs: positiveInt.default(30_000),
          bodyMs: positiveInt.default(30_000),
        })
        .prefault({}),
      retry: z
        .strictObject({
          maxAttempts: positiveInt.default(5),
          baseDelayMs: positiveInt.default(250),
          maxDelayMs: positiveInt.default(20_000),
          maxRetryAfterMs: positiveInt.default(120_000),
        })
        .prefault({}),
      connections: positiveInt.default(8),
      // While the bank cannot be reached (nothing sent): rows wait (status `waiting`); see src/runner/bank-gate.ts.
      unreachable: z
        .strictObject({
          retryDelaysMs: z.array(positiveInt).min(1).default([1000, 2000, 5000, 10_000, 30_000, 60_000]),
          runMaxWaitMs: nonNegativeInt.default(300_000),
        })
        .prefault({}),
      // While the bank refuses remessa's credentials (401/403): rows wait, one asks again; see src/runner/bank-gate.ts.
      credentialsRefused: z
        .strictObject({
          retryEveryMs: positiveInt.default(60_000),
        })
        .prefault({}),
    })
    .prefault({}),
  sandbox: z
    .strictObject({
      // The dialect the embedded sandbox serves; absent: bank.profile's.
      profile: z.enum(BANK_PROFILES).optional(),
      host: z.string().min(1).default('127.0.0.1'),
      port: nonNegativeInt.max(65535).default(0),
      dataFile: z.string().min(1).optional(),
      apiKeys: z.array(z.string().min(8)).default([]),
      idempotencyModel: z.enum(['all-outcomes', 'successes-only']).default('all-outcomes'),
      pixEndToEndIdTtlSeconds: positiveInt.default(900),
      faultSeed: z.number().int().default(1),
      webhookAllowLoopbackUrls: z.boolean().default(false),
      // Its webhook delivery (`remessa sandbox`): first retry delay (doubling), the largest delay, attempts, polling.
      webhookBackoffBaseMs: nonNegativeInt.default(1_000),
      webhookBackoffMaxMs: nonNegativeInt.default(300_000),
      webhookMaxAttempts: positiveInt.default(8),
      webhookPollIntervalMs: positiveInt.default(1_000),
      tls: z
        .strictObject({
          certFile: z.string().min(1).optional(),
          keyFile: z.string().min(1).optional(),
          clientCaFile: z.string().min(1).optional(),
        })
        .prefault({}),
    })
    .prefault({}),
  intake: z
    .strictObject({
      mode: z.enum(['watch', 'poll']).default('watch'),
      pollIntervalMs: positiveInt.default(1_000),
      // Why 20 s and 2 min: src/intake/intake.ts (a link's retransmission backoff, stalls seen in uploads).
      stableMs: nonNegativeInt.default(20_000),
      cutOffMs: nonNegativeInt.default(120_000),
      requireDoneMarker: z.boolean().default(false),
      // Files a daemon handles at once; with several daemons on one inbox, the next ones are left to the others.
      maxConcurrentFiles: positiveInt.default(4),
    })
    .prefault({}),
  csv: z
    .strictObject({
      encoding: z.enum(['auto', 'utf8', 'windows-1252']).default('auto'),
      delimiter: z.enum(['auto', ',', ';', '\t']).default('auto'),
      decimalMark: z.enum(['auto', '.', ',']).default('auto'),
    })
    .prefault({}),
  // The form of identifiers and dates in result files and the retorno (src/outbox/cell-forms.ts), applied live.
  results: z
    .strictObject({
      identifiers: z.enum(['auto', 'masked', 'digits']).default('auto'),
      dates: z.enum(['auto', 'dayFirst', 'iso']).default('auto'),
    })
    .prefault({}),
  queue: z
    .strictObject({
      concurrency: positiveInt.default(8),
      // Unset: 8 a connection (src/queue/request-queue.ts ROW_SLOTS_PER_CONNECTION).
      maxRowsInFlight: positiveInt.optional(),
      rateLimits: z
        .strictObject({
          charges: rateLimitSchema.default({ requests: 20, intervalMs: 1_000 }),
          'bill-payments': rateLimitSchema.default({ requests: 10, intervalMs: 1_000 }),
          pix: rateLimitSchema.default({ requests: 10, intervalMs: 1_000 }),
          claims: rateLimitSchema.default({ requests: 5, intervalMs: 1_000 }),
        })
        .prefault({}),
      /** All groups together (0 = only the group limits apply). */
      overallRateLimit: rateLimitSchema.default({ requests: 0, intervalMs: 1_000 }),
      /** Whether a group that keeps getting 429 lowers its rate and raises it again slowly. */
      adaptiveRateLimits: z.boolean().default(true),
      /**
       * Rate limits counted across every daemon sharing the store (src/queue/shared-rate.ts): "auto" = when the store
       * is PostgreSQL (store.url); "off" = each daemon counts only its own requests.
       */
      sharedRateLimits: z.enum(['auto', 'off']).default('auto'),
    })
    .prefault({}),
  policy: kindRecord(z.enum(['all-or-nothing', 'send-valid'])),
  mappings: kindRecord(z.record(z.string(), z.string())),
  defaults: kindRecord(z.record(z.string(), z.string())),
  // The retorno (src/runner/retorno.ts): reconciliation with the bank, and application of received webhook events.
  reconcile: z
    .strictObject({
      // The daemon reconciles every N minutes (0: never; `remessa reconcile` and the nightly unit still do).
      everyMinutes: nonNegativeInt.default(60),
      // The daemon applies the webhook events the receiver stored every N seconds (0: only when reconciling).
      applyEventsEverySeconds: nonNegativeInt.default(10),
      // An event is applied once it has been stored for N seconds, and no event that happened after one still
      // settling is applied before it: the bank's deliveries arrive out of order (retries, parallel deliveries), and
      // the retorno is told in the order things happened (src/runner/retorno.ts, "Order").
      eventSettleSeconds: nonNegativeInt.max(3_600).default(5),
    })
    .prefault({}),
  // Money controls (src/runner/approval.ts, src/store/approvals.ts, README "Money controls").
  approval: z
    .strictObject({
      // Kinds whose files wait for `remessa approve`; absent: MONEY_OUT_KINDS against a real bank, none embedded.
      kinds: z.array(z.enum(KIND_NAMES)).optional(),
      forbidSameAsOwner: z.boolean().default(true),
      makers: z.array(z.string().trim().min(1)).default([]),
      // A folder only approvers can write, outside the inbox: `.approved` markers are looked for there (same
      // subfolder and name as the file had in the inbox) instead of beside the file. Made absolute like `folders`.
      markersFrom: z.string().min(1).optional(),
      pollMs: positiveInt.default(2_000),
    })
    .prefault({}),
  limits: kindRecord(
    z.strictObject({ perRow: reaisText.optional(), perFile: reaisText.optional(), perDay: reaisText.optional() }),
  ),
  metrics: z
    .strictObject({
      host: z.string().min(1).default('127.0.0.1'),
      port: z.number().int().min(0).max(65_535).default(0),
      readyTimeoutMs: z.number().int().min(100).default(3_000),
      readyCacheMs: z.number().int().min(0).default(10_000),
    })
    .prefault({}),
  webhooks: z
    .strictObject({
      receiver: z
        .strictObject({
          // Default: on when `port` is set or the bank is the embedded sandbox (src/webhooks/receiver.ts).
          enabled: z.boolean().optional(),
          host: z.string().min(1).default('127.0.0.1'),
          port: z.number().int().min(0).max(65_535).optional(),
          path: z
            .string()
            .regex(/^\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$/)
            .default('/webhooks/bank'),
          publicUrl: z.url({ protocol: /^https?$/ }).optional(),
          authorizationScheme: z.enum(AUTHORIZATION_SCHEMES).default('BEARER'),
          authorizationFile: z.string().min(1).optional(),
          bodyLimitBytes: positiveInt.max(16 * 1024 * 1024).default(256 * 1024),
        })
        .prefault({}),
      events: z.array(z.enum(REGISTRABLE_EVENT_TYPES)).min(1).optional(),
    })
    .prefault({}),
  log: z
    .strictObject({
      level: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
      format: z.enum(LOG_FORMATS).default('auto'),
      progressIntervalMs: z.number().int().min(1_000).default(30_000),
    })
    .prefault({}),
});

type ParsedConfig = z.infer<typeof configSchema>;

/** The client's TLS material (PEM text), read and checked at start-up. Every field absent: no client certificate. */
export interface ClientTls {
  cert?: string;
  key?: string;
  /** Extra CA(s) trusted besides Node's roots. */
  ca?: string;
  passphrase?: string;
}

/** The sandbox's TLS material (PEM text): it serves HTTPS, and requires a client certificate when `clientCa` is set. */
export interface SandboxTls {
  cert: string;
  key: string;
  clientCa?: string;
}

/** The configuration after parsing, secrets resolved, files read and folders made absolute. Frozen. */
export type Config = Readonly<
  ParsedConfig & {
    /** The file it came from, or undefined when only defaults were used. */
    sourceFile: string | undefined;
    /** Whether the bank is the embedded sandbox. */
    embedded: boolean;
    /** `bank.tls` read: certificate and key (files or systemd credentials), extra CA, key passphrase. */
    bankTls: ClientTls;
    /** `sandbox.tls` read, or undefined when the sandbox serves plain HTTP. */
    sandboxTls: SandboxTls | undefined;
    /**
     * The webhook authorization value (REMESSA_WEBHOOK_AUTHORIZATION, `webhooks.receiver.authorizationFile` or the
     * systemd credential `remessa-webhook-authorization`); never from the config file or the command line. A log secret.
     */
    webhookAuthorization: string | undefined;
    /** Whether the daemon serves the webhook receiver (`webhooks.receiver.enabled`, else port set or embedded). */
    webhookReceiverEnabled: boolean;
    /**
     * The PostgreSQL role's password (`store.passwordFile` or the systemd credential `remessa-store-password`), when
     * `store.url` is set; never from the config file, the URL or the command line. A log secret.
     */
    storePassword: string | undefined;
  }
>;

export interface LoadConfigOptions {
  /** Path of the config file. @defaultValue REMESSA_CONFIG, else config/remessa.jsonc when it exists */
  file?: string;
  /** Environment to read secrets from. @defaultValue process.env */
  env?: NodeJS.ProcessEnv;
  /** Folder relative paths are resolved against. @defaultValue process.cwd() */
  cwd?: string;
  /**
   * Whether the command talks to the bank, and so needs its secrets (API key, account id) for a real bank. `status`,
   * `validate`, `approve` and `reject` read only the store and the files: an operator runs them without the secrets,
   * which only the service's unit can read (docs/operations.md). @defaultValue true
   */
  bankSecrets?: boolean;
}

/** Reads, validates and freezes the configuration. Throws ConfigError with the file, line and setting at fault. */
export function loadConfig(options: LoadConfigOptions = {}): Config {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const explicit = options.file ?? env.REMESSA_CONFIG;
  let file: string | undefined;
  let raw: unknown = {};
  if (explicit) {
    file = path.resolve(cwd, explicit);
    if (!existsSync(file)) throw new ConfigError(`Config file ${file} does not exist`, { code: 'CONFIG_NOT_FOUND' });
  } else if (existsSync(path.resolve(cwd, DEFAULT_CONFIG_FILE))) {
    file = path.resolve(cwd, DEFAULT_CONFIG_FILE);
  }
  if (file) raw = parseConfigText(readSettingFile('--config', file), file);
  return buildConfig(raw, { file, env, cwd, bankSecrets: options.bankSecrets ?? true });
}

/** Parses JSONC text; syntax errors name the file, line and column. */
export function parseConfigText(text: string, file = '<config>'): unknown {
  const errors: ParseError[] = [];
  const value = parseJsonc(text, errors, { allowTrailingComma: true, disallowComments: false });
  const first = errors[0];
  if (first) {
    const before = text.slice(0, first.offset);
    const line = before.split('\n').length;
    const column = first.offset - before.lastIndexOf('\n');
    throw new ConfigError(`${file} line ${line}, column ${column}: ${printParseErrorCode(first.error)}`, {
      code: 'CONFIG_SYNTAX',
    });
  }
  return value ?? {};
}

/** Validates an already-parsed config value. Exported for tests. */
export function buildConfig(
  raw: unknown,
  context: { file?: string | undefined; env?: NodeJS.ProcessEnv; cwd?: string; bankSecrets?: boolean } = {},
): Config {
  const env = context.env ?? process.env;
  const cwd = context.cwd ?? process.cwd();
  const where = context.file ?? 'config';
  const result = configSchema.safeParse(raw);
  if (!result.success)
    throw new ConfigError(describeIssues(result.error, where), { code: configErrorCode(result.error) });
  const parsed = result.data;

  // Relative paths follow the config file, not the working directory: `remessa status --config FILE` run from
  // anywhere reads the same store as the daemon started with that file.
  const base = path.resolve(
    context.file ? path.dirname(path.resolve(cwd, context.file)) : cwd,
    parsed.folders.base ?? '.',
  );
  const credentials = env.CREDENTIALS_DIRECTORY;
  const bank = { ...parsed.bank };
  const tls = parsed.bank.tls as { certFile?: string; keyFile?: string; caFile?: string };
  bank.tls = Object.fromEntries(
    Object.entries(tls).map(([k, v]) => [k, typeof v === 'string' ? path.resolve(base, v) : v]),
  ) as typeof bank.tls;
  bank.apiKey =
    env.REMESSA_API_KEY ||
    readSecretFile(bank.apiKeyFile, base, 'bank.apiKeyFile') ||
    readSecretFile(credentials && path.join(credentials, 'remessa-api-key'), cwd) ||
    bank.apiKey;
  bank.accountId =
    env.REMESSA_ACCOUNT_ID ||
    readSecretFile(bank.accountIdFile, base, 'bank.accountIdFile') ||
    readSecretFile(credentials && path.join(credentials, 'remessa-account-id'), cwd) ||
    bank.accountId;
  if (env.REMESSA_BANK_URL) bank.url = env.REMESSA_BANK_URL;
  registerSecret(bank.apiKey);

  const embedded = bank.url === EMBEDDED;
  if (!embedded) {
    if (!/^https?:\/\//.test(bank.url)) {
      throw new ConfigError(`${where}: bank.url: Expected "${EMBEDDED}" or an http(s):// URL, got "${bank.url}"`);
    }
    // A URL is printed (doctor, logs, errors): what would be secret in it is refused, never shown (as store.url).
    const url = URL.canParse(bank.url) ? new URL(bank.url) : undefined;
    if (url && (url.username || url.password)) {
      throw new ConfigError(
        `${where}: bank.url: credentials do not belong in the URL: the API key goes by REMESSA_API_KEY, bank.apiKeyFile or the systemd credential remessa-api-key`,
        { code: 'CONFIG_INVALID' },
      );
    }
  }
  if (!embedded && context.bankSecrets !== false) {
    if (!bank.accountId) {
      // The idempotency keys are derived from the account id: without it, two accounts would share keys.
      throw new ConfigError(
        `${where}: bank.accountId: a real bank needs the account id: set REMESSA_ACCOUNT_ID, bank.accountIdFile or the systemd credential remessa-account-id`,
        { code: 'CONFIG_MISSING_SECRET' },
      );
    }
    if (!bank.apiKey) {
      throw new ConfigError(
        `${where}: bank.apiKey: a real bank needs an API key: set REMESSA_API_KEY, bank.apiKeyFile or the systemd credential remessa-api-key`,
        { code: 'CONFIG_MISSING_SECRET' },
      );
    }
  }

  const folders = Object.fromEntries(
    Object.entries(parsed.folders).map(([k, v]) => [k, path.resolve(base, v)]),
  ) as ParsedConfig['folders'] & { base: string };
  folders.base = base;
  const sandbox = {
    ...parsed.sandbox,
    dataFile: path.resolve(base, parsed.sandbox.dataFile ?? path.join(folders.data, 'sandbox.sqlite')),
  };
  const receiver = parsed.webhooks.receiver;
  const webhookAuthorization =
    env.REMESSA_WEBHOOK_AUTHORIZATION ||
    readSecretFile(receiver.authorizationFile, cwd, 'webhooks.receiver.authorizationFile') ||
    readSecretFile(credentials && path.join(credentials, 'remessa-webhook-authorization'), cwd) ||
    undefined;
  registerSecret(webhookAuthorization);
  if (webhookAuthorization !== undefined) {
    const problem = authorizationProblem(receiver.authorizationScheme, webhookAuthorization);
    // The problem text never quotes the value.
    if (problem) {
      throw new ConfigError(`${where}: webhook authorization (${receiver.authorizationScheme}): ${problem}`, {
        code: 'CONFIG_INVALID',
      });
    }
  }
  const webhookReceiverEnabled = receiver.enabled ?? (receiver.port !== undefined || embedded);
  const storePassword = resolveStorePassword(parsed.store, base, credentials, cwd, where);
  const bankTls = resolveBankTls(parsed.bank.tls, env, cwd);
  const sandboxTls = resolveSandboxTls(parsed.sandbox.tls, cwd);
  // Against a real bank, files that move money out wait for a person unless the config says otherwise.
  const approval = {
    ...parsed.approval,
    kinds: parsed.approval.kinds ?? (embedded ? [] : [...MONEY_OUT_KINDS]),
    ...(parsed.approval.markersFrom !== undefined
      ? { markersFrom: path.resolve(base, parsed.approval.markersFrom) }
      : {}),
  };
  if (approval.markersFrom !== undefined && !path.relative(folders.inbox, approval.markersFrom).startsWith('..')) {
    // Whoever writes the inbox (the makers) could then write markers: the folder would guard nothing.
    throw new ConfigError(
      `${where}: approval.markersFrom: expected a folder outside the inbox (${folders.inbox}), got ${approval.markersFrom}`,
      { code: 'CONFIG_INVALID' },
    );
  }
  return deepFreeze({
    ...parsed,
    approval,
    folders,
    bank,
    sandbox,
    sourceFile: context.file,
    embedded,
    bankTls,
    sandboxTls,
    webhookAuthorization,
    webhookReceiverEnabled,
    storePassword,
  });
}

/**
 * `store`: the URL is checked (the password must not be in it: the config file is not a secret, and messages never
 * quote the URL); the password comes from `store.passwordFile`, else the systemd credential remessa-store-password,
 * else none (PostgreSQL's own PGPASSWORD / ~/.pgpass, or a server that asks none, e.g. peer on a unix socket).
 */
function resolveStorePassword(
  store: ParsedConfig['store'],
  base: string,
  credentials: string | undefined,
  cwd: string,
  where: string,
): string | undefined {
  if (store.url === undefined) {
    if (store.passwordFile !== undefined) {
      throw new ConfigError(`${where}: store.passwordFile: set only with store.url (a PostgreSQL store)`);
    }
    return undefined;
  }
  // Read as the driver reads it (parsePgUrl): a socket URL (`postgres://remessa@/remessa?host=/var/run/postgresql`)
  // is no WHATWG URL, and an option the driver refuses is refused here, at load, not at the first connection.
  try {
    parsePgUrl(store.url);
  } catch (error) {
    throw new ConfigError(`${where}: ${(error as Error).message}`, { code: 'CONFIG_INVALID' });
  }
  const password =
    readSecretFile(store.passwordFile, base, 'store.passwordFile') ||
    readSecretFile(credentials && path.join(credentials, 'remessa-store-password'), cwd) ||
    undefined;
  registerSecret(password);
  return password;
}

/** A secret from a file setting (its absence an error naming the setting) or an optional systemd credential. */
function readSecretFile(file: string | undefined, cwd: string, setting?: string): string | undefined {
  if (!file) return undefined;
  if (!setting && !existsSync(path.resolve(cwd, file))) return undefined; // an optional credential
  const value = readSettingFile(setting ?? `systemd credential ${path.basename(file)}`, file, cwd).trim();
  return value.length > 0 ? value : undefined;
}

const PASSPHRASE_HINT =
  'bank.tls.passphraseFile, REMESSA_TLS_PASSPHRASE or the systemd credential remessa-tls-passphrase';

/**
 * `bank.tls`: certificate and key from their file settings, else from the systemd credentials remessa-tls-cert and
 * remessa-tls-key; the key's passphrase from REMESSA_TLS_PASSPHRASE, `passphraseFile`, or the credential
 * remessa-tls-passphrase. Checked here (PEM, passphrase, key matching the certificate), once, with the setting named.
 */
function resolveBankTls(tls: ParsedConfig['bank']['tls'], env: NodeJS.ProcessEnv, cwd: string): ClientTls {
  const credentials = env.CREDENTIALS_DIRECTORY;
  const cert = readIfSet('bank.tls.certFile', tls.certFile, cwd) ?? readCredential(credentials, 'remessa-tls-cert');
  const key = readIfSet('bank.tls.keyFile', tls.keyFile, cwd) ?? readCredential(credentials, 'remessa-tls-key');
  const ca = readIfSet('bank.tls.caFile', tls.caFile, cwd);
  const passphrase =
    env.REMESSA_TLS_PASSPHRASE ||
    readSecretFile(tls.passphraseFile, cwd, 'bank.tls.passphraseFile') ||
    readSecretFile(credentials && path.join(credentials, 'remessa-tls-passphrase'), cwd) ||
    undefined;
  registerSecret(passphrase);
  if (cert && !key) {
    throw new ConfigError(
      `bank.tls.keyFile: ${cert.setting} is set, so its private key is needed: set bank.tls.keyFile or the systemd credential remessa-tls-key`,
      { code: 'CONFIG_INVALID' },
    );
  }
  if (key && !cert) {
    throw new ConfigError(
      `bank.tls.certFile: ${key.setting} is set, so its certificate is needed: set bank.tls.certFile or the systemd credential remessa-tls-cert`,
      { code: 'CONFIG_INVALID' },
    );
  }
  if (ca) checkCertificates(ca);
  const out: ClientTls = {};
  if (cert && key) {
    checkTlsPair(cert, key, passphrase, PASSPHRASE_HINT);
    registerSecret(key.text);
    out.cert = cert.text;
    out.key = key.text;
    if (passphrase !== undefined) out.passphrase = passphrase;
  }
  if (ca) out.ca = ca.text;
  return out;
}

/** `sandbox.tls`: certificate and key (both or neither), and the CA its clients' certificates must come from. */
function resolveSandboxTls(tls: ParsedConfig['sandbox']['tls'], cwd: string): SandboxTls | undefined {
  const cert = readIfSet('sandbox.tls.certFile', tls.certFile, cwd);
  const key = readIfSet('sandbox.tls.keyFile', tls.keyFile, cwd);
  const clientCa = readIfSet('sandbox.tls.clientCaFile', tls.clientCaFile, cwd);
  return sandboxTlsFrom(cert, key, clientCa, {
    cert: 'sandbox.tls.certFile',
    key: 'sandbox.tls.keyFile',
  });
}

/**
 * Checks the sandbox's TLS files (from settings or `remessa sandbox` flags; `names` are the names to put in messages).
 * Undefined when neither certificate nor key is given.
 */
export function sandboxTlsFrom(
  cert: SettingText | undefined,
  key: SettingText | undefined,
  clientCa: SettingText | undefined,
  names: { cert: string; key: string },
): SandboxTls | undefined {
  if (!cert || !key) {
    if (cert || key || clientCa) {
      const missing = cert ? names.key : names.cert;
      throw new ConfigError(`${missing}: HTTPS needs both a certificate (${names.cert}) and its key (${names.key})`, {
        code: 'CONFIG_INVALID',
      });
    }
    return undefined;
  }
  checkTlsPair(cert, key, undefined, 'the sandbox takes an unencrypted key');
  if (clientCa) checkCertificates(clientCa);
  return { cert: cert.text, key: key.text, ...(clientCa ? { clientCa: clientCa.text } : {}) };
}

/** Settings that were renamed: the error about the old name says the new one. */
const MOVED_SETTINGS: Readonly<Record<string, string>> = { 'bank.pixPaymentPath': 'bank.paths.pixPayment' };

function configErrorCode(error: z.ZodError): string {
  return error.issues.some((i) => i.code === 'unrecognized_keys') ? 'CONFIG_UNKNOWN_KEY' : 'CONFIG_INVALID';
}

/** "config/remessa.jsonc: unknown setting "queue.concurency"" ; "bank.timeouts.connectMs: Expected number, got string". */
function describeIssues(error: z.ZodError, where: string): string {
  return error.issues
    .map((issue) => {
      const at = issue.path.map(String).join('.');
      if (issue.code === 'unrecognized_keys') {
        return issue.keys
          .map((k) => {
            const name = `${at ? `${at}.` : ''}${k}`;
            const moved = MOVED_SETTINGS[name];
            return `${where}: unknown setting "${name}"${moved ? ` (it is now "${moved}")` : ''}`;
          })
          .join('\n');
      }
      return `${where}: ${at || '(top level)'}: ${expectedGot(issue.message)}`;
    })
    .join('\n');
}

/** zod says "Invalid input: expected number, received string"; we say "Expected number, got string". */
function expectedGot(message: string): string {
  const m = /expected (.+), received (.+)$/i.exec(message);
  return m ? `Expected ${m[1]}, got ${m[2]}` : message;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/**
 * The daemon's check (the only command that starts the receiver): a receiver on against a real bank needs the
 * authorization value, since without it the receiver could not tell the bank from anyone else on the network. Other
 * commands (`run`, `reconcile` from the nightly unit, `status`...) read the same configuration without it.
 */
export function assertReceiverCredential(config: Config): void {
  if (config.webhookReceiverEnabled && !config.embedded && config.webhookAuthorization === undefined) {
    const where = config.sourceFile ?? 'config';
    throw new ConfigError(
      `${where}: webhooks.receiver: the receiver is on but has no authorization value: set REMESSA_WEBHOOK_AUTHORIZATION, webhooks.receiver.authorizationFile or the systemd credential remessa-webhook-authorization`,
      { code: 'CONFIG_MISSING_SECRET' },
    );
  }
}
