/**
 * A crash at the instant an approval marker is claimed (renamed beside itself to a dot file, before the decision is
 * recorded) must not lose the approval. It did: the restarted daemon looked only for `<file>.approved`, the claimed
 * marker stayed hidden in the inbox, and the file waited for an approval its approver had already given. Seen as a
 * failure of e2e-approval-crash in CI (four kills, no bill ever paid).
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

const BILLS = 3;
const MAKER_UID = 23457;
const APPROVER_UID = 12346;

let sandbox: SandboxProcess;
let ws: Workspace;
const daemons: Proc[] = [];

beforeAll(async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-marker-crash-'));
  sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'));
  ws = await makeWorkspace(sandbox.url, { approval: { kinds: ['bill-payments'], pollMs: 100 } });
}, 60_000);

afterAll(async () => {
  for (const d of daemons) if (d.child.exitCode === null && d.child.signalCode === null) d.child.kill('SIGKILL');
  await sandbox?.stop();
});

describe('a crash right after an approval marker is claimed', () => {
  it('keeps the approval: the restarted daemon decides with the claimed marker, and the bills are paid once', async () => {
    const first = startDaemon(ws, { REMESSA_TEST_CRASH_AT: 'marker-claimed' });
    daemons.push(first);
    await drop(
      ws,
      Buffer.from(
        bankSlipBillsCsv(
          Array.from({ length: BILLS }, (_, i) => 3_000 + i),
          1,
        ),
      ),
      'bill-payments/lote.csv',
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
    await dropIn(ws.inbox, Buffer.from('Maria Conferente\n'), 'bill-payments/lote.approved', { uid: APPROVER_UID });
    expect(await first.exited).toBe('SIGKILL');
    const inbox = path.join(ws.inbox, 'bill-payments');
    expect((await fs.readdir(inbox)).filter((n) => n.endsWith('.claimed'))).toHaveLength(1);
    expect(await sandbox.effects('bill_paid')).toEqual([]);

    const daemon = startDaemon(ws);
    daemons.push(daemon);
    const answer = await waitForAnswer(ws, 'bill-payments', 'lote', 60_000);
    const rows = parseResultCsv(answer.text);
    expect(rows.map((r) => r.status)).toEqual(Array(BILLS).fill('succeeded'));
    expect(await stopDaemon(daemon)).toBe(0);
    const effects = await sandbox.effects('bill_paid');
    expect(effects).toHaveLength(BILLS);
    for (const e of effects) expect(e.count, e.key).toBe(1);
    const db = new Database(path.join(ws.data, 'remessa.sqlite'), { readonly: true });
    try {
      expect(db.prepare('SELECT state, decided_by, decided_user, decided_via FROM approvals').all()).toEqual([
        {
          state: 'approved',
          decided_by: 'Maria Conferente',
          decided_user: `uid ${APPROVER_UID}`,
          decided_via: 'marker',
        },
      ]);
    } finally {
      db.close();
    }
    // The marker was used once and archived: nothing of it is left in the inbox.
    expect((await fs.readdir(inbox)).filter((n) => n.includes('approved'))).toEqual([]);
  }, 120_000);
});
