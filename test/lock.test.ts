/**
 * One writer per data folder (issue 8 section 5): the lock of src/runner/lock.ts, in-process and between real
 * processes. A second daemon or a `run` beside a daemon is refused with exit 2 and a message naming the holder (pid,
 * host, command, since when); `run --wait-lock` waits instead; a SIGKILLed holder leaves no lock behind.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  acquireDataFolderLock,
  DataFolderLockedError,
  LOCK_HOLDER_FILE_NAME,
  readLockHolder,
} from '../src/runner/lock.js';
import { type Proc, runCli, spawnCli, stopDaemon, waitFor } from './e2e-harness.js';

let dir: string;
let data: string;
let config: string;

beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-lock-'));
  data = path.join(dir, 'data');
  config = path.join(dir, 'remessa.jsonc');
  await fs.writeFile(
    config,
    JSON.stringify({
      folders: {
        inbox: path.join(dir, 'inbox'),
        outbox: path.join(dir, 'outbox'),
        archive: path.join(dir, 'archive'),
        data,
      },
      intake: { stableMs: 100 },
    }),
  );
});

const procs: Proc[] = [];
afterEach(async () => {
  for (const p of procs.splice(0)) {
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await p.exited;
  }
});

describe('the data folder lock, in one process', () => {
  it('refuses a second holder naming the first, and is free once released', async () => {
    const first = await acquireDataFolderLock(data, { command: 'remessa daemon --config x' });
    expect(readLockHolder(data)).toEqual(first.holder);
    const refused = await acquireDataFolderLock(data).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DataFolderLockedError);
    const err = refused as DataFolderLockedError;
    expect(err.code).toBe('DATA_FOLDER_LOCKED');
    expect(err.holder).toEqual(first.holder);
    expect(err.message).toContain(`pid ${process.pid} on host ${JSON.stringify(os.hostname())}`);
    expect(err.message).toContain('command "remessa daemon --config x"');
    expect(err.message).toContain(`since ${first.holder.since}`);
    await first.release();
    await expect(fs.stat(path.join(data, LOCK_HOLDER_FILE_NAME))).rejects.toThrow();
    const second = await acquireDataFolderLock(data);
    await second.release();
  });

  it('waits for the holder when asked to, and gives up after the time given', async () => {
    const first = await acquireDataFolderLock(data);
    const started = Date.now();
    await expect(acquireDataFolderLock(data, { waitMs: 300, pollMs: 50 })).rejects.toThrow(/waited 0 s|waited 1 s/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    let waitedFor: unknown;
    const waiting = acquireDataFolderLock(data, {
      waitMs: Number.POSITIVE_INFINITY,
      pollMs: 20,
      onWait: (h) => {
        waitedFor = h;
      },
    });
    await new Promise((r) => setTimeout(r, 150));
    expect(waitedFor).toEqual(first.holder);
    await first.release();
    const second = await waiting;
    expect(second.holder.pid).toBe(process.pid);
    await second.release();
  });
});

const env = { REMESSA_LOG_LEVEL: 'info' };

async function startHolder(): Promise<Proc> {
  const daemon = spawnCli(['daemon', '--config', config], { env });
  procs.push(daemon);
  await waitFor(
    'the daemon to be ready',
    () => {
      if (daemon.child.exitCode !== null) throw new Error(`daemon exited: ${daemon.stderr()}`);
      return /remessa daemon ready/.test(daemon.stdout() + daemon.stderr());
    },
    90_000,
  );
  return daemon;
}

describe('one writer per data folder, between processes', () => {
  // One holder for every case (each process costs seconds of start-up on a loaded machine).
  it('a second daemon and a run beside it exit 2 naming the holder; run --wait-lock waits; a SIGKILL frees the lock', async () => {
    const daemon = await startHolder();
    const holderLine = new RegExp(
      `pid ${daemon.child.pid} on host "[^"]+", command "[^"]*daemon --config [^"]*", since `,
    );

    const second = await runCli(['daemon', '--config', config], { env });
    expect(second.code).toBe(2);
    expect(second.stderr).toContain('another one holding it');
    expect(second.stderr).toMatch(holderLine);
    expect(second.stderr).not.toMatch(/database is locked|IllegalTransitionError/);

    const run = await runCli(['run', '--config', config], { env });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(holderLine);
    expect(run.stderr).toContain('--wait-lock');
    expect(run.stderr).not.toMatch(/database is locked|IllegalTransitionError/);

    // A bounded wait gives up with exit 2 while the holder stays.
    const started = Date.now();
    const bounded = await runCli(['run', '--config', config, '--wait-lock=1'], { env });
    expect(bounded.code).toBe(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(bounded.stderr).toMatch(/another one holding it: pid \d+/);

    // An unbounded wait goes on once the holder is gone, even killed without a chance to clean up: the OS lock went
    // with the process (its holder file stays behind, naming it, and is simply replaced).
    const waitingRun = spawnCli(['run', '--config', config, '--wait-lock'], { env });
    procs.push(waitingRun);
    await waitFor(
      'the run to wait',
      () => /waiting for the data folder/.test(waitingRun.stdout() + waitingRun.stderr()),
      60_000,
    );
    expect(waitingRun.child.exitCode).toBeNull();
    daemon.child.kill('SIGKILL');
    await daemon.exited;
    expect(await waitingRun.exited).toBe(0);
    expect(waitingRun.stdout()).toContain('nada esperando na caixa de entrada');
    expect(readLockHolder(data)).toBeUndefined();
  }, 240_000);

  it('a daemon stopped by SIGTERM releases the lock and removes its holder file', async () => {
    const daemon = await startHolder();
    expect(readLockHolder(data)?.pid).toBe(daemon.child.pid);
    expect(await stopDaemon(daemon)).toBe(0);
    expect(readLockHolder(data)).toBeUndefined();
    const lock = await acquireDataFolderLock(data);
    await lock.release();
  }, 120_000);
});
