/**
 * Logging: pino JSON lines on stderr (stdout stays free for command output).
 *
 * Secrets must never reach a log line. Two layers, because one is not enough:
 * 1. `redact` paths blank the header and field names that carry secrets, wherever an object puts them.
 * 2. Every serialized line passes through a scrubber that replaces each registered secret value
 *    (the API key, webhook authorization values, ...) wherever it appears: in a URL, an error message, a stack.
 * Register a secret with `registerSecret` as soon as it is known, before anything can log it.
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

export interface LoggerOptions {
  /** pino level name. @defaultValue 'info' */
  level?: string;
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
  const scrubbing = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      const line = scrubSecrets(typeof chunk === 'string' ? chunk : chunk.toString('utf8'));
      (target as NodeJS.WritableStream).write(line);
      callback();
    },
  });
  return pino(
    {
      level: options.level ?? process.env.REMESSA_LOG_LEVEL ?? 'info',
      base: options.base ?? {},
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: REDACTED },
      serializers: { err: pino.stdSerializers.err, error: pino.stdSerializers.err },
    },
    scrubbing,
  );
}

/** A logger that writes nothing, for tests and library use. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
