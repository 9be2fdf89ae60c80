/**
 * Which inbox paths are batches, of which kind, and which are ignored.
 *
 * The inbox holds batches in two places:
 * - `inbox/<kind>/<any name>`: the folder gives the kind;
 * - `inbox/<kind>-<anything>.csv` or `inbox/<kind>_<anything>.csv`: the name prefix gives the kind.
 * Anything else dropped in the inbox is still a batch (it gets a `rejected` answer saying the kind is unknown), except
 * what is ignored on purpose: the names that writers give a file while still at work, lock files, and `*.done`
 * markers (signals, not data). Files deeper than one folder are not watched.
 *
 * Names ignored (any case), and whose they are:
 * - dot files (`.jan.csv`, `.jan.csv.XXXXXX`): rsync, OpenSSH's sftp/scp clients with a temp name, editors;
 * - `*.filepart`: WinSCP while uploading (it renames to the final name when done);
 * - `*.part`, `*.partial`: FileZilla, lftp, curl, Firefox and many ERP exporters;
 * - `*.tmp`, `*.temp`: the generic "temporary name, then rename" of scripts and ERPs;
 * - `*.crdownload`: Chrome and Edge while downloading;
 * - `~$*`: Microsoft Office lock files beside a spreadsheet open in Excel;
 * - `*.done`: the marker a writer drops beside a finished file (see the intake);
 * - `*.approved`: the marker holding an approver's name, beside a file that waits for approval (src/runner/approval.ts).
 * A file under one of these names is taken only once it is renamed to its final name.
 *
 * Pure functions: no file system access, so the rules are tested on their own.
 */
import path from 'node:path';
import { type Message, msg, t } from '../i18n/index.js';
import { isKindName, KIND_NAMES, type KindName } from '../types.js';

/** Suffix of the marker a writer drops next to a finished file when `requireDoneMarker` is on. */
export const DONE_MARKER_SUFFIX = '.done';

/** Suffix of the marker holding an approver's name, beside a file that waits for approval (src/runner/approval.ts). */
export const APPROVED_MARKER_SUFFIX = '.approved';

/** Kinds longest first, so `charge-updates-x.csv` is never read as a `charge...` prefix of a shorter kind. */
const KINDS_LONGEST_FIRST = [...KIND_NAMES].sort((a, b) => b.length - a.length);

export type InboxEntry =
  /** A batch of a known kind. */
  | { type: 'batch'; kind: KindName; name: string; folder: string | null }
  /**
   * A file that is a batch of no known kind: answered with a rejection, then archived. `reason` is the English (logs),
   * `detail` the catalogue message a person reads in their locale.
   */
  | { type: 'unknown-kind'; name: string; folder: string | null; reason: string; detail: Message }
  /** Not ours to take (yet): temp files, lock files, markers, deeper folders. */
  | { type: 'ignored'; reason: string };

/** Endings of the names writers use while still at work (lower case), documented in the README. */
export const TEMP_NAME_SUFFIXES = ['.filepart', '.part', '.partial', '.tmp', '.temp', '.crdownload'] as const;

/** True for names a writer uses while still at work, or that are signals rather than data. */
export function isIgnoredName(name: string): boolean {
  const lower = name.toLowerCase();
  return (
    name.startsWith('.') ||
    name.startsWith('~$') ||
    TEMP_NAME_SUFFIXES.some((suffix) => lower.endsWith(suffix)) ||
    lower.endsWith(DONE_MARKER_SUFFIX) ||
    lower.endsWith(APPROVED_MARKER_SUFFIX)
  );
}

/** The kind given by a root file's name prefix (`charges-jan.csv`, `bill-payments_0412.CSV`), if any. */
export function kindFromRootName(name: string): KindName | undefined {
  const lower = name.toLowerCase();
  if (!lower.endsWith('.csv')) return undefined;
  for (const kind of KINDS_LONGEST_FIRST) {
    if (
      lower.length > kind.length + 5 &&
      lower.startsWith(kind) &&
      (lower[kind.length] === '-' || lower[kind.length] === '_')
    ) {
      return kind;
    }
  }
  return undefined;
}

/**
 * Classifies a path relative to the inbox (either separator). `relativePath` names a file, never a folder.
 */
export function classifyInboxPath(relativePath: string): InboxEntry {
  const parts = relativePath.split(/[\\/]+/).filter((p) => p !== '' && p !== '.');
  if (parts.length === 0) return { type: 'ignored', reason: 'empty path' };
  if (parts.some((p) => p === '..')) return { type: 'ignored', reason: 'outside the inbox' };
  const name = parts[parts.length - 1]!;
  if (parts.some((p) => isIgnoredName(p))) return { type: 'ignored', reason: `ignored name ${name}` };
  if (parts.length > 2) return { type: 'ignored', reason: 'deeper than one folder' };
  if (parts.length === 2) {
    const folder = parts[0]!;
    if (isKindName(folder)) return { type: 'batch', kind: folder, name, folder };
    const detail = msg('UNKNOWN_KIND.folder', { kinds: KIND_NAMES.join(', '), got: JSON.stringify(folder) });
    return { type: 'unknown-kind', name, folder, reason: t('en', detail.key, detail.params), detail };
  }
  const kind = kindFromRootName(name);
  if (kind) return { type: 'batch', kind, name, folder: null };
  const detail = msg('UNKNOWN_KIND.name', { kinds: KIND_NAMES.join(', '), got: JSON.stringify(name) });
  return { type: 'unknown-kind', name, folder: null, reason: t('en', detail.key, detail.params), detail };
}

/** The name without its last extension: `jan.csv` -> `jan` (matches `.done` markers; answers: src/outbox/names.ts). */
export function stemOf(name: string): string {
  const ext = path.extname(name);
  return ext && ext !== name ? name.slice(0, -ext.length) : name;
}
