/**
 * The operator's day after an approval (README "Settling what is left", docs/operations.md): the daemon and the
 * sandbox as child processes, real HTTP, real SQLite. A file approved while nobody drives the data folder shows as
 * approved and waiting to be paid, not as stopped; `retry` on an approved file whose rows wait for the bank drives it.
 *
 * Files that wait are dropped owned by MAKER_UID (the clerk); `remessa approve` runs as root (the tests' user), so
 * the maker and the approver are told apart (src/store/approvals.ts rule 3).
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { buildBankSlipBarCode } from '../src/formats/index.js';
import {
  drop,
  makeWorkspace,
  type Proc,
  parseResultCsv,
  runCli,
  type SandboxProcess,
  startDaemon,
  startSandboxProcess,
  stopDaemon,
  type Workspace,
  waitFor,
  waitForAnswer,
} from './e2e-harness.js';
import { closedPort } from './helpers/net.js';

const MAKER_UID = 23456;

const daemons: Proc[] = [];
const sandboxes: SandboxProcess[] = [];
let billSet = 0;

afterEach(async () => {
  await Promise.all(daemons.splice(0).map((d) => stopDaemon(d)));
});
afterAll(async () => {
  for (const s of sandboxes) await s.stop().catch(() => undefined);
});

async function sandboxOn(port?: number): Promise<SandboxProcess> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-approval-ops-'));
  const s = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'), port === undefined ? {} : { port });
  sandboxes.push(s);
  return s;
}

function billsCsv(amounts: readonly number[]): string {
  billSet++;
  const lines = ['barCode,amount'];
  amounts.forEach((cents, i) => {
    const barCode = buildBankSlipBarCode({
      bankCode: '341',
      dueDate: '2030-08-31',
      amountCents: cents,
      freeField: `10900001234567${String(billSet).padStart(3, '0')}${String(i).padStart(8, '0')}`,
    });
    lines.push(`${barCode},${(cents / 100).toFixed(2)}`);
  });
  return `${lines.join('\n')}\n`;
}

async function daemonOn(ws: Workspace): Promise<Proc> {
  const d = startDaemon(ws);
  daemons.push(d);
  await waitFor('the daemon to be ready', () => /remessa daemon ready/.test(d.stderr() + d.stdout()), 60_000);
  return d;
}

async function stop(d: Proc): Promise<void> {
  expect(await stopDaemon(d)).toBe(0);
  daemons.splice(daemons.indexOf(d), 1);
}

function cli(ws: Workspace, ...args: string[]) {
  return runCli([...args, '--config', ws.config], { env: { REMESSA_LOG_LEVEL: 'warn' } });
}

async function previewWritten(ws: Workspace, stem: string): Promise<void> {
  await waitFor(
    'the preview',
    async () =>
      (await fs.readdir(path.join(ws.outbox, 'bill-payments')).catch(() => [] as string[])).some(
        (n) => n.startsWith(`${stem}.`) && n.endsWith('.preview.csv'),
      ),
    60_000,
  );
}

async function statusOf(ws: Workspace, fileName: string): Promise<Record<string, unknown>> {
  const r = await cli(ws, 'status', '--json');
  expect(r.code).toBe(0);
  const report = JSON.parse(r.stdout) as { batches: Array<Record<string, unknown>> };
  return report.batches.find((b) => b.fileName === fileName)!;
}

describe('an approved file, before it is paid', () => {
  it('status says approved and waiting to be paid, not stopped; retry says who pays it; the next run does', async () => {
    const sandbox = await sandboxOn();
    const ws = await makeWorkspace(sandbox.url, { approval: { kinds: ['bill-payments'], pollMs: 200 } });
    const daemon = await daemonOn(ws);
    await drop(ws, Buffer.from(billsCsv([1_234, 5_678])), 'bill-payments/aprovado.csv', { uid: MAKER_UID });
    await previewWritten(ws, 'aprovado');
    await stop(daemon);

    // Before a decision, retry sends nothing and says it waits for one.
    const early = await cli(ws, 'retry', 'aprovado.csv');
    expect(early.stdout).toMatch(
      /^aprovado\.csv \(lote \S+\): aguarda aprovação \(remessa approve \/ reject\); nada dele é enviado antes da decisão\n$/,
    );
    expect(early.code).toBe(3);

    const approved = await cli(ws, 'approve', 'aprovado.csv', '--by', 'Maria Conferente');
    expect(approved.code).toBe(0);
    // Nobody drives the data folder: approved and waiting to be paid, not "stopped, or the process died".
    const entry = await statusOf(ws, 'aprovado.csv');
    expect(entry).toMatchObject({ state: 'approved', storeStatus: 'ready', counts: { pending: 2, succeeded: 0 } });
    expect((await cli(ws, 'status')).stdout).toMatch(/aprovado\.csv +\[approved\] +pending 2/);
    const filtered = JSON.parse((await cli(ws, 'status', '--json', '--state', 'approved')).stdout) as {
      batches: unknown[];
    };
    expect(filtered.batches).toHaveLength(1);

    // retry does not let it go (its file's handling does): it says who pays it, not that it stopped.
    const retried = await cli(ws, 'retry', 'aprovado.csv');
    expect(retried.stdout).toMatch(
      /^aprovado\.csv \(lote \S+\): aprovado, ainda não pago: quem o paga é o daemon \(em até approval\.pollMs\) ou o próximo `remessa run`, não o retry\n$/,
    );
    expect(retried.code).toBe(3);
    const retriedEn = await cli(ws, 'retry', '--locale', 'en');
    expect(retriedEn.stdout).toMatch(/^aprovado\.csv \(batch \S+\): approved, not paid yet: the daemon pays it/);
    expect(await sandbox.effects('bill_paid')).toEqual([]);

    // As said: the next run pays it.
    const run = await cli(ws, 'run');
    expect(run.code).toBe(0);
    const answer = await waitForAnswer(ws, 'bill-payments', 'aprovado');
    expect(parseResultCsv(answer.text).map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
    expect((await statusOf(ws, 'aprovado.csv')).state).toBe('done');
  }, 150_000);

  it('retry drives an approved file whose rows wait for the bank', async () => {
    const port = await closedPort();
    const sandbox = await sandboxOn(port);
    const ws = await makeWorkspace(sandbox.url, {
      approval: { kinds: ['bill-payments'], pollMs: 200 },
      bank: { unreachable: { retryDelaysMs: [200, 400], runMaxWaitMs: 1000 } },
    });
    const daemon = await daemonOn(ws);
    await drop(ws, Buffer.from(billsCsv([2_222, 3_333])), 'bill-payments/espera.csv', { uid: MAKER_UID });
    await previewWritten(ws, 'espera');
    await sandbox.stop();
    const approved = await cli(ws, 'approve', 'espera.csv', '--by', 'Maria Conferente');
    expect(approved.code).toBe(0);
    await waitFor(
      'rows waiting',
      async () => {
        const e = await statusOf(ws, 'espera.csv');
        return ((e.counts as Record<string, number>).waiting ?? 0) === 2 ? e : undefined;
      },
      30_000,
    );
    await stop(daemon);
    // Let go, its rows wait for the bank, nobody drives: stopped (parked), which is what it is.
    expect(await statusOf(ws, 'espera.csv')).toMatchObject({ state: 'parked', storeStatus: 'running' });
    const paid = await sandboxOn(port);
    const retried = await cli(ws, 'retry', 'espera.csv');
    expect(retried.stdout).toMatch(/^espera\.csv \(lote \S+\): succeeded 2 -> \S+\.result\.csv\n$/);
    expect(retried.code).toBe(0);
    const bills = await paid.effects('bill_paid');
    expect(bills).toHaveLength(2);
    for (const e of bills) expect(e.count).toBe(1);
    expect((await statusOf(ws, 'espera.csv')).state).toBe('done');
  }, 150_000);
});
