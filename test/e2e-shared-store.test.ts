/**
 * Two daemons sharing one PostgreSQL store and one inbox (issue 13 §1; docs/postgres.md): real daemon processes, each
 * with its own data folder and name, one inbox, one database, one sandbox (own process). Several files dropped at
 * once: every row of every file is in exactly one result line of exactly one answer, and no bank effect happens
 * twice in the sandbox's ledger. Then one daemon is SIGKILLed while it holds rows in flight: the other takes its file
 * and rows over once its lease passes (their steps in `intent` as unknown outcomes) and answers everything, still
 * every effect once.
 */
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  answersOf,
  drop,
  EXAMPLES,
  type Proc,
  parseResultCsv,
  runCli,
  type SandboxProcess,
  startSandboxProcess,
  stopDaemon,
  waitFor,
} from './e2e-harness.js';
import { skipPostgres, useTestCluster } from './helpers/postgres.js';
import { makeSharedWorkspaces, type SharedDaemonWorkspace, startSharedDaemons } from './helpers/shared-daemons.js';

const cluster = skipPostgres ? undefined : useTestCluster();
let sandbox: SandboxProcess | undefined;

/** A charges file of `rows` rows, correlation ids `<tag>-<n>`, built from the example's first row. */
function chargesFile(tag: string, rows: number): Buffer {
  const [header, first] = readFileSync(path.join(EXAMPLES, 'charges.csv'), 'utf8').split(/\r?\n/);
  const cells = first!.split(',');
  const lines = [header!];
  for (let n = 1; n <= rows; n++) {
    cells[1] = `${tag}-${n}`; // correlationId
    cells[4] = `NF-${tag}-${n}`; // yourNumber
    lines.push(cells.join(','));
  }
  return Buffer.from(`${lines.join('\n')}\n`);
}

/** Every result line of every answer in outbox/charges: correlationId -> how many lines, and the statuses. */
async function resultLines(ws: SharedDaemonWorkspace, stems: readonly string[]) {
  const lines = new Map<string, number>();
  const statuses: string[] = [];
  for (const stem of stems) {
    const answers = await answersOf(ws, 'charges', stem);
    expect(answers, `one answer for ${stem}`).toHaveLength(1);
    expect(answers[0]!.results, `one result version for ${stem}`).toHaveLength(1);
    for (const r of parseResultCsv(await fs.readFile(answers[0]!.results[0]!, 'utf8'))) {
      lines.set(r.correlationId!, (lines.get(r.correlationId!) ?? 0) + 1);
      statuses.push(r.status!);
    }
  }
  return { lines, statuses };
}

async function answered(ws: SharedDaemonWorkspace, stems: readonly string[]): Promise<boolean> {
  for (const stem of stems) {
    const a = (await answersOf(ws, 'charges', stem)).at(-1);
    if (!a || a.results.length === 0 || a.summaries.length === 0) return false;
  }
  return true;
}

describe.skipIf(skipPostgres)('two daemons sharing one PostgreSQL store', () => {
  beforeAll(async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-shared-sb-'));
    sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'));
  }, 60_000);

  afterAll(async () => {
    await sandbox?.stop();
  });

  it('shares the files, answers every row once, and finishes a killed daemon work', async () => {
    const c = cluster!();
    const { name: db, url } = await c.createDatabase();
    // A lease of 5 s: a dead daemon is noticed soon, and a loaded machine's pauses stay well inside it.
    const spaces = await makeSharedWorkspaces(2, sandbox!.url, { url, password: c.password, leaseMs: 5000 });
    const [ws] = spaces;
    let daemons: Proc[] = startSharedDaemons(spaces);
    const logs = () => daemons.map((d, i) => `--- d${i + 1}:\n${d.stdout().slice(-4000)}${d.stderr()}`).join('\n');
    try {
      // 1. Several files at once: every row once, every effect once.
      const first = ['a1', 'a2', 'a3', 'a4'];
      await Promise.all(first.map((t) => drop(ws!, chargesFile(t, 12), `charges/${t}.csv`)));
      await waitFor('the first files answered', () => answered(ws!, first), 45_000, 200).catch((e) => {
        throw new Error(`${(e as Error).message}\n${logs()}`);
      });
      const one = await resultLines(ws!, first);
      expect(one.lines.size).toBe(48);
      expect([...one.lines.values()].every((n) => n === 1)).toBe(true);
      expect(one.statuses.every((s) => s === 'succeeded')).toBe(true);
      let effects = await sandbox!.effects('charge_created');
      expect(effects).toHaveLength(48);
      expect(effects.every((e) => e.count === 1)).toBe(true);

      // 2. Slow bank; the daemon holding rows in flight is killed; the other finishes them.
      await sandbox!.setFaults([{ route: '*', responseLatencyMs: 150 }]);
      const second = ['b1', 'b2'];
      await Promise.all(second.map((t) => drop(ws!, chargesFile(t, 16), `charges/${t}.csv`)));
      const victim = await waitFor(
        'a daemon holding rows in flight',
        async () => {
          const held = await c.query<{ holder: string }>(
            "SELECT holder FROM rows WHERE holder IS NOT NULL AND state IN ('pending', 'in_flight') LIMIT 1",
            db,
          );
          return held[0]?.holder;
        },
        30_000,
        50,
      );
      const index = spaces.findIndex((s) => s.name === victim);
      daemons[index]!.child.kill('SIGKILL');
      expect(await daemons[index]!.exited).toBe('SIGKILL');
      await sandbox!.clearFaults();
      await waitFor('the other daemon to finish every file', () => answered(ws!, second), 45_000, 200).catch((e) => {
        throw new Error(`${(e as Error).message}\n${logs()}`);
      });
      const two = await resultLines(ws!, second);
      expect(two.lines.size).toBe(32);
      expect([...two.lines.values()].every((n) => n === 1)).toBe(true);
      expect(two.statuses.every((s) => s === 'succeeded')).toBe(true);
      effects = await sandbox!.effects('charge_created');
      expect(effects).toHaveLength(80);
      expect(effects.every((e) => e.count === 1)).toBe(true);
      // Nothing is left in the shared work area but the name of the store that serves the inbox
      // (src/runner/inbox-store.ts), and no row unfinished.
      expect(await fs.readdir(path.join(ws!.inbox, '.remessa-work'))).toEqual(['store']);
      const left = await c.query<{ n: string }>(
        "SELECT COUNT(*) AS n FROM rows WHERE state NOT IN ('succeeded', 'failed', 'rejected', 'duplicate')",
        db,
      );
      expect(Number(left[0]!.n)).toBe(0);

      // `remessa status` shows the daemons: the killed one dead, the other alive.
      const status = await runCli(['status', '--config', ws!.config]);
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toMatch(new RegExp(`${victim}.*(dead|not alive)`));
    } finally {
      const codes = await Promise.all(daemons.map((d) => stopDaemon(d)));
      daemons = [];
      expect(codes.filter((c) => c === 0).length).toBe(1);
    }
    await fs.rm(ws!.dir, { recursive: true, force: true });
  }, 120_000);

  it('refuses a second daemon of the same name; a daemon frozen past its lease exits with code 1 and says so', async () => {
    const c = cluster!();
    const { url } = await c.createDatabase();
    const [ws] = await makeSharedWorkspaces(1, sandbox!.url, { url, password: c.password, leaseMs: 3000 });
    // The same name with another data folder, on this machine: refused (the lock of the name), exit 2.
    const twin = JSON.parse(await fs.readFile(ws!.config, 'utf8')) as { folders: Record<string, string> };
    twin.folders.data = path.join(ws!.dir, 'data-twin');
    const twinConfig = path.join(ws!.dir, 'remessa-twin.jsonc');
    await fs.writeFile(twinConfig, JSON.stringify(twin));
    const [d1] = startSharedDaemons([ws!]);
    try {
      await waitFor('d1 ready', () => /remessa daemon ready/.test(d1!.stdout() + d1!.stderr()), 30_000, 100);
      const second = await runCli(['daemon', '--config', twinConfig]);
      expect(second.code).toBe(2);
      expect(second.stderr).toMatch(
        /Esperava ser o único processo com o nome de daemon "d1" nesta máquina, mas outro o está usando: pid \d+ /,
      );
      // Frozen (SIGSTOP) for longer than its lease: on waking it finds the lease lost, stops, exit 1.
      d1!.child.kill('SIGSTOP');
      await new Promise((r) => setTimeout(r, 4500));
      d1!.child.kill('SIGCONT');
      const code = await Promise.race([d1!.exited, new Promise((r) => setTimeout(() => r('still running'), 20_000))]);
      expect(code, d1!.stdout().slice(-3000)).toBe(1);
      expect(d1!.stdout() + d1!.stderr()).toMatch(/lease lost/);
    } finally {
      d1!.child.kill('SIGCONT');
      await stopDaemon(d1!);
    }
    await fs.rm(ws!.dir, { recursive: true, force: true });
  }, 90_000);
});
