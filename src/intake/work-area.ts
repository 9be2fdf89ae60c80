/**
 * The work area: where a taken file waits between the inbox and the archive.
 *
 * Life of a dropped file (each arrow is one rename, so a crash leaves it in exactly one place):
 *
 *     inbox/<kind>/jan.csv --take--> <data>/work/<id>/jan.csv --archive--> archive/<kind>/jan.<id>.csv
 *
 * `<id>` (`<UTC stamp of the take>-<8 hex>`) is the intake id: the identity of the batch, and the tail of every name
 * its answers and its archived input get (src/outbox/names.ts), so `archive/charges/jan.<id>.csv` is answered by
 * `outbox/charges/jan.<id>.result.csv`.
 *
 * `<id>/meta.json` is written (temp name, then rename) before the file is moved in, so a work folder that holds the
 * file always knows where the file came from; once moved, again with who owned the file in the inbox (`ownerUid`, the
 * maker of maker-checker: read from the file moved, since a copy across file systems is remessa's own) and, for such
 * a copy of the file as it was checked, the copy's own fingerprint (`taken`).
 *
 * Across file systems (an inbox on an SFTP or network mount) the take is a copy, then the inbox's file is removed: a
 * writer that still holds that file open and writes on afterwards writes into a removed file, which the work area
 * never sees (with a rename, the intake sees the taken file change and reads it again). What guards against that is
 * what guards every take: a file is taken only when quiet for stableMs (or marked done) with its last line finished.
 *
 * What must hold: a file is never in two of these places and never in none; nothing is deleted (only our own meta.json
 * and the emptied work folder are removed after archiving).
 *
 * After a crash, `listWorkItems` finds every file that was taken but not archived; the runner processes it again
 * (the store makes that safe: rows already done are not sent again) and archives it. A work folder with meta.json
 * but no file means the file was never moved in (it is still in the inbox and will be taken again) or was already
 * archived: either way the folder is only cleaned up (in a work area shared by several daemons, by the adoption pass
 * of src/intake/intake.ts, once no claim names it and it is a lease old: `removeWorkFolderWithoutFile`).
 */

import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, constants as fsConstants, type Stats } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { writeFileAtomic } from '../atomic-file.js';
import { RemessaError } from '../errors.js';
import type { Message } from '../i18n/index.js';
import { archiveNameFor } from '../outbox/names.js';
import type { KindName } from '../types.js';

/** What the work area remembers about a taken file. */
export interface WorkMeta {
  /** Kind from the inbox folder or name prefix; null when unknown (the file is answered with a rejection). */
  kind: KindName | null;
  /** Why the kind is unknown, when it is (English, for logs). */
  unknownKindReason?: string;
  /** The same as a catalogue message (src/i18n), for the person reading the rejection in their locale. */
  unknownKindDetail?: Message;
  /** The file's name as dropped. */
  name: string;
  /** The inbox folder it was dropped in (`charges`), or null for the inbox root. */
  folder: string | null;
  /** Path relative to the inbox, as dropped. */
  relativePath: string;
  /** ISO timestamp of the take. */
  takenAt: string;
  /** Name of the `.done` marker that came with it, moved along to the archive. */
  marker?: string;
  /**
   * The file as it was checked and taken. A writer that still holds it open keeps writing into it after the move:
   * what is in the work area is compared with this before the file is read and before its answer is written.
   */
  taken?: FileFingerprint;
  /**
   * The OS owner (uid) of the file as it was in the inbox, read from the very file moved (`moveFile`'s `source`), before
   * a copy across file systems made it this process's own: who dropped it, the file's maker for maker-checker
   * (src/runner/approval.ts `makerOf`). null when it cannot be told: a link, a file with more than one name (anyone
   * may link to another person's file), or not read. Absent in a meta.json written before the move (a crash then, or
   * the rewrite failed) or by an older remessa, and for a file `run` reads where it is: the file's own owner is read.
   */
  ownerUid?: number | null;
  /**
   * Set when the intake itself answers the file as a whole (a link, a FIFO, a folder, an unreadable or cut-off
   * file): the file is then never opened again; the handler writes this rejection and nothing else.
   */
  rejection?: { code: string; message: string; detail?: Message };
}

/** Identity and state of a file: same inode, same size, same modification time = not written since. */
export interface FileFingerprint {
  ino: number;
  size: number;
  mtimeMs: number;
}

export function fingerprintOf(stat: { ino: number; size: number; mtimeMs: number }): FileFingerprint {
  return { ino: stat.ino, size: stat.size, mtimeMs: stat.mtimeMs };
}

export function sameFingerprint(a: FileFingerprint | undefined, b: FileFingerprint | undefined): boolean {
  return a !== undefined && b !== undefined && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs;
}

/** One taken file, in the work area. */
export interface WorkItem {
  id: string;
  /** Absolute path of the work folder. */
  dir: string;
  /** Absolute path of the file inside it. */
  file: string;
  meta: WorkMeta;
}

/** Thrown when a file cannot be taken or archived (permissions, vanished file). */
export class IntakeError extends RemessaError {}

/**
 * Thrown (code `INTAKE_FILE_CHANGED`) when a taken file changed after it was taken: its writer was still at work.
 * The intake waits until it settles and reads it again; rows already sent are known by their natural keys.
 */
export class FileChangedError extends IntakeError {
  constructor(file: string) {
    super('INTAKE_FILE_CHANGED', `${file} changed after it was taken (its writer was still at work); reading it again`);
  }
}

const META_FILE = 'meta.json';

/** What `moveFile` moved. */
export interface MovedFile {
  /** Copied across file systems (not renamed): the copy at `to` is then this process's own, whoever owned `from`. */
  copied: boolean;
  /**
   * The entry as it was in `from` (not followed), read from the very file moved: the renamed entry (its owner and
   * links unchanged by the rename), or the handle the copy was read from. Undefined when it could not be read after a
   * rename, and for a link moved as a link.
   */
  source?: Stats;
  /**
   * A copy: whether `from`'s size and modification time were the same once it was read as before (nothing written into
   * it meanwhile), so the copy holds `from` as `source` says.
   */
  copiedUnchanged?: boolean;
}

/** Opening a file to copy it: never a link's target, never blocking on a FIFO swapped in since the lstat. */
const COPY_FROM_FLAGS = fsConstants.O_RDONLY | (fsConstants.O_NOFOLLOW ?? 0) | (fsConstants.O_NONBLOCK ?? 0);

/**
 * Moves `from` to `to`: a rename when both are on one file system (atomic). Across file systems (an inbox on a network
 * share) it copies to a temp name beside `to`, syncs, renames, then removes `from`: the file may briefly exist in
 * both places, never in neither. The copy is read through one handle opened without following links, which is also
 * where `source` (the owner of what was copied) is read from. A symbolic link is moved as a link (its target is never
 * read); another special file (FIFO, socket, device, folder) cannot be copied across file systems and is left where
 * it is.
 */
export async function moveFile(from: string, to: string): Promise<MovedFile> {
  try {
    await fs.rename(from, to);
    return { copied: false, source: await fs.lstat(to).catch(() => undefined) };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
    const stat = await fs.lstat(from);
    if (stat.isSymbolicLink()) {
      await fs.symlink(await fs.readlink(from), to);
      await fs.unlink(from);
      return { copied: true };
    }
    const notMovable = () =>
      new IntakeError('INTAKE_NOT_MOVABLE', `${from} is not a regular file and cannot be moved to ${to}`, {
        cause: err,
      });
    if (!stat.isFile()) throw notMovable();
    const input = await fs.open(from, COPY_FROM_FLAGS).catch((e: NodeJS.ErrnoException) => {
      throw e.code === 'ELOOP' ? notMovable() : e; // swapped for a link since the lstat
    });
    let source: Stats;
    let after: Stats;
    const tmp = `${to}.${randomBytes(4).toString('hex')}.part`;
    try {
      source = await input.stat();
      if (!source.isFile()) throw notMovable();
      await pipeline(input.createReadStream({ start: 0, autoClose: false }), createWriteStream(tmp, { flags: 'wx' }));
      after = await input.stat();
    } finally {
      await input.close();
    }
    const handle = await fs.open(tmp, 'r+');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(tmp, to);
    await fs.unlink(from);
    return {
      copied: true,
      source,
      copiedUnchanged: after.size === source.size && after.mtimeMs === source.mtimeMs,
    };
  }
}

/** SHA-256 (hex) of a file's content, streamed: the batch identity. */
export async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** A new intake id: `<UTC stamp>-<8 hex>` (the name of its work folder, and the tail of its answers' names). */
export function newWorkId(): string {
  const stamp = new Date()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return `${stamp}-${randomBytes(4).toString('hex')}`;
}

/**
 * Takes `source` (an absolute path inside the inbox) into a fresh work folder, recording who owned it there
 * (`ownerUid`). Returns undefined when the file vanished before the move (someone else took it, or the writer renamed
 * it): nothing to do.
 */
export async function takeIntoWorkArea(
  workDir: string,
  source: string,
  meta: Omit<WorkMeta, 'takenAt' | 'ownerUid'>,
  markerPath?: string,
  /** The work id, when chosen before (a shared inbox claims the file under it first). @defaultValue a new one */
  workId?: string,
): Promise<WorkItem | undefined> {
  const id = workId ?? newWorkId();
  const dir = path.join(workDir, id);
  await fs.mkdir(dir, { recursive: true });
  const full: WorkMeta = { ...meta, takenAt: new Date().toISOString() };
  if (markerPath) full.marker = path.basename(markerPath);
  await writeFileAtomic(path.join(dir, META_FILE), `${JSON.stringify(full, null, 2)}\n`);
  const file = path.join(dir, meta.name);
  let moved: MovedFile;
  try {
    moved = await moveFile(source, file);
  } catch (err) {
    await fs.rm(dir, { recursive: true, force: true });
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new IntakeError(
      'INTAKE_TAKE_FAILED',
      `Could not move ${source} into the work area: ${(err as Error).message}`,
      {
        cause: err,
      },
    );
  }
  // Who dropped it: the owner of the file moved, as it was in the inbox (a copy is this process's own). Known only once
  // moved, so meta.json is written again; if that fails (disk trouble), the owner is missing from it and, after a
  // restart, the work file's own is read instead: for a copy, this process's account, which is no maker (refused).
  full.ownerUid = moved.source?.isFile() && moved.source.nlink === 1 ? moved.source.uid : null;
  // A copy is a new inode with a new modification time: when it holds the file as it was checked (`taken`), what is
  // compared from now on is the copy, not read as a writer still at work (which waited stableMs more and warned).
  // Otherwise (written into while it was checked or copied) `taken` stays, and the intake waits for it to settle.
  if (
    moved.copied &&
    moved.copiedUnchanged &&
    moved.source &&
    sameFingerprint(fingerprintOf(moved.source), full.taken)
  ) {
    const copy = await fs.lstat(file).catch(() => undefined);
    if (copy?.size === moved.source.size) full.taken = fingerprintOf(copy);
  }
  await writeFileAtomic(path.join(dir, META_FILE), `${JSON.stringify(full, null, 2)}\n`).catch(() => undefined);
  if (markerPath) {
    // The marker follows its file; losing it is harmless (the file is already taken).
    await moveFile(markerPath, path.join(dir, full.marker!)).catch(() => undefined);
  }
  return { id, dir, file, meta: full };
}

/** Rewrites a work item's meta.json (temp name, then rename) after the intake learnt more about its file. */
export async function saveWorkMeta(item: WorkItem): Promise<void> {
  await writeFileAtomic(path.join(item.dir, META_FILE), `${JSON.stringify(item.meta, null, 2)}\n`);
}

/**
 * Every file taken but not archived (left by a crash), oldest first, in a work area this daemon alone uses: folders
 * that hold no file are cleaned. A work area shared by several daemons is listed by `scanWorkArea` instead (such a
 * folder may be another daemon's taking in progress; the adoption pass removes those nobody claims any more,
 * `removeWorkFolderWithoutFile`).
 */
export async function listWorkItems(workDir: string): Promise<WorkItem[]> {
  const { items, withoutFile } = await scanWorkArea(workDir);
  for (const f of withoutFile) await removeIfOnlyOurs(f.dir);
  return items;
}

/** A work folder that holds no taken file: its file was never moved in, or was archived already. */
export interface WorkFolderWithoutFile {
  id: string;
  dir: string;
  /** When it was taken (ms since the epoch): its meta.json's `takenAt`, else the folder's modification time. */
  since: number;
}

/** The work area's folders, oldest first: those holding their taken file (`items`), and the others. */
export async function scanWorkArea(
  workDir: string,
): Promise<{ items: WorkItem[]; withoutFile: WorkFolderWithoutFile[] }> {
  const items: WorkItem[] = [];
  const withoutFile: WorkFolderWithoutFile[] = [];
  let ids: string[];
  try {
    ids = (await fs.readdir(workDir)).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { items, withoutFile };
    throw err;
  }
  for (const id of ids) {
    const dir = path.join(workDir, id);
    const stat = await fs.stat(dir).catch(() => undefined);
    if (!stat?.isDirectory()) continue;
    let meta: WorkMeta;
    try {
      meta = JSON.parse(await fs.readFile(path.join(dir, META_FILE), 'utf8')) as WorkMeta;
    } catch {
      // No meta: the crash came between mkdir and the meta rename; the file was never moved in.
      withoutFile.push({ id, dir, since: stat.mtimeMs });
      continue;
    }
    const file = path.join(dir, meta.name);
    if (await exists(file)) items.push({ id, dir, file, meta });
    else withoutFile.push({ id, dir, since: Date.parse(meta.takenAt) || stat.mtimeMs });
  }
  return { items, withoutFile };
}

/** Whether `file` exists as an entry (a link counts, whatever it points to: it is never followed). */
async function exists(file: string): Promise<boolean> {
  return fs.lstat(file).then(
    () => true,
    () => false,
  );
}

/**
 * Our own files in a work folder: its meta.json and temp files (a `.part` is an interrupted copy across file systems
 * whose source is still in the inbox). Anything else is a user's file.
 */
function ours(entry: string): boolean {
  return entry === META_FILE || entry.endsWith('.tmp') || entry.endsWith('.part');
}

/** Removes a work folder only if it holds nothing but our own files (`ours`): never a user's file. */
async function removeIfOnlyOurs(dir: string): Promise<void> {
  const entries = await fs.readdir(dir).catch(() => [] as string[]);
  if (entries.every(ours)) await fs.rm(dir, { recursive: true, force: true });
}

/**
 * Removes a work folder that holds no file from a work area shared by several daemons, where its taker, frozen until
 * now, may yet move its file in (src/intake/intake.ts removes only folders no claim names, older than a lease; this
 * guards the rest): our files go one by one, meta.json last, then the folder by `rmdir`, which fails if anything
 * came in meanwhile; a file that came in gets its meta.json back, and is then an orphan, adopted like any. A user's
 * file is never removed. Returns whether the folder is gone.
 */
export async function removeWorkFolderWithoutFile(dir: string): Promise<boolean> {
  const entries = await fs.readdir(dir).catch(() => undefined);
  if (entries === undefined) return true;
  if (!entries.every(ours)) return false;
  const metaPath = path.join(dir, META_FILE);
  const metaText = await fs.readFile(metaPath, 'utf8').catch(() => undefined);
  for (const e of entries) if (e !== META_FILE) await fs.rm(path.join(dir, e), { force: true });
  if (metaText !== undefined) await fs.rm(metaPath, { force: true });
  try {
    await fs.rmdir(dir);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return true;
    if (metaText !== undefined) await writeFileAtomic(metaPath, metaText);
    return false;
  }
}

/**
 * `archive/<kind or folder or _unknown>/<name>.<intake id><ext>` (src/outbox/names.ts): the same base name as its
 * answers, unique per taking, sorted by name then time of the take, short enough for the file system.
 */
export function archivePathFor(archiveDir: string, item: WorkItem): string {
  const sub = item.meta.kind ?? item.meta.folder ?? '_unknown';
  return path.join(archiveDir, sub, archiveNameFor(item.meta.name, item.id));
}

/**
 * Moves the file (and its marker) to the archive and removes the emptied work folder. Returns the archive path.
 * Never replaces an archived file: a name that is taken (only by a file put there by hand) gets `-2`, `-3`, ...
 */
export async function archiveWorkItem(archiveDir: string, item: WorkItem, _sha256?: string): Promise<string> {
  const first = archivePathFor(archiveDir, item);
  let target = first;
  for (let n = 2; await exists(target); n++) {
    const ext = path.extname(first);
    target = `${first.slice(0, first.length - ext.length)}-${n}${ext}`;
  }
  await fs.mkdir(path.dirname(target), { recursive: true });
  await moveFile(item.file, target);
  if (item.meta.marker) {
    await moveFile(path.join(item.dir, item.meta.marker), `${target}${path.extname(item.meta.marker)}`).catch(
      () => undefined,
    );
  }
  await removeIfOnlyOurs(item.dir);
  return target;
}
