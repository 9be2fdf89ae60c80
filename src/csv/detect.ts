/**
 * Dialect detection: which encoding, delimiter, decimal mark and line ending a batch file uses.
 *
 * Rules (issue 4 section 3, issue 8 section 4; brazilian-formats.md section 8):
 * - Encoding, by evidence: a UTF-8 BOM means UTF-8. Otherwise the file is scanned up to its first non-ASCII byte
 *   (cheap: most files hold an accented name early), and from there a window of DETECT_WINDOW_BYTES is weighed:
 *   `valid` = multi-byte sequences that are valid UTF-8 AND read as text (U+00A0-U+017F: the accented letters and
 *   Latin-1 signs; U+2000-U+20CF: dashes, curly quotes, the euro sign), `invalid` = bytes that cannot start or continue
 *   a UTF-8 sequence there. Windows-1252 text almost never forms such a valid pair by chance (it takes an upper-case
 *   accented letter right before a sign like NBSP or a curly quote), and UTF-8 text never has an invalid byte.
 *     - no invalid byte: UTF-8 (a pure-ASCII file too: the same bytes either way);
 *     - invalid bytes and no valid sequence: Windows-1252 (the usual Brazilian spreadsheet export);
 *     - both: the file mixes encodings (a UTF-8 export with a stray byte, or two exports glued together). No reading
 *       of it gives every row as the user wrote it, so it is rejected, naming the line and column of the first byte
 *       that contradicts the majority: the first invalid byte when most sequences are UTF-8, the first UTF-8
 *       sequence when most are not.
 *   The rest of the file, past the window, is verified while it is read (src/csv/reader.ts), by the same rule: in a
 *   file read as UTF-8 the first invalid byte rejects it; in a file read as Windows-1252 (detected, not configured)
 *   the first valid UTF-8 sequence does. Nothing is sent before the whole file is read, so a late contradiction still
 *   sends nothing. A configured encoding wins and is not second-guessed (except that UTF-8 must be valid UTF-8).
 * - Not text: a NUL byte in the first block, or a UTF-16/UTF-32 byte order mark, makes the whole file unusable.
 * - Delimiter: from the header line, the most frequent of ';', tab and ',' outside quotes. A configured one wins. A
 *   header of one column has none: the one of the reader's spreadsheet (`delimiterWhenNone`: ';' for pt-BR).
 * - Decimal mark: ',' when the delimiter is ';', else '.'; a configured one wins.
 */
import type { FileHandle } from 'node:fs/promises';
import type { Dialect } from '../batches/kind.js';
import { type Message, msg } from '../i18n/index.js';

export const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** How many bytes are read per probe while looking for the first non-ASCII byte. */
export const DETECT_CHUNK_BYTES = 64 * 1024;
/** How many bytes from the first non-ASCII byte are checked for UTF-8 validity. */
export const DETECT_WINDOW_BYTES = 64 * 1024;

/**
 * What the bytes say about UTF-8 (see the rules above). Offsets are absolute byte offsets in the file, -1 when none.
 */
export interface Utf8Evidence {
  /** Multi-byte sequences that are valid UTF-8 and read as text (U+00A0-U+017F, U+2000-U+20CF). */
  valid: number;
  /** Bytes (maximal invalid subparts) that are not UTF-8. */
  invalid: number;
  firstValid: number;
  firstInvalid: number;
}

export function emptyEvidence(): Utf8Evidence {
  return { valid: 0, invalid: 0, firstValid: -1, firstInvalid: -1 };
}

/** Whether a code point read from a valid UTF-8 sequence is ordinary text (see the rules above). */
function isTextCodePoint(cp: number): boolean {
  return (cp >= 0xa0 && cp <= 0x17f) || (cp >= 0x2000 && cp <= 0x20cf);
}

/**
 * Weighs `buf` (which starts at file offset `base`) as UTF-8 into `evidence`, stopping early once `stopAt` says so.
 * Returns the index where an incomplete sequence at the end of `buf` begins (`buf.length` when none): the caller
 * carries those bytes over to the next chunk, or, at the end of the file, counts them invalid.
 */
export function weighUtf8(
  buf: Uint8Array,
  base: number,
  evidence: Utf8Evidence,
  stopAt?: (e: Utf8Evidence) => boolean,
): number {
  const n = buf.length;
  let i = 0;
  while (i < n) {
    const b = buf[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    // Lead byte: how many continuation bytes, and the allowed range of the first one (no overlongs, no surrogates,
    // nothing above U+10FFFF), as in the Unicode standard's table of well-formed sequences.
    let need: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) need = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      if (b === 0xe0) lo = 0xa0;
      else if (b === 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      if (b === 0xf0) lo = 0x90;
      else if (b === 0xf4) hi = 0x8f;
    } else need = 0;
    let ok = need > 0;
    let got = 0;
    let cp = need === 1 ? b & 0x1f : need === 2 ? b & 0x0f : b & 0x07;
    while (ok && got < need) {
      const at = i + 1 + got;
      if (at >= n) return i; // incomplete at the end of the chunk
      const c = buf[at]!;
      if (c < (got === 0 ? lo : 0x80) || c > (got === 0 ? hi : 0xbf)) ok = false;
      else {
        cp = (cp << 6) | (c & 0x3f);
        got++;
      }
    }
    if (ok) {
      if (isTextCodePoint(cp)) {
        if (evidence.firstValid === -1) evidence.firstValid = base + i;
        evidence.valid++;
      }
      i += need + 1;
    } else {
      if (evidence.firstInvalid === -1) evidence.firstInvalid = base + i;
      evidence.invalid++;
      i += 1 + got; // the maximal invalid subpart: the lead and the continuation bytes that fitted
    }
    if (stopAt?.(evidence)) return n;
  }
  return n;
}

export type DetectedEncoding =
  | {
      kind: 'text';
      encoding: Dialect['encoding'];
      bom: boolean;
      /** The evidence weighed (absent for a BOM or a pure-ASCII start): both counts > 0 means mixed encodings. */
      evidence?: Utf8Evidence;
    }
  | { kind: 'empty' }
  /** `reason`: a catalogue phrase (src/i18n `NOT_TEXT.*`), said in the person's locale. */
  | { kind: 'not-text'; reason: Message };

/** Length of the valid prefix of `buf` that does not end in the middle of a UTF-8 sequence. */
export function completeUtf8Length(buf: Uint8Array): number {
  const n = buf.length;
  // Walk back over at most 3 continuation bytes to the lead byte of the last sequence.
  for (let back = 1; back <= Math.min(4, n); back++) {
    const b = buf[n - back]!;
    if ((b & 0xc0) === 0x80) continue; // continuation byte
    let need = 1;
    if (b >= 0xf0) need = 4;
    else if (b >= 0xe0) need = 3;
    else if (b >= 0xc0) need = 2;
    return need > back ? n - back : n;
  }
  return n;
}

const ZIP_MAGIC = [0x50, 0x4b, 0x03, 0x04];
const OLE2_MAGIC = [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1];

function startsWith(buf: Uint8Array, magic: readonly number[]): boolean {
  return buf.length >= magic.length && magic.every((b, i) => buf[i] === b);
}

function hasNul(buf: Uint8Array): boolean {
  return buf.indexOf(0) !== -1;
}

/**
 * Detects the encoding of an open file by reading from its start. Reads at most up to the first non-ASCII byte plus
 * `DETECT_WINDOW_BYTES`, so memory stays bounded whatever the file size.
 */
export async function detectEncoding(handle: FileHandle): Promise<DetectedEncoding> {
  const first = Buffer.alloc(DETECT_CHUNK_BYTES);
  const { bytesRead } = await handle.read(first, 0, first.length, 0);
  if (bytesRead === 0) return { kind: 'empty' };
  const head = first.subarray(0, bytesRead);
  if (head[0] === 0xff && head[1] === 0xfe) return { kind: 'not-text', reason: msg('NOT_TEXT.utf16le') };
  if (head[0] === 0xfe && head[1] === 0xff) return { kind: 'not-text', reason: msg('NOT_TEXT.utf16be') };
  // A workbook saved as such (.xlsx is a zip, .xls an OLE2 file) instead of as CSV: a habit of Excel users.
  if (startsWith(head, ZIP_MAGIC) || startsWith(head, OLE2_MAGIC)) {
    return { kind: 'not-text', reason: msg('NOT_TEXT.workbook') };
  }
  if (hasNul(head.subarray(0, 8192))) return { kind: 'not-text', reason: msg('NOT_TEXT.binary') };
  const bom = head.subarray(0, 3).equals(UTF8_BOM);
  if (bom) {
    if (bytesRead === 3) return { kind: 'empty' };
    return { kind: 'text', encoding: 'utf8', bom: true };
  }
  let chunk = head;
  let position = 0;
  for (;;) {
    let firstHigh = -1;
    for (let i = 0; i < chunk.length; i++) {
      if (chunk[i]! >= 0x80) {
        firstHigh = i;
        break;
      }
    }
    if (firstHigh !== -1) {
      const start = position + firstHigh;
      const window = Buffer.alloc(DETECT_WINDOW_BYTES);
      const got = (await handle.read(window, 0, window.length, start)).bytesRead;
      const w = window.subarray(0, got);
      const evidence = emptyEvidence();
      const end = weighUtf8(w, start, evidence);
      // A window cut in the middle of a sequence is not evidence against UTF-8, unless the file really ends there.
      if (end < w.length && got < window.length) {
        if (evidence.firstInvalid === -1) evidence.firstInvalid = start + end;
        evidence.invalid++;
      }
      const encoding = evidence.invalid === 0 ? 'utf8' : evidence.valid >= evidence.invalid ? 'utf8' : 'windows-1252';
      return { kind: 'text', encoding, bom: false, evidence };
    }
    position += chunk.length;
    if (chunk.length < DETECT_CHUNK_BYTES) break;
    const next = Buffer.alloc(DETECT_CHUNK_BYTES);
    const r = await handle.read(next, 0, next.length, position);
    if (r.bytesRead === 0) break;
    chunk = next.subarray(0, r.bytesRead);
  }
  return { kind: 'text', encoding: 'utf8', bom: false };
}

/**
 * Counts delimiter candidates outside double quotes in one header line; `none` when it has none (a header of one
 * column: any delimiter reads it, and the answer's columns use this one).
 */
export function detectDelimiter(headerLine: string, none: Dialect['delimiter'] = ','): Dialect['delimiter'] {
  const counts = { ';': 0, '\t': 0, ',': 0 };
  let quoted = false;
  for (const ch of headerLine) {
    if (ch === '"') quoted = !quoted;
    else if (!quoted && (ch === ';' || ch === '\t' || ch === ',')) counts[ch]++;
  }
  // Ties go to ';' then tab: a Brazilian header with both usually uses ';' between and ',' inside names.
  let best: Dialect['delimiter'] = none;
  let bestCount = 0;
  for (const d of [';', '\t', ','] as const) {
    if (counts[d] > bestCount) {
      best = d;
      bestCount = counts[d];
    }
  }
  return best;
}

/** The usual pairing: ';' files come from spreadsheets with a decimal comma. */
export function defaultDecimalMark(delimiter: Dialect['delimiter']): Dialect['decimalMark'] {
  return delimiter === ';' ? ',' : '.';
}
