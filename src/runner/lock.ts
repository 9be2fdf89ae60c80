/**
 * One writer per data folder: the lock that `daemon` and `run` hold for as long as they drive the store.
 *
 * Two processes driving one store collide: SQLite's own locks serialise their statements, but not their plans (both
 * take the same uncertain rows, both resume the same work area), so rows end `uncertain`, files are parked and the
 * state machines throw on transitions the other process already made. So only one process at a time may open the
 * pipeline of a data folder; `validate` and `status` only read and need no lock.
 *
 * What must hold:
 * - The lock is an OS lock that the kernel releases when the process ends in any way (SIGKILL, OOM, power loss of
 *   the process): a POSIX advisory lock on `<data>/remessa.lock`, taken as SQLite's EXCLUSIVE lock by a connection in
 *   `locking_mode = EXCLUSIVE` (which never releases it until the connection closes). A pid file alone would outlive a
 *   killed process, or be taken over by a recycled pid.
 * - Whoever holds the lock writes who it is (pid, host, command, since when) to `<data>/remessa.lock.json`, after
 *   taking the lock; that file is only information for the message of the one that is refused, never the lock
 *   itself (a stale one, left by a killed process, is simply overwritten by the next holder).
 * - A second process is refused at once with `DATA_FOLDER_LOCKED` naming the holder (the CLI exits 2), or, when asked
 *   to wait (`run` or `reconcile` with `--wait-lock[=SECONDS]`), polls until the lock is free, the time is up, or it
 *   is stopped. The refusal is a sentence for the operator, in the command's locale (src/i18n); it tells how to wait
 *   only to a command that can (`WAIT_LOCK_COMMANDS`): the caller says which command it is (`taker`).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { writeFileAtomic } from '../atomic-file.js';
import { defaultSleep } from '../bank/options.js';
import { RemessaError } from '../errors.js';
import { instant, type Locale, t } from '../i18n/index.js';

/** The lock file inside the data folder (a SQLite file: the lock is SQLite's EXCLUSIVE lock on it). */
export const LOCK_FILE_NAME = 'remessa.lock';
/** Who holds the lock: written by the holder, read by the process it refuses. */
export const LOCK_HOLDER_FILE_NAME = 'remessa.lock.json';

/** Who holds the lock of a data folder. */
export interface LockHolder {
  pid: number;
  host: string;
  /** The holder's command line (`remessa daemon --config ...`), at most 200 characters. */
  command: string;
  /** When it took the lock (ISO 8601 UTC). */
  since: string;
}

/** The commands that take the lock of a data folder (src/cli.ts). */
export type LockingCommand = 'daemon' | 'run' | 'reconcile' | 'retry' | 'resolve';

/**
 * The commands src/cli.ts gives `--wait-lock[=SECONDS]`: only these are told, when refused, that they may wait. A
 * test checks the list against each command's --help.
 */
export const WAIT_LOCK_COMMANDS: ReadonlySet<LockingCommand> = new Set<LockingCommand>(['run', 'reconcile']);

/** Who takes a lock, for the words of its refusal: the command (what it may do about it) and the person's locale. */
export interface LockTaker {
  command: LockingCommand;
  locale: Locale;
}

/** Another process drives this data folder. `holder` is undefined when it has not said who it is (yet). */
export class DataFolderLockedError extends RemessaError {
  constructor(
    readonly dataDir: string,
    readonly holder: LockHolder | undefined,
    taker: LockTaker,
    waitedMs?: number,
    /** The lock is the one of a daemon name on a shared store (`acquireDaemonNameLock`), not of a data folder. */
    daemonName?: string,
  ) {
    const { command, locale } = taker;
    const waited =
      waitedMs === undefined ? '' : t(locale, 'DATA_FOLDER_LOCKED.waited', { seconds: Math.round(waitedMs / 1000) });
    const holderText = describeHolder(holder, locale);
    super(
      'DATA_FOLDER_LOCKED',
      daemonName === undefined
        ? t(locale, 'DATA_FOLDER_LOCKED', {
            dir: dataDir,
            holder: holderText,
            waited,
            advice: t(locale, WAIT_LOCK_COMMANDS.has(command) ? 'DATA_FOLDER_LOCKED.wait' : 'DATA_FOLDER_LOCKED.stop', {
              command,
            }),
          })
        : t(locale, 'DATA_FOLDER_LOCKED.daemonName', { name: JSON.stringify(daemonName), holder: holderText, command }),
    );
  }
}

/**
 * `pid 1234 on host "build-01", command "remessa daemon", since 2026-11-23T10:00:00.000Z`, in `locale` (English for
 * the log).
 */
export function describeHolder(holder: LockHolder | undefined, locale: Locale = 'en'): string {
  if (holder === undefined) return t(locale, 'LOCK_HOLDER.unknown');
  return t(locale, 'LOCK_HOLDER', {
    pid: holder.pid,
    host: JSON.stringify(holder.host),
    command: JSON.stringify(holder.command),
    since: instant(holder.since),
  });
}

export interface DataFolderLockOptions {
  /** The command taking the lock and its locale: the refusal is worded for it. */
  taker: LockTaker;
  /**
   * How long to wait for a lock held by another process, in milliseconds: 0 refuses at once, `Infinity` waits until
   * it is free. @defaultValue 0
   */
  waitMs?: number;
  /** How often a waiting process tries again, in milliseconds. @defaultValue 250 */
  pollMs?: number;
  /** Called once when the lock is held by another process and this one starts waiting. */
  onWait?: (holder: LockHolder | undefined) => void;
  /** Stops waiting (the promise rejects with the signal's reason). */
  signal?: AbortSignal;
  /** What the holder file says the command line is. @defaultValue this process's command line */
  commandLine?: string;
}

/** A held lock; `release` closes the connection, which releases the OS lock. */
export interface DataFolderLock {
  readonly dataDir: string;
  readonly holder: LockHolder;
  release(): Promise<void>;
}

const MAX_COMMAND_CHARS = 200;

function thisCommand(): string {
  const args = process.argv.slice(1).map((a) => (/\s/.test(a) ? JSON.stringify(a) : a));
  const text = args.join(' ');
  return text.length > MAX_COMMAND_CHARS ? `${text.slice(0, MAX_COMMAND_CHARS - 1)}…` : text;
}

/** The holder file's content, or undefined when it is absent or unreadable. */
export function readLockHolder(dataDir: string): LockHolder | undefined {
  try {
    const value = JSON.parse(readFileSync(path.join(dataDir, LOCK_HOLDER_FILE_NAME), 'utf8')) as Partial<LockHolder>;
    if (typeof value.pid !== 'number' || typeof value.host !== 'string') return undefined;
    return {
      pid: value.pid,
      host: value.host,
      command: typeof value.command === 'string' ? value.command.slice(0, MAX_COMMAND_CHARS) : '?',
      since: typeof value.since === 'string' ? value.since.slice(0, 40) : '?',
    };
  } catch {
    return undefined;
  }
}

/** One try: the open connection holding the EXCLUSIVE lock, or undefined when another process holds it. */
function tryLock(file: string): Database.Database | undefined {
  let db: Database.Database;
  try {
    db = new Database(file);
  } catch (cause) {
    throw new RemessaError(
      'DATA_FOLDER_LOCK_FAILED',
      `Cannot open the lock file ${file}: ${(cause as Error).message}`,
      {
        cause,
      },
    );
  }
  try {
    db.pragma('busy_timeout = 0');
    db.pragma('locking_mode = EXCLUSIVE');
    // In EXCLUSIVE locking mode the lock taken here is kept after COMMIT, until the connection closes.
    db.exec('BEGIN EXCLUSIVE; COMMIT;');
    return db;
  } catch (error) {
    db.close();
    if ((error as { code?: string }).code === 'SQLITE_BUSY') return undefined;
    throw new RemessaError('DATA_FOLDER_LOCK_FAILED', `Cannot lock ${file}: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/**
 * Takes the lock of `dataDir` (created if needed). Throws `DataFolderLockedError` when another process holds it and
 * `waitMs` runs out (at once by default).
 */
export async function acquireDataFolderLock(dataDir: string, options: DataFolderLockOptions): Promise<DataFolderLock> {
  return acquireLock(dataDir, options);
}

async function acquireLock(
  dataDir: string,
  options: DataFolderLockOptions,
  daemonName?: string,
): Promise<DataFolderLock> {
  await fs.mkdir(dataDir, { recursive: true });
  const file = path.join(dataDir, LOCK_FILE_NAME);
  const waitMs = options.waitMs ?? 0;
  const started = Date.now();
  let waiting = false;
  let db = tryLock(file);
  while (db === undefined) {
    const waited = Date.now() - started;
    if (waited >= waitMs)
      throw new DataFolderLockedError(
        dataDir,
        readLockHolder(dataDir),
        options.taker,
        waitMs > 0 ? waited : undefined,
        daemonName,
      );
    if (!waiting) {
      waiting = true;
      options.onWait?.(readLockHolder(dataDir));
    }
    await defaultSleep(Math.min(options.pollMs ?? 250, Math.max(1, waitMs - waited)), options.signal);
    db = tryLock(file);
  }
  const held = db;
  const holder: LockHolder = {
    pid: process.pid,
    host: os.hostname(),
    command: options.commandLine ?? thisCommand(),
    since: new Date().toISOString(),
  };
  try {
    await writeFileAtomic(path.join(dataDir, LOCK_HOLDER_FILE_NAME), `${JSON.stringify(holder, null, 2)}\n`);
  } catch (error) {
    held.close();
    throw error;
  }
  let released = false;
  return {
    dataDir,
    holder,
    async release() {
      if (released) return;
      released = true;
      // The holder file is removed first, while the lock is still ours: no other holder's file can be removed.
      await fs.rm(path.join(dataDir, LOCK_HOLDER_FILE_NAME), { force: true });
      held.close();
    },
  };
}

/**
 * Several daemons on one PostgreSQL store (src/store/leases.ts): on one machine, one process per daemon name and
 * store. Two daemons with different names (and data folders) run side by side; a second one with the same name is
 * refused here (DATA_FOLDER_LOCKED, naming the holder and the name), before it could take the first one's lease over.
 * The lock is the same kind as the data folder's, on a folder in the machine's temp folder named by a hash of the
 * store's URL and the name; it is never waited for (`--wait-lock` waits for the data folder only).
 */
export async function acquireDaemonNameLock(
  storeWhere: string,
  name: string,
  taker: LockTaker,
): Promise<DataFolderLock> {
  const tag = createHash('sha256').update(`${storeWhere}\0${name}`).digest('hex').slice(0, 16);
  return acquireLock(path.join(os.tmpdir(), `remessa-daemon-${name}-${tag}`), { taker }, name);
}
