/**
 * How answers and archived inputs are named. Pure functions: no file system access.
 *
 * Every taking of a file (an intake, src/store/intakes.ts) has one base name, used for all it produces:
 *
 *     <name>.<YYYYMMDD>T<HHMMSS>Z-<8 hex>          e.g. cobrancas.20261123T134049Z-5f3c9e21
 *
 * - `<name>`: the dropped file's name without its extension, shortened when needed (below);
 * - `<YYYYMMDD>T<HHMMSS>Z-<8 hex>`: the intake id: when the file was taken (UTC), and a random tag that keeps two
 *   takings in the same second apart. Fixed at the take (the work area's folder), so it is the same after a restart.
 *
 * In `outbox/<kind>/`: `<base>.result.csv` and `<base>.summary.json` (later versions, when a row's outcome changes
 * after the answer: `<base>.result.v2.csv`, `<base>.summary.v2.json`, ...), or `<base>.rejected.txt`; the slip PDFs
 * and QR images in `<base>/`. In `archive/<kind>/`: `<base>.<ext>` (the input as dropped, extension kept). Names sort
 * by file name, then by time of the take; the summary holds the dropped name whole.
 *
 * What must hold: a name fits the file system (NAME_MAX, 255 bytes of UTF-8 on Linux, counting the suffixes added
 * here and the temporary names of the writers: `.<name>.<12 hex>.tmp`); two takings never share a name; the same
 * taking always gets the same name. A `<name>` longer than its budget is cut at a character boundary and ends with
 * `~<8 hex>` (a hash of the whole name), so long names that start alike still differ at a glance.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';

/** Longest base name, in UTF-8 bytes: leaves room for `.summary.v9999.json` and a writer's temp name around it. */
export const MAX_ANSWER_NAME_BYTES = 200;
/** An extension longer than this is not one (kept in the name part, so the archive name stays within bounds). */
const MAX_EXTENSION_BYTES = 16;

/** The dropped name split as answers use it: `jan.csv` -> `jan` + `.csv`. */
export function splitFileName(fileName: string): { stem: string; ext: string } {
  const ext = path.extname(fileName);
  if (ext === '' || ext === fileName || Buffer.byteLength(ext) > MAX_EXTENSION_BYTES)
    return { stem: fileName, ext: '' };
  return { stem: fileName.slice(0, -ext.length), ext };
}

/** The base name of every answer of the taking `intakeId` of `fileName` (see the top of this file). */
export function answerNameFor(fileName: string, intakeId: string): string {
  // One path segment whatever the name holds: separators, NUL and control characters become '_'.
  const stem = splitFileName(fileName).stem.replace(/[/\\\u0000-\u001f\u007f]/g, '_');
  const tail = `.${intakeId}`;
  const budget = MAX_ANSWER_NAME_BYTES - Buffer.byteLength(tail);
  if (Buffer.byteLength(stem) <= budget) return `${stem}${tail}`;
  const hash = createHash('sha256').update(fileName, 'utf8').digest('hex').slice(0, 8);
  return `${cutToBytes(stem, budget - 9)}~${hash}${tail}`;
}

/** The archived input's name: the answer's base name and the dropped file's extension. */
export function archiveNameFor(fileName: string, intakeId: string): string {
  return `${answerNameFor(fileName, intakeId)}${splitFileName(fileName).ext}`;
}

/** The longest prefix of `text` of at most `maxBytes` UTF-8 bytes that ends on a character boundary. */
export function cutToBytes(text: string, maxBytes: number): string {
  let bytes = 0;
  let end = 0;
  for (const ch of text) {
    const n = Buffer.byteLength(ch);
    if (bytes + n > maxBytes) break;
    bytes += n;
    end += ch.length;
  }
  return text.slice(0, end);
}

/** Names of the files of one version of an answer, inside `outbox/<folder>/`. Version 1 has no version mark. */
export function answerFileNames(
  answerName: string,
  version = 1,
): { result: string; summary: string; rejected: string; approvalRefused: string; files: string } {
  const v = version === 1 ? '' : `.v${version}`;
  return {
    result: `${answerName}.result${v}.csv`,
    summary: `${answerName}.summary${v}.json`,
    rejected: `${answerName}.rejected.txt`,
    // Why an `.approved` marker was refused (src/runner/approval.ts); the Nth refusal of one file is version N.
    approvalRefused: `${answerName}.approval-refused${v}.txt`,
    files: answerName,
  };
}
