/**
 * The root of every error remessa raises on purpose.
 *
 * Errors are matched by their stable `code`, never by message text: messages are for people and may be
 * reworded, codes are for code and for the result files. `cause` keeps the underlying error for the log.
 *
 * Families (each lives with the stage that raises it):
 * - `ConfigError` (here): the configuration cannot be used.
 * - `InputError` (here): a file, line or cell of a batch is wrong; carries the location.
 * - `ServiceError` and its subclasses (src/bank/errors.ts): the bank answered with an error, or could not be reached.
 */
import { type Message, msg, render } from './i18n/index.js';
export class RemessaError extends Error {
  /** Stable machine-readable code, e.g. `CONFIG_UNKNOWN_KEY`, `ROW_INVALID`, `SERVICE_RATE_LIMITED`. */
  readonly code: string;
  /**
   * The sentence for a person, as catalogue key and values (src/i18n), when the error has one. `message` stays the
   * English text for the log and for code that reads it; what a person reads (a result file, a note) is `describe`.
   */
  readonly detail: Message | undefined;

  constructor(code: string, message: string, options?: { cause?: unknown; detail?: Message }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.detail = options?.detail;
  }

  /** The message for a person reading `locale`: the catalogue's sentence when there is one, else `message`. */
  describe(locale: 'pt-BR' | 'en'): string {
    return this.detail === undefined ? this.message : render(locale, this.detail);
  }
}

/** The configuration (file, environment or flags) cannot be used. The message names the setting. */
export class ConfigError extends RemessaError {
  constructor(message: string, options?: { cause?: unknown; code?: string }) {
    super(options?.code ?? 'CONFIG_INVALID', message, options);
  }
}

/** Where in an input file something is wrong. Lines and columns are 1-based, as a text editor shows them. */
export interface InputLocation {
  file: string;
  line?: number;
  /** 1-based column number in the header order. */
  column?: number;
  /** Column name, as in the header. */
  columnName?: string;
}

/**
 * Something in an input file is wrong; the message says where, what was expected and what was found. `values` holds
 * what the message interpolates (line, column, byte offset...), for a catalogue of messages keyed by `code`.
 */
export class InputError extends RemessaError {
  readonly location: InputLocation;
  readonly values: Readonly<Record<string, string | number>> | undefined;

  constructor(
    code: string,
    message: string,
    location: InputLocation,
    options?: { cause?: unknown; values?: Record<string, string | number>; detail?: Message },
  ) {
    super(code, `${formatLocation(location)}: ${message}`, options);
    this.location = location;
    this.values = options?.values;
  }

  /**
   * The message for a person reading `locale`: the catalogue's sentence (`detail`) after the place in the locale's
   * words; in English, the message as raised (which may carry a library's own text after the sentence).
   */
  override describe(locale: 'pt-BR' | 'en'): string {
    if (this.detail === undefined || locale === 'en') return this.message;
    return `${formatLocationIn(locale, this.location)}: ${render(locale, this.detail)}`;
  }
}

/** Most characters of input text a message or note quotes (see `excerpt`). */
export const EXCERPT_MAX_CHARS = 200;

/**
 * The first `max` characters of `text` (never half of a surrogate pair), with `…` when cut. Input text quoted in a
 * message, an error or a rejection note goes through this or `excerpt`: a 10 MB header cell must not make a 10 MB note.
 */
export function clip(text: string, max: number = EXCERPT_MAX_CHARS): string {
  if (text.length <= max) return text;
  let end = max;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}…`;
}

/**
 * How input text is quoted in a message: JSON-quoted (control characters visible), at most `max` characters, and
 * when cut, an ellipsis and the full length: `"Avenida Paulista…" (10485760 characters)`.
 */
export function excerpt(text: string, max: number = EXCERPT_MAX_CHARS): string {
  return excerptIn('en', text, max);
}

/** {@link excerpt} as a value of a catalogue message: said in the message's locale (`(150 caracteres)`). */
export function excerptValue(text: string, max: number = EXCERPT_MAX_CHARS): string | Message {
  if (text.length <= max) return JSON.stringify(text);
  return msg('EXCERPT', { text: JSON.stringify(clip(text, max)), length: text.length });
}

/** {@link excerpt} in the words of `locale`. */
export function excerptIn(locale: 'pt-BR' | 'en', text: string, max: number = EXCERPT_MAX_CHARS): string {
  const value = excerptValue(text, max);
  return typeof value === 'string' ? value : render(locale, value);
}

/** {@link formatLocation} with the words of `locale`: `file.csv linha 12, coluna 3 (payer.document)`. */
export function formatLocationIn(locale: 'pt-BR' | 'en', location: InputLocation): string {
  if (locale === 'en') return formatLocation(location);
  let out = clip(location.file);
  if (location.line !== undefined) out += ` linha ${location.line}`;
  if (location.column !== undefined) {
    out += `, coluna ${location.column}`;
    if (location.columnName !== undefined) out += ` (${clip(location.columnName)})`;
  } else if (location.columnName !== undefined) {
    out += `, coluna ${clip(location.columnName)}`;
  }
  return out;
}

/** `file.csv line 12, column 3 (payer.document)`; a file or column name from the input is clipped (`clip`). */
export function formatLocation(location: InputLocation): string {
  let out = clip(location.file);
  if (location.line !== undefined) out += ` line ${location.line}`;
  if (location.column !== undefined) {
    out += `, column ${location.column}`;
    if (location.columnName !== undefined) out += ` (${clip(location.columnName)})`;
  } else if (location.columnName !== undefined) {
    out += `, column ${clip(location.columnName)}`;
  }
  return out;
}
