/**
 * Streaming reader of one batch file: bytes -> (UTF-8 check | Windows-1252 decode) -> csv-parse -> mapped records.
 *
 * What must hold:
 * - Memory does not grow with the file: records are pulled by the consumer, in arrays of what the parser made of
 *   the chunks read so far (at most about one read buffer's worth: the parser is paused while the consumer has not
 *   taken them); detection reads a bounded prefix. Records are handed over in arrays (`batches`) because an await
 *   per record costs about as much as checking the record: `rows` is the same sequence one record at a time.
 * - Every record carries the 1-based physical line where it starts, as a text editor shows it, also after quoted
 *   cells spanning several lines. Lines are counted here, not with csv-parse's `info` option: that option doubles
 *   the parser's cost (an info object per record) and counts a CRLF inside a quoted cell as two lines. Empty lines
 *   are therefore not skipped by csv-parse but come through as blank records, counted and dropped here.
 * - A problem with the file as a whole raises `InputError` with file, line and column; a problem with one record
 *   (wrong number of cells) is attached to that record and does not stop the file.
 * - A cell written `="0123"` (a spreadsheet's text formula, as remessa's own answers write digits) reads as `0123`.
 */

import { isUtf8 } from 'node:buffer';
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { basename } from 'node:path';
import { pipeline, type Readable, Transform, type TransformCallback } from 'node:stream';
import { CsvError, parse } from 'csv-parse';
import iconv from 'iconv-lite';
import { shown } from '../batches/fields.js';
import type { CellError, Dialect } from '../batches/kind.js';
import { clip, InputError } from '../errors.js';
import { type Message, msg, t } from '../i18n/index.js';
import {
  completeUtf8Length,
  defaultDecimalMark,
  detectDelimiter,
  detectEncoding,
  emptyEvidence,
  type Utf8Evidence,
  weighUtf8,
} from './detect.js';
import {
  type ColumnSupply,
  HEADER_PROBLEM_CODES,
  type HeaderColumn,
  type HeaderColumnSpec,
  HeaderError,
  recordCompleter,
  resolveHeader,
} from './headers.js';

/** What to do with a header that names no known column (after mapping). */
export type UnknownColumnPolicy = 'reject' | 'ignore';

export interface ReadBatchOptions {
  /**
   * The kind's columns: header names are matched against their names and built-in aliases, ignoring case, accents,
   * spaces and punctuation (src/csv/headers.ts).
   */
  columns: readonly HeaderColumnSpec[];
  /** Columns the kind fills when the header lacks them (defaults, derived ids). @defaultValue none */
  supply?: ColumnSupply;
  /** The kind's name, for the mappings a header error suggests. */
  kind?: string;
  /**
   * Source header -> column name, for an ERP's own headers (from config, per kind); wins over the built-in names.
   * Mapping a header to `''` ignores that column on purpose. @defaultValue `{}`
   */
  mapping?: Readonly<Record<string, string>>;
  /**
   * Unknown columns are rejected by default: a misspelt optional header (say `payAt` as `pay_at`) must not silently
   * drop a value that changes what is paid. `ignore` keeps going and lists them in `warnings`. @defaultValue 'reject'
   */
  unknownColumns?: UnknownColumnPolicy;
  /** Force the encoding instead of detecting it. @defaultValue detected */
  encoding?: Dialect['encoding'];
  /** Force the delimiter instead of detecting it from the header line. @defaultValue detected */
  delimiter?: Dialect['delimiter'];
  /**
   * The delimiter of a file whose header names one column (none to detect), which its answer adds columns with: the
   * reader's spreadsheet's (';' for Excel in Portuguese). @defaultValue ','
   */
  delimiterWhenNone?: Dialect['delimiter'];
  /** Force the decimal mark. @defaultValue ',' when the delimiter is ';', else '.' */
  decimalMark?: Dialect['decimalMark'];
  /** File name used in error messages. @defaultValue the file's base name */
  displayName?: string;
  /** Read buffer size in bytes. @defaultValue 262144 */
  highWaterMarkBytes?: number;
  /**
   * The other kinds a header that does not fit this one is tried against (their columns, mappings and supply): a
   * header one of them reads as it is makes the header error say the file is in the wrong folder. @defaultValue none
   */
  otherKinds?: () => ReadonlyArray<
    Pick<ReadBatchOptions, 'columns' | 'supply' | 'mapping' | 'answerColumns'> & { kind: string }
  >;
  /** The columns the kind's answers add, ignored at the end of a header (src/csv/headers.ts). @defaultValue none */
  answerColumns?: readonly string[];
}

/** The `csv` section of the configuration ('auto' = detect). */
export interface CsvSettings {
  encoding: 'auto' | Dialect['encoding'];
  delimiter: 'auto' | Dialect['delimiter'];
  decimalMark: 'auto' | Dialect['decimalMark'];
}

/** Turns the configuration's csv settings into reader overrides ('auto' leaves detection on). */
export function dialectOverrides(
  settings: Partial<CsvSettings> | undefined,
): Pick<ReadBatchOptions, 'encoding' | 'delimiter' | 'decimalMark'> {
  const out: Pick<ReadBatchOptions, 'encoding' | 'delimiter' | 'decimalMark'> = {};
  if (settings?.encoding && settings.encoding !== 'auto') out.encoding = settings.encoding;
  if (settings?.delimiter && settings.delimiter !== 'auto') out.delimiter = settings.delimiter;
  if (settings?.decimalMark && settings.decimalMark !== 'auto') out.decimalMark = settings.decimalMark;
  return out;
}

/** One data record of the file. */
export interface BatchRecord {
  /** 1-based physical line where the record starts (the header is usually line 1). */
  line: number;
  /** Column name (after mapping) -> trimmed cell text. Empty cells and ignored columns are absent. */
  record: Record<string, string>;
  /**
   * The raw cells as read, in header order (for echoing the input in the result file); when the kind supplied columns
   * the file lacks (defaults, derived ids), cut or padded to the file header's width and followed by their values.
   */
  cells: string[];
  /**
   * Problems found before any kind validation: with the record as a whole (wrong number of cells), or between its
   * cells and its header (a cell that contradicts what its header implies, `recordCompleter`).
   */
  problems?: CellError[];
}

export type { HeaderColumn } from './headers.js';

export interface BatchReader {
  dialect: Dialect;
  /** 1-based line of the header. */
  headerLine: number;
  header: HeaderColumn[];
  /** Non-fatal notes about the file (ignored columns). Supplied columns (defaults, derived ids) come last. */
  warnings: string[];
  /**
   * The data records, in file order; can be iterated once. Throws `InputError` when the file turns out to be broken
   * further down (malformed quotes, invalid UTF-8 after a valid start).
   */
  rows: AsyncIterable<BatchRecord>;
  /**
   * The same records as `rows`, in file order, in non-empty arrays (one await per array instead of one per record):
   * for consumers that check many records quickly (validate). Iterate either `rows` or `batches`, once.
   */
  batches: AsyncIterable<BatchRecord[]>;
  /** Releases the file when the rows are not read to the end (breaking out of `for await` also does). */
  close(): void;
}

/** Stable codes of file-level problems (the `code` of the `InputError`; the HEADER_ ones come from ./headers.ts). */
export const FILE_ERROR_CODES = {
  empty: 'FILE_EMPTY',
  noRows: 'FILE_NO_ROWS',
  notText: 'FILE_NOT_TEXT',
  encoding: 'FILE_ENCODING',
  mixedEncoding: 'FILE_ENCODING_MIXED',
  syntax: 'CSV_SYNTAX',
  duplicateColumn: 'HEADER_DUPLICATE_COLUMN',
  unknownColumn: 'HEADER_UNKNOWN_COLUMN',
  missingColumn: 'HEADER_MISSING_COLUMN',
} as const;

/** Most characters one record (a line, or the lines of quoted cells spanning several) may hold: CSV_SYNTAX beyond. */
export const MAX_RECORD_CHARS = 1024 * 1024;

/** Code of the per-record problem when the number of cells differs from the header. */
export const COLUMN_COUNT_CODE = 'COLUMN_COUNT';

/** Code of the per-record problem when a column without a header holds a value (it would be lost). */
export const UNNAMED_COLUMN_CODE = 'UNNAMED_COLUMN';

class Utf8Error extends Error {
  constructor(readonly byteOffset: number) {
    super(`invalid UTF-8 at byte ${byteOffset}`);
  }
}

/** A file read as Windows-1252 holds a sequence that reads as UTF-8 text at `byteOffset`. */
class Utf8InWindows1252Error extends Error {
  constructor(readonly byteOffset: number) {
    super(`UTF-8 text at byte ${byteOffset} of a file read as Windows-1252`);
  }
}

/**
 * Passes bytes through unchanged (to the Windows-1252 decoder), failing at the first sequence that is valid UTF-8
 * text (src/csv/detect.ts: a detected Windows-1252 file with UTF-8 in it mixes encodings). Chunk boundaries handled.
 */
class Windows1252Check extends Transform {
  private carry: Buffer = Buffer.alloc(0);
  private offset = 0;
  private readonly evidence = emptyEvidence();

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    const buf = this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk;
    const end = weighUtf8(buf, this.offset, this.evidence, (e) => e.valid > 0);
    if (this.evidence.valid > 0) {
      cb(new Utf8InWindows1252Error(this.evidence.firstValid));
      return;
    }
    // Bytes of an incomplete sequence at the end wait for the next chunk (they are still passed on now: the decoder
    // reads every byte as one character whatever comes next).
    this.offset += end;
    this.carry = end < buf.length ? Buffer.from(buf.subarray(end)) : Buffer.alloc(0);
    cb(null, chunk);
  }
}

/** Passes bytes through unchanged, failing at the first invalid UTF-8 sequence (chunk boundaries handled). */
class Utf8Check extends Transform {
  private carry: Buffer = Buffer.alloc(0);
  private offset: number;

  constructor(startOffset: number) {
    super();
    this.offset = startOffset;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    const buf = this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk;
    const complete = completeUtf8Length(buf);
    const body = buf.subarray(0, complete);
    if (!isUtf8(body)) {
      cb(new Utf8Error(this.offset + firstInvalidUtf8(body)));
      return;
    }
    this.offset += complete;
    this.carry = Buffer.from(buf.subarray(complete));
    cb(null, body);
  }

  override _flush(cb: TransformCallback): void {
    if (this.carry.length > 0) cb(new Utf8Error(this.offset));
    else cb();
  }
}

/** Offset of the first byte where `buf` stops being valid UTF-8 (only called when it is not). */
function firstInvalidUtf8(buf: Buffer): number {
  let lo = 0;
  let hi = buf.length;
  // Largest valid prefix by bisection on sequence boundaries: cheap and only on the error path.
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    const cut = completeUtf8Length(buf.subarray(0, mid));
    if (isUtf8(buf.subarray(0, cut))) lo = mid;
    else hi = mid;
  }
  return completeUtf8Length(buf.subarray(0, lo));
}

/** Counts line breaks in a cell the way a text editor does: CRLF, CR and LF each end one line. */
function countLineBreaks(value: string): number {
  let breaks = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 13) {
      breaks++;
      if (value.charCodeAt(i + 1) === 10) i++;
    } else if (c === 10) breaks++;
  }
  return breaks;
}

const AS_TEXT = /^\s*="((?:[^"]|"")*)"\s*$/;

/**
 * The text of a cell written `="0123"` (src/csv/writer.ts `asTextFormula`: how remessa's answers give a spreadsheet
 * digits to keep as text), so that an answer dropped again reads as the values it holds: `0123`. A cell that is any
 * other formula is left as it is (the kind's checks then refuse what is not a value).
 */
export function unwrapAsText(cell: string): string {
  const m = AS_TEXT.exec(cell);
  return m ? m[1]!.replaceAll('""', '"') : cell;
}

function isBlank(cells: readonly string[]): boolean {
  for (const c of cells) if (c.trim() !== '') return false;
  return true;
}

/** Finds the first non-empty record of decoded text (the header), for delimiter and line-ending detection. */
function firstLine(text: string): { line: string; lineEnding: '\n' | '\r\n' } {
  const start = text.search(/[^\r\n]/);
  if (start === -1) return { line: '', lineEnding: '\r\n' };
  // The header's record, not its first physical line: a header cell wrapped in a spreadsheet (Alt+Enter) is quoted
  // and holds a line break; cut there, the rest of the header (and its delimiters) went unseen.
  let quoted = false;
  for (let i = start; i < text.length; i++) {
    const ch = text[i];
    if (ch === '"') quoted = !quoted;
    else if (!quoted && (ch === '\r' || ch === '\n')) {
      return { line: text.slice(start, i), lineEnding: ch === '\r' ? '\r\n' : '\n' };
    }
  }
  return { line: text.slice(start), lineEnding: '\r\n' };
}

/**
 * Opens a batch file, detects its dialect, reads and maps its header, and peeks at the first data record (so an
 * empty file or a header without rows is reported here, not later).
 */
export async function readBatch(filePath: string, options: ReadBatchOptions): Promise<BatchReader> {
  const file = options.displayName ?? basename(filePath);
  const handle = await open(filePath, 'r');
  let dialect: Dialect;
  try {
    const detected = await detectEncoding(handle);
    if (detected.kind === 'empty') {
      throw new InputError(
        FILE_ERROR_CODES.empty,
        'Expected a header line and data rows, got an empty file',
        { file },
        { detail: msg('FILE_EMPTY') },
      );
    }
    if (detected.kind === 'not-text') {
      throw new InputError(
        FILE_ERROR_CODES.notText,
        t('en', 'FILE_NOT_TEXT', { reason: detected.reason }),
        { file },
        { detail: msg('FILE_NOT_TEXT', { reason: detected.reason }) },
      );
    }
    const encoding = options.encoding ?? detected.encoding;
    const evidence = detected.evidence;
    if (options.encoding === undefined && evidence !== undefined && evidence.valid > 0 && evidence.invalid > 0) {
      throw await mixedEncodingError(filePath, file, evidence);
    }
    const bom = encoding === 'utf8' && detected.bom;
    const sample = Buffer.alloc(64 * 1024);
    const { bytesRead } = await handle.read(sample, 0, sample.length, bom ? 3 : 0);
    const text = iconv.decode(sample.subarray(0, bytesRead), encoding === 'utf8' ? 'utf8' : 'windows-1252');
    const { line, lineEnding } = firstLine(text);
    if (line.trim() === '') {
      throw new InputError(
        FILE_ERROR_CODES.empty,
        'Expected a header line and data rows, got only blank lines',
        { file },
        { detail: msg('FILE_EMPTY.blank') },
      );
    }
    const delimiter = options.delimiter ?? detectDelimiter(line, options.delimiterWhenNone);
    dialect = {
      encoding,
      bom,
      delimiter,
      decimalMark: options.decimalMark ?? defaultDecimalMark(delimiter),
      lineEnding,
    };
  } finally {
    await handle.close();
  }

  const source = createReadStream(filePath, {
    start: dialect.bom ? 3 : 0,
    highWaterMark: options.highWaterMarkBytes ?? 256 * 1024,
  });
  // iconv-lite's decode stream is a Node Transform at run time; its typings only say ReadWriteStream.
  const decoders: Transform[] =
    dialect.encoding === 'utf8'
      ? [new Utf8Check(dialect.bom ? 3 : 0)]
      : [
          // Detected (not configured) Windows-1252 is verified to the end: UTF-8 text further down means mixed.
          ...(options.encoding === undefined ? [new Windows1252Check()] : []),
          iconv.decodeStream('windows-1252') as unknown as Transform,
        ];
  const parser = parse({
    delimiter: dialect.delimiter,
    record_delimiter: ['\r\n', '\n', '\r'],
    relax_column_count: true,
    // A quote inside an unquoted cell (`Bar do "Zé"`, typed by hand) is kept as text instead of failing the file.
    relax_quotes: true,
    // Memory stays bounded on a hostile file (one 10 MB line, an unclosed quote): no real record comes near this.
    max_record_size: MAX_RECORD_CHARS,
  });
  pipeline([source, ...decoders, parser], () => {
    // Errors surface through RecordPuller (the parser's 'error' event); nothing to do here.
  });
  const stream: Readable = parser;
  const records = new PhysicalRecords(new RecordPuller(stream), file, filePath, dialect);
  const close = (): void => {
    source.destroy();
    stream.destroy();
  };

  try {
    // The header is the first non-blank record (or the one under a title, below); a data record must follow it.
    let first = await records.next(rawRecord);
    if (first === null) {
      throw new InputError(
        FILE_ERROR_CODES.empty,
        'Expected a header line, got none',
        { file },
        { detail: msg('FILE_EMPTY.noHeader') },
      );
    }
    let headerRecord = first[0]!;
    const resolveAt = (
      at: typeof headerRecord,
      o: Pick<ReadBatchOptions, 'columns' | 'supply' | 'mapping' | 'unknownColumns' | 'kind' | 'answerColumns'>,
    ) =>
      resolveHeader(
        at.cells,
        { file, line: at.line },
        {
          columns: o.columns,
          ...(o.mapping ? { mapping: o.mapping } : {}),
          ...(o.unknownColumns ? { unknownColumns: o.unknownColumns } : {}),
          ...(o.supply ? { supplied: o.supply.columns } : {}),
          ...(o.supply?.needs ? { suppliedNeeds: o.supply.needs } : {}),
          ...(o.kind ? { kind: o.kind } : {}),
          ...(o.answerColumns ? { answerColumns: o.answerColumns } : {}),
        },
      );
    let resolved: ReturnType<typeof resolveHeader> | undefined;
    let headerError: HeaderError | undefined;
    try {
      resolved = resolveAt(headerRecord, options);
    } catch (err) {
      if (!(err instanceof HeaderError)) throw err;
      headerError = err;
    }
    // A title above the header (`Cobranças de novembro;;;;`, one filled cell): the header is the next line, when it
    // reads as this kind's header, or names some column of it (`Identificador;Motivo`: then its own errors are told,
    // at its line, not the title's); otherwise the first line's own error is told.
    if (resolved === undefined && headerRecord.cells.filter((c) => c.trim() !== '').length === 1) {
      const rest = first.length > 1 ? first.slice(1) : await records.next(rawRecord);
      if (rest !== null) {
        try {
          resolved = resolveAt(rest[0]!, options);
          headerRecord = rest[0]!;
          first = rest;
        } catch (err) {
          if (!(err instanceof HeaderError)) throw err;
          const filled = rest[0]!.cells.filter((c) => c.trim() !== '').length;
          const unknown = err.problems.filter((p) => p.code === HEADER_PROBLEM_CODES.unknown).length;
          if (filled > unknown) {
            headerError = err;
            headerRecord = rest[0]!;
            first = rest;
          }
        }
      }
    }
    const headerLine = headerRecord.line;
    const resolve = (o: Parameters<typeof resolveAt>[1]) => resolveAt(headerRecord, o);
    if (resolved === undefined) {
      if (!headerError || !options.otherKinds) throw headerError;
      const fits = (o: Parameters<typeof resolve>[0]): boolean => {
        try {
          resolve(o);
          return true;
        } catch {
          return false;
        }
      };
      throw headerError.inWrongFolder(
        options
          .otherKinds()
          .filter(fits)
          .map((o) => o.kind),
      );
    }
    const { header, warnings } = resolved;
    const complete = recordCompleter(resolved, options.supply, dialect);
    first = first.length > 1 ? first.slice(1) : await records.next(rawRecord);
    if (first === null) {
      throw new InputError(
        FILE_ERROR_CODES.noRows,
        'Expected at least one data row after the header, got none',
        { file, line: headerLine },
        { detail: msg('FILE_NO_ROWS') },
      );
    }
    const targets = header.map((h) => h.column);
    /** The file's columns with no header: ignored, so a row's value there would be lost (its 0-based indexes). */
    const unnamed: number[] = [];
    header.forEach((h, i) => {
      if (h.source === '' && h.column === null && !h.supplied) unnamed.push(i);
    });
    // The file's own columns; supplied ones (filled by `complete`) come after them.
    const width = targets.length - resolved.absent.length;
    const toRecord = (line: number, cells: string[]): BatchRecord => {
      for (let i = 0; i < cells.length; i++) {
        const c = cells[i]!;
        // `="0123"`, as remessa writes digits for a spreadsheet (src/csv/writer.ts), or `  ="0123"`.
        if (c.charCodeAt(0) === 61 || (c.charCodeAt(0) <= 32 && c.trimStart().charCodeAt(0) === 61)) {
          cells[i] = unwrapAsText(c);
        }
      }
      const record: Record<string, string> = {};
      const n = width < cells.length ? width : cells.length;
      for (let i = 0; i < n; i++) {
        const name = targets[i];
        if (name === null || name === undefined) continue;
        const v = cells[i]!.trim();
        if (v !== '') record[name] = v;
      }
      const out: BatchRecord = { line, record, cells };
      const problems: CellError[] = [];
      // Extra cells that are all empty are trailing delimiters (common in spreadsheet exports): harmless.
      if (cells.length < width || (cells.length > width && !isBlank(cells.slice(width)))) {
        problems.push({
          code: COLUMN_COUNT_CODE,
          message: msg('COLUMN_COUNT', { expected: width, got: cells.length }),
        });
      }
      for (const i of unnamed) {
        const v = cells[i]?.trim();
        if (v) {
          problems.push({
            code: UNNAMED_COLUMN_CODE,
            message: msg('UNNAMED_COLUMN', { column: i + 1, got: shown(v) }),
          });
        }
      }
      if (complete !== undefined) out.cells = complete(record, cells, problems);
      if (problems.length > 0) out.problems = problems;
      return out;
    };
    const firstBatch = first;
    async function* batches(): AsyncGenerator<BatchRecord[]> {
      try {
        yield firstBatch.map((r) => toRecord(r.line, r.cells));
        for (;;) {
          const next = await records.next(toRecord);
          if (next === null) return;
          yield next;
        }
      } finally {
        close();
      }
    }
    let iterated = false;
    const once = (): AsyncGenerator<BatchRecord[]> => {
      if (iterated) throw new Error('the rows of a batch file can be iterated once');
      iterated = true;
      return batches();
    };
    async function* rows(): AsyncGenerator<BatchRecord> {
      for await (const batch of once()) for (const rec of batch) yield rec;
    }
    // Lazily started: only the one the consumer iterates pulls from the file.
    const lazy = <T>(make: () => AsyncIterator<T>): AsyncIterable<T> => ({ [Symbol.asyncIterator]: make });
    return {
      dialect,
      headerLine,
      header,
      warnings,
      rows: lazy(() => rows()),
      batches: lazy(() => once()),
      close,
    };
  } catch (err) {
    close();
    throw err;
  }
}

/** Most records one `RecordPuller.take` hands over; the parser is paused while this many wait. */
const MAX_BATCH_RECORDS = 1024;

/**
 * The parser's records, taken in arrays: whatever it has produced so far. The parser flows ('data' events, the
 * cheapest path of a Readable) into an array until it holds MAX_BATCH_RECORDS, then it is paused until the consumer
 * takes them; the consumer awaits only when the array is empty. A failure of the file (bad UTF-8, malformed CSV) is
 * given after the records read before it, so the consumer's line count reaches the record that failed.
 */
class RecordPuller {
  #buffered: string[][] = [];
  #ended = false;
  #failure: { error: unknown } | undefined;
  #wake: (() => void) | undefined;

  constructor(private readonly stream: Readable) {
    stream.on('data', (cells: string[]) => {
      const buffered = this.#buffered;
      buffered.push(cells);
      if (buffered.length >= MAX_BATCH_RECORDS) stream.pause();
      this.#notify();
    });
    stream.once('end', () => {
      this.#ended = true;
      this.#notify();
    });
    stream.once('error', (error: unknown) => {
      this.#failure ??= { error };
      this.#notify();
    });
    stream.once('close', () => {
      // Closed without 'end' or 'error' (destroyed from outside): the rest of the file will not come.
      if (!this.#ended) this.#failure ??= { error: new Error('the file stream closed before its end') };
      this.#notify();
    });
  }

  #notify(): void {
    const wake = this.#wake;
    if (wake !== undefined) {
      this.#wake = undefined;
      wake();
    }
  }

  /** The records produced since the last call (non-empty), or null at the end of the file. */
  async take(): Promise<string[][] | null> {
    for (;;) {
      const buffered = this.#buffered;
      if (buffered.length > 0) {
        this.#buffered = [];
        if (!this.#ended && this.#failure === undefined && this.stream.isPaused()) this.stream.resume();
        return buffered;
      }
      if (this.#failure !== undefined) throw this.#failure.error;
      if (this.#ended) return null;
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
    }
  }
}

function rawRecord(line: number, cells: string[]): { line: number; cells: string[] } {
  return { line, cells };
}

/** Records with their starting line, in arrays; blank records (only delimiters/spaces) are skipped. */
class PhysicalRecords {
  // Each record ends with one record delimiter, so the next record starts one line after the last line of this one.
  #line = 1;

  constructor(
    private readonly puller: RecordPuller,
    private readonly file: string,
    private readonly filePath: string,
    private readonly dialect: Dialect,
  ) {}

  /** The next non-blank records (a non-empty array) mapped by `map`, or null at the end of the file. */
  async next<T>(map: (line: number, cells: string[]) => T): Promise<T[] | null> {
    for (;;) {
      let raw: string[][] | null;
      try {
        raw = await this.puller.take();
      } catch (err) {
        throw await this.#fileError(err);
      }
      if (raw === null) return null;
      const out: T[] = [];
      let line = this.#line;
      for (let r = 0; r < raw.length; r++) {
        const cells = raw[r]!;
        const start = line;
        let breaks = 0;
        for (let i = 0; i < cells.length; i++) {
          const cell = cells[i]!;
          if (cell.indexOf('\n') === -1 && cell.indexOf('\r') === -1) continue;
          breaks += countLineBreaks(cell);
        }
        line += breaks + 1;
        if (isBlank(cells)) continue;
        out.push(map(start, cells));
      }
      this.#line = line;
      if (out.length > 0) return out;
    }
  }

  async #fileError(err: unknown): Promise<unknown> {
    const file = this.file;
    if (err instanceof InputError) return err;
    if (err instanceof Utf8Error) return invalidUtf8Error(this.filePath, file, err.byteOffset, this.dialect.bom, err);
    if (err instanceof Utf8InWindows1252Error) {
      const at = await positionAtOffset(this.filePath, err.byteOffset, 'windows-1252', false);
      const bytes = await utf8SequenceAt(this.filePath, err.byteOffset);
      return new InputError(
        FILE_ERROR_CODES.mixedEncoding,
        `Expected one encoding throughout (the start of the file is Windows-1252), got bytes that read as UTF-8 ` +
          `(${hex(bytes)}) at column ${at.column} (byte offset ${err.byteOffset}); the file mixes encodings, so ` +
          'no reading gives every row as written: save it in one encoding, or configure its encoding',
        { file, line: at.line },
        {
          cause: err,
          values: { line: at.line, column: at.column, byteOffset: err.byteOffset, encoding: 'windows-1252' },
          detail: msg('FILE_MIXED_ENCODING.start', { bytes: hex(bytes), column: at.column, offset: err.byteOffset }),
        },
      );
    }
    if (err instanceof CsvError) {
      // The record that failed starts at the line after the records read so far; csv-parse's own line in the
      // message may be further down. Its message is the library's English: it stays in `message` (logs, `en`
      // detail), never in what a person reads in their locale (`detail`, by csv-parse's code).
      const problem = csvProblem(err, this.dialect.delimiter);
      const column = typeof err.column === 'number' ? err.column + 1 : undefined;
      return new InputError(
        FILE_ERROR_CODES.syntax,
        `${t('en', problem.key, problem.params)} (csv-parse: ${clip(err.message)})`,
        column === undefined ? { file, line: this.#line } : { file, line: this.#line, column },
        { cause: err, values: { line: this.#line, ...(column === undefined ? {} : { column }) }, detail: problem },
      );
    }
    return err;
  }
}

/**
 * What csv-parse's error means, in the user's words (a catalogue message): by its `code`, the ones these options can
 * raise (relax_quotes and relax_column_count leave an unclosed quote and a record over MAX_RECORD_CHARS); any other
 * code gets the general sentence with the code.
 */
function csvProblem(err: CsvError, delimiter: string): Message {
  const quoted = JSON.stringify(delimiter);
  const column = typeof err.column === 'number' ? err.column + 1 : '?';
  switch (err.code) {
    case 'CSV_QUOTE_NOT_CLOSED':
      return msg('CSV_SYNTAX.quoteNotClosed', { column });
    case 'CSV_MAX_RECORD_SIZE':
      return msg('CSV_SYNTAX.recordSize', { max: MAX_RECORD_CHARS });
    default:
      return msg('CSV_SYNTAX', { delimiter: quoted, code: err.code });
  }
}

/**
 * 1-based physical line and column (in characters, as a text editor shows them) of byte `offset` (error path only:
 * reads the file up to there again). `encoding` says how bytes make characters: in UTF-8 a continuation byte adds
 * none (the bytes before `offset` are valid UTF-8 there), in Windows-1252 every byte is one.
 */
export async function positionAtOffset(
  filePath: string,
  offset: number,
  encoding: Dialect['encoding'],
  bom: boolean,
): Promise<{ line: number; column: number }> {
  let line = 1;
  let column = 1;
  let previous = -1;
  if (offset > 0) {
    for await (const chunk of createReadStream(filePath, { end: offset - 1 }) as AsyncIterable<Buffer>) {
      for (let i = 0; i < chunk.length; i++) {
        const b = chunk[i]!;
        if (b === 10) {
          if (previous !== 13) line++;
          column = 1;
        } else if (b === 13) {
          line++;
          column = 1;
        } else if (encoding === 'windows-1252' || (b & 0xc0) !== 0x80) column++;
        previous = b;
      }
    }
  }
  // The byte order mark is no character an editor shows.
  if (bom && line === 1 && offset >= 3) column--;
  return { line, column };
}

async function bytesAt(filePath: string, offset: number, length: number): Promise<Buffer> {
  const handle = await open(filePath, 'r');
  try {
    const buf = Buffer.alloc(length);
    const { bytesRead } = await handle.read(buf, 0, length, offset);
    return buf.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** The bytes of the (valid) UTF-8 sequence that starts at `offset`. */
async function utf8SequenceAt(filePath: string, offset: number): Promise<Buffer> {
  const bytes = await bytesAt(filePath, offset, 4);
  const lead = bytes[0] ?? 0;
  return bytes.subarray(0, lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2);
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => `0x${b.toString(16).toUpperCase().padStart(2, '0')}`).join(' ');
}

/** The first byte at `offset` that is not UTF-8, in a file read as UTF-8. */
async function invalidUtf8Error(
  filePath: string,
  file: string,
  offset: number,
  bom: boolean,
  cause?: unknown,
): Promise<InputError> {
  const at = await positionAtOffset(filePath, offset, 'utf8', bom);
  const bytes = await bytesAt(filePath, offset, 1);
  return new InputError(
    FILE_ERROR_CODES.encoding,
    `Expected UTF-8 text throughout (the file is UTF-8), got a byte that is not UTF-8 (${hex(bytes)}) at column ` +
      `${at.column} (byte offset ${offset}); reading the file another way would change its other accented ` +
      'characters: correct that byte and save the file as UTF-8, or configure its encoding',
    { file, line: at.line },
    {
      ...(cause === undefined ? {} : { cause }),
      values: { line: at.line, column: at.column, byteOffset: offset },
      detail: msg('FILE_ENCODING', { bytes: hex(bytes), column: at.column, offset }),
    },
  );
}

/** Detection found both UTF-8 text and bytes that are not UTF-8 (src/csv/detect.ts): the first contradiction. */
async function mixedEncodingError(filePath: string, file: string, evidence: Utf8Evidence): Promise<InputError> {
  if (evidence.valid >= evidence.invalid) return invalidUtf8Error(filePath, file, evidence.firstInvalid, false);
  const at = await positionAtOffset(filePath, evidence.firstValid, 'windows-1252', false);
  const bytes = await utf8SequenceAt(filePath, evidence.firstValid);
  return new InputError(
    FILE_ERROR_CODES.mixedEncoding,
    `Expected one encoding throughout (most accented characters are Windows-1252), got bytes that read as UTF-8 ` +
      `(${hex(bytes)}) at column ${at.column} (byte offset ${evidence.firstValid}); the file mixes encodings, so ` +
      'no reading gives every row as written: save it in one encoding, or configure its encoding',
    { file, line: at.line },
    {
      values: { line: at.line, column: at.column, byteOffset: evidence.firstValid, encoding: 'windows-1252' },
      detail: msg('FILE_MIXED_ENCODING', { bytes: hex(bytes), column: at.column, offset: evidence.firstValid }),
    },
  );
}
