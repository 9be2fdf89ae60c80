/**
 * Streaming writer of result files, in the input's dialect: same encoding (and BOM), delimiter and decimal mark.
 *
 * What must hold:
 * - Nothing appears under the final name until `close()` has written and flushed everything: rows go to a temporary
 *   file in the same folder, renamed over the final name at the end (a reader never sees half a result).
 * - No cell can start a formula when the file is opened in a spreadsheet: a cell starting with =, +, -, @, tab or
 *   CR gets a leading single quote (OWASP "CSV injection"), except a negative number (`-5,00`: a minus, digits and
 *   separators only), which computes nothing and is echoed as typed. The one formula written is remessa's own `{ asText }` cell: `="0123"`, a
 *   string constant, which Excel shows as the text 0123 instead of reading the number 123 (see `asTextFormula`).
 * - Memory stays flat: rows are streamed with backpressure (`write` waits when the file lags behind).
 *
 * - A Windows-1252 file never loses a character: when a row holds one Windows-1252 cannot carry (the bank's `Łukasz`,
 *   a payer's emoji), however far down, the file is written in UTF-8 with a BOM instead (what was written so far is
 *   read back and written again; nothing is visible until `close`). `dialect` then says so. Excel reads either.
 *
 * Rows are turned into text a page at a time: `write` keeps up to ROWS_PER_CHUNK rows, then csv-stringify's sync API
 * makes one string of them, encoded once and handed to the file in one write. A stream stringifier cost a Transform
 * write a row, with its callbacks and chunks (docs/performance.md (d), twelfth pass); the text is the same, since the
 * stringifier is the same code and every record ends with the record delimiter (csv-stringify's `eof`).
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import { open, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { finished as streamFinished } from 'node:stream/promises';
import { type Options as StringifyOptions, stringify } from 'csv-stringify/sync';
import iconv from 'iconv-lite';
import type { Dialect } from '../batches/kind.js';
import { formatAmount } from '../formats/money.js';
import { UTF8_BOM } from './detect.js';

/**
 * A value for one result cell. `{ cents }` is formatted with the dialect's decimal mark; `{ asText }` is text that a
 * spreadsheet must keep as it is (digits it would read as a number: leading zeros dropped, 12 digits or more shown,
 * and saved, in scientific notation), written as the formula `="..."` (`asTextFormula`).
 */
export type ResultCell = string | number | boolean | null | undefined | { cents: number } | { asText: string };

/**
 * Excel's own longest string constant in a formula: a longer text is written as it is (never an identifier's case).
 */
const MAX_FORMULA_STRING = 255;

const FORMULA_START = new Set(['=', '+', '-', '@', '\t', '\r']);

/** Rows kept by `write` before they are made text and written in one piece. */
const ROWS_PER_CHUNK = 256;

/**
 * Prefixes a single quote when the text would start a formula in a spreadsheet. A negative number as a person typed it
 * (`-5,00`, `-1.234,56`: a minus, then only digits and separators) is left as it is: it computes nothing, a
 * spreadsheet reads it as the number, and quoted it was echoed back as `'-5,00`, not what the clerk wrote.
 */
export function neutraliseFormula(text: string): string {
  return text.length > 0 && FORMULA_START.has(text[0]!) && !NEGATIVE_NUMBER.test(text) ? `'${text}` : text;
}

/** A minus, then digits and decimal or thousands separators only, ending in a digit: no formula can hide in it. */
const NEGATIVE_NUMBER = /^-[\d.,]*\d$/;

/**
 * `="0123"`: a formula whose value is the text `0123`. Excel (and Google Sheets) open it as text in any locale, and
 * save the sheet as CSV with the value, `0123`; remessa's reader takes either (src/csv/reader.ts `unwrapAsText`).
 * Safe from formula injection: a string constant, quotes doubled, computes nothing.
 */
export function asTextFormula(text: string): string {
  if (text === '' || text.length > MAX_FORMULA_STRING) return neutraliseFormula(text);
  return `="${text.replaceAll('"', '""')}"`;
}

/** Turns one value into cell text in `dialect`, formula-safe. */
export function safeCellText(value: ResultCell, dialect: Pick<Dialect, 'decimalMark'>): string {
  if (typeof value === 'object' && value !== null && 'asText' in value) return asTextFormula(value.asText);
  return neutraliseFormula(cellText(value, dialect));
}

/** Turns one value into cell text in `dialect` (without neutralisation). */
export function cellText(value: ResultCell, dialect: Pick<Dialect, 'decimalMark'>): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') {
    const s = String(value);
    return dialect.decimalMark === ',' ? s.replace('.', ',') : s;
  }
  if ('asText' in value) return asTextFormula(value.asText);
  return formatAmount(value.cents, dialect.decimalMark);
}

/**
 * Header names made unique: a later repeat gets " (result)" (then " (result 2)", ...). The result header is the
 * input's headers followed by the outputs, so a repeat is an output named like an input column (an express charge's
 * `ourNumber` in, the bank's `ourNumber` out): both stay, and a spreadsheet or a CSV reader keyed by name can tell
 * them apart. An empty name (the columns after a sheet's last, `;;;`) stays empty: it names no column, so it repeats
 * nothing.
 */
export function uniqueHeader(header: readonly string[]): string[] {
  const seen = new Set<string>();
  return header.map((name) => {
    if (name === '') return name;
    let out = name;
    for (let n = 1; seen.has(out); n++) out = n === 1 ? `${name} (result)` : `${name} (result ${n})`;
    seen.add(out);
    return out;
  });
}

export interface ResultWriter {
  /** Writes one row (cells in header order); resolves once the row is accepted (waits on backpressure). */
  write(cells: readonly ResultCell[]): Promise<void>;
  /** Flushes, closes and renames the temporary file to the final path. */
  close(): Promise<void>;
  /** Drops the temporary file; the final path is left as it was. */
  abort(): Promise<void>;
  /** The final path. */
  readonly path: string;
  /** The dialect the file is written in: the one asked for, or UTF-8 with a BOM once a cell needed it. */
  readonly dialect: Dialect;
}

export interface ResultWriterOptions {
  /** The dialect of the input: encoding, BOM, delimiter, decimal mark and line ending are reused. */
  dialect: Dialect;
  /** Header cells, written first (repeated names are made unique, see `uniqueHeader`). */
  header: readonly string[];
}

/** Opens a result file for streaming: `path` appears only when `close()` resolves. */
export async function createResultWriter(path: string, options: ResultWriterOptions): Promise<ResultWriter> {
  let dialect = options.dialect;
  // A random part, not pid + counter: after a crash a restarted daemon often has the same pid (pid 1 in a container)
  // and would find its own leftover temp file. Leftovers are dot files ending in .tmp: intake ignores them.
  const tempName = () => join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  let failure: Error | undefined;
  const fail = (err: Error): void => {
    failure ??= err;
  };
  /** A new temp file, open; `finished` settles once it is closed or destroyed. */
  const openTemp = async () => {
    const p = tempName();
    const stream: WriteStream = createWriteStream(p, { flags: 'wx' });
    await once(stream, 'open');
    stream.on('error', fail);
    const done = streamFinished(stream);
    done.catch(fail);
    return { p, stream, done };
  };
  let { p: tempPath, stream: out, done: finished } = await openTemp();

  const stringifyOptions: StringifyOptions = {
    delimiter: dialect.delimiter,
    record_delimiter: dialect.lineEnding === '\n' ? 'unix' : 'windows',
    // Quote cells with a line break of any kind (csv-stringify only checks its own record delimiter) and cells with
    // leading/trailing spaces (kept intact).
    quoted_match: /[\r\n]|^\s|\s$/,
  };
  if (dialect.encoding === 'utf8' && dialect.bom) out.write(UTF8_BOM);

  /**
   * The file so far, written again in UTF-8 with a BOM: a row holds text Windows-1252 cannot carry. Everything
   * written before fitted Windows-1252, so reading it back loses nothing.
   */
  const toUtf8 = async (): Promise<void> => {
    out.end();
    await finished;
    if (failure) throw failure;
    const before = iconv.decode(await readFile(tempPath), 'windows-1252');
    await rm(tempPath, { force: true });
    ({ p: tempPath, stream: out, done: finished } = await openTemp());
    dialect = { ...dialect, encoding: 'utf8', bom: true };
    out.write(UTF8_BOM);
    if (!out.write(before)) await once(out, 'drain');
  };

  let rows: string[][] = [];
  /** The rows kept, as text in the dialect's encoding, in one write; waits while the file lags behind. */
  const writeRows = async (): Promise<void> => {
    if (failure) throw failure;
    if (rows.length === 0) return;
    const text = stringify(rows, stringifyOptions);
    rows = [];
    let chunk: string | Buffer = text;
    if (dialect.encoding !== 'utf8') {
      const encoded = iconv.encode(text, 'windows-1252');
      // iconv writes `?` for what the encoding lacks: only a chunk with a `?` byte can have lost a character.
      if (encoded.includes(0x3f) && iconv.decode(encoded, 'windows-1252') !== text) await toUtf8();
      else chunk = encoded;
    }
    if (!out.write(chunk)) await once(out, 'drain');
  };
  rows.push(uniqueHeader(options.header).map(neutraliseFormula));
  await writeRows();
  let closed = false;

  return {
    path,
    get dialect() {
      return dialect;
    },
    async write(cells) {
      if (closed) throw new Error('result writer already closed');
      if (failure) throw failure;
      rows.push(cells.map((c) => safeCellText(c, dialect)));
      if (rows.length >= ROWS_PER_CHUNK) await writeRows();
    },
    async close() {
      if (closed) return;
      closed = true;
      try {
        await writeRows();
      } catch (error) {
        fail(error as Error);
      }
      out.end();
      await finished.catch(() => undefined);
      if (failure) {
        await rm(tempPath, { force: true });
        throw failure;
      }
      // Flush the bytes to disk before the rename makes them the answer: after a power cut the result is either
      // the old state or complete, never an empty file under the final name.
      const handle = await open(tempPath, 'r+');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tempPath, path);
    },
    async abort() {
      if (closed) return;
      closed = true;
      rows = [];
      out.destroy();
      await finished.catch(() => undefined);
      await rm(tempPath, { force: true });
    },
  };
}
