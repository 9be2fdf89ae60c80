/**
 * Configuration: one JSONC file (comments allowed), parsed once at start-up by a strict zod schema, then frozen.
 *
 * Sources, in order of precedence for each value:
 * 1. environment variables for secrets: REMESSA_API_KEY, REMESSA_ACCOUNT_ID (and REMESSA_BANK_URL for the URL);
 * 2. secret files: `bank.apiKeyFile` / `bank.accountIdFile`, or systemd credentials `remessa-api-key` and
 *    `remessa-account-id` in $CREDENTIALS_DIRECTORY (LoadCredential=);
 * 3. the config file (`--config`, REMESSA_CONFIG, or `config/remessa.jsonc` when it exists);
 * 4. the defaults below.
 *
 * Unknown keys are an error that names the key: a misspelt setting must never be silently ignored.
 * Every setting is documented where it stands, in config/remessa.jsonc.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { type ParseError, parse as parseJsonc, printParseErrorCode } from 'jsonc-parser';
import { z } from 'zod';
import { ConfigError } from './errors.js';
import { DEFAULT_LOCALE, LOCALES } from './i18n/index.js';
import { LOG_FORMATS, registerSecret } from './log.js';
import { KIND_NAMES } from './types.js';

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

export const configSchema = z.strictObject({
  /** Language of every message a person reads (row errors, notes, validate, status, progress): pt-BR or en. */
  locale: z.enum(LOCALES).default(DEFAULT_LOCALE),
  folders: z
    .strictObject({
      inbox: z.string().min(1).default('inbox'),
      outbox: z.string().min(1).default('outbox'),
      archive: z.string().min(1).default('archive'),
      data: z.string().min(1).default('data'),
    })
    .prefault({}),
  bank: z
    .strictObject({
      url: z.string().min(1).default(EMBEDDED),
      apiKey: z.string().min(1).optional(),
      apiKeyFile: z.string().min(1).optional(),
      accountId: z.string().min(1).optional(),
      accountIdFile: z.string().min(1).optional(),
      headers: z
        .strictObject({
          apiKey: z.string().min(1).default('x-service-api-key'),
          accountId: z.string().min(1).default('x-service-account-id'),
          idempotencyKey: z.string().min(1).default('IdempotencyKey'),
        })
        .prefault({}),
      tls: z
        .strictObject({
          certFile: z.string().min(1).optional(),
          keyFile: z.string().min(1).optional(),
          caFile: z.string().min(1).optional(),
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
      pixPaymentPath: z.string().startsWith('/').default('/baas/api/v2/pix/qrcode/payment'),
    })
    .prefault({}),
  sandbox: z
    .strictObject({
      host: z.string().min(1).default('127.0.0.1'),
      port: nonNegativeInt.max(65535).default(0),
      dataFile: z.string().min(1).optional(),
      apiKeys: z.array(z.string().min(8)).default([]),
      idempotencyModel: z.enum(['all-outcomes', 'successes-only']).default('all-outcomes'),
      pixEndToEndIdTtlSeconds: positiveInt.default(900),
      faultSeed: z.number().int().default(1),
      webhookAllowLoopbackUrls: z.boolean().default(false),
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
    })
    .prefault({}),
  csv: z
    .strictObject({
      encoding: z.enum(['auto', 'utf8', 'windows-1252']).default('auto'),
      delimiter: z.enum(['auto', ',', ';', '\t']).default('auto'),
      decimalMark: z.enum(['auto', '.', ',']).default('auto'),
    })
    .prefault({}),
  queue: z
    .strictObject({
      concurrency: positiveInt.default(8),
      maxRowsInFlight: positiveInt.default(1_000),
      rateLimits: z
        .strictObject({
          charges: rateLimitSchema.default({ requests: 20, intervalMs: 1_000 }),
          'bill-payments': rateLimitSchema.default({ requests: 10, intervalMs: 1_000 }),
          pix: rateLimitSchema.default({ requests: 10, intervalMs: 1_000 }),
          claims: rateLimitSchema.default({ requests: 5, intervalMs: 1_000 }),
        })
        .prefault({}),
    })
    .prefault({}),
  policy: kindRecord(z.enum(['all-or-nothing', 'send-valid'])),
  mappings: kindRecord(z.record(z.string(), z.string())),
  defaults: kindRecord(z.record(z.string(), z.string())),
  metrics: z
    .strictObject({
      host: z.string().min(1).default('127.0.0.1'),
      port: z.number().int().min(0).max(65_535).default(0),
      readyTimeoutMs: z.number().int().min(100).default(3_000),
      readyCacheMs: z.number().int().min(0).default(10_000),
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

/** The configuration after parsing, secrets resolved and folders made absolute. Frozen. */
export type Config = Readonly<
  ParsedConfig & {
    /** The file it came from, or undefined when only defaults were used. */
    sourceFile: string | undefined;
    /** Whether the bank is the embedded sandbox. */
    embedded: boolean;
  }
>;

export interface LoadConfigOptions {
  /** Path of the config file. @defaultValue REMESSA_CONFIG, else config/remessa.jsonc when it exists */
  file?: string;
  /** Environment to read secrets from. @defaultValue process.env */
  env?: NodeJS.ProcessEnv;
  /** Folder relative paths are resolved against. @defaultValue process.cwd() */
  cwd?: string;
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
  if (file) raw = parseConfigText(readFileSync(file, 'utf8'), file);
  return buildConfig(raw, { file, env, cwd });
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
  context: { file?: string | undefined; env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Config {
  const env = context.env ?? process.env;
  const cwd = context.cwd ?? process.cwd();
  const where = context.file ?? 'config';
  const result = configSchema.safeParse(raw);
  if (!result.success)
    throw new ConfigError(describeIssues(result.error, where), { code: configErrorCode(result.error) });
  const parsed = result.data;

  const credentials = env.CREDENTIALS_DIRECTORY;
  const bank = { ...parsed.bank };
  bank.apiKey =
    env.REMESSA_API_KEY ||
    readSecretFile(bank.apiKeyFile, cwd, 'bank.apiKeyFile') ||
    readSecretFile(credentials && path.join(credentials, 'remessa-api-key'), cwd) ||
    bank.apiKey;
  bank.accountId =
    env.REMESSA_ACCOUNT_ID ||
    readSecretFile(bank.accountIdFile, cwd, 'bank.accountIdFile') ||
    readSecretFile(credentials && path.join(credentials, 'remessa-account-id'), cwd) ||
    bank.accountId;
  if (env.REMESSA_BANK_URL) bank.url = env.REMESSA_BANK_URL;
  registerSecret(bank.apiKey);

  const embedded = bank.url === EMBEDDED;
  if (!embedded) {
    if (!/^https?:\/\//.test(bank.url)) {
      throw new ConfigError(`${where}: bank.url: Expected "${EMBEDDED}" or an http(s):// URL, got "${bank.url}"`);
    }
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
    Object.entries(parsed.folders).map(([k, v]) => [k, path.resolve(cwd, v)]),
  ) as ParsedConfig['folders'];
  const sandbox = {
    ...parsed.sandbox,
    dataFile: path.resolve(cwd, parsed.sandbox.dataFile ?? path.join(folders.data, 'sandbox.sqlite')),
  };
  return deepFreeze({ ...parsed, folders, bank, sandbox, sourceFile: context.file, embedded });
}

function readSecretFile(file: string | undefined, cwd: string, setting?: string): string | undefined {
  if (!file) return undefined;
  const full = path.resolve(cwd, file);
  if (!existsSync(full)) {
    if (setting) throw new ConfigError(`${setting}: file ${full} does not exist`, { code: 'CONFIG_NOT_FOUND' });
    return undefined;
  }
  const value = readFileSync(full, 'utf8').trim();
  return value.length > 0 ? value : undefined;
}

function configErrorCode(error: z.ZodError): string {
  return error.issues.some((i) => i.code === 'unrecognized_keys') ? 'CONFIG_UNKNOWN_KEY' : 'CONFIG_INVALID';
}

/** "config/remessa.jsonc: unknown setting "queue.concurency"" ; "bank.timeouts.connectMs: Expected number, got string". */
function describeIssues(error: z.ZodError, where: string): string {
  return error.issues
    .map((issue) => {
      const at = issue.path.map(String).join('.');
      if (issue.code === 'unrecognized_keys') {
        return issue.keys.map((k) => `${where}: unknown setting "${at ? `${at}.` : ''}${k}"`).join('\n');
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
