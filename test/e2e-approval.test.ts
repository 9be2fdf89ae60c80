/**
 * Money controls end to end (README "Money controls", src/store/approvals.ts): the daemon as a child process against
 * the sandbox as another, real HTTP, real SQLite. A bill-payments file that waits for approval is looked up, not paid
 * (the sandbox's effects ledger shows no payment, across a daemon restart), its preview is right; `remessa approve`
 * pays it once; `remessa reject` answers it with nothing sent; an `.approved` marker approves it, and a maker's is
 * refused; the file's owner may not approve it. Limits per row, per file and per day (across files and a restart).
 *
 * Who did what is the OS owner of the file (src/store/approvals.ts rule 3). The tests run as root, which is also the
 * account the daemon runs as: a file it takes owned by root has no maker that can be told. So files that wait are
 * dropped owned by MAKER_UID (the clerk who sends them), markers written owned by APPROVER_UID (the manager);
 * neither uid has a name in /etc/passwd, so they read `uid 23456` and `uid 12345`. `remessa approve` runs as root.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import iconv from 'iconv-lite';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildBankSlipBarCode } from '../src/formats/index.js';
import {
  answersOf,
  drop,
  dropIn,
  EXAMPLES,
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

/** The clerk who sends the files (their OS owner), and the manager who approves them. */
const MAKER_UID = 23456;
const APPROVER_UID = 12345;

let sandbox: SandboxProcess;
const daemons: Proc[] = [];
let billSet = 0;

beforeAll(async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-approval-'));
  sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'));
}, 60_000);

afterEach(async () => {
  await Promise.all(daemons.splice(0).map((d) => stopDaemon(d)));
});

afterAll(async () => {
  await sandbox?.stop();
});

/** A bill-payments CSV of synthetic payable slips (a new set of bills per call), one row per amount in cents. */
function billsCsv(amounts: readonly number[]): { text: string; barCodes: string[] } {
  billSet++;
  const barCodes = amounts.map((cents, i) =>
    buildBankSlipBarCode({
      bankCode: '341',
      dueDate: '2030-08-31',
      amountCents: cents,
      freeField: `10900001234567${String(billSet).padStart(3, '0')}${String(i).padStart(8, '0')}`,
    }),
  );
  const lines = ['barCode,amount', ...barCodes.map((b, i) => `${b},${(amounts[i]! / 100).toFixed(2)}`)];
  return { text: `${lines.join('\n')}\n`, barCodes };
}

async function paidCount(): Promise<number> {
  return (await sandbox.effects('bill_paid')).reduce((n, e) => n + e.count, 0);
}

async function daemonOn(ws: Workspace): Promise<Proc> {
  const d = startDaemon(ws);
  daemons.push(d);
  await waitFor('the daemon to be ready', () => /remessa daemon ready/.test(d.stderr() + d.stdout()), 60_000);
  return d;
}

async function restart(ws: Workspace, d: Proc): Promise<Proc> {
  expect(await stopDaemon(d)).toBe(0);
  daemons.splice(daemons.indexOf(d), 1);
  return daemonOn(ws);
}

/** Writes an `.approved` marker in the inbox (`inbox/<relative>`) as the OS user `uid` (the manager by default). */
function marker(ws: Workspace, relative: string, text: string, uid = APPROVER_UID): Promise<void> {
  return dropIn(ws.inbox, Buffer.from(text), relative, { uid });
}

function cli(ws: Workspace, ...args: string[]) {
  return runCli([...args, '--config', ws.config], { env: { REMESSA_LOG_LEVEL: 'warn' } });
}

/** The preview of the (latest) taking of `<stem>.csv`: `<stem>.<taking>.preview.csv` (answers are named by taking). */
async function previewFile(ws: Workspace, kind: string, stem: string): Promise<string | undefined> {
  const names = await fs.readdir(path.join(ws.outbox, kind)).catch(() => [] as string[]);
  const mine = names.filter((n) => new RegExp(`^${stem}\\.\\d{8}T\\d{6}Z-[0-9a-f]{8}\\.preview\\.csv$`).test(n)).sort();
  return mine.length > 0 ? path.join(ws.outbox, kind, mine.at(-1)!) : undefined;
}

/** The refusal note of a marker of `<stem>.csv`, beside its preview (`.v2` and on: the later refusals). */
async function refusalOf(ws: Workspace, stem: string, version = 1): Promise<string> {
  return waitFor(
    `the refusal${version === 1 ? '' : ` v${version}`}`,
    async () => {
      const preview = await previewFile(ws, 'bill-payments', stem);
      const note = preview?.replace(/\.preview\.csv$/, `.approval-refused${version === 1 ? '' : `.v${version}`}.txt`);
      return note ? fs.readFile(note, 'utf8').catch(() => undefined) : undefined;
    },
    30_000,
  );
}

async function previewOf(ws: Workspace, stem: string): Promise<Array<Record<string, string>>> {
  const text = await waitFor(
    'the preview',
    async () => {
      const file = await previewFile(ws, 'bill-payments', stem);
      return file ? fs.readFile(file, 'utf8').catch(() => undefined) : undefined;
    },
    60_000,
  );
  return parseResultCsv(text);
}

function batchRow(ws: Workspace, fileName: string): { id: string; status: string } {
  const db = new Database(path.join(ws.data, 'remessa.sqlite'), { readonly: true });
  try {
    return db.prepare('SELECT id, status FROM batches WHERE file_name = ?').get(fileName) as {
      id: string;
      status: string;
    };
  } finally {
    db.close();
  }
}

describe('a bill-payments file that waits for approval', () => {
  it('is looked up, previewed and not paid (across a restart); its owner may not approve it; approve pays it once', async () => {
    const ws = await makeWorkspace(sandbox.url, {
      approval: { kinds: ['bill-payments'], pollMs: 200 },
      limits: { 'bill-payments': { perFile: '100.00' } },
    });
    let daemon = await daemonOn(ws);
    const paidBefore = await paidCount();
    const { text, barCodes } = billsCsv([12_345, 6_789]);
    await drop(ws, Buffer.from(text), 'bill-payments/fornecedores.csv', { uid: MAKER_UID });

    const preview = await previewOf(ws, 'fornecedores');
    const rows = preview.filter((r) => /^\d{44}$/.test(r.barCode ?? ''));
    expect(rows.map((r) => [r.barCode, r.preview, r.amountToPay, r.chargedAmount, r.billStatus, r.dueDate])).toEqual([
      [barCodes[0], 'to pay', '123.45', '123.45', 'PENDING_PAYMENT', '2030-08-31T00:00:00'],
      [barCodes[1], 'to pay', '67.89', '67.89', 'PENDING_PAYMENT', '2030-08-31T00:00:00'],
    ]);
    for (const r of rows) expect(r.beneficiary).not.toBe('');
    const total = preview.find((r) => r.barCode === 'TOTAL to pay');
    expect(total?.preview).toBe('2 linhas');
    expect(total?.amountToPay).toBe('191.34');
    const waits = preview.filter((r) => r.barCode?.startsWith('WAITS:')).map((r) => r.barCode);
    expect(waits).toEqual(['WAITS: APPROVAL_REQUIRED', 'WAITS: LIMIT_PER_FILE']);
    expect(preview.find((r) => r.barCode === 'WAITS: LIMIT_PER_FILE')?.preview).toMatch(/R\$ 191,34.*R\$ 100,00/);
    expect(batchRow(ws, 'fornecedores.csv').status).toBe('awaiting_approval');

    // A restart does not let it go: still waiting, nothing paid, no answer.
    daemon = await restart(ws, daemon);
    await new Promise((r) => setTimeout(r, 1500));
    expect(await paidCount()).toBe(paidBefore);
    expect(batchRow(ws, 'fornecedores.csv').status).toBe('awaiting_approval');
    expect(await answersOf(ws, 'bill-payments', 'fornecedores')).toEqual([]);

    // The file's owner (the OS user who dropped it) may not approve it (approval.forbidSameAsOwner, on by default),
    // not even by writing its name as --by while another OS user runs the command.
    const owner = `uid ${MAKER_UID}`;
    const refused = await cli(ws, 'approve', 'fornecedores.csv', '--by', owner);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe(
      `não decidido: ${owner} é dono do arquivo (quem o preparou) e approval.forbidSameAsOwner está ligado: outra pessoa deve aprová-lo\n`,
    );
    const refusedEn = await cli(ws, 'approve', 'fornecedores.csv', '--by', owner, '--locale', 'en');
    expect(refusedEn.code).toBe(1);
    expect(refusedEn.stdout).toMatch(/^not decided: .* owns the file/);
    expect(batchRow(ws, 'fornecedores.csv').status).toBe('awaiting_approval');

    const id = batchRow(ws, 'fornecedores.csv').id;
    const approved = await cli(ws, 'approve', id.slice(0, 10), '--by', 'Maria Conferente');
    expect(approved.stderr).toBe('');
    expect(approved.code).toBe(0);
    expect(approved.stdout).toMatch(
      /^fornecedores\.csv \(\d{8}T\d{6}Z-[0-9a-f]{8}\): aprovado por Maria Conferente \(usuário do sistema root\) em \d\d\/\d\d\/\d{4} \d\d:\d\d:\d\d; o daemon o paga em instantes/,
    );

    const answer = await waitForAnswer(ws, 'bill-payments', 'fornecedores');
    expect(answer.type).toBe('result');
    expect(parseResultCsv(answer.text).map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
    expect(await paidCount()).toBe(paidBefore + 2);
    for (const e of await sandbox.effects('bill_paid')) expect(e.count).toBe(1);
    // Archived once answered; the decision is kept with who and when.
    await waitFor(
      'the archive',
      async () => (await fs.readdir(path.join(ws.archive, 'bill-payments')).catch(() => [])).length === 1,
    );
    const db = new Database(path.join(ws.data, 'remessa.sqlite'), { readonly: true });
    const decision = db
      .prepare('SELECT state, decided_by, decided_user, decided_at, decided_via, owner FROM approvals')
      .get() as Record<string, string>;
    db.close();
    expect(decision).toMatchObject({
      state: 'approved',
      decided_by: 'Maria Conferente',
      decided_user: os.userInfo().username,
      decided_via: 'command',
      owner,
    });
    expect(Date.parse(decision.decided_at!)).toBeGreaterThan(Date.now() - 120_000);

    // A second decision is refused.
    const late = await cli(ws, 'reject', id, '--by', 'Ana', '--note', 'late', '--locale', 'en');
    expect(late.code).toBe(1);
    expect(late.stdout).toMatch(
      /^not decided: Batch \S+ \(fornecedores\.csv\) was approved already by Maria Conferente/,
    );
    expect(await paidCount()).toBe(paidBefore + 2);
  }, 150_000);

  it('rejected: answered with every row rejected and the note, nothing sent', async () => {
    const ws = await makeWorkspace(sandbox.url, { approval: { kinds: ['bill-payments'], pollMs: 200 } });
    await daemonOn(ws);
    const paidBefore = await paidCount();
    await drop(ws, Buffer.from(billsCsv([5_000, 6_000, 7_000]).text), 'bill-payments/errado.csv', { uid: MAKER_UID });
    await previewOf(ws, 'errado');
    const r = await cli(ws, 'reject', 'errado.csv', '--by', 'Ana Gerente', '--note', 'fornecedor errado');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^errado\.csv \(\d{8}T\d{6}Z-[0-9a-f]{8}\): rejeitado por Ana Gerente \(usuário do sistema root\) em \d\d\/\d\d\/\d{4} \d\d:\d\d:\d\d; toda linha é respondida `rejected`, nada foi enviado\n$/,
    );
    const answer = await waitForAnswer(ws, 'bill-payments', 'errado');
    const rows = parseResultCsv(answer.text);
    expect(rows.map((x) => [x.status, x.errorCode])).toEqual(Array(3).fill(['rejected', 'APPROVAL_REJECTED']));
    for (const x of rows)
      expect(x.errorMessage).toMatch(
        /^Rejeitado por Ana Gerente em \d\d\/\d\d\/\d{4} \d\d:\d\d:\d\d: fornecedor errado; nada foi enviado$/,
      );
    expect(await paidCount()).toBe(paidBefore);
  }, 120_000);

  it('approved by an .approved marker; a maker named in the marker is refused', async () => {
    const ws = await makeWorkspace(sandbox.url, {
      approval: { kinds: ['bill-payments'], pollMs: 200, makers: ['joao.faturista'] },
    });
    await daemonOn(ws);
    const paidBefore = await paidCount();
    await drop(ws, Buffer.from(billsCsv([4_321]).text), 'bill-payments/lote.csv', { uid: MAKER_UID });
    await previewOf(ws, 'lote');

    await marker(ws, 'bill-payments/lote.csv.approved', 'joao.faturista\n');
    const refusal = await refusalOf(ws, 'lote');
    expect(refusal).toBe(
      'lote.csv.approved não aprovou lote.csv: nada foi enviado, o arquivo continua aguardando.\n\n' +
        'APPROVAL_REFUSED: joao.faturista consta em approval.makers (prepara arquivos): outra pessoa deve aprová-lo\n',
    );
    // A second refused marker leaves its own note: the first is never overwritten.
    await marker(ws, 'bill-payments/lote.approved', 'JOAO.FATURISTA\n');
    expect(await refusalOf(ws, 'lote', 2)).toContain('APPROVAL_REFUSED: JOAO.FATURISTA consta em approval.makers');
    expect(await refusalOf(ws, 'lote')).toBe(refusal);
    expect(await paidCount()).toBe(paidBefore);
    expect(batchRow(ws, 'lote.csv').status).toBe('awaiting_approval');

    await marker(ws, 'bill-payments/lote.approved', 'Carla Tesouraria\n');
    const answer = await waitForAnswer(ws, 'bill-payments', 'lote');
    expect(parseResultCsv(answer.text).map((r) => r.status)).toEqual(['succeeded']);
    expect(await paidCount()).toBe(paidBefore + 1);
    // The marker is not taken as a batch: it is archived with the decision.
    expect(await fs.readdir(path.join(ws.inbox, 'bill-payments'))).toEqual([]);
    expect((await fs.readdir(path.join(ws.archive, 'approvals'))).length).toBe(3);
    await expect(fs.stat(path.join(ws.outbox, 'bill-payments', 'lote.approved.rejected.txt'))).rejects.toThrow();
  }, 120_000);
});

describe('who approves is the OS user who did it, not the name written (maker-checker)', () => {
  it("a marker the sender wrote with his manager's name is refused, a link too, nothing paid; the manager's pays once", async () => {
    const ws = await makeWorkspace(sandbox.url, { approval: { kinds: ['bill-payments'], pollMs: 200 } });
    await daemonOn(ws);
    const paidBefore = await paidCount();
    await drop(ws, Buffer.from(billsCsv([3_456]).text), 'bill-payments/pagamentos.csv', { uid: MAKER_UID });
    await previewOf(ws, 'pagamentos');

    // The clerk who dropped the file drops the marker too, holding his manager's name.
    await marker(ws, 'bill-payments/pagamentos.approved', 'maria\n', MAKER_UID);
    expect(await refusalOf(ws, 'pagamentos')).toBe(
      'pagamentos.approved não aprovou pagamentos.csv: nada foi enviado, o arquivo continua aguardando.\n\n' +
        `APPROVAL_REFUSED: pagamentos.approved foi gravado pelo usuário do sistema uid ${MAKER_UID}, o mesmo que ` +
        'enviou o arquivo, e approval.forbidSameAsOwner está ligado: quem aprova é quem grava o marcador, não o nome ' +
        'escrito nele (maria). Outra pessoa deve aprová-lo, com o seu próprio usuário\n',
    );
    // A link to a file of the manager's (symbolic, or hard) is not hers to give: refused, never read.
    const hers = path.join(ws.dir, 'maria.txt');
    await fs.writeFile(hers, 'maria\n');
    await fs.chown(hers, APPROVER_UID, APPROVER_UID);
    await fs.symlink(hers, path.join(ws.inbox, 'bill-payments', 'pagamentos.approved'));
    expect(await refusalOf(ws, 'pagamentos', 2)).toMatch(
      /\n\nAPPROVAL_MARKER_LINK: pagamentos\.approved é um link \(simbólico, ou um arquivo com mais de um nome\)/,
    );
    await fs.link(hers, path.join(ws.inbox, 'bill-payments', 'pagamentos.approved'));
    expect(await refusalOf(ws, 'pagamentos', 3)).toMatch(/APPROVAL_MARKER_LINK/);
    await new Promise((r) => setTimeout(r, 1000));
    expect(await paidCount()).toBe(paidBefore);
    expect(batchRow(ws, 'pagamentos.csv').status).toBe('awaiting_approval');
    expect(await answersOf(ws, 'bill-payments', 'pagamentos')).toEqual([]);

    // The manager's own marker: paid once, her OS user recorded beside the name she wrote.
    await marker(ws, 'bill-payments/pagamentos.approved', 'maria\n');
    const answer = await waitForAnswer(ws, 'bill-payments', 'pagamentos');
    expect(parseResultCsv(answer.text).map((r) => r.status)).toEqual(['succeeded']);
    expect(await paidCount()).toBe(paidBefore + 1);
    for (const e of await sandbox.effects('bill_paid')) expect(e.count).toBe(1);
    const db = new Database(path.join(ws.data, 'remessa.sqlite'), { readonly: true });
    const decision = db.prepare('SELECT decided_by, decided_user, decided_via, owner FROM approvals').get();
    db.close();
    expect(decision).toEqual({
      decided_by: 'maria',
      decided_user: `uid ${APPROVER_UID}`,
      decided_via: 'marker',
      owner: `uid ${MAKER_UID}`,
    });
  }, 120_000);

  it('a file sent by the account remessa runs as (root here): approve run by that same account is refused', async () => {
    const ws = await makeWorkspace(sandbox.url, { approval: { kinds: ['bill-payments'], pollMs: 200 } });
    await daemonOn(ws);
    const paidBefore = await paidCount();
    await drop(ws, Buffer.from(billsCsv([7_654]).text), 'bill-payments/proprio.csv');
    const preview = await previewOf(ws, 'proprio');
    expect(preview.find((r) => r.barCode === 'FILE')?.preview).toMatch(/, dono desconhecido$/);

    const refused = await cli(ws, 'approve', 'proprio.csv', '--by', 'Maria Gerente');
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(
      /^não decidido: Não se sabe quem enviou o arquivo \(dono: desconhecido\) e approval\.forbidSameAsOwner está ligado/,
    );
    const en = await cli(ws, 'approve', 'proprio.csv', '--by', 'Maria Gerente', '--locale', 'en');
    expect(en.stdout).toMatch(/^not decided: Who sent the file is not known \(owner: unknown\).*Reject it/);
    // Nor by a marker of another OS user: who made the file cannot be told.
    await marker(ws, 'bill-payments/proprio.approved', 'Maria Gerente\n');
    expect(await refusalOf(ws, 'proprio')).toMatch(/\n\nAPPROVAL_REFUSED: Não se sabe quem enviou o arquivo/);
    await new Promise((r) => setTimeout(r, 1000));
    expect(await paidCount()).toBe(paidBefore);
    expect(batchRow(ws, 'proprio.csv').status).toBe('awaiting_approval');
  }, 120_000);

  it('approval.markersFrom: a marker in the inbox is not looked at; one in the approvers folder pays', async () => {
    const approvers = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-approvers-'));
    const ws = await makeWorkspace(sandbox.url, {
      approval: { kinds: ['bill-payments'], pollMs: 200, markersFrom: approvers },
    });
    await daemonOn(ws);
    const paidBefore = await paidCount();
    await drop(ws, Buffer.from(billsCsv([1_111]).text), 'bill-payments/folha.csv', { uid: MAKER_UID });
    // The preview tells the approver where a marker is read: the approvers' folder, not beside the file in the inbox.
    const decide = (await previewOf(ws, 'folha')).find((r) => r.barCode === 'DECIDE')?.preview;
    expect(decide).toContain(
      `ou deixe folha.approved com o seu nome na pasta dos aprovadores ${path.join(approvers, 'bill-payments')}`,
    );
    expect(decide).not.toContain('caixa de entrada');
    await marker(ws, 'bill-payments/folha.approved', 'maria\n');
    await new Promise((r) => setTimeout(r, 1500));
    expect(await paidCount()).toBe(paidBefore);
    expect(batchRow(ws, 'folha.csv').status).toBe('awaiting_approval');

    await dropIn(approvers, Buffer.from('maria\n'), 'bill-payments/folha.approved', { uid: APPROVER_UID });
    const answer = await waitForAnswer(ws, 'bill-payments', 'folha');
    expect(parseResultCsv(answer.text).map((r) => r.status)).toEqual(['succeeded']);
    expect(await paidCount()).toBe(paidBefore + 1);
    expect(await fs.readdir(path.join(approvers, 'bill-payments'))).toEqual([]);
    expect(await fs.readdir(path.join(ws.archive, 'approvals'))).toHaveLength(1);
  }, 120_000);
});

describe('an .approved marker without a name', () => {
  it('empty or blank, it is refused with a note saying what it must hold (not waited on); with a name, it pays', async () => {
    const ws = await makeWorkspace(sandbox.url, { approval: { kinds: ['bill-payments'], pollMs: 200 } });
    const daemon = await daemonOn(ws);
    const paidBefore = await paidCount();
    await drop(ws, Buffer.from(billsCsv([2_222]).text), 'bill-payments/vazio.csv', { uid: MAKER_UID });
    await previewOf(ws, 'vazio');

    // 0 bytes: refused once it has stayed so for intake.stableMs (100 ms here), archived, the file still waits.
    await marker(ws, 'bill-payments/vazio.approved', '');
    expect(await refusalOf(ws, 'vazio')).toBe(
      'vazio.approved não aprovou vazio.csv: nada foi enviado, o arquivo continua aguardando.\n\n' +
        'APPROVAL_MARKER_EMPTY: Esperava em vazio.approved o nome de quem aprova na primeira linha (ex.: Maria Silva), ' +
        'veio um arquivo vazio. Escreva-o de novo com o nome\n',
    );
    // Only blanks: the same, as the next note (the first one is kept).
    await marker(ws, 'bill-payments/vazio.csv.approved', '  \n\t\n');
    expect(await refusalOf(ws, 'vazio', 2)).toBe(
      'vazio.csv.approved não aprovou vazio.csv: nada foi enviado, o arquivo continua aguardando.\n\n' +
        'APPROVAL_MARKER_EMPTY: Esperava em vazio.csv.approved o nome de quem aprova na primeira linha ' +
        '(ex.: Maria Silva), veio só espaços e linhas em branco. Escreva-o de novo com o nome\n',
    );
    await waitFor(
      'the markers archived',
      async () => (await fs.readdir(path.join(ws.inbox, 'bill-payments'))).length === 0,
    );
    expect(await fs.readdir(path.join(ws.archive, 'approvals'))).toHaveLength(2);
    expect(batchRow(ws, 'vazio.csv').status).toBe('awaiting_approval');
    expect(await paidCount()).toBe(paidBefore);
    // The log says it too (in English, for operators).
    expect(daemon.stdout() + daemon.stderr()).toMatch(/APPROVAL_MARKER_EMPTY.*approval marker refused: it is empty/);

    await marker(ws, 'bill-payments/vazio.approved', '\n  Carla Tesouraria \n');
    const answer = await waitForAnswer(ws, 'bill-payments', 'vazio');
    expect(parseResultCsv(answer.text).map((r) => r.status)).toEqual(['succeeded']);
    expect(await paidCount()).toBe(paidBefore + 1);
  }, 120_000);
});

describe('an .approved marker older than the preview', () => {
  it('dropped with its file, it approves nothing (refused, archived); written again after the preview, it pays', async () => {
    const ws = await makeWorkspace(sandbox.url, { approval: { kinds: ['bill-payments'], pollMs: 200 } });
    const paidBefore = await paidCount();
    // The uploading account drops its own approval with the file, before any preview exists.
    await fs.mkdir(path.join(ws.inbox, 'bill-payments'), { recursive: true });
    await marker(ws, 'bill-payments/cedo.approved', 'Carla Tesouraria\n');
    await drop(ws, Buffer.from(billsCsv([1_234]).text), 'bill-payments/cedo.csv', { uid: MAKER_UID });
    await daemonOn(ws);
    await previewOf(ws, 'cedo');
    const refusal = await refusalOf(ws, 'cedo');
    expect(refusal).toMatch(/APPROVAL_BEFORE_PREVIEW: Lote .* esperava uma decisão tomada depois da prévia/);
    expect(await paidCount()).toBe(paidBefore);
    expect(batchRow(ws, 'cedo.csv').status).toBe('awaiting_approval');
    expect(await fs.readdir(path.join(ws.inbox, 'bill-payments'))).toEqual([]);

    await marker(ws, 'bill-payments/cedo.approved', 'Carla Tesouraria\n');
    const answer = await waitForAnswer(ws, 'bill-payments', 'cedo');
    expect(parseResultCsv(answer.text).map((r) => r.status)).toEqual(['succeeded']);
    expect(await paidCount()).toBe(paidBefore + 1);
  }, 120_000);
});

describe('without a daemon: remessa run', () => {
  it('leaves a bill file and a Pix file waiting (exit 3, previews, nothing sent); after approve the next run pays them', async () => {
    const ws = await makeWorkspace(sandbox.url, { approval: { kinds: ['bill-payments', 'pix-payments'] } });
    const paidBefore = await paidCount();
    const pixBefore = (await sandbox.effects()).filter((e) => e.kind.startsWith('pix')).length;
    await drop(ws, Buffer.from(billsCsv([2_500]).text), 'bill-payments/noturno.csv', { uid: MAKER_UID });
    await drop(ws, path.join(EXAMPLES, 'pix-payments.csv'), 'pix-payments/pix-noturno.csv', { uid: MAKER_UID });

    const first = await cli(ws, 'run');
    expect(first.code).toBe(3);
    expect(first.stdout).toMatch(/noturno\.csv: aguarda aprovação .*noturno\.\S+\.preview\.csv/);
    expect(first.stdout).toMatch(/pix-noturno\.csv: aguarda aprovação/);
    const pix = parseResultCsv(await fs.readFile((await previewFile(ws, 'pix-payments', 'pix-noturno'))!));
    expect(pix.slice(0, 2).map((r) => [r.preview, r.amountToPay, r.beneficiary, r.beneficiaryCity])).toEqual([
      ['to pay', '100.00', 'Fornecedor Exemplo Ltda', 'Sao Paulo'],
      ['to pay', '45.50', 'Padaria Pao Quente', 'Campinas'],
    ]);
    // Not even the Pix initialization (it has an effect at the bank): nothing of either file reached it.
    expect((await sandbox.effects()).filter((e) => e.kind.startsWith('pix')).length).toBe(pixBefore);
    expect(await paidCount()).toBe(paidBefore);
    const status = await cli(ws, 'status', '--locale', 'en');
    expect(status.stdout.match(/\[awaiting_approval\]/g)?.length).toBe(2);

    expect((await cli(ws, 'approve', 'noturno.csv', '--by', 'Carla')).code).toBe(0);
    expect((await cli(ws, 'approve', 'pix-noturno.csv', '--by', 'Carla')).code).toBe(0);
    const second = await cli(ws, 'run');
    expect(second.stdout).toMatch(/noturno\.csv: succeeded 1/);
    expect(second.stdout).toMatch(/pix-noturno\.csv: succeeded 2/);
    expect(second.code).toBe(0);
    expect(await paidCount()).toBe(paidBefore + 1);
    expect((await sandbox.effects('pix_paid')).length).toBeGreaterThanOrEqual(2);
  }, 120_000);
});

describe('the preview of a Brazilian sheet (;, 1.234,56, Windows-1252), as Excel opens it', () => {
  it('writes the bar code and the CNPJ as text (="...") and the due date dd/mm/yyyy, as the answer does', async () => {
    // Before: the 44-digit bar code echoed bare (Excel shows 3,41913E+43: the approver cannot tell which bill), the
    // beneficiary's CNPJ bare, the due date as the bank's 2030-08-31T00:00:00.
    const ws = await makeWorkspace(sandbox.url, { approval: { kinds: ['bill-payments'] } });
    const { barCodes } = billsCsv([12_345]);
    const sheet = ['Pagamentos;;', 'Código de barras;Valor;Data de pagamento', `${barCodes[0]};123,45;`, ';;', ''];
    await drop(ws, iconv.encode(sheet.join('\r\n'), 'windows-1252'), 'bill-payments/planilha.csv', { uid: MAKER_UID });
    expect((await cli(ws, 'run')).code).toBe(3);
    const text = iconv.decode(await fs.readFile((await previewFile(ws, 'bill-payments', 'planilha'))!), 'windows-1252');
    const [header, row] = text.split('\r\n');
    const columns = header!.split(';');
    const cells = row!.split(';');
    const cell = (name: string) => cells[columns.indexOf(name)];
    // `="..."` in CSV quotes: Excel opens it as the text of the digits.
    expect(cell('Código de barras')).toBe(`"=""${barCodes[0]}"""`);
    expect(cell('beneficiaryDocument')).toMatch(/^"=""\d{14}"""$/);
    expect(cell('dueDate')).toBe('31/08/2030');
    expect([cell('preview'), cell('amountToPay'), cell('chargedAmount')]).toEqual(['to pay', '123,45', '123,45']);
  }, 120_000);
});

describe('remessa run FILE, the file outside the inbox', () => {
  /** A bill file written outside the inbox (an ERP's export folder): `run` reads it where it is. */
  async function outsideFile(ws: Workspace, name: string, cents: number[]): Promise<string> {
    const file = path.join(ws.dir, 'exports', 'bill-payments', name);
    await fs.mkdir(path.dirname(file), { recursive: true });
    await fs.writeFile(file, billsCsv(cents).text);
    await fs.chown(file, MAKER_UID, MAKER_UID);
    return file;
  }

  /** Every taking of `fileName` in the store: its batch's status and how many answer versions it has. */
  function takings(ws: Workspace, fileName: string): Array<{ status: string; answer_version: number }> {
    const db = new Database(path.join(ws.data, 'remessa.sqlite'), { readonly: true });
    try {
      return db
        .prepare(
          'SELECT b.status, i.answer_version FROM intakes i JOIN batches b ON b.id = i.batch_id WHERE i.file_name = ?',
        )
        .all(fileName) as Array<{ status: string; answer_version: number }>;
    } finally {
      db.close();
    }
  }

  it('once approved, the next plain run pays it and says so; the path given again is that answer, no second batch', async () => {
    const ws = await makeWorkspace(sandbox.url, { approval: { kinds: ['bill-payments'] } });
    const paidBefore = await paidCount();
    const outside = await outsideFile(ws, 'fora.csv', [1_500, 2_500]);

    const first = await cli(ws, 'run', outside);
    expect(first.code).toBe(3);
    expect(first.stdout).toMatch(/fora\.csv: aguarda aprovação .*fora\.\S+\.preview\.csv/);
    expect((await cli(ws, 'approve', 'fora.csv', '--by', 'Carla')).code).toBe(0);

    // As `approve` says: the next run pays it, though its file is not in the inbox, and names it with its answer.
    const plain = await cli(ws, 'run');
    const result = /-> (\S+fora\.\S+\.result\.csv)\n/.exec(plain.stdout)?.[1];
    expect(plain.stdout).toBe(`${outside}: succeeded 2 -> ${result}\n`);
    expect(plain.code).toBe(0);
    expect(await paidCount()).toBe(paidBefore + 2);
    expect(takings(ws, 'fora.csv')).toEqual([{ status: 'done', answer_version: 1 }]);

    // The same file given again is the taking that was approved: its answer, not a second batch of duplicates.
    const again = await cli(ws, 'run', outside);
    expect(again.stdout).toBe(`${outside}: succeeded 2 -> ${result}\n`);
    expect(again.code).toBe(0);
    expect(await paidCount()).toBe(paidBefore + 2);
    expect(takings(ws, 'fora.csv')).toEqual([{ status: 'done', answer_version: 1 }]);
    for (const e of await sandbox.effects('bill_paid')) expect(e.count).toBe(1);
  }, 120_000);

  it('approved while a daemon runs, the daemon pays it within approval.pollMs; run FILE afterwards reports that answer', async () => {
    const ws = await makeWorkspace(sandbox.url, { approval: { kinds: ['bill-payments'], pollMs: 200 } });
    const paidBefore = await paidCount();
    const outside = await outsideFile(ws, 'exportado.csv', [3_100]);
    expect((await cli(ws, 'run', outside)).code).toBe(3);

    const daemon = await daemonOn(ws);
    expect((await cli(ws, 'approve', 'exportado.csv', '--by', 'Carla')).code).toBe(0);
    const answer = await waitForAnswer(ws, 'bill-payments', 'exportado', 30_000);
    expect(parseResultCsv(answer.text).map((r) => r.status)).toEqual(['succeeded']);
    expect(await paidCount()).toBe(paidBefore + 1);
    expect(await stopDaemon(daemon)).toBe(0);
    daemons.splice(daemons.indexOf(daemon), 1);

    const again = await cli(ws, 'run', outside);
    expect(again.stdout).toBe(`${outside}: succeeded 1 -> ${answer.file}\n`);
    expect(again.code).toBe(0);
    expect(await paidCount()).toBe(paidBefore + 1);
    expect(takings(ws, 'exportado.csv')).toEqual([{ status: 'done', answer_version: 1 }]);
  }, 120_000);
});

describe('a copy of a file that waits for approval', () => {
  it('is answered duplicate, and run exits 1: nothing of it is paid (it exited 0, "all succeeded")', async () => {
    const ws = await makeWorkspace(sandbox.url, { approval: { kinds: ['bill-payments'] } });
    const paidBefore = await paidCount();
    const text = billsCsv([3_300]).text;
    await drop(ws, Buffer.from(text), 'bill-payments/original.csv', { uid: MAKER_UID });
    expect((await cli(ws, 'run')).code).toBe(3);
    // Its rows were never sent: pending, not uncertain ("cannot tell whether the bank acted"), as retry said.
    const retry = await cli(ws, 'retry');
    expect(retry.stdout).toMatch(/original\.csv .*: aguarda aprovação .*nada dele é enviado antes da decisão/);
    expect(retry.stdout).not.toMatch(/uncertain/);
    await drop(ws, Buffer.from(text), 'bill-payments/copia.csv', { uid: MAKER_UID });
    const copy = await cli(ws, 'run', path.join(ws.inbox, 'bill-payments', 'copia.csv'));
    expect(copy.stdout).toMatch(/copia\.csv: duplicate 1/);
    expect(copy.code).toBe(1);
    expect(await paidCount()).toBe(paidBefore);
  }, 120_000);
});

describe('limits', () => {
  it('per row, per file and per day (across files and a daemon restart), with approval off', async () => {
    const ws = await makeWorkspace(sandbox.url, {
      limits: { 'bill-payments': { perRow: '100.00', perFile: '300.00', perDay: '500.00' } },
    });
    let daemon = await daemonOn(ws);
    const paidBefore = await paidCount();
    const answer = async (stem: string, amounts: number[]) => {
      await drop(ws, Buffer.from(billsCsv(amounts).text), `bill-payments/${stem}.csv`);
      return parseResultCsv((await waitForAnswer(ws, 'bill-payments', stem)).text);
    };

    // A row over perRow is invalid (the limit in its message): all-or-nothing sends none of the file.
    const perRow = await answer('linha', [15_000, 5_000]);
    expect(perRow.map((r) => [r.status, r.errorCode])).toEqual([
      ['rejected', 'LIMIT_PER_ROW'],
      ['rejected', 'BATCH_HAS_INVALID_ROWS'],
    ]);
    expect(perRow[0]!.errorMessage).toMatch(
      /amount\): Esperava no máximo 100\.00 \(limits\.bill-payments\.perRow, R\$ 100,00\), veio 150\.00/,
    );

    // A file over perFile is rejected whole.
    const perFile = await answer('arquivo', [9_000, 9_000, 9_000, 9_000]);
    expect(perFile.map((r) => r.errorCode)).toEqual(Array(4).fill('LIMIT_PER_FILE'));
    expect(perFile[0]!.errorMessage).toMatch(
      /^Não enviado: o arquivo paga R\$ 360,00, acima de limits\.bill-payments\.perFile R\$ 300,00 \(a aprovação/,
    );
    expect(await paidCount()).toBe(paidBefore);

    // Within every limit: paid. The day has used 270,00 of 500,00.
    expect((await answer('dia1', [9_000, 9_000, 9_000])).map((r) => r.status)).toEqual(Array(3).fill('succeeded'));
    expect(await paidCount()).toBe(paidBefore + 3);

    daemon = await restart(ws, daemon);
    // 270,00 + 270,00 passes 500,00: rejected whole, nothing sent.
    const over = await answer('dia2', [9_000, 9_000, 9_000]);
    expect(over.map((r) => r.errorCode)).toEqual(Array(3).fill('LIMIT_PER_DAY'));
    expect(over[0]!.errorMessage).toMatch(/R\$ 270,00 de bill-payments já foram liberados em .*R\$ 500,00/);
    expect(await paidCount()).toBe(paidBefore + 3);
    // 270,00 + 200,00 fits.
    expect((await answer('dia3', [10_000, 10_000])).map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
    expect(await paidCount()).toBe(paidBefore + 5);
    expect(await stopDaemon(daemon)).toBe(0);
  }, 180_000);
});
