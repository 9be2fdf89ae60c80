/**
 * The maker of a file (src/store/approvals.ts rule 3) is who dropped it, also when the inbox is on another file system
 * than remessa's work area (an SFTP or network mount: very common). There the take is a copy, not a rename, and the
 * copy is owned by remessa's own account: the maker must be read from the file in the inbox before it is copied
 * (src/intake/work-area.ts), or every approval of every file is refused as "who sent the file is not known".
 *
 * The daemon as a child process against the sandbox as another, real HTTP, real SQLite, the inbox on another file
 * system for real (test/helpers/other-fs.ts: /dev/shm, else a tmpfs mounted as root; without either the suite is
 * skipped with the reason printed). The tests run as root, the account the daemon runs as: the file is dropped owned
 * by MAKER_UID, which has no name in /etc/passwd (`uid 23456`).
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  bankSlipBillsCsv,
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
import { type OtherFileSystem, otherFileSystem } from './helpers/other-fs.js';

const MAKER_UID = 23456;

const other = await otherFileSystem();
const mount: OtherFileSystem | undefined = 'dir' in other ? other : undefined;
if (!mount)
  console.warn(`test/e2e-approval-maker.test.ts skipped: no other file system (${'reason' in other && other.reason})`);

let sandbox: SandboxProcess;
const daemons: Proc[] = [];

beforeAll(async () => {
  if (!mount) return;
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-maker-'));
  sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'));
}, 60_000);

afterEach(async () => {
  await Promise.all(daemons.splice(0).map((d) => stopDaemon(d)));
});

afterAll(async () => {
  await sandbox?.stop();
  await mount?.remove();
});

/** A workspace whose inbox is on the other file system (its work area, in `data`, stays in the temp folder). */
async function workspaceWithInboxElsewhere(): Promise<Workspace> {
  const ws = await makeWorkspace(sandbox.url, { approval: { kinds: ['bill-payments'], pollMs: 200 } });
  ws.inbox = await fs.mkdtemp(path.join(mount!.dir, 'inbox-'));
  const config = JSON.parse(await fs.readFile(ws.config, 'utf8'));
  config.folders.inbox = ws.inbox;
  await fs.writeFile(ws.config, JSON.stringify(config, null, 2));
  expect((await fs.stat(ws.inbox)).dev).not.toBe((await fs.stat(ws.dir)).dev);
  return ws;
}

describe.skipIf(!mount)('an inbox on another file system (the take is a copy)', () => {
  it('records who dropped the file as its maker, so another person can approve it; it is paid once', async () => {
    const ws = await workspaceWithInboxElsewhere();
    const d = startDaemon(ws);
    daemons.push(d);
    await waitFor('the daemon to be ready', () => /remessa daemon ready/.test(d.stderr() + d.stdout()), 60_000);
    await drop(ws, Buffer.from(bankSlipBillsCsv([4_321], 1)), 'bill-payments/sftp.csv', { uid: MAKER_UID });

    const db = () => new Database(path.join(ws.data, 'remessa.sqlite'), { readonly: true });
    const held = await waitFor(
      'the file to wait for approval',
      () => {
        let conn: Database.Database | undefined;
        try {
          conn = db();
          return conn.prepare("SELECT owner FROM approvals WHERE state = 'awaiting'").get() as
            | { owner: string | null }
            | undefined;
        } catch {
          return undefined; // the store is not created yet
        } finally {
          conn?.close();
        }
      },
      60_000,
    );
    expect(held.owner).toBe(`uid ${MAKER_UID}`);
    // The taken file is remessa's copy (owned by root here), the inbox's is gone.
    const work = path.join(ws.data, 'work');
    const [taken] = await fs.readdir(work);
    expect((await fs.stat(path.join(work, taken!, 'sftp.csv'))).uid).toBe(process.getuid!());
    await expect(fs.stat(path.join(ws.inbox, 'bill-payments', 'sftp.csv'))).rejects.toThrow();

    // root (remessa's own account here) approves: another person than the maker, so allowed.
    const approved = await runCli(['approve', 'sftp.csv', '--by', 'Maria Gerente', '--config', ws.config], {
      env: { REMESSA_LOG_LEVEL: 'warn' },
    });
    expect(approved.stdout).toMatch(/^sftp\.csv \(\d{8}T\d{6}Z-[0-9a-f]{8}\): aprovado por Maria Gerente/);
    expect(approved.code).toBe(0);
    const answer = await waitForAnswer(ws, 'bill-payments', 'sftp');
    expect(parseResultCsv(answer.text).map((r) => r.status)).toEqual(['succeeded']);
    // The copy is what was checked: not read as a file still being written (which waited stableMs more).
    expect(d.stderr() + d.stdout()).not.toMatch(/changed after it was taken/);
  }, 120_000);
});
