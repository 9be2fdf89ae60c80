/**
 * Money controls as the users meet them (README "Money controls"): what a checker approves is what counts for the
 * day's limit, and what the next file's preview says about that limit. Real processes: `remessa run` and the
 * commands against the sandbox as another process, real HTTP, real SQLite.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { buildBankSlipBarCode } from '../src/formats/index.js';
import {
  drop,
  makeWorkspace,
  parseResultCsv,
  runCli,
  type SandboxProcess,
  startDaemon,
  startSandboxProcess,
  stopDaemon,
  type Workspace,
  waitFor,
} from './e2e-harness.js';
import { closedPort } from './helpers/net.js';

/**
 * The OS owner of the files that wait: not root, the account the tests (and so the daemon) run as, whose files have
 * no maker that can be told (src/store/approvals.ts rule 3); `remessa approve` runs as root.
 */
const MAKER_UID = 23456;

const sandboxes: SandboxProcess[] = [];
afterAll(async () => {
  for (const s of sandboxes) await s.stop();
});

let billSet = 0;
/** A bill-payments CSV of payable slips (a new set of bills per call), one row per amount in cents. */
function billsCsv(amounts: readonly number[]): string {
  billSet++;
  const lines = ['barCode,amount'];
  amounts.forEach((cents, i) => {
    const barCode = buildBankSlipBarCode({
      bankCode: '341',
      dueDate: '2030-09-30',
      amountCents: cents,
      freeField: `10900007654321${String(billSet).padStart(3, '0')}${String(i).padStart(8, '0')}`,
    });
    lines.push(`${barCode},${(cents / 100).toFixed(2)}`);
  });
  return `${lines.join('\n')}\n`;
}

function cli(ws: Workspace, ...args: string[]) {
  return runCli([...args, '--config', ws.config], { env: { REMESSA_LOG_LEVEL: 'warn' } });
}

/** The preview of `<stem>.csv`: its latest version, or `version` (1: `.preview.csv`, n: `.preview.vn.csv`). */
async function previewOf(ws: Workspace, stem: string, version?: number): Promise<Array<Record<string, string>>> {
  const dir = path.join(ws.outbox, 'bill-payments');
  const versionOf = (n: string) => Number(/\.preview(?:\.v(\d+))?\.csv$/.exec(n)?.[1] ?? 1);
  const names = (await fs.readdir(dir))
    .filter((n) => n.startsWith(`${stem}.`) && /\.preview(\.v\d+)?\.csv$/.test(n))
    .sort((a, b) => versionOf(a) - versionOf(b));
  const name = version === undefined ? names.at(-1) : names.find((n) => versionOf(n) === version);
  return parseResultCsv(await fs.readFile(path.join(dir, name!), 'utf8'));
}

function releasedCents(ws: Workspace): number {
  const db = new Database(path.join(ws.data, 'remessa.sqlite'), { readonly: true });
  try {
    return (db.prepare('SELECT COALESCE(SUM(amount_cents), 0) AS n FROM released_amounts').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

describe('the day limit of a kind that waits for approval', () => {
  it('counts the rows left waiting for an unreachable bank when the file is approved (they are paid all the same)', async () => {
    const port = await closedPort();
    const ws = await makeWorkspace(`http://127.0.0.1:${port}`, {
      bank: { unreachable: { retryDelaysMs: [100], runMaxWaitMs: 800 } },
      approval: { kinds: ['bill-payments'] },
      limits: { 'bill-payments': { perDay: '500.00' } },
    });
    // The night's run: the bank is down, the bills cannot be looked up; the file waits, its rows too.
    await drop(ws, Buffer.from(billsCsv([15_000, 15_000])), 'bill-payments/noite.csv', { uid: MAKER_UID });
    const first = await cli(ws, 'run');
    expect(first.code).toBe(3);
    const preview = await previewOf(ws, 'noite');
    expect(preview.find((r) => r.barCode === 'TOTAL to pay')?.amountToPay).toBe('300.00');

    // The bank is back; the checker approves what the preview showed, the next run pays both bills.
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-limits-sb-'));
    const sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'), { port });
    sandboxes.push(sandbox);
    expect((await cli(ws, 'approve', 'noite.csv', '--by', 'Carla Tesouraria')).code).toBe(0);
    const second = await cli(ws, 'run');
    expect(second.stdout).toMatch(/noite\.csv: succeeded 2/);
    expect(await sandbox.effects('bill_paid')).toHaveLength(2);
    // What was let go counts for the day: R$ 300,00, not the R$ 0,00 of the rows "not pending" at approval.
    expect(releasedCents(ws)).toBe(30_000);

    // A second file of R$ 300,00 the same day passes R$ 500,00: its preview says so before anyone approves it.
    await drop(ws, Buffer.from(billsCsv([30_000])), 'bill-payments/tarde.csv', { uid: MAKER_UID });
    expect((await cli(ws, 'run')).code).toBe(3);
    const waits = (await previewOf(ws, 'tarde')).filter((r) => r.barCode?.startsWith('WAITS:'));
    expect(waits.map((r) => r.barCode)).toEqual(['WAITS: APPROVAL_REQUIRED', 'WAITS: LIMIT_PER_DAY']);
    expect(waits[1]!.preview).toMatch(/^R\$ 300,00 de bill-payments já foram liberados em .*R\$ 500,00/);
  }, 120_000);
});

describe('two files that wait the same day, each within the day limit alone', () => {
  it('both approved: one is paid; the other, which now passes the limit its preview did not show, waits again', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-limits-sb-'));
    const sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'));
    sandboxes.push(sandbox);
    const ws = await makeWorkspace(sandbox.url, {
      approval: { kinds: ['bill-payments'] },
      limits: { 'bill-payments': { perDay: '500.00' } },
    });
    await drop(ws, Buffer.from(billsCsv([15_000, 15_000])), 'bill-payments/manha.csv', { uid: MAKER_UID });
    await drop(ws, Buffer.from(billsCsv([10_000, 20_000])), 'bill-payments/tarde.csv', { uid: MAKER_UID });
    expect((await cli(ws, 'run')).code).toBe(3);
    // Nothing is let go yet: each preview shows only that the kind waits for approval.
    for (const stem of ['manha', 'tarde']) {
      const waits = (await previewOf(ws, stem)).filter((r) => r.barCode?.startsWith('WAITS:'));
      expect(waits.map((r) => r.barCode)).toEqual(['WAITS: APPROVAL_REQUIRED']);
    }
    expect((await cli(ws, 'approve', 'manha.csv', '--by', 'Carla Tesouraria')).code).toBe(0);
    expect((await cli(ws, 'approve', 'tarde.csv', '--by', 'Carla Tesouraria')).code).toBe(0);

    // The first let go is paid. The other would take the day to R$ 600,00: its approval did not see that.
    const run = await cli(ws, 'run');
    const paid = /(manha|tarde)\.csv: succeeded 2/.exec(run.stdout)?.[1];
    const held = paid === 'manha' ? 'tarde' : 'manha';
    expect(run.stdout).toMatch(new RegExp(`${held}\\.csv: aguarda aprovação .*${held}\\.\\S+\\.preview\\.v2\\.csv`));
    expect(run.code).toBe(3);
    expect(await sandbox.effects('bill_paid')).toHaveLength(2);
    expect(releasedCents(ws)).toBe(30_000);
    // Its first preview is kept as it was read; the new one says why it waits again, and who approved what.
    expect((await previewOf(ws, held, 1)).filter((r) => r.barCode?.startsWith('WAITS:')).length).toBe(1);
    const again = (await previewOf(ws, held)).filter((r) => r.barCode?.startsWith('WAITS:'));
    expect(again.map((r) => r.barCode)).toEqual([
      'WAITS: APPROVAL_REQUIRED',
      'WAITS: LIMIT_PER_DAY',
      'WAITS: APPROVAL_PREVIEW_STALE',
    ]);
    expect(again[1]!.preview).toMatch(
      /^R\$ 300,00 de bill-payments já foram liberados em .*R\$ 300,00 deste .*R\$ 500,00/,
    );
    expect(again[2]!.preview).toMatch(
      /^Aprovado por Carla Tesouraria em \d\d\/\d\d\/\d{4} \d\d:\d\d:\d\d sobre uma prévia que não mostrava LIMIT_PER_DAY/,
    );

    // A person who has seen it decides again: approving is the override, and it is paid.
    expect((await cli(ws, 'approve', `${held}.csv`, '--by', 'Rui Diretor')).code).toBe(0);
    const last = await cli(ws, 'run');
    expect(last.stdout).toMatch(new RegExp(`${held}\\.csv: succeeded 2`));
    expect(last.code).toBe(0);
    expect(await sandbox.effects('bill_paid')).toHaveLength(4);
    expect(releasedCents(ws)).toBe(60_000);
  }, 120_000);

  it('a file given to run from outside the inbox, held again, gets its new preview from the next run', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-limits-sb-'));
    const sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'));
    sandboxes.push(sandbox);
    const ws = await makeWorkspace(sandbox.url, {
      approval: { kinds: ['bill-payments'] },
      limits: { 'bill-payments': { perDay: '500.00' } },
    });
    const outside = path.join(ws.dir, 'exports', 'bill-payments', 'fora.csv');
    await fs.mkdir(path.dirname(outside), { recursive: true });
    await fs.writeFile(outside, billsCsv([40_000]));
    await fs.chown(outside, MAKER_UID, MAKER_UID);
    expect((await cli(ws, 'run', outside)).code).toBe(3);
    // Before it is approved, another file of the day is approved and paid: R$ 200,00 let go.
    await drop(ws, Buffer.from(billsCsv([20_000])), 'bill-payments/antes.csv', { uid: MAKER_UID });
    expect((await cli(ws, 'run')).code).toBe(3);
    expect((await cli(ws, 'approve', 'antes.csv', '--by', 'Carla Tesouraria')).code).toBe(0);
    expect((await cli(ws, 'run')).stdout).toMatch(/antes\.csv: succeeded 1/);
    // Its approval saw a preview of a day with nothing let go; R$ 200,00 + R$ 400,00 passes R$ 500,00.
    expect((await cli(ws, 'approve', 'fora.csv', '--by', 'Carla Tesouraria')).code).toBe(0);
    await fs.rm(outside); // the next plain run drives it without its file
    const run = await cli(ws, 'run');
    expect(run.stdout).toMatch(/^\S+fora\.csv: aguarda aprovação .*fora\.\S+\.preview\.v2\.csv\n$/);
    expect(run.code).toBe(3);
    expect(await sandbox.effects('bill_paid')).toHaveLength(1);
    const waits = (await previewOf(ws, 'fora')).filter((r) => r.barCode?.startsWith('WAITS:'));
    expect(waits.map((r) => r.barCode)).toEqual([
      'WAITS: APPROVAL_REQUIRED',
      'WAITS: LIMIT_PER_DAY',
      'WAITS: APPROVAL_PREVIEW_STALE',
    ]);
    expect((await cli(ws, 'approve', 'fora.csv', '--by', 'Rui Diretor')).code).toBe(0);
    const last = await cli(ws, 'run');
    expect(last.stdout).toMatch(/fora\.csv: succeeded 1/);
    expect(last.code).toBe(0);
    expect(await sandbox.effects('bill_paid')).toHaveLength(2);
  }, 120_000);
});

describe('a file that waits for approval, one of its bills not looked up (the bank answered 5xx)', () => {
  it('its uncertain row cannot be settled as succeeded (nothing was paid); once approved, the bill is paid', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-limits-sb-'));
    const sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'));
    sandboxes.push(sandbox);
    const ws = await makeWorkspace(sandbox.url, {
      bank: { retry: { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 50, maxRetryAfterMs: 100 } },
      approval: { kinds: ['bill-payments'] },
    });
    await sandbox.setFaults([{ route: '/baas/api/v1/bill-payments/:paymentIdentifier', errorRate: 1 }]);
    await drop(ws, Buffer.from(billsCsv([12_300])), 'bill-payments/consulta.csv', { uid: MAKER_UID });
    expect((await cli(ws, 'run')).code).toBe(3);
    expect((await cli(ws, 'status')).stdout).toMatch(/Linhas incertas: 1\n.*consulta\.csv linha 2 etapa lookup/);

    // Someone reads "uncertain" and settles it as paid: refused, the bill was never paid (it said succeeded,
    // and once approved the row was answered succeeded with nothing paid).
    const settled = await cli(
      ws,
      'resolve',
      'consulta.csv',
      '2',
      '--as',
      'succeeded',
      '--note',
      'extrato',
      '--by',
      'Ana',
    );
    expect(settled.code).toBe(2);
    expect(settled.stderr).toContain(
      'veio a linha 2 de consulta.csv, incerta na etapa lookup antes de qualquer pedido com efeito: o banco não pode tê-la feito',
    );

    await sandbox.clearFaults();
    expect((await cli(ws, 'approve', 'consulta.csv', '--by', 'Carla Tesouraria')).code).toBe(0);
    const run = await cli(ws, 'run');
    expect(run.stdout).toMatch(/consulta\.csv: succeeded 1/);
    expect(await sandbox.effects('bill_paid')).toHaveLength(1);
  }, 120_000);
});

describe('an .approved marker when two takings of one file name wait', () => {
  it('approves neither (which one the checker read cannot be told): refused, naming both; approve by id pays one', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-limits-sb-'));
    const sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'));
    sandboxes.push(sandbox);
    const ws = await makeWorkspace(sandbox.url, { approval: { kinds: ['bill-payments'], pollMs: 200 } });
    // Yesterday's export still waits; today's, of the same name, arrives beside it.
    await drop(ws, Buffer.from(billsCsv([11_100])), 'bill-payments/pagamentos.csv', { uid: MAKER_UID });
    expect((await cli(ws, 'run')).code).toBe(3);
    await drop(ws, Buffer.from(billsCsv([22_200])), 'bill-payments/pagamentos.csv', { uid: MAKER_UID });
    expect((await cli(ws, 'run')).code).toBe(3);
    const previews = (await fs.readdir(path.join(ws.outbox, 'bill-payments'))).filter((n) =>
      n.endsWith('.preview.csv'),
    );
    expect(previews).toHaveLength(2);

    // The checker reads today's preview and drops the marker its DECIDE line names.
    await fs.writeFile(path.join(ws.inbox, 'bill-payments', 'pagamentos.approved'), 'Carla Tesouraria\n');
    const daemon = startDaemon(ws);
    try {
      const note = await waitFor(
        'the refusal',
        async () => {
          const names = await fs.readdir(path.join(ws.outbox, 'bill-payments'));
          const refused = names.find((n) => n.endsWith('.approval-refused.txt'));
          return refused && fs.readFile(path.join(ws.outbox, 'bill-payments', refused), 'utf8');
        },
        30_000,
      );
      expect(note).toMatch(/APPROVAL_MARKER_AMBIGUOUS: pagamentos\.approved serve para 2 arquivos que aguardam/);
      await new Promise((r) => setTimeout(r, 1500));
      expect(await sandbox.effects('bill_paid')).toHaveLength(0);
    } finally {
      expect(await stopDaemon(daemon)).toBe(0);
    }
    const tag = /pagamentos\.(\d{8}T\d{6}Z-[0-9a-f]{8})\.preview\.csv/.exec(previews.sort()[1]!)![1]!;
    expect((await cli(ws, 'approve', tag, '--by', 'Carla Tesouraria')).code).toBe(0);
    expect((await cli(ws, 'run')).code).toBe(3); // the other still waits
    const paid = await sandbox.effects('bill_paid');
    expect(paid).toHaveLength(1);
  }, 120_000);
});
