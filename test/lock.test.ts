/**
 * One writer per data folder (issue 8 section 5): the lock of src/runner/lock.ts, in-process and between real
 * processes. A second daemon or a `run` beside a daemon is refused with exit 2 and a message naming the holder (pid,
 * host, command, since when); `run --wait-lock` waits instead; a SIGKILLed holder leaves no lock behind.
 */

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { instantIn } from '../src/i18n/index.js';
import {
  acquireDataFolderLock,
  DataFolderLockedError,
  LOCK_HOLDER_FILE_NAME,
  type LockHolder,
  type LockingCommand,
  readLockHolder,
  WAIT_LOCK_COMMANDS,
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

const asDaemon = { command: 'daemon', locale: 'en' } as const;

/** `pid N on host "h", command "c", since T` of a holder, in English or pt-BR, as the refusal names it. */
function holderText(h: LockHolder, locale: 'en' | 'pt-BR'): string {
  const [onHost, command, since] =
    locale === 'en' ? ['on host', 'command', 'since'] : ['na máquina', 'comando', 'desde'];
  // The time as the reader reads it: Brasília time (src/i18n `instantIn`).
  return `pid ${h.pid} ${onHost} ${JSON.stringify(h.host)}, ${command} ${JSON.stringify(h.command)}, ${since} ${instantIn(locale, h.since)}`;
}

describe('the data folder lock, in one process', () => {
  it('refuses a second holder naming the first, and is free once released', async () => {
    const first = await acquireDataFolderLock(data, { taker: asDaemon, commandLine: 'remessa daemon --config x' });
    expect(readLockHolder(data)).toEqual(first.holder);
    const refused = await acquireDataFolderLock(data, { taker: asDaemon }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DataFolderLockedError);
    const err = refused as DataFolderLockedError;
    expect(err.code).toBe('DATA_FOLDER_LOCKED');
    expect(err.holder).toEqual(first.holder);
    expect(first.holder).toMatchObject({ pid: process.pid, host: os.hostname(), command: 'remessa daemon --config x' });
    expect(err.message).toBe(
      `Expected to be the only process driving the data folder ${data}, got another one holding it: ` +
        `${holderText(first.holder, 'en')}. Stop it first, then run \`remessa daemon\` again.`,
    );
    await first.release();
    await expect(fs.stat(path.join(data, LOCK_HOLDER_FILE_NAME))).rejects.toThrow();
    const second = await acquireDataFolderLock(data, { taker: asDaemon });
    await second.release();
  });

  it("words the refusal in the taker's locale, and tells only run and reconcile (which have it) of --wait-lock", async () => {
    const first = await acquireDataFolderLock(data, { taker: asDaemon, commandLine: 'remessa daemon' });
    const h = first.holder;
    const refusal = async (command: LockingCommand, locale: 'en' | 'pt-BR') =>
      ((await acquireDataFolderLock(data, { taker: { command, locale } }).catch((e: unknown) => e)) as Error).message;
    try {
      const pt = (advice: string) =>
        `Esperava ser o único processo usando a pasta de dados ${data}, mas outro a está usando: ` +
        `${holderText(h, 'pt-BR')}. ${advice}`;
      expect(await refusal('retry', 'pt-BR')).toBe(pt('Pare-o antes e rode `remessa retry` de novo.'));
      expect(await refusal('resolve', 'pt-BR')).toBe(pt('Pare-o antes e rode `remessa resolve` de novo.'));
      expect(await refusal('daemon', 'pt-BR')).toBe(pt('Pare-o antes e rode `remessa daemon` de novo.'));
      expect(await refusal('run', 'pt-BR')).toBe(
        pt('Pare-o antes, ou dê a `remessa run` a opção --wait-lock[=SEGUNDOS] para esperar por ele.'),
      );
      const en = (advice: string) =>
        `Expected to be the only process driving the data folder ${data}, got another one holding it: ` +
        `${holderText(h, 'en')}. ${advice}`;
      expect(await refusal('reconcile', 'en')).toBe(
        en('Stop it first, or give `remessa reconcile` the flag --wait-lock[=SECONDS] to wait for it.'),
      );
      expect(await refusal('retry', 'en')).toBe(en('Stop it first, then run `remessa retry` again.'));
    } finally {
      await first.release();
    }
    // A holder that has not written who it is yet (its file gone) is said so, in the locale.
    const second = await acquireDataFolderLock(data, { taker: asDaemon });
    await fs.rm(path.join(data, LOCK_HOLDER_FILE_NAME));
    try {
      expect(await refusal('resolve', 'pt-BR')).toContain(
        'mas outro a está usando: um processo que ainda não escreveu seus dados. Pare-o antes',
      );
    } finally {
      await second.release();
    }
  });

  it('the commands told of --wait-lock are those src/cli.ts gives it', async () => {
    const commands: LockingCommand[] = ['daemon', 'run', 'reconcile', 'retry', 'resolve'];
    const helps = await Promise.all(commands.map((c) => runCli([c, '--help'])));
    expect(commands.filter((_, i) => helps[i]!.stdout.includes('--wait-lock'))).toEqual([...WAIT_LOCK_COMMANDS]);
  }, 60_000);

  it('waits for the holder when asked to, and gives up after the time given', async () => {
    const first = await acquireDataFolderLock(data, { taker: asDaemon });
    const started = Date.now();
    await expect(
      acquireDataFolderLock(data, { taker: { command: 'run', locale: 'en' }, waitMs: 300, pollMs: 50 }),
    ).rejects.toThrow(/got another one holding it: pid \d+ on host .* \(waited [01] s\)\. Stop it first/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    let waitedFor: unknown;
    const waiting = acquireDataFolderLock(data, {
      taker: { command: 'run', locale: 'en' },
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
    // The holder as the refusals name it, in the default locale (pt-BR): pid, host, command line, since when.
    const holderLine = `pid ${daemon.child.pid} na máquina "[^"]+", comando "[^"]*daemon --config [^"]*", desde \\d\\d/\\d\\d/\\d{4} \\d\\d:\\d\\d:\\d\\d`;
    const refusal = (command: string, advice: string) =>
      new RegExp(
        `^remessa: Esperava ser o único processo usando a pasta de dados ${data}, mas outro a está usando: ` +
          `${holderLine}\\. ${advice.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace('COMMAND', command)}\n$`,
      );

    const second = await runCli(['daemon', '--config', config], { env });
    expect(second.code).toBe(2);
    // The daemon has no --wait-lock: it is not told of it.
    expect(second.stderr).toMatch(refusal('daemon', 'Pare-o antes e rode `remessa COMMAND` de novo.'));

    const run = await runCli(['run', '--config', config], { env });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      refusal('run', 'Pare-o antes, ou dê a `remessa COMMAND` a opção --wait-lock[=SEGUNDOS] para esperar por ele.'),
    );
    const runEn = await runCli(['run', '--config', config, '--locale', 'en'], { env });
    expect(runEn.code).toBe(2);
    expect(runEn.stderr).toMatch(
      new RegExp(
        `^remessa: Expected to be the only process driving the data folder ${data}, got another one holding it: ` +
          `pid ${daemon.child.pid} on host "[^"]+", command "[^"]*daemon --config [^"]*", since \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d BRT\\. ` +
          'Stop it first, or give `remessa run` the flag --wait-lock\\[=SECONDS\\] to wait for it\\.\n$',
      ),
    );

    // A bounded wait gives up with exit 2 while the holder stays.
    const started = Date.now();
    const bounded = await runCli(['run', '--config', config, '--wait-lock=1'], { env });
    expect(bounded.code).toBe(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(bounded.stderr).toMatch(/mas outro a está usando: pid \d+ .* \(esperou [12] s\)\. Pare-o antes, ou dê/);

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
    const lock = await acquireDataFolderLock(data, { taker: asDaemon });
    await lock.release();
  }, 120_000);
});
