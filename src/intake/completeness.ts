/**
 * Whether a file in the inbox looks whole: the last line of a CSV that a writer is still writing is unfinished.
 *
 * A file is complete when its last record ends with a line end outside quotes. Otherwise its last line is unfinished:
 * - `open-quote`: a quoted value opens and never closes (the cut fell inside a quoted value);
 * - `short-line`: the last line has fewer columns than the header and no line end (the cut fell inside the row);
 * - `no-line-end`: the last line has all its columns but no line end: either the cut fell inside its last value
 *   (an amount `1500` cut to `150`) or the writer never ends its last line. Only time tells them apart.
 * - `empty`: no byte yet (SFTP creates the file before its first write).
 * A file that holds a NUL byte is not CSV text (an image, a spreadsheet, UTF-16): there is no line to finish, and it
 * is reported complete with `binary` set (the reader rejects it as not text, whole, whatever is still to come).
 *
 * The scan works on bytes: in UTF-8 and Windows-1252 (the encodings remessa reads) the quote, the delimiters and the
 * line ends are single ASCII bytes that never occur inside another character. The delimiter is the one of `,` `;`
 * tab `|` that the header line holds most often, as the reader decides it. It reads the file once, in chunks, through
 * a handle the caller opened (so what is checked is the file that was opened, not whatever the name points to later).
 */

import type { FileHandle } from 'node:fs/promises';
import { type Message, msg } from '../i18n/index.js';

export type Completeness =
  | { complete: true; lines: number; binary?: true }
  | {
      complete: false;
      reason: 'empty' | 'open-quote' | 'short-line' | 'no-line-end';
      /** 1-based physical line where the unfinished record starts. */
      line: number;
      /** Columns of the unfinished last line (short-line, no-line-end). */
      columns?: number;
      /** Columns of the header. */
      headerColumns?: number;
    };

const QUOTE = 0x22;
const LF = 0x0a;
const CR = 0x0d;
const DELIMITERS = [0x2c, 0x3b, 0x09, 0x7c] as const; // , ; tab |
const CHUNK_BYTES = 64 * 1024;

/** Scans bytes fed in order; `result()` tells whether what was fed ends with a finished line. */
export class CompletenessScanner {
  private inQuotes = false;
  /** Bytes fed, leaving out a UTF-8 byte order mark. */
  private contentBytes = 0;
  private fed = 0;
  private physicalLine = 1;
  private recordStartLine = 1;
  private inHeader = true;
  private readonly headerCounts = [0, 0, 0, 0];
  private readonly recordCounts = [0, 0, 0, 0];
  private last = -1;
  private binary = false;

  feed(chunk: Uint8Array): void {
    let start = 0;
    if (this.fed === 0 && chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf) start = 3;
    this.fed += chunk.length;
    this.contentBytes += chunk.length - start;
    for (let i = start; i < chunk.length; i++) {
      const b = chunk[i]!;
      if (b === 0) {
        this.binary = true;
      } else if (b === QUOTE) {
        this.inQuotes = !this.inQuotes;
      } else if (b === LF) {
        this.physicalLine++;
        if (!this.inQuotes) {
          // After a CR the record already ended; the line it starts on is only known now.
          if (this.last === CR) this.recordStartLine = this.physicalLine;
          else this.endRecord();
        }
      } else if (b === CR) {
        if (!this.inQuotes) this.endRecord();
      } else if (!this.inQuotes) {
        const d = DELIMITERS.indexOf(b as (typeof DELIMITERS)[number]);
        if (d >= 0) this.recordCounts[d]!++;
      }
      this.last = b;
    }
  }

  private endRecord(): void {
    if (this.inHeader) {
      for (let d = 0; d < DELIMITERS.length; d++) this.headerCounts[d] = this.recordCounts[d]!;
      this.inHeader = false;
    }
    this.recordCounts.fill(0);
    this.recordStartLine = this.physicalLine;
  }

  result(): Completeness {
    const lines = this.recordStartLine - 1;
    if (this.contentBytes === 0) return { complete: false, reason: 'empty', line: 1 };
    if (this.binary) return { complete: true, lines, binary: true };
    if (this.inQuotes) return { complete: false, reason: 'open-quote', line: this.recordStartLine };
    if (this.last === LF || this.last === CR) return { complete: true, lines };
    // The last line has no line end: compare its columns with the header's (a header alone is its own yardstick).
    const counts = this.inHeader ? this.recordCounts : this.headerCounts;
    let d = 0;
    for (let i = 1; i < DELIMITERS.length; i++) if (counts[i]! > counts[d]!) d = i;
    const headerColumns = counts[d]! + 1;
    const columns = this.recordCounts[d]! + 1;
    return {
      complete: false,
      reason: columns < headerColumns ? 'short-line' : 'no-line-end',
      line: this.recordStartLine,
      columns,
      headerColumns,
    };
  }
}

/** Reads the whole file through `handle` (from its start) and tells whether its last line is finished. */
export async function checkCompleteness(handle: FileHandle): Promise<Completeness> {
  const scanner = new CompletenessScanner();
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  let position = 0;
  for (;;) {
    const { bytesRead } = await handle.read(buffer, 0, CHUNK_BYTES, position);
    if (bytesRead === 0) break;
    scanner.feed(buffer.subarray(0, bytesRead));
    position += bytesRead;
  }
  return scanner.result();
}

/** What an unfinished last line looks like, for a person (the rejection and the log). */
/** What is unfinished, as a catalogue message (src/i18n) for the person who reads the rejection note. */
export function unfinishedMessage(c: Exclude<Completeness, { complete: true }>): Message {
  switch (c.reason) {
    case 'empty':
      return msg('UNFINISHED.empty');
    case 'open-quote':
      return msg('UNFINISHED.openQuote', { line: c.line });
    case 'short-line':
      return msg('UNFINISHED.shortLine', { line: c.line, columns: c.columns, headerColumns: c.headerColumns });
    case 'no-line-end':
      return msg('UNFINISHED.noLineEnd', { line: c.line });
  }
}

export function describeUnfinished(c: Exclude<Completeness, { complete: true }>): string {
  switch (c.reason) {
    case 'empty':
      return 'the file is empty';
    case 'open-quote':
      return `line ${c.line} opens a quoted value that never closes`;
    case 'short-line':
      return `line ${c.line} has ${c.columns} of the header's ${c.headerColumns} columns and no line end`;
    case 'no-line-end':
      return `line ${c.line} has no line end`;
  }
}
