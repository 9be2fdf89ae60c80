/**
 * Dialect detection: which encoding, delimiter, decimal mark and line ending a batch file uses.
 *
 * Rules (issue 4 section 3; brazilian-formats.md section 8):
 * - Encoding: a UTF-8 BOM means UTF-8. Otherwise the file is scanned up to its first non-ASCII byte (cheap: most
 *   files hold an accented name early), and the bytes from there are checked: valid UTF-8 means UTF-8, anything
 *   else means Windows-1252 (the usual Brazilian spreadsheet export). A file that is pure ASCII is read as UTF-8
 *   (the same bytes either way). A configured encoding wins.
 * - Not text: a NUL byte in the first block, or a UTF-16/UTF-32 byte order mark, makes the whole file unusable.
 * - Delimiter: from the header line, the most frequent of ';', tab and ',' outside quotes. A configured one wins.
 * - Decimal mark: ',' when the delimiter is ';', else '.'; a configured one wins.
 */
import { isUtf8 } from 'node:buffer';
import type { FileHandle } from 'node:fs/promises';
import type { Dialect } from '../batches/kind.js';

export const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** How many bytes are read per probe while looking for the first non-ASCII byte. */
export const DETECT_CHUNK_BYTES = 64 * 1024;
/** How many bytes from the first non-ASCII byte are checked for UTF-8 validity. */
export const DETECT_WINDOW_BYTES = 64 * 1024;

export type DetectedEncoding =
  | { kind: 'text'; encoding: Dialect['encoding']; bom: boolean }
  | { kind: 'empty' }
  | { kind: 'not-text'; reason: string };

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
  if (head[0] === 0xff && head[1] === 0xfe) return { kind: 'not-text', reason: 'a UTF-16/UTF-32 byte order mark' };
  if (head[0] === 0xfe && head[1] === 0xff) return { kind: 'not-text', reason: 'a UTF-16 byte order mark' };
  if (hasNul(head.subarray(0, 8192))) return { kind: 'not-text', reason: 'binary content (NUL bytes)' };
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
      // A window cut in the middle of a sequence is not evidence against UTF-8: check only complete sequences,
      // unless the file really ends there (then the truncated sequence is invalid).
      const checked = got === window.length ? w.subarray(0, completeUtf8Length(w)) : w;
      return { kind: 'text', encoding: isUtf8(checked) ? 'utf8' : 'windows-1252', bom: false };
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

/** Counts delimiter candidates outside double quotes in one header line. */
export function detectDelimiter(headerLine: string): Dialect['delimiter'] {
  const counts = { ';': 0, '\t': 0, ',': 0 };
  let quoted = false;
  for (const ch of headerLine) {
    if (ch === '"') quoted = !quoted;
    else if (!quoted && (ch === ';' || ch === '\t' || ch === ',')) counts[ch]++;
  }
  // Ties go to ';' then tab: a Brazilian header with both usually uses ';' between and ',' inside names.
  let best: Dialect['delimiter'] = ',';
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
