/**
 * Which inbox paths are batches, of which kind, and which are ignored.
 *
 * The inbox holds batches in two places:
 * - `inbox/<kind>/<any name>`: the folder gives the kind;
 * - `inbox/<kind>-<anything>.csv` or `inbox/<kind>_<anything>.csv`: the name prefix gives the kind.
 * Anything else dropped in the inbox is still a batch (it gets a `rejected` answer saying the kind is unknown), except
 * what is ignored on purpose: dot files, `*.tmp`, `*.part`, `~$*` (office lock files) and `*.done` markers, which
 * belong to writers still at work or are signals, not data. Files deeper than one folder are not watched.
 *
 * Pure functions: no file system access, so the rules are tested on their own.
 */
import path from 'node:path';
import { isKindName, KIND_NAMES, type KindName } from '../types.js';

/** Suffix of the marker a writer drops next to a finished file when `requireDoneMarker` is on. */
export const DONE_MARKER_SUFFIX = '.done';

/** Kinds longest first, so `charge-updates-x.csv` is never read as a `charge...` prefix of a shorter kind. */
const KINDS_LONGEST_FIRST = [...KIND_NAMES].sort((a, b) => b.length - a.length);

export type InboxEntry =
  /** A batch of a known kind. */
  | { type: 'batch'; kind: KindName; name: string; folder: string | null }
  /** A file that is a batch of no known kind: answered with a rejection, then archived. */
  | { type: 'unknown-kind'; name: string; folder: string | null; reason: string }
  /** Not ours to take (yet): temp files, lock files, markers, deeper folders. */
  | { type: 'ignored'; reason: string };

/** True for names a writer uses while still at work, or that are signals rather than data. */
export function isIgnoredName(name: string): boolean {
  const lower = name.toLowerCase();
  return (
    name.startsWith('.') ||
    name.startsWith('~$') ||
    lower.endsWith('.tmp') ||
    lower.endsWith('.part') ||
    lower.endsWith(DONE_MARKER_SUFFIX)
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
    return {
      type: 'unknown-kind',
      name,
      folder,
      reason: `Expected the inbox folder to be a batch kind (${KIND_NAMES.join(', ')}), got "${folder}"`,
    };
  }
  const kind = kindFromRootName(name);
  if (kind) return { type: 'batch', kind, name, folder: null };
  return {
    type: 'unknown-kind',
    name,
    folder: null,
    reason:
      `Expected a file in a kind folder (inbox/<kind>/) or named <kind>-*.csv or <kind>_*.csv with kind one of ` +
      `${KIND_NAMES.join(', ')}, got "${name}"`,
  };
}

/** The name without its last extension: `jan.csv` -> `jan` (matches `.done` markers; answers: src/outbox/names.ts). */
export function stemOf(name: string): string {
  const ext = path.extname(name);
  return ext && ext !== name ? name.slice(0, -ext.length) : name;
}
