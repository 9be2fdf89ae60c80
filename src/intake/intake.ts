/**
 * Intake: finds finished files in the inbox, takes them into the work area, hands each to the runner, and archives
 * it once answered.
 *
 * A path moves through these states (per absolute inbox path):
 *
 *     seen --(its .done marker exists)-------------------------------------------\
 *       |  --(inode, size and mtime unchanged for stableMs)--> settled --(last line finished)--> taking --> queued
 *       |                                                         |  \--(unfinished, quiet < cutOffMs)--> settled (waits)
 *       |                                                         |  \--(unfinished, quiet >= cutOffMs)--> taking
 *       |                                                         |        (cut inside a row: rejected as cut off;
 *       |                                                         |         only the final line end missing: taken)
 *       |  --(changed)--> seen (clock restarts)
 *       |  --(a link, FIFO, socket, device, folder named *.csv, or unreadable)--> taking, with its rejection
 *       \-- vanished before the take: forgotten
 *
 *     queued --(the file still as taken)--> handling --'done'--> archived
 *        \--(changed since taken: written through a handle still open)--> settling --(settled again)--> handling
 *     handling --(file changed before the answer: FileChangedError)--> settling (read again; the rows already
 *                sent are known by their natural keys, so nothing is sent twice)
 *     handling --'parked'--> stays in work (resumed on start; or handled again once decided, waiting for approval, or
 *                once a later pass ended its rows, left waiting: the daemon's `handleAgain`)
 *     handling --throws--> stays in work; while watching, handled again after retryFailedMs, doubling, at most
 *                maxRetries times, then only on the next start (one error logged each time, never a tight loop)
 *
 * What must hold:
 * - a file is taken once (the `taking` set guards the move; the move itself is a rename, which only one caller can
 *   win), and it reaches the archive only after the handler says every row is answered ('done');
 * - an answer never covers part of a file as if it were the whole: a file is taken only when quiet for stableMs (or
 *   marked done) with its last line finished; what was taken (inode, size, mtime) is checked again before the file
 *   is read, after its last byte is read and before any row is sent (the runner: a change then gives the partial
 *   batch up in the store, nothing sent), and before its answer is written; a file that changed is read again;
 * - a link is never followed and a special file never opened: each is answered once with a rejection naming only
 *   its own path, then archived as it is (a link stays a link);
 * - a handler that throws leaves the file in the work area, retried later: never lost, never archived unanswered;
 * - who dropped a file (its OS owner, the maker of maker-checker) is read from the file the take moves, as it was in
 *   the inbox, never from what is in the work area, which across file systems is a copy of remessa's own
 *   (src/intake/work-area.ts `ownerUid`); a file with more than one name has no owner that can be told.
 *
 * Names that writers use while at work are ignored (src/intake/classify.ts). A `.done` marker is honoured whether or
 * not `requireDoneMarker` is on: its file is taken at once and the marker archived with it; a marker whose file was
 * already taken is archived alone once quiet for stableMs.
 *
 * Why stableMs defaults to 20 s: a TCP connection that loses packets retransmits after 1, 2, 4 and 8 s (RFC 6298
 * backoff), so a link that recovers resumes up to 15 s after its last byte; SFTP clients that pause between chunks
 * (WinSCP, ERP schedulers on a busy host) stall for seconds, and 10 s stalls were seen. 20 s covers both with a
 * margin, and costs a batch daemon only 20 s of latency. Writers that rename a temporary name or drop a `.done`
 * marker are taken at once (the marker) or 20 s after the rename, whatever their link does.
 *
 * Events from chokidar (native or polling, a setting for network shares) only hint that a path changed; the decision
 * is always made from a fresh `lstat`, so a missed or duplicated event costs nothing. A periodic rescan of the inbox
 * covers file systems that lose events.
 */
import { createHash } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { constants as fsConstants, type Stats } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { type FSWatcher, watch } from 'chokidar';
import PQueue from 'p-queue';
import { type Message, msg } from '../i18n/index.js';
import type { Logger } from '../log.js';
import { silentLogger } from '../log.js';
import { isKindName, KIND_NAMES } from '../types.js';
import { classifyInboxPath, DONE_MARKER_SUFFIX, isIgnoredName, stemOf } from './classify.js';
import { type Completeness, checkCompleteness, describeUnfinished, unfinishedMessage } from './completeness.js';
import {
  archiveWorkItem,
  type FileFingerprint,
  fingerprintOf,
  IntakeError,
  listWorkItems,
  moveFile,
  newWorkId,
  removeWorkFolderWithoutFile,
  sameFingerprint,
  saveWorkMeta,
  scanWorkArea,
  sha256File,
  takeIntoWorkArea,
  type WorkItem,
  type WorkMeta,
} from './work-area.js';

export interface IntakeOptions {
  /** Folder watched for batches (`inbox/<kind>/` folders and `<kind>-*.csv` root files). */
  inboxDir: string;
  /** Folder where taken files wait while processed (`<data>/work`). Same file system as the inbox for atomic moves. */
  workDir: string;
  /** Folder where answered originals end (`archive/<kind>/...`). */
  archiveDir: string;
  /**
   * How long inode, size and mtime must stay unchanged before a file is taken, in milliseconds (why 20 s: see the
   * top of this file). @defaultValue 20000
   */
  stableMs?: number;
  /**
   * A file whose last line is unfinished (no line end, fewer columns than the header, an open quote) is waited for
   * this long after its last change, in milliseconds; then it is rejected as cut off (nothing sent), or taken when
   * only the final line end is missing. @defaultValue 120000
   */
  cutOffMs?: number;
  /** Take a file only once its `<name>.done` (or `<stem>.done`) marker exists; stability is then not awaited. @defaultValue false */
  requireDoneMarker?: boolean;
  /** Poll the file system instead of native events (network shares). @defaultValue false */
  usePolling?: boolean;
  /** Polling interval when `usePolling` is on, in milliseconds. @defaultValue 1000 */
  pollIntervalMs?: number;
  /** Full rescan of the inbox while watching, in case events were lost, in milliseconds; 0 disables. @defaultValue 30000 */
  rescanIntervalMs?: number;
  /**
   * Files handled at the same time; others wait in the work area (in a shared inbox, in the inbox: left to the other
   * daemons until this one has room). @defaultValue 4
   */
  maxConcurrentFiles?: number;
  /** Create `inbox/<kind>/` for every kind on start, so users see where to drop files. @defaultValue true */
  createKindFolders?: boolean;
  /**
   * While watching, a batch whose handler threw (store or disk trouble) is handled again after this many
   * milliseconds, doubling each time; 0 = only on the next start. @defaultValue 60000
   */
  retryFailedMs?: number;
  /** How many times a batch whose handler threw is handled again while watching. @defaultValue 5 */
  maxRetries?: number;
  /**
   * Several daemons on one shared inbox (src/store/leases.ts `FileClaims`): a file is claimed in the store, keyed by
   * its content's SHA-256, before it is renamed into the (shared) work area; the loser leaves it. Work items are
   * handled only when claimed, and those of dead daemons (or orphaned) are adopted every half lease. Absent: this
   * daemon is the only one.
   */
  claims?: IntakeClaims;
  logger?: Logger;
}

/** What the intake asks of the store's file claims (src/store/leases.ts `FileClaims`). */
export interface IntakeClaims {
  readonly leaseMs: number;
  claim(key: string, workId: string, source: string): Promise<boolean>;
  taken(workId: string): Promise<boolean>;
  abandon(workId: string): Promise<void>;
  done(workId: string): Promise<void>;
  /** Of `workIds`, those a claim names (whatever its holder). */
  claimed(workIds: readonly string[]): Promise<Set<string>>;
  adoptable<T extends { id: string; takenAt: string }>(
    items: readonly T[],
    options: { mine: boolean; keyOf: (item: T) => Promise<string | undefined>; sourceOf: (item: T) => string },
  ): Promise<T[]>;
}

/** A taken file, ready to be processed. */
export interface TakenBatch {
  item: WorkItem;
  /**
   * SHA-256 of the content (hex): no longer the batch identity (that is `item.id`, the taking), kept to tell that a
   * file repeats an earlier one.
   */
  sha256: string;
  /** The dropped name without its extension (`jan.csv` -> `jan`); answers are named by src/outbox/names.ts. */
  stem: string;
  /**
   * Whether the file is still what was taken and read (same inode, size, mtime). The handler asks before it sends
   * and before it writes the answer; when false it throws `FileChangedError` and the intake reads the file again.
   * Absent when there is nothing to compare (a file given on the command line).
   */
  unchanged?: () => Promise<boolean>;
}

/**
 * Processes one taken batch and writes its one answer (result or rejection). Resolves `'done'` when every row is
 * answered (the file is then archived) or `'parked'` when stopped early (the file stays in the work area and is
 * resumed on the next start). `signal` aborts on stop: finish or park in-flight rows, then return.
 */
export type BatchHandler = (batch: TakenBatch, signal: AbortSignal) => Promise<'done' | 'parked'>;

interface Seen {
  /** Last fingerprint seen; undefined before the first look. */
  fp: FileFingerprint | undefined;
  /** Since when the current fingerprint holds (ms since epoch). */
  since: number;
  /** The unfinished-line reason already logged for this fingerprint (logged once). */
  logged?: string;
  /** The last inspection of an unchanged file, so one waiting for its last line is not read again every tick. */
  inspected?: { key: string; inspection: Inspection };
}

/** What opening a settled inbox file for reading tells. */
type Inspection =
  | { type: 'ok'; fp: FileFingerprint; completeness: Completeness }
  | { type: 'gone' }
  | { type: 'not-regular' }
  | { type: 'unreadable'; code: string };

const DEFAULTS = {
  stableMs: 20_000,
  cutOffMs: 120_000,
  requireDoneMarker: false,
  usePolling: false,
  pollIntervalMs: 1000,
  rescanIntervalMs: 30_000,
  maxConcurrentFiles: 4,
  createKindFolders: true,
  retryFailedMs: 60_000,
  maxRetries: 5,
};

/** Flags to open an inbox file: read only, never through a link, never blocking on a FIFO swapped in meanwhile. */
const OPEN_FLAGS = fsConstants.O_RDONLY | (fsConstants.O_NOFOLLOW ?? 0) | (fsConstants.O_NONBLOCK ?? 0);

export class Intake {
  private readonly options: Required<Omit<IntakeOptions, 'logger' | 'claims'>>;
  private readonly log: Logger;
  private readonly seen = new Map<string, Seen>();
  private readonly taking = new Set<string>();
  private readonly queue: PQueue;
  private readonly abort = new AbortController();
  private watcher: FSWatcher | undefined;
  private tickTimer: NodeJS.Timeout | undefined;
  private rescanTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  private ticking: Promise<void> | undefined;
  /** Paths waiting only for their `.done` marker (reported once). */
  private readonly waitingForMarker = new Set<string>();
  /** `.done` markers whose file is not in the inbox, with when they were first seen so. */
  private readonly markers = new Map<string, number>();
  /** Paths that could not be taken, with the fingerprint that failed: noted once, tried again only once changed. */
  private readonly noted = new Map<string, string>();
  /** Handler failures per work item. */
  private readonly failures = new Map<string, number>();
  /** Number of batches whose handler finished with 'done' / 'parked' / threw. */
  readonly counts = { done: 0, parked: 0, failed: 0 };
  /** The store's file claims, when several daemons share the inbox. */
  private readonly claims: IntakeClaims | undefined;
  /** Work items queued or being handled (shared inbox: an adoption pass never queues one twice). */
  private readonly handling = new Set<string>();
  private adoptTimer: NodeJS.Timeout | undefined;

  constructor(
    options: IntakeOptions,
    private readonly handler: BatchHandler,
  ) {
    this.options = {
      ...DEFAULTS,
      ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)),
    } as Required<Omit<IntakeOptions, 'logger' | 'claims'>>;
    for (const [name, min] of [
      ['stableMs', 0],
      ['cutOffMs', 0],
      ['pollIntervalMs', 10],
      ['rescanIntervalMs', 0],
      ['maxConcurrentFiles', 1],
      ['retryFailedMs', 0],
      ['maxRetries', 0],
    ] as const) {
      const value = this.options[name];
      if (!Number.isInteger(value) || value < min) {
        throw new TypeError(`Expected intake option ${name} to be an integer >= ${min}, got ${String(value)}`);
      }
    }
    this.log = options.logger ?? silentLogger();
    this.claims = options.claims;
    this.queue = new PQueue({ concurrency: this.options.maxConcurrentFiles });
    // Handlers hand the signal to every row they drive: many listeners are expected.
    setMaxListeners(0, this.abort.signal);
  }

  /** Aborted when `stop` is called; handlers receive it. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /** Creates the folders, resumes what the work area holds, scans the inbox once. Does not watch. */
  async prepare(): Promise<void> {
    const { inboxDir, workDir, archiveDir } = this.options;
    await fs.mkdir(inboxDir, { recursive: true });
    await fs.mkdir(workDir, { recursive: true });
    await fs.mkdir(archiveDir, { recursive: true });
    if (this.options.createKindFolders) {
      await Promise.all(KIND_NAMES.map((k) => fs.mkdir(path.join(inboxDir, k), { recursive: true })));
    }
    const left = this.claims
      ? await this.adoptable(true, (await scanWorkArea(workDir)).items)
      : await listWorkItems(workDir);
    if (left.length > 0) this.log.info({ count: left.length }, 'resuming batches left in the work area');
    for (const item of left) this.enqueue(item);
    await this.scan();
  }

  /** `prepare`, then watch until `stop`. */
  async start(): Promise<void> {
    await this.prepare();
    if (this.stopped) return;
    const { inboxDir, usePolling, pollIntervalMs, rescanIntervalMs } = this.options;
    this.watcher = watch(inboxDir, {
      ignoreInitial: true,
      depth: 1,
      usePolling,
      interval: pollIntervalMs,
      binaryInterval: pollIntervalMs,
      persistent: true,
      // A link in the inbox is an entry to answer, never a way to read something else.
      followSymlinks: false,
    });
    this.watcher.on('add', (p) => this.hint(p));
    this.watcher.on('change', (p) => this.hint(p));
    this.watcher.on('addDir', (p) => {
      if (isCsvName(path.basename(p)) && p !== inboxDir) this.hint(p);
    });
    this.watcher.on('error', (err) => this.log.warn({ err }, 'inbox watcher error'));
    await new Promise<void>((resolve) => this.watcher!.once('ready', () => resolve()));
    this.tickTimer = setInterval(() => void this.tick(), this.checkIntervalMs());
    if (this.claims) {
      // Files of daemons that died (or froze) with them in the shared work area: adopted every half lease.
      this.adoptTimer = setInterval(() => void this.adopt(), Math.max(500, Math.floor(this.claims.leaseMs / 2)));
    }
    if (rescanIntervalMs > 0) this.rescanTimer = setInterval(() => void this.scan(), rescanIntervalMs);
    this.log.info({ inbox: inboxDir, polling: usePolling }, 'watching the inbox');
  }

  /**
   * One pass for `remessa run`: resume the work area, take every file in the inbox (waiting for files still being
   * written to settle), handle everything, and resolve when all is answered or parked. Files waiting for a `.done`
   * marker are left in the inbox.
   */
  async drain(): Promise<void> {
    await this.prepare();
    while (!this.stopped) {
      await this.tick();
      const pending = [...this.seen.keys()].filter((p) => !this.waitingForMarker.has(p));
      if (pending.length === 0 && this.taking.size === 0) break;
      await sleep(this.checkIntervalMs());
    }
    await this.queue.onIdle();
  }

  /** Stops taking files, aborts handlers (they finish or park their rows) and waits for them. Idempotent. */
  async stop(): Promise<void> {
    if (!this.stopped) {
      this.stopped = true;
      if (this.tickTimer) clearInterval(this.tickTimer);
      if (this.adoptTimer) clearInterval(this.adoptTimer);
      if (this.rescanTimer) clearInterval(this.rescanTimer);
      for (const t of this.retryTimers) clearTimeout(t);
      this.retryTimers.clear();
      await this.watcher?.close();
      // Queued but not started: they stay in the work area and are resumed on the next start.
      this.queue.clear();
      this.abort.abort();
    }
    await this.ticking;
    await this.queue.onIdle();
  }

  /** Resolves when nothing is queued or being handled (tests and `run`). */
  async onIdle(): Promise<void> {
    await this.queue.onIdle();
  }

  private checkIntervalMs(): number {
    return Math.min(500, Math.max(20, Math.floor(this.options.stableMs / 4)));
  }

  /** A path changed (or a marker appeared): remember it; the next tick decides. */
  private hint(absPath: string): void {
    if (this.stopped) return;
    const name = path.basename(absPath);
    if (name.toLowerCase().endsWith(DONE_MARKER_SUFFIX)) {
      // A marker names its file: `jan.csv.done` or `jan.done`; remember the file if it is there, else the marker.
      const base = absPath.slice(0, -DONE_MARKER_SUFFIX.length);
      void this.findMarkedFile(base).then((file) => {
        if (file) this.hint(file);
        else if (!this.markers.has(absPath)) this.markers.set(absPath, Date.now());
      });
      return;
    }
    const rel = path.relative(this.options.inboxDir, absPath);
    if (classifyInboxPath(rel).type === 'ignored') return;
    if (!this.seen.has(absPath) && !this.taking.has(absPath)) this.seen.set(absPath, { fp: undefined, since: 0 });
  }

  private async findMarkedFile(base: string): Promise<string | undefined> {
    if (await isRegularFile(base)) return base;
    const dir = path.dirname(base);
    const stem = path.basename(base);
    const entries = await fs.readdir(dir).catch(() => [] as string[]);
    const match = entries.find((e) => !isIgnoredName(e) && stemOf(e) === stem);
    return match ? path.join(dir, match) : undefined;
  }

  private async markerFor(file: string): Promise<string | undefined> {
    const candidates = [
      `${file}${DONE_MARKER_SUFFIX}`,
      path.join(path.dirname(file), `${stemOf(path.basename(file))}${DONE_MARKER_SUFFIX}`),
    ];
    for (const c of candidates) if (await isRegularFile(c)) return c;
    return undefined;
  }

  /**
   * Lists the inbox root and its folders (one level) and hints every entry: files, but also links, FIFOs, sockets,
   * devices and folders named `*.csv`, which are answered (never opened). Other folders inside a kind folder are not
   * ours (deeper than one level).
   */
  async scan(): Promise<void> {
    const { inboxDir } = this.options;
    const root = await fs.readdir(inboxDir, { withFileTypes: true }).catch(() => []);
    for (const entry of root) {
      const abs = path.join(inboxDir, entry.name);
      if (entry.isDirectory()) {
        if (isIgnoredName(entry.name)) continue;
        if (isCsvName(entry.name)) {
          this.hint(abs);
          continue;
        }
        const inner = await fs.readdir(abs, { withFileTypes: true }).catch(() => []);
        for (const e of inner) if (!e.isDirectory() || isCsvName(e.name)) this.hint(path.join(abs, e.name));
      } else {
        this.hint(abs);
      }
    }
  }

  /** Re-stats every seen path and takes the settled ones. Never runs twice at once. */
  private tick(): Promise<void> {
    if (this.ticking) return this.ticking;
    this.ticking = this.checkAll().finally(() => {
      this.ticking = undefined;
    });
    return this.ticking;
  }

  private forget(abs: string): void {
    this.seen.delete(abs);
    this.waitingForMarker.delete(abs);
  }

  private async checkAll(): Promise<void> {
    for (const [abs, seen] of [...this.seen]) {
      if (this.stopped) return;
      await this.check(abs, seen);
    }
    await this.checkMarkers();
  }

  private async check(abs: string, prev: Seen): Promise<void> {
    const now = Date.now();
    const rel = path.relative(this.options.inboxDir, abs);
    const stat = await fs.lstat(abs).catch(() => undefined);
    if (!stat) {
      this.forget(abs);
      return;
    }
    const fp = fingerprintOf(stat);
    if (this.noted.get(abs) === fingerprintKey(fp)) {
      this.forget(abs); // could not be taken as it is: noted once; `run` does not wait for it
      return;
    }
    if (stat.isSymbolicLink() && path.dirname(abs) === this.options.inboxDir && isKindName(path.basename(abs))) {
      // A kind folder replaced by a link: not followed, and not taken either (it is the operator's, not a batch).
      this.forget(abs);
      this.noteOnce(abs, 'link', 'inbox kind folder is a link: remessa does not follow links; make it a real folder');
      return;
    }
    if (!stat.isFile()) {
      this.forget(abs);
      const rejection = specialEntryRejection(stat, rel);
      if (rejection) await this.take(abs, { fp, rejection });
      return;
    }
    // A `.done` marker is the writer saying the file is whole: honoured whether or not it is required.
    const marker = await this.markerFor(abs);
    let seen = prev;
    if (!marker) {
      if (this.options.requireDoneMarker) {
        if (!this.waitingForMarker.has(abs)) this.log.info({ file: rel }, 'waiting for the .done marker');
        this.waitingForMarker.add(abs);
        return;
      }
      if (!sameFingerprint(fp, prev.fp)) {
        // First sight of a file not touched for stableMs (e.g. found by the start-up scan) counts as settled.
        const settledAlready = prev.fp === undefined && now - stat.mtimeMs >= this.options.stableMs;
        seen = { fp, since: settledAlready ? Math.min(now - this.options.stableMs, stat.mtimeMs) : now };
        this.seen.set(abs, seen);
        if (!settledAlready) return;
      } else if (now - prev.since < this.options.stableMs) {
        return;
      }
    }
    // Settled (or marked done): look at what can be read, through one handle that is never a link's target.
    const key = fingerprintKey(fp);
    const inspection = seen.inspected?.key === key ? seen.inspected.inspection : await inspect(abs);
    seen.inspected = { key, inspection };
    if (inspection.type === 'gone' || inspection.type === 'not-regular') {
      if (inspection.type === 'gone') this.forget(abs);
      return; // vanished, or swapped for something else since the lstat: the next tick sees what is there now
    }
    if (inspection.type === 'unreadable') {
      this.forget(abs);
      await this.take(abs, { fp, rejection: unreadableRejection(rel, inspection.code) });
      return;
    }
    if (!sameFingerprint(inspection.fp, fp)) return; // written to while we read: not settled after all
    const { completeness } = inspection;
    let rejection: WorkMeta['rejection'];
    // An empty file is not waited for beyond stableMs: the reader answers it as empty, nothing is sent either way.
    if (!marker && !completeness.complete && completeness.reason !== 'empty') {
      const quietMs = now - seen.since;
      const what = describeUnfinished(completeness);
      if (quietMs < this.options.cutOffMs) {
        if (seen.logged !== what) {
          this.log.info(
            { file: rel, waitMs: this.options.cutOffMs - quietMs },
            `waiting for the rest of the file: ${what}`,
          );
          seen.logged = what;
        }
        return;
      }
      if (completeness.reason === 'open-quote' || completeness.reason === 'short-line') {
        rejection = cutOffRejection(rel, what, unfinishedMessage(completeness), quietMs);
      } else {
        // All its columns, only the final line end missing (or empty): after this long, the writer is done.
        this.log.info({ file: rel }, `taking the file as it is after ${Math.round(quietMs / 1000)} s: ${what}`);
      }
    }
    if (this.claims && this.handling.size >= this.options.maxConcurrentFiles) {
      // A shared inbox: a daemon already handling all the files it may at once leaves the next one in the inbox, for
      // an idle daemon to take (or itself, at a tick once a file is answered), instead of claiming it only to let it
      // wait in its own queue while the others have nothing to do. Alone, it takes it now (out of the writer's way).
      return;
    }
    this.forget(abs);
    await this.take(abs, { marker, fp: inspection.fp, rejection });
  }

  /**
   * `.done` markers whose file is not in the inbox: the file was taken before its marker came (it settled first).
   * Such a marker is archived beside where its file went, once quiet for stableMs, so nothing is left behind.
   */
  private async checkMarkers(): Promise<void> {
    const now = Date.now();
    for (const [marker, since] of [...this.markers]) {
      if (this.stopped) return;
      if (!(await isRegularFile(marker))) {
        this.markers.delete(marker);
        continue;
      }
      const file = await this.findMarkedFile(marker.slice(0, -DONE_MARKER_SUFFIX.length));
      if (file) {
        this.markers.delete(marker);
        this.hint(file);
        continue;
      }
      if (now - since < this.options.stableMs) continue;
      this.markers.delete(marker);
      const rel = path.relative(this.options.inboxDir, marker);
      const entry = classifyInboxPath(rel.slice(0, -DONE_MARKER_SUFFIX.length));
      const sub =
        entry.type === 'batch' ? entry.kind : entry.type === 'unknown-kind' ? (entry.folder ?? '_unknown') : '_unknown';
      const target = path.join(this.options.archiveDir, sub, `${utcStamp()}_${path.basename(marker)}`);
      try {
        await fs.mkdir(path.dirname(target), { recursive: true });
        await moveFile(marker, target);
        this.log.info({ marker: rel, archived: target }, 'archived a .done marker whose file was already taken');
      } catch (err) {
        this.log.warn({ err, marker: rel }, 'could not archive a .done marker');
      }
    }
  }

  private async take(
    abs: string,
    options: { marker?: string | undefined; fp: FileFingerprint; rejection?: WorkMeta['rejection'] | undefined },
  ): Promise<void> {
    if (this.taking.has(abs)) return;
    this.taking.add(abs);
    try {
      const rel = path.relative(this.options.inboxDir, abs);
      const entry = classifyInboxPath(rel);
      if (entry.type === 'ignored') return;
      const extra = { taken: options.fp, ...(options.rejection ? { rejection: options.rejection } : {}) };
      // A shared inbox: the claim first (keyed by the content), then the rename; the loser leaves the file alone.
      let workId: string | undefined;
      if (this.claims) {
        workId = newWorkId();
        let claimed: boolean;
        try {
          claimed = await this.claims.claim(await claimKeyOf(abs, { relativePath: rel, ...extra }), workId, rel);
        } catch (err) {
          // The store did not answer (or the file vanished while hashed): not noted, so the next scan tries again.
          this.log.warn(
            { err, file: rel },
            'could not claim the file in the store; tried again at the next scan of the inbox',
          );
          return;
        }
        if (!claimed) {
          this.log.debug({ file: rel }, 'file claimed by another daemon; left to it');
          return;
        }
      }
      const item = await takeIntoWorkArea(
        this.options.workDir,
        abs,
        entry.type === 'batch'
          ? { kind: entry.kind, name: entry.name, folder: entry.folder, relativePath: rel, ...extra }
          : {
              kind: null,
              unknownKindReason: entry.reason,
              unknownKindDetail: entry.detail,
              name: entry.name,
              folder: entry.folder,
              relativePath: rel,
              ...extra,
            },
        options.marker,
        workId,
      );
      if (this.claims && workId !== undefined) {
        if (!item) {
          await this.claims.abandon(workId);
          return;
        }
        if (!(await this.claims.taken(workId))) {
          // This daemon froze between its claim and the rename, and another took the claim over: the item is an
          // orphan now, adopted by whoever finds it (this daemon's lease is lost: it stops).
          this.log.warn({ file: rel, work: workId }, 'file taken after its claim passed to another daemon; left');
          return;
        }
      }
      if (!item) return;
      this.log.info({ file: rel, kind: item.meta.kind, work: item.id }, 'took file from the inbox');
      this.enqueue(item);
    } catch (err) {
      // Noted once: tried again only when the entry changes (or on the next start), never every tick.
      this.noted.set(abs, fingerprintKey(options.fp));
      this.log.error({ err, file: abs }, 'could not take file from the inbox; left where it is');
    } finally {
      this.taking.delete(abs);
    }
  }

  private noteOnce(abs: string, key: string, message: string): void {
    if (this.noted.get(abs) === key) return;
    this.noted.set(abs, key);
    this.log.warn({ file: path.relative(this.options.inboxDir, abs) }, message);
  }

  /**
   * Handles a work item again, as if just taken: a batch the handler left parked because it waited for a person's
   * approval, now decided (src/runner/approval.ts), or with rows left waiting, now ended (src/runner/commands.ts
   * `takeFinished`). Ignored once stopping.
   */
  handleAgain(item: WorkItem): void {
    if (!this.stopped) this.enqueue(item);
  }

  private enqueue(item: WorkItem): void {
    this.handling.add(item.id);
    void this.queue.add(() => this.handle(item)).finally(() => this.handling.delete(item.id));
  }

  /**
   * Shared inbox: of the work area's `items` (listed by `scanWorkArea`, without clean-up: a folder without its file
   * may be another daemon's taking in progress), those this daemon should handle (see IntakeClaims.adoptable),
   * claimed for it.
   */
  private async adoptable(mine: boolean, items: readonly WorkItem[]): Promise<WorkItem[]> {
    return this.claims!.adoptable(
      items.filter((i) => !this.handling.has(i.id)).map((i) => Object.assign(i, { takenAt: i.meta.takenAt })),
      { mine, keyOf: (i) => workItemKeyOf(i), sourceOf: (i) => i.meta.relativePath },
    );
  }

  /**
   * One adoption pass (shared inbox): work items of dead daemons, and orphans, are handled here; folders that hold no
   * file, that no claim names and older than a lease, are removed. Such a folder is a taking cut short between its
   * folder and its move (its daemon killed there): its file is still in the inbox, or was taken since by another
   * daemon under another id, whose claim took the place of the dead one's. A live daemon's taking in progress has
   * its claim; a frozen one's, whose claim passed on, is guarded by `removeWorkFolderWithoutFile`.
   */
  private async adopt(): Promise<void> {
    if (this.stopped) return;
    try {
      // One listing of the shared work area for both: the items to adopt, and the folders without a file.
      const { items, withoutFile } = await scanWorkArea(this.options.workDir);
      for (const item of await this.adoptable(false, items)) {
        if (this.stopped || this.handling.has(item.id)) continue;
        this.log.warn({ file: item.meta.relativePath, work: item.id }, 'adopted a file whose daemon is gone');
        this.enqueue(item);
      }
      const old = withoutFile.filter((f) => Date.now() - f.since >= this.claims!.leaseMs && !this.handling.has(f.id));
      if (old.length === 0) return;
      const claimed = await this.claims!.claimed(old.map((f) => f.id));
      for (const f of old) {
        if (this.stopped || claimed.has(f.id)) continue;
        if (await removeWorkFolderWithoutFile(f.dir)) {
          this.log.info(
            { work: f.id },
            'removed a work folder whose file was never moved in (its daemon stopped mid-take)',
          );
        }
      }
    } catch (err) {
      this.log.warn({ err }, 'looking for files of daemons that are gone failed; tried again');
    }
  }

  private async handle(item: WorkItem): Promise<void> {
    if (this.abort.signal.aborted) return;
    try {
      const { meta } = item;
      if (!meta.rejection && meta.taken) {
        if ((await this.settle(item)) === 'stopped') return;
      }
      // A rejected entry is never opened (a link, a FIFO, an unreadable file): its identity is its path and take.
      const sha256 = meta.rejection
        ? createHash('sha256').update(`${meta.relativePath}\0${meta.takenAt}\0${meta.rejection.code}`).digest('hex')
        : await sha256File(item.file);
      const taken = item.meta.taken;
      const batch: TakenBatch = { item, sha256, stem: stemOf(meta.name) };
      if (taken && !item.meta.rejection) {
        batch.unchanged = async () => {
          const now = await fs.lstat(item.file).catch(() => undefined);
          return now !== undefined && sameFingerprint(fingerprintOf(now), taken);
        };
      }
      const outcome = await this.handler(batch, this.abort.signal);
      this.failures.delete(item.id);
      if (outcome === 'done') {
        const archived = await archiveWorkItem(this.options.archiveDir, item, sha256);
        await this.claims?.done(item.id);
        this.counts.done++;
        this.log.info({ file: meta.relativePath, archived }, 'batch answered and archived');
      } else {
        this.counts.parked++;
        this.log.info(
          { file: meta.relativePath },
          'batch parked in the work area until its rows have ended, or it is decided when it waits for approval (or the next start)',
        );
      }
    } catch (err) {
      if (err instanceof IntakeError && err.code === 'INTAKE_FILE_CHANGED') {
        this.log.warn({ file: item.meta.relativePath }, 'the file changed while it was processed; reading it again');
        if (!this.stopped) this.enqueue(item);
        return;
      }
      this.counts.failed++;
      const failures = (this.failures.get(item.id) ?? 0) + 1;
      this.failures.set(item.id, failures);
      // Only a watching intake retries: `drain` (remessa run) reports the failure and leaves the file for next time.
      const { retryFailedMs, maxRetries } = this.options;
      if (this.watcher && retryFailedMs > 0 && !this.stopped && failures <= maxRetries) {
        const delayMs = retryFailedMs * 2 ** (failures - 1);
        this.log.error(
          { err, file: item.meta.relativePath, retryInMs: delayMs, attempt: failures },
          'batch could not be handled; it stays in the work area and is tried again',
        );
        const timer = setTimeout(() => {
          this.retryTimers.delete(timer);
          if (!this.stopped) this.enqueue(item);
        }, delayMs);
        this.retryTimers.add(timer);
      } else {
        this.log.error(
          { err, file: item.meta.relativePath, attempts: failures },
          'batch could not be handled; it stays in the work area until the next start',
        );
      }
    }
  }

  /**
   * Makes sure the work file is still what was taken. A writer that kept its handle open (written in place) goes on
   * writing into it after the move: then wait until it settles again (and its last line is finished), exactly as in
   * the inbox, and remember the new fingerprint. Resolves 'stopped' when the intake stops meanwhile (the file stays
   * in the work area).
   */
  private async settle(item: WorkItem): Promise<'ready' | 'stopped'> {
    let stat = await fs.lstat(item.file);
    let fp = fingerprintOf(stat);
    if (sameFingerprint(fp, item.meta.taken)) return 'ready';
    const rel = item.meta.relativePath;
    this.log.warn(
      { file: rel },
      'the file changed after it was taken (still being written?); waiting until it settles',
    );
    let since = Date.now();
    for (;;) {
      if (this.abort.signal.aborted) return 'stopped';
      await sleep(this.checkIntervalMs());
      stat = await fs.lstat(item.file);
      const now = Date.now();
      if (!sameFingerprint(fingerprintOf(stat), fp)) {
        fp = fingerprintOf(stat);
        since = now;
        continue;
      }
      if (now - since < this.options.stableMs) continue;
      const inspection = await inspect(item.file);
      if (inspection.type === 'unreadable') {
        item.meta.rejection = unreadableRejection(rel, inspection.code);
      } else if (inspection.type !== 'ok') {
        throw new IntakeError('INTAKE_WORK_FILE_GONE', `${item.file} is no longer a regular file in the work area`);
      } else {
        if (!sameFingerprint(inspection.fp, fp)) continue;
        const c = inspection.completeness;
        if (!c.complete && c.reason !== 'empty') {
          if (now - since < this.options.cutOffMs) continue;
          if (c.reason === 'open-quote' || c.reason === 'short-line') {
            item.meta.rejection = cutOffRejection(rel, describeUnfinished(c), unfinishedMessage(c), now - since);
          }
        }
        item.meta.taken = inspection.fp;
      }
      await saveWorkMeta(item);
      return 'ready';
    }
  }
}

/** `*.csv`, any case. */
function isCsvName(name: string): boolean {
  return name.toLowerCase().endsWith('.csv');
}

function fingerprintKey(fp: FileFingerprint): string {
  return `${fp.ino}:${fp.size}:${fp.mtimeMs}`;
}

/** Opens a settled file without following links or blocking, checks it is a regular file, and scans its lines. */
async function inspect(file: string): Promise<Inspection> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, OPEN_FLAGS);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
    if (code === 'ENOENT') return { type: 'gone' };
    if (code === 'ELOOP' || code === 'ENXIO') return { type: 'not-regular' };
    return { type: 'unreadable', code };
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) return { type: 'not-regular' };
    return { type: 'ok', fp: fingerprintOf(stat), completeness: await checkCompleteness(handle) };
  } catch (err) {
    return { type: 'unreadable', code: (err as NodeJS.ErrnoException).code ?? 'EIO' };
  } finally {
    await handle.close();
  }
}

/** The one answer of an inbox entry that is not a regular file; undefined for a plain folder (not ours). */
function specialEntryRejection(stat: Stats, rel: string): WorkMeta['rejection'] {
  const quoted = JSON.stringify(rel);
  if (stat.isSymbolicLink()) {
    return {
      code: 'FILE_IS_LINK',
      detail: msg('FILE_IS_LINK', { file: quoted }),
      message:
        `${quoted} is a symbolic link. remessa never follows links in the inbox, so what it points to was not read ` +
        'and nothing was sent. Copy the file itself into the inbox instead of linking to it.',
    };
  }
  if (stat.isDirectory()) {
    if (!isCsvName(path.basename(rel))) return undefined;
    return {
      code: 'FILE_IS_FOLDER',
      detail: msg('FILE_IS_FOLDER', { file: quoted }),
      message:
        `${quoted} is a folder, not a file: nothing inside it was read and nothing was sent. ` +
        'Put CSV files directly in inbox/<kind>/.',
    };
  }
  const kind = stat.isFIFO()
    ? 'fifo'
    : stat.isSocket()
      ? 'socket'
      : stat.isBlockDevice() || stat.isCharacterDevice()
        ? 'device'
        : 'other';
  const what = { fifo: 'a named pipe (FIFO)', socket: 'a socket', device: 'a device', other: 'not a regular file' }[
    kind
  ];
  return {
    code: 'FILE_NOT_REGULAR',
    detail: msg('FILE_NOT_REGULAR', { file: quoted, what: msg(`ENTRY.${kind}`) }),
    message: `${quoted} is ${what}, not a regular file: it was not opened and nothing was sent. Drop a regular CSV file.`,
  };
}

function unreadableRejection(rel: string, code: string): WorkMeta['rejection'] {
  const denied = code === 'EACCES' || code === 'EPERM';
  const why = denied ? 'permission denied' : 'the system said';
  return {
    code: 'FILE_UNREADABLE',
    detail: msg('FILE_UNREADABLE', {
      file: JSON.stringify(rel),
      why: msg(denied ? 'FILE_UNREADABLE.denied' : 'FILE_UNREADABLE.system'),
      code,
    }),
    message:
      `Could not read ${JSON.stringify(rel)}: ${why} (${code}). Nothing was sent. ` +
      'Give the user remessa runs as permission to read the file, then drop it again.',
  };
}

function cutOffRejection(rel: string, what: string, unfinished: Message, quietMs: number): WorkMeta['rejection'] {
  return {
    code: 'FILE_CUT_OFF',
    detail: msg('FILE_CUT_OFF', { file: JSON.stringify(rel), what: unfinished, seconds: Math.round(quietMs / 1000) }),
    message:
      `${JSON.stringify(rel)} looks cut off: ${what}, and the file has not changed for ${Math.round(quietMs / 1000)} s. ` +
      'Nothing was sent. If its upload was interrupted, upload the whole file again: under a temporary name ' +
      '(name.csv.tmp or name.csv.filepart) renamed to name.csv when complete, or followed by a name.csv.done marker.',
  };
}

function utcStamp(): string {
  return new Date()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
}

async function isRegularFile(p: string): Promise<boolean> {
  const s = await fs.lstat(p).catch(() => undefined);
  return s?.isFile() ?? false;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * The key a shared inbox claims a file by (src/store/leases.ts `FileClaims`): its content's SHA-256; for an entry the
 * intake answers without opening (a link, a FIFO, a cut-off file), its path and fingerprint instead.
 */
/**
 * The claim key of a work item listed in the shared work area, or undefined when its file is gone since the listing
 * (another daemon answered and archived it meanwhile: nothing to adopt).
 */
async function workItemKeyOf(item: WorkItem): Promise<string | undefined> {
  try {
    // A rejected entry's key is made of its path, never its bytes: whether it is still there is asked of the entry
    // (the bytes of any other are read to hash them, which finds a file gone on its own).
    if (item.meta.rejection) await fs.lstat(item.file);
    return await claimKeyOf(item.file, item.meta);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

async function claimKeyOf(file: string, meta: Pick<WorkMeta, 'relativePath' | 'rejection' | 'taken'>): Promise<string> {
  if (meta.rejection) {
    const fp = meta.taken;
    return createHash('sha256')
      .update(`rejected\0${meta.relativePath}\0${fp ? `${fp.ino}:${fp.size}:${fp.mtimeMs}` : ''}`)
      .digest('hex');
  }
  return sha256File(file);
}
