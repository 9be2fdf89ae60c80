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
  startSandboxProcess,
  type Workspace,
} from './e2e-harness.js';
import { closedPort } from './helpers/net.js';

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

async function previewOf(ws: Workspace, stem: string): Promise<Array<Record<string, string>>> {
  const dir = path.join(ws.outbox, 'bill-payments');
  const names = (await fs.readdir(dir)).filter((n) => n.startsWith(`${stem}.`) && n.endsWith('.preview.csv')).sort();
  return parseResultCsv(await fs.readFile(path.join(dir, names.at(-1)!), 'utf8'));
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
    await drop(ws, Buffer.from(billsCsv([15_000, 15_000])), 'bill-payments/noite.csv');
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
    await drop(ws, Buffer.from(billsCsv([30_000])), 'bill-payments/tarde.csv');
    expect((await cli(ws, 'run')).code).toBe(3);
    const waits = (await previewOf(ws, 'tarde')).filter((r) => r.barCode?.startsWith('WAITS:'));
    expect(waits.map((r) => r.barCode)).toEqual(['WAITS: APPROVAL_REQUIRED', 'WAITS: LIMIT_PER_DAY']);
    expect(waits[1]!.preview).toMatch(/^R\$ 300,00 de bill-payments já foram liberados em .*R\$ 500,00/);
  }, 120_000);
});
