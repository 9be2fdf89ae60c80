/**
 * End to end: SIGKILL of the daemon between a person's approval and the payments it lets go, and again while they
 * are paid (src/store/approvals.ts, rules of src/store/rows.ts). The approval is a marker dropped by the approver's
 * OS user (tests run as root: the file is owned by the maker's uid, the marker by another); the daemon is killed at
 * seeded random moments from the marker's drop on, a kill landing before the approval is read, after it is recorded
 * but before the release, or among the payments. After the last restart: every bill paid exactly once, the answer
 * all succeeded, the approval recorded once with who decided, and nothing paid before the approval.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPrng } from '../src/sandbox/faults.js';
import {
  bankSlipBillsCsv,
  drop,
  dropIn,
  makeWorkspace,
  type Proc,
  parseResultCsv,
  type SandboxProcess,
  startDaemon,
  startSandboxProcess,
  stopDaemon,
  type Workspace,
  waitFor,
  waitForAnswer,
} from './e2e-harness.js';

const BILLS = 48;
const KILLS = 4;
const MAKER_UID = 23456;
const APPROVER_UID = 12345;
const SEED = Number(process.env.REMESSA_E2E_SEED ?? 20261129);

let sandbox: SandboxProcess;
let ws: Workspace;
const daemons: Proc[] = [];

function started(): Proc {
  const d = startDaemon(ws);
  daemons.push(d);
  return d;
}

function approvals(): Array<Record<string, string>> {
  const db = new Database(path.join(ws.data, 'remessa.sqlite'), { readonly: true });
  try {
    return db.prepare('SELECT state, decided_by, decided_user, decided_via FROM approvals').all() as Array<
      Record<string, string>
    >;
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-approval-crash-'));
  sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'));
  ws = await makeWorkspace(sandbox.url, {
    approval: { kinds: ['bill-payments'], pollMs: 100 },
    queue: { concurrency: 4 },
  });
}, 60_000);

afterAll(async () => {
  for (const d of daemons) if (d.child.exitCode === null && d.child.signalCode === null) d.child.kill('SIGKILL');
  await sandbox?.stop();
});

describe('SIGKILL between an approval and its payments', () => {
  it('pays every approved bill exactly once, nothing before the approval', async () => {
    let daemon = started();
    await drop(
      ws,
      Buffer.from(
        bankSlipBillsCsv(
          Array.from({ length: BILLS }, (_, i) => 2_000 + i),
          1,
          '2030-09-30',
        ),
      ),
      'bill-payments/folha.csv',
      { uid: MAKER_UID },
    );
    await waitFor(
      'the preview',
      async () =>
        (await fs.readdir(path.join(ws.outbox, 'bill-payments')).catch(() => [] as string[])).some((n) =>
          n.endsWith('.preview.csv'),
        ) || undefined,
      60_000,
    );
    expect(await sandbox.effects('bill_paid')).toEqual([]);

    // The bank slowed on both sides of its commit: the kills land among the payments too.
    await sandbox.setFaults([{ route: '*', latencyMs: 40, responseLatencyMs: 60 }], SEED);
    await dropIn(ws.inbox, Buffer.from('Maria Conferente\n'), 'bill-payments/folha.approved', { uid: APPROVER_UID });
    const random = createPrng(SEED);
    const paid = async () => (await sandbox.effects('bill_paid')).length;
    /** Bills paid when each kill landed. */
    const atKills: number[] = [];
    for (let i = 0; i < KILLS; i++) {
      // The first kill right after the marker's drop (the approval not yet read, or recorded and not let go), the
      // others at a seeded moment after the restarted daemon is ready: among the payments.
      if (i > 0) {
        const d = daemon;
        await waitFor('the daemon to be ready', () => /remessa daemon ready/.test(d.stderr() + d.stdout()), 60_000);
      }
      await new Promise((r) => setTimeout(r, Math.floor(random() * (i === 0 ? 250 : 900))));
      const now = await paid();
      if (now === BILLS) break;
      atKills.push(now);
      daemon.child.kill('SIGKILL');
      expect(await daemon.exited).toBe('SIGKILL');
      daemon = started();
    }

    // A kill before any payment (the approval read or not, not yet let go), and one among the payments.
    expect(atKills.length, `kills at ${atKills}`).toBeGreaterThanOrEqual(2);
    expect(atKills[0], `kills at ${atKills}`).toBe(0);
    expect(
      atKills.some((n) => n > 0 && n < BILLS),
      `kills at ${atKills}`,
    ).toBe(true);
    await sandbox.clearFaults();
    const answer = await waitForAnswer(ws, 'bill-payments', 'folha', 120_000);
    expect(answer.type).toBe('result');
    const rows = parseResultCsv(answer.text);
    expect(rows).toHaveLength(BILLS);
    for (const r of rows) expect(r.status, JSON.stringify(r)).toBe('succeeded');
    expect(await stopDaemon(daemon)).toBe(0);

    const effects = await sandbox.effects('bill_paid');
    expect(effects).toHaveLength(BILLS);
    for (const e of effects) expect(e.count, e.key).toBe(1);
    expect(approvals()).toEqual([
      { state: 'approved', decided_by: 'Maria Conferente', decided_user: `uid ${APPROVER_UID}`, decided_via: 'marker' },
    ]);
  }, 240_000);
});
