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
export class RemessaError extends Error {
  /** Stable machine-readable code, e.g. `CONFIG_UNKNOWN_KEY`, `ROW_INVALID`, `SERVICE_RATE_LIMITED`. */
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
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
    options?: { cause?: unknown; values?: Record<string, string | number> },
  ) {
    super(code, `${formatLocation(location)}: ${message}`, options);
    this.location = location;
    this.values = options?.values;
  }
}

/** `file.csv line 12, column 3 (payer.document)` */
export function formatLocation(location: InputLocation): string {
  let out = location.file;
  if (location.line !== undefined) out += ` line ${location.line}`;
  if (location.column !== undefined) {
    out += `, column ${location.column}`;
    if (location.columnName !== undefined) out += ` (${location.columnName})`;
  } else if (location.columnName !== undefined) {
    out += `, column ${location.columnName}`;
  }
  return out;
}
