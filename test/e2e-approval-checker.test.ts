/**
 * Maker-checker holes an auditor would find (src/store/approvals.ts rule 3, src/runner/approval.ts): the daemon and
 * the sandbox as child processes, real HTTP, real SQLite, files and markers owned by other OS users (the tests run as
 * root and chown: MAKER_UID the clerk who sends files, APPROVER_UID the manager; neither has a name, so they read
 * `uid 23456` and `uid 12345`).
 *
 * - `sudo -u remessa remessa approve` is the caller's approval, not the account's: sudo is played by giving the command
 *   SUDO_UID (root runs it, as remessa's account would): the caller is checked as any approver and recorded.
 * - A marker in a folder where the uploader can rename files (writable without the sticky bit, or the uploader's own)
 *   may be a manager's marker of another file renamed onto the uploader's (a rename keeps the owner): refused.
 * - A marker of a file decided already approves nothing: archived with a note beside its preview, not left unmentioned.
 */

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  bankSlipBillsCsv,
  drop,
  dropIn,
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

const MAKER_UID = 23456;
const APPROVER_UID = 12345;
/** The account the tests (and so the daemon and the commands) run as: remessa's own here. */
const ME = os.userInfo().username;

let sandbox: SandboxProcess;
const daemons: Proc[] = [];
let billSet = 0;

beforeAll(async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-checker-'));
  sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'));
}, 60_000);

afterEach(async () => {
  await Promise.all(daemons.splice(0).map((d) => stopDaemon(d)));
});

afterAll(async () => {
  await sandbox?.stop();
});

/** A bill-payments CSV of one synthetic payable slip (a new bill per call). */
async function paidCount(): Promise<number> {
  return (await sandbox.effects('bill_paid')).reduce((n, e) => n + e.count, 0);
}

async function daemonOn(ws: Workspace): Promise<Proc> {
  const d = startDaemon(ws);
  daemons.push(d);
  await waitFor('the daemon to be ready', () => /remessa daemon ready/.test(d.stderr() + d.stdout()), 60_000);
  return d;
}

function approvalOf(ws: Workspace, fileName: string): Record<string, unknown> | undefined {
  let db: Database.Database | undefined;
  try {
    db = new Database(path.join(ws.data, 'remessa.sqlite'), { readonly: true });
    return db
      .prepare(
        `SELECT a.state, a.preview_at, a.decided_by, a.decided_user, a.decided_via, a.owner, b.status
         FROM approvals a JOIN batches b ON b.id = a.batch_id WHERE b.file_name = ?`,
      )
      .get(fileName) as Record<string, unknown> | undefined;
  } catch {
    return undefined; // the store is not created yet
  } finally {
    db?.close();
  }
}

/** Waits until `<name>` waits for a decision with its preview written. */
function previewed(ws: Workspace, fileName: string): Promise<Record<string, unknown>> {
  return waitFor(
    `${fileName} to wait with its preview`,
    () => {
      const a = approvalOf(ws, fileName);
      return a?.state === 'awaiting' && a.preview_at !== null ? a : undefined;
    },
    60_000,
  );
}

describe('remessa approve started by sudo -u remessa', () => {
  it("is the sudo caller's: the sender refused, an unknown caller refused, the manager recorded as herself via sudo", async () => {
    const ws = await makeWorkspace(sandbox.url, { approval: { kinds: ['bill-payments'], pollMs: 200 } });
    await daemonOn(ws);
    const paidBefore = await paidCount();
    await drop(ws, Buffer.from(bankSlipBillsCsv([2_468], ++billSet)), 'bill-payments/sudo.csv', { uid: MAKER_UID });
    await previewed(ws, 'sudo.csv');
    const approve = (sudoUid: string) =>
      runCli(['approve', 'sudo.csv', '--by', 'Maria Gerente', '--config', ws.config], {
        env: { REMESSA_LOG_LEVEL: 'warn', SUDO_UID: sudoUid, SUDO_USER: 'someone', SUDO_GID: sudoUid },
      });

    // The clerk who sent the file, through sudo to remessa's account: his own file, refused.
    const own = await approve(String(MAKER_UID));
    expect(own.stdout).toBe(
      `não decidido: remessa approve rodou como o usuário do sistema uid ${MAKER_UID}, por sudo como ${ME}, o mesmo ` +
        'que enviou o arquivo, e approval.forbidSameAsOwner está ligado: quem aprova é quem roda o comando, não o ' +
        '--by (Maria Gerente). Outra pessoa deve aprová-lo, com o seu próprio usuário\n',
    );
    expect(own.code).toBe(1);
    // A SUDO_UID that is no uid tells nobody: refused, never read as the account.
    const unknown = await approve('maria');
    expect(unknown.stdout).toMatch(
      new RegExp(
        `^não decidido: Não se sabe qual usuário do sistema roda este comando \\(desconhecido, por sudo como ${ME}\\)`,
      ),
    );
    expect(unknown.code).toBe(1);
    expect(approvalOf(ws, 'sudo.csv')).toMatchObject({ state: 'awaiting', decided_user: null });

    // The manager, through sudo: hers, recorded with the account it ran as.
    const hers = await approve(String(APPROVER_UID));
    expect(hers.stdout).toMatch(
      new RegExp(
        `^sudo\\.csv \\(\\S+\\): aprovado por Maria Gerente \\(usuário do sistema uid ${APPROVER_UID}, por sudo como ${ME}\\) em `,
      ),
    );
    expect(hers.code).toBe(0);
    const answer = await waitForAnswer(ws, 'bill-payments', 'sudo');
    expect(parseResultCsv(answer.text).map((r) => r.status)).toEqual(['succeeded']);
    expect(await paidCount()).toBe(paidBefore + 1);
    expect(approvalOf(ws, 'sudo.csv')).toMatchObject({
      state: 'approved',
      decided_by: 'Maria Gerente',
      decided_user: `uid ${APPROVER_UID} via sudo as ${ME}`,
      decided_via: 'command',
      owner: `uid ${MAKER_UID}`,
    });
  }, 120_000);
});

/** The refusal note of a marker of `<stem>.csv` (`version` 2 and on: the later ones), beside its preview. */
function refusalOf(ws: Workspace, stem: string, version = 1): Promise<string> {
  const suffix = `.approval-refused${version === 1 ? '' : `.v${version}`}.txt`;
  return waitFor(
    `the refusal ${version} of ${stem}`,
    async () => {
      const dir = path.join(ws.outbox, 'bill-payments');
      const names = await fs.readdir(dir).catch(() => [] as string[]);
      const note = names.find((n) => n.startsWith(`${stem}.`) && n.endsWith(suffix));
      return note ? fs.readFile(path.join(dir, note), 'utf8') : undefined;
    },
    30_000,
  );
}

describe('an .approved marker in a folder where others can rename it', () => {
  it("a manager's marker renamed onto the sender's file is refused, the folder named; once protected, hers pays", async () => {
    const ws = await makeWorkspace(sandbox.url, { approval: { kinds: ['bill-payments'], pollMs: 200 } });
    await daemonOn(ws);
    const paidBefore = await paidCount();
    const folder = path.join(ws.inbox, 'bill-payments');
    await drop(ws, Buffer.from(bankSlipBillsCsv([1_357], ++billSet)), 'bill-payments/dele.csv', { uid: MAKER_UID });
    await previewed(ws, 'dele.csv');
    // The inbox's folder is writable by every uploader, without the sticky bit.
    await fs.chmod(folder, 0o777);
    // The manager approves another file by its marker; the sender renames it onto his own file's name before remessa
    // reads it (any user may rename in that folder): its owner is still the manager.
    await dropIn(ws.inbox, Buffer.from('Maria Gerente\n'), 'bill-payments/outro.approved', { uid: APPROVER_UID });
    await fs.rename(path.join(folder, 'outro.approved'), path.join(folder, 'dele.approved'));
    expect(await refusalOf(ws, 'dele')).toBe(
      'dele.approved não aprovou dele.csv: nada foi enviado, o arquivo continua aguardando.\n\n' +
        `APPROVAL_MARKER_FOLDER: dele.approved não foi usado: na pasta ${folder} (permissões 0777) outros usuários ` +
        'podem renomear um arquivo que não é deles, e assim pôr o marcador de outro arquivo com este nome (quem o ' +
        `gravou continua sendo o dono). Proteja a pasta com chmod +t ${folder}, ou defina approval.markersFrom com ` +
        'uma pasta só dos aprovadores; ou aprove com remessa approve LOTE --by NOME\n',
    );
    // The folder of the uploading account (as an SFTP inbox often is), sticky or not: he can rename in it all the same.
    await fs.chown(folder, MAKER_UID, 0);
    await fs.chmod(folder, 0o3770);
    await dropIn(ws.inbox, Buffer.from('Maria Gerente\n'), 'bill-payments/dele.approved', { uid: APPROVER_UID });
    expect(await refusalOf(ws, 'dele', 2)).toMatch(
      new RegExp(
        `APPROVAL_MARKER_FOLDER: dele\\.approved não foi usado: a pasta ${folder} é do usuário do sistema uid ${MAKER_UID}, `,
      ),
    );
    await new Promise((r) => setTimeout(r, 1000));
    expect(await paidCount()).toBe(paidBefore);
    expect(approvalOf(ws, 'dele.csv')).toMatchObject({ state: 'awaiting', status: 'awaiting_approval' });

    // remessa's folder with the sticky bit: only the marker's writer (and remessa, root) can rename it. Hers pays.
    await fs.chown(folder, process.getuid!(), 0);
    await fs.chmod(folder, 0o1777);
    await dropIn(ws.inbox, Buffer.from('Maria Gerente\n'), 'bill-payments/dele.approved', { uid: APPROVER_UID });
    const answer = await waitForAnswer(ws, 'bill-payments', 'dele');
    expect(parseResultCsv(answer.text).map((r) => r.status)).toEqual(['succeeded']);
    expect(await paidCount()).toBe(paidBefore + 1);
    expect(approvalOf(ws, 'dele.csv')).toMatchObject({ state: 'approved', decided_user: `uid ${APPROVER_UID}` });
    expect(await fs.readdir(path.join(ws.archive, 'approvals'))).toHaveLength(3);
  }, 120_000);
});

describe('the preview of a file in an inbox folder that would refuse its marker', () => {
  it('does not tell the approver to drop the marker there, and says why', async () => {
    const ws = await makeWorkspace(sandbox.url, { approval: { kinds: ['bill-payments'], pollMs: 200 } });
    const folder = path.join(ws.inbox, 'bill-payments');
    await fs.mkdir(folder, { recursive: true });
    await fs.chmod(folder, 0o777);
    await daemonOn(ws);
    await drop(ws, Buffer.from(bankSlipBillsCsv([2_468], ++billSet)), 'bill-payments/aviso.csv', { uid: MAKER_UID });
    await previewed(ws, 'aviso.csv');
    const outbox = path.join(ws.outbox, 'bill-payments');
    const name = (await fs.readdir(outbox)).find((n) => n.startsWith('aviso.') && n.endsWith('.preview.csv'))!;
    const decide = (await fs.readFile(path.join(outbox, name), 'utf8'))
      .split(/\r?\n/)
      .find((l) => l.startsWith('DECIDE'));
    expect(decide).toContain(
      `aviso.approved ao lado do arquivo na caixa de entrada seria recusado: na pasta ${folder}`,
    );
    expect(decide).toContain('remessa approve');
    expect(decide).not.toContain('ou deixe');
  }, 60_000);
});

describe('an .approved marker of a file decided already', () => {
  it('is archived with a note saying who decided, not left in the inbox; a marker of no file held stays', async () => {
    const ws = await makeWorkspace(sandbox.url, { approval: { kinds: ['bill-payments'], pollMs: 200 } });
    await daemonOn(ws);
    await drop(ws, Buffer.from(bankSlipBillsCsv([9_753], ++billSet)), 'bill-payments/tarde.csv', { uid: MAKER_UID });
    await previewed(ws, 'tarde.csv');
    const approved = await runCli(['approve', 'tarde.csv', '--by', 'Carla Tesouraria', '--config', ws.config], {
      env: { REMESSA_LOG_LEVEL: 'warn' },
    });
    expect(approved.code).toBe(0);
    await waitForAnswer(ws, 'bill-payments', 'tarde');

    // Another manager drops her marker once it is decided, and one for a file nobody dropped (yet).
    await dropIn(ws.inbox, Buffer.from('Maria Gerente\n'), 'bill-payments/tarde.approved', { uid: APPROVER_UID });
    await dropIn(ws.inbox, Buffer.from('Maria Gerente\n'), 'bill-payments/amanha.approved', { uid: APPROVER_UID });
    const note = await refusalOf(ws, 'tarde');
    const archived = await fs.readdir(path.join(ws.archive, 'approvals'));
    expect(archived).toEqual([expect.stringMatching(/^\d{8}T\d{3}-\d+-tarde\.approved$/)]);
    const where = path.join(ws.archive, 'approvals', archived[0]!);
    const [first, reason] = note.split('\n\n');
    expect(first).toBe(
      `tarde.approved chegou depois da decisão sobre tarde.csv e não foi usado: nada mudou. Foi movido para ${where}.`,
    );
    expect(reason).toMatch(
      /^APPROVAL_NOT_AWAITING: O lote \S+ \(tarde\.csv\) já foi aprovado \(approved\) por Carla Tesouraria em .+\n$/,
    );
    expect(await fs.readFile(where, 'utf8')).toBe('Maria Gerente\n');
    expect(await fs.readdir(path.join(ws.inbox, 'bill-payments'))).toEqual(['amanha.approved']);
    expect(approvalOf(ws, 'tarde.csv')).toMatchObject({ state: 'approved', decided_by: 'Carla Tesouraria' });
  }, 120_000);
});
