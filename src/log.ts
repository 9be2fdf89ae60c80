/**
 * Logging: pino JSON lines on stderr (stdout stays free for command output).
 *
 * Secrets must never reach a log line. Two layers, because one is not enough:
 * 1. `redact` paths blank the header and field names that carry secrets, wherever an object puts them.
 * 2. Every serialized line passes through a scrubber that replaces each registered secret value
 *    (the API key, webhook authorization values, ...) wherever it appears: in a URL, an error message, a stack.
 * Register a secret with `registerSecret` as soon as it is known, before anything can log it.
 *
 * Formats (`log.format`), all one line per event, all scrubbed:
 * - `json`: pino's JSON with the level as a name (`"level":"info"`), for log shippers.
 * - `text`: `2026-11-23T13:35:00.000Z INFO  message key=value ...`, for a person at a terminal.
 * - `journal`: `<6>message key=value ...`: the syslog priority prefix that journald reads (SyslogLevelPrefix=, on by
 *   default) and no timestamp (journald adds its own). A stack trace is folded onto its line (`\n` shown as ` | `),
 *   so one event stays one journal entry.
 * - `auto` (the default): `journal` under systemd (JOURNAL_STREAM set), `text` on a terminal, else `json`.
 */
import { Writable } from 'node:stream';
import pino, { type DestinationStream, type Logger } from 'pino';

export type { Logger } from 'pino';

export const REDACTED = '[REDACTED]';

/** Header and field names whose values are secret, whatever object they are found in. */
const SECRET_FIELDS = [
  'x-service-api-key',
  'X-Service-Api-Key',
  // The `delbank` profile's name for it (src/formats/profiles.ts); the value is scrubbed in every line anyway.
  'x-delbank-api-key',
  'X-Delbank-Api-Key',
  'authorization',
  'Authorization',
  'apiKey',
  'api_key',
  'password',
  'proxy-authorization',
];

const REDACT_PATHS = SECRET_FIELDS.flatMap((f) => {
  const key = /^[A-Za-z_$][\w$]*$/.test(f) ? `.${f}` : `["${f}"]`;
  return [
    `*${key}`,
    `*.*${key}`,
    `*.*.*${key}`,
    `headers${key}`,
    `req.headers${key}`,
    `request.headers${key}`,
    `err.headers${key}`,
  ];
});

const secrets = new Set<string>();

/** Adds a value that must never appear in a log line. Values shorter than 4 characters are ignored (too common). */
export function registerSecret(value: string | undefined | null): void {
  if (value && value.length >= 4) secrets.add(value);
}

/** Replaces every registered secret (and its URL-encoded form) in `text`. */
export function scrubSecrets(text: string): string {
  let out = text;
  for (const secret of secrets) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    const encoded = encodeURIComponent(secret);
    if (encoded !== secret && out.includes(encoded)) out = out.split(encoded).join(REDACTED);
  }
  return out;
}

export const LOG_FORMATS = ['auto', 'json', 'text', 'journal'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export interface LoggerOptions {
  /** pino level name. @defaultValue 'info' */
  level?: string;
  /** How a line is written; see the header. @defaultValue 'auto' */
  format?: LogFormat;
  /** Where lines go. @defaultValue standard error */
  destination?: DestinationStream | NodeJS.WritableStream;
  /** Secret values to register before the first line is written. */
  secrets?: Array<string | undefined>;
  /** Static fields on every line (e.g. `{ component: 'sandbox' }`). */
  base?: Record<string, unknown>;
}

/** Creates a logger whose output is scrubbed of secrets. */
export function createLogger(options: LoggerOptions = {}): Logger {
  for (const s of options.secrets ?? []) registerSecret(s);
  const target = options.destination ?? process.stderr;
  const format = resolveFormat(options.format ?? 'auto', target);
  const render = format === 'json' ? undefined : format === 'text' ? renderText : renderJournal;
  const scrubbing = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      const json = typeof chunk === 'string' ? chunk : chunk.toString('utf8');
      // Scrubbed after rendering: a secret split by escaping in JSON is whole again in the rendered text.
      (target as NodeJS.WritableStream).write(scrubSecrets(render ? render(json) : json));
      callback();
    },
  });
  return pino(
    {
      level: options.level ?? process.env.REMESSA_LOG_LEVEL ?? 'info',
      base: options.base ?? {},
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACT_PATHS, censor: REDACTED },
      serializers: { err: pino.stdSerializers.err, error: pino.stdSerializers.err },
    },
    scrubbing,
  );
}

function resolveFormat(format: LogFormat, target: unknown): Exclude<LogFormat, 'auto'> {
  if (format !== 'auto') return format;
  if (process.env.JOURNAL_STREAM) return 'journal';
  return (target as { isTTY?: boolean }).isTTY ? 'text' : 'json';
}

/** syslog priorities journald reads from a `<N>` prefix. */
const JOURNAL_PRIORITY: Record<string, number> = { trace: 7, debug: 7, info: 6, warn: 4, error: 3, fatal: 2 };
const OWN_FIELDS = new Set(['level', 'time', 'msg']);

function renderText(json: string): string {
  const event = JSON.parse(json) as Record<string, unknown>;
  const level = String(event.level).toUpperCase().padEnd(5);
  return `${String(event.time)} ${level} ${renderBody(event)}\n`;
}

function renderJournal(json: string): string {
  const event = JSON.parse(json) as Record<string, unknown>;
  return `<${JOURNAL_PRIORITY[String(event.level)] ?? 6}>${renderBody(event)}\n`;
}

/** `message key=value ...` on one line: values that are not plain words are JSON-quoted; newlines are folded. */
function renderBody(event: Record<string, unknown>): string {
  let out = typeof event.msg === 'string' ? event.msg : '';
  for (const [key, value] of Object.entries(event)) {
    if (OWN_FIELDS.has(key) || value === undefined) continue;
    out += ` ${key}=${renderValue(value)}`;
  }
  return out.replace(/\r?\n/g, ' | ');
}

function renderValue(value: unknown): string {
  if (typeof value === 'string') return /^[\w.:/@+-]+$/.test(value) ? value : JSON.stringify(value);
  if (value !== null && typeof value === 'object') {
    const err = value as { type?: unknown; message?: unknown; stack?: unknown };
    if (typeof err.message === 'string' && typeof err.stack === 'string') return JSON.stringify(err.stack);
  }
  return JSON.stringify(value);
}

/** A logger that writes nothing, for tests and library use. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
