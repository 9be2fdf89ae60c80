/**
 * Intake: finds finished files in the inbox, takes them into the work area, hands each to the runner, and archives
 * it once answered.
 *
 * A path moves through these states (per absolute inbox path):
 *
 *     seen --(size and mtime unchanged for stableMs, or its .done marker exists)--> taking --> queued --> handling
 *       ^  \--(changed)--> seen (clock restarts)                                                       |
 *       |                                                                     'done' --> archived       |
 *       \-- vanished before the take: forgotten                               'parked' --> stays in work (resumed on start)
 *
 * What must hold: a file is taken once (the `taking` set guards the move; the move itself is a rename, which only one
 * caller can win), and it reaches the archive only after the handler says every row is answered ('done').
 * A handler that throws leaves the file in the work area, retried on the next start: never lost, never archived
 * unanswered.
 *
 * Events from chokidar (native or polling, a setting for network shares) only hint that a path changed; the decision
 * is always made from a fresh `stat`, so a missed or duplicated event costs nothing. A periodic rescan of the inbox
 * covers file systems that lose events.
 */
import { setMaxListeners } from 'node:events';
import fs from 'node:fs/promises';
import path from 'node:path';
import { type FSWatcher, watch } from 'chokidar';
import PQueue from 'p-queue';
import type { Logger } from '../log.js';
import { silentLogger } from '../log.js';
import { KIND_NAMES } from '../types.js';
import { classifyInboxPath, DONE_MARKER_SUFFIX, isIgnoredName, stemOf } from './classify.js';
import { archiveWorkItem, listWorkItems, sha256File, takeIntoWorkArea, type WorkItem } from './work-area.js';

export interface IntakeOptions {
  /** Folder watched for batches (`inbox/<kind>/` folders and `<kind>-*.csv` root files). */
  inboxDir: string;
  /** Folder where taken files wait while processed (`<data>/work`). Same file system as the inbox for atomic moves. */
  workDir: string;
  /** Folder where answered originals end (`archive/<kind>/...`). */
  archiveDir: string;
  /** How long size and mtime must stay unchanged before a file is taken, in milliseconds. @defaultValue 2000 */
  stableMs?: number;
  /** Take a file only once its `<name>.done` (or `<stem>.done`) marker exists; stability is then not awaited. @defaultValue false */
  requireDoneMarker?: boolean;
  /** Poll the file system instead of native events (network shares). @defaultValue false */
  usePolling?: boolean;
  /** Polling interval when `usePolling` is on, in milliseconds. @defaultValue 1000 */
  pollIntervalMs?: number;
  /** Full rescan of the inbox while watching, in case events were lost, in milliseconds; 0 disables. @defaultValue 30000 */
  rescanIntervalMs?: number;
  /** Files handled at the same time; others wait in the work area. @defaultValue 4 */
  maxConcurrentFiles?: number;
  /** Create `inbox/<kind>/` for every kind on start, so users see where to drop files. @defaultValue true */
  createKindFolders?: boolean;
  /**
   * While watching, a batch whose handler threw (store or disk trouble) is handled again after this many
   * milliseconds; 0 = only on the next start. @defaultValue 60000
   */
  retryFailedMs?: number;
  logger?: Logger;
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
}

/**
 * Processes one taken batch and writes its one answer (result or rejection). Resolves `'done'` when every row is
 * answered (the file is then archived) or `'parked'` when stopped early (the file stays in the work area and is
 * resumed on the next start). `signal` aborts on stop: finish or park in-flight rows, then return.
 */
export type BatchHandler = (batch: TakenBatch, signal: AbortSignal) => Promise<'done' | 'parked'>;

interface Seen {
  size: number;
  mtimeMs: number;
  /** When the current size/mtime were first observed (ms since epoch). */
  since: number;
}

const DEFAULTS = {
  stableMs: 2000,
  requireDoneMarker: false,
  usePolling: false,
  pollIntervalMs: 1000,
  rescanIntervalMs: 30_000,
  maxConcurrentFiles: 4,
  createKindFolders: true,
  retryFailedMs: 60_000,
};

export class Intake {
  private readonly options: Required<Omit<IntakeOptions, 'logger'>>;
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
  /** Number of batches whose handler finished with 'done' / 'parked' / threw. */
  readonly counts = { done: 0, parked: 0, failed: 0 };

  constructor(
    options: IntakeOptions,
    private readonly handler: BatchHandler,
  ) {
    this.options = {
      ...DEFAULTS,
      ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)),
    } as Required<Omit<IntakeOptions, 'logger'>>;
    for (const [name, min] of [
      ['stableMs', 0],
      ['pollIntervalMs', 10],
      ['rescanIntervalMs', 0],
      ['maxConcurrentFiles', 1],
      ['retryFailedMs', 0],
    ] as const) {
      const value = this.options[name];
      if (!Number.isInteger(value) || value < min) {
        throw new TypeError(`Expected intake option ${name} to be an integer >= ${min}, got ${String(value)}`);
      }
    }
    this.log = options.logger ?? silentLogger();
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
    const left = await listWorkItems(workDir);
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
    });
    this.watcher.on('add', (p) => this.hint(p));
    this.watcher.on('change', (p) => this.hint(p));
    this.watcher.on('error', (err) => this.log.warn({ err }, 'inbox watcher error'));
    await new Promise<void>((resolve) => this.watcher!.once('ready', () => resolve()));
    this.tickTimer = setInterval(() => void this.tick(), this.checkIntervalMs());
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
      // A marker names its file: `jan.csv.done` or `jan.done`; remember the file if it is there.
      const base = absPath.slice(0, -DONE_MARKER_SUFFIX.length);
      void this.findMarkedFile(base).then((file) => {
        if (file) this.hint(file);
      });
      return;
    }
    const rel = path.relative(this.options.inboxDir, absPath);
    if (classifyInboxPath(rel).type === 'ignored') return;
    if (!this.seen.has(absPath) && !this.taking.has(absPath))
      this.seen.set(absPath, { size: -1, mtimeMs: -1, since: 0 });
  }

  private async findMarkedFile(base: string): Promise<string | undefined> {
    if (await isFile(base)) return base;
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
    for (const c of candidates) if (await isFile(c)) return c;
    return undefined;
  }

  /** Lists the inbox root and its kind folders (one level) and hints every file. */
  async scan(): Promise<void> {
    const { inboxDir } = this.options;
    const root = await fs.readdir(inboxDir, { withFileTypes: true }).catch(() => []);
    for (const entry of root) {
      const abs = path.join(inboxDir, entry.name);
      if (entry.isFile()) this.hint(abs);
      else if (entry.isDirectory() && !isIgnoredName(entry.name)) {
        const inner = await fs.readdir(abs, { withFileTypes: true }).catch(() => []);
        for (const e of inner) if (e.isFile()) this.hint(path.join(abs, e.name));
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

  private async checkAll(): Promise<void> {
    const now = Date.now();
    for (const [abs, prev] of [...this.seen]) {
      if (this.stopped) return;
      const stat = await fs.stat(abs).catch(() => undefined);
      if (!stat?.isFile()) {
        this.seen.delete(abs);
        this.waitingForMarker.delete(abs);
        continue;
      }
      let marker: string | undefined;
      if (this.options.requireDoneMarker) {
        marker = await this.markerFor(abs);
        if (!marker) {
          if (!this.waitingForMarker.has(abs)) this.log.info({ file: abs }, 'waiting for the .done marker');
          this.waitingForMarker.add(abs);
          continue;
        }
      } else {
        const changed = stat.size !== prev.size || stat.mtimeMs !== prev.mtimeMs;
        if (changed) {
          // First sight of a file not touched for stableMs (e.g. found by the start-up scan) counts as settled.
          const settledAlready = prev.size === -1 && now - stat.mtimeMs >= this.options.stableMs;
          this.seen.set(abs, {
            size: stat.size,
            mtimeMs: stat.mtimeMs,
            since: settledAlready ? now - this.options.stableMs : now,
          });
          if (!settledAlready) continue;
        } else if (now - prev.since < this.options.stableMs) {
          continue;
        }
      }
      this.seen.delete(abs);
      this.waitingForMarker.delete(abs);
      await this.take(abs, marker);
    }
  }

  private async take(abs: string, marker: string | undefined): Promise<void> {
    if (this.taking.has(abs)) return;
    this.taking.add(abs);
    try {
      const rel = path.relative(this.options.inboxDir, abs);
      const entry = classifyInboxPath(rel);
      if (entry.type === 'ignored') return;
      const item = await takeIntoWorkArea(
        this.options.workDir,
        abs,
        entry.type === 'batch'
          ? { kind: entry.kind, name: entry.name, folder: entry.folder, relativePath: rel }
          : { kind: null, unknownKindReason: entry.reason, name: entry.name, folder: entry.folder, relativePath: rel },
        marker,
      );
      if (!item) return;
      this.log.info({ file: rel, kind: item.meta.kind, work: item.id }, 'took file from the inbox');
      this.enqueue(item);
    } catch (err) {
      this.log.error({ err, file: abs }, 'could not take file from the inbox');
    } finally {
      this.taking.delete(abs);
    }
  }

  private enqueue(item: WorkItem): void {
    void this.queue.add(() => this.handle(item));
  }

  private async handle(item: WorkItem): Promise<void> {
    if (this.abort.signal.aborted) return;
    try {
      const sha256 = await sha256File(item.file);
      const outcome = await this.handler({ item, sha256, stem: stemOf(item.meta.name) }, this.abort.signal);
      if (outcome === 'done') {
        const archived = await archiveWorkItem(this.options.archiveDir, item, sha256);
        this.counts.done++;
        this.log.info({ file: item.meta.relativePath, archived }, 'batch answered and archived');
      } else {
        this.counts.parked++;
        this.log.info({ file: item.meta.relativePath }, 'batch parked in the work area until the next start');
      }
    } catch (err) {
      this.counts.failed++;
      this.log.error({ err, file: item.meta.relativePath }, 'batch could not be handled; it stays in the work area');
      // Only a watching intake retries: `drain` (remessa run) reports the failure and leaves the file for next time.
      if (this.watcher && this.options.retryFailedMs > 0 && !this.stopped) {
        const timer = setTimeout(() => {
          this.retryTimers.delete(timer);
          if (!this.stopped) this.enqueue(item);
        }, this.options.retryFailedMs);
        this.retryTimers.add(timer);
      }
    }
  }
}

async function isFile(p: string): Promise<boolean> {
  const s = await fs.stat(p).catch(() => undefined);
  return s?.isFile() ?? false;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
