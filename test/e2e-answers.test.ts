/**
 * End to end (issue 8 §2, and the long name of §4): every file dropped gets its own answer, and no answer, PDF or
 * archived input is ever overwritten; a copy of an answered file is answered as duplicates under its own name; a row
 * settled after its answer gets a new version of the answer, even when the process dies between the two; a file name
 * of 250 characters is answered like any other.
 *
 * The sandbox runs in its own process; the daemon (or `run`) as a child process, so the crash points are real
 * SIGKILLs (src/crash-point.ts).
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  answersOf,
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
} from './e2e-harness.js';

const HEADER =
  'type,correlationId,amount,dueDate,payer.name,payer.document,payer.address.zipCode,payer.address.publicPlace,payer.address.city,payer.address.state';
const slip = (id: string, amount: string) =>
  `BANKSLIP,${id},${amount},2027-09-30,Cliente ${id},390.533.447-05,01310-100,Rua A,São Paulo,SP`;
const csv = (...rows: string[]) => `${[HEADER, ...rows].join('\n')}\n`;
const INTAKE_TAIL = /\.\d{8}T\d{6}Z-[0-9a-f]{8}$/;

let sandbox: SandboxProcess;
const daemons: Proc[] = [];

beforeAll(async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-answers-sb-'));
  sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'));
}, 60_000);

afterAll(async () => {
  for (const d of daemons) if (d.child.exitCode === null && d.child.signalCode === null) d.child.kill('SIGKILL');
  await sandbox?.stop();
});

const created = async () => (await sandbox.effects('charge_created')).length;

/** The notes asserted here are the English catalogue's: this file tests naming and versions, not the language. */
async function inEnglish(w: Workspace): Promise<void> {
  const config = JSON.parse(await fs.readFile(w.config, 'utf8')) as Record<string, unknown>;
  await fs.writeFile(w.config, JSON.stringify({ ...config, locale: 'en' }));
}

describe('each file its own answer', () => {
  let ws: Workspace;
  beforeAll(async () => {
    ws = await makeWorkspace(sandbox.url);
    await inEnglish(ws);
    const daemon = startDaemon(ws);
    daemons.push(daemon);
  });
  afterAll(async () => {
    for (const d of daemons) await stopDaemon(d);
  });

  it('the same name twice: two answers, two PDF folders, two archived inputs; the first one untouched', async () => {
    const before = await created();
    const monday = csv(slip('DAY1-A', '10.00'), slip('DAY1-B', '11.00'));
    const tuesday = csv(slip('DAY2-A', '20.00'), slip('DAY2-B', '21.00'));
    await drop(ws, Buffer.from(monday), 'charges/cobrancas.csv');
    const [first] = await waitFor('the first answer', async () => {
      const a = await answersOf(ws, 'charges', 'cobrancas');
      return a.length === 1 && a[0]!.summaries.length === 1 ? a : undefined;
    });
    const firstText = await fs.readFile(first!.results[0]!, 'utf8');
    const firstSummary = await fs.readFile(first!.summaries[0]!, 'utf8');
    const firstPdf = await fs.readFile(path.join(ws.outbox, 'charges', first!.base, 'DAY1-A.pdf'));

    await drop(ws, Buffer.from(tuesday), 'charges/cobrancas.csv');
    const answers = await waitFor('the second answer', async () => {
      const a = await answersOf(ws, 'charges', 'cobrancas');
      return a.length === 2 && a.every((x) => x.summaries.length === 1) ? a : undefined;
    });
    const second = answers.find((a) => a.base !== first!.base)!;
    expect(first!.base).toMatch(/^cobrancas\.\d{8}T\d{6}Z-[0-9a-f]{8}$/);
    expect(second.base).toMatch(/^cobrancas\.\d{8}T\d{6}Z-[0-9a-f]{8}$/);

    // The first answer, its summary and its PDFs are exactly as they were; the second has its own.
    expect(await fs.readFile(first!.results[0]!, 'utf8')).toBe(firstText);
    expect(await fs.readFile(first!.summaries[0]!, 'utf8')).toBe(firstSummary);
    expect(await fs.readFile(path.join(ws.outbox, 'charges', first!.base, 'DAY1-A.pdf'))).toEqual(firstPdf);
    expect((await fs.readdir(path.join(ws.outbox, 'charges', first!.base))).sort()).toEqual([
      'DAY1-A.pdf',
      'DAY1-B.pdf',
    ]);
    expect((await fs.readdir(path.join(ws.outbox, 'charges', second.base))).sort()).toEqual([
      'DAY2-A.pdf',
      'DAY2-B.pdf',
    ]);
    const rows1 = parseResultCsv(firstText);
    const rows2 = parseResultCsv(await fs.readFile(second.results[0]!, 'utf8'));
    expect(rows1.map((r) => [r.correlationId, r.status])).toEqual([
      ['DAY1-A', 'succeeded'],
      ['DAY1-B', 'succeeded'],
    ]);
    expect(rows2.map((r) => [r.correlationId, r.status])).toEqual([
      ['DAY2-A', 'succeeded'],
      ['DAY2-B', 'succeeded'],
    ]);
    const summary2 = JSON.parse(await fs.readFile(second.summaries[0]!, 'utf8'));
    expect(summary2).toMatchObject({
      file: 'cobrancas.csv',
      resultFile: path.basename(second.results[0]!),
      version: 1,
    });

    // Both inputs archived, each under its answer's name, each with its own bytes.
    await waitFor('both archived', async () => (await fs.readdir(path.join(ws.archive, 'charges'))).length === 2);
    expect(await fs.readFile(path.join(ws.archive, 'charges', `${first!.base}.csv`), 'utf8')).toBe(monday);
    expect(await fs.readFile(path.join(ws.archive, 'charges', `${second.base}.csv`), 'utf8')).toBe(tuesday);
    expect(await created()).toBe(before + 4);
  }, 60_000);

  it('a byte-identical copy under a new name: its own answer, every row a duplicate of the original line', async () => {
    const before = await created();
    const [original] = await answersOf(ws, 'charges', 'cobrancas');
    const bytes = await fs.readFile(path.join(ws.archive, 'charges', `${original!.base}.csv`));
    await drop(ws, bytes, 'charges/copia.csv');
    const [copy] = await waitFor('the answer to the copy', async () => {
      const a = await answersOf(ws, 'charges', 'copia');
      return a.length === 1 && a[0]!.summaries.length === 1 ? a : undefined;
    });
    const rows = parseResultCsv(await fs.readFile(copy!.results[0]!, 'utf8'));
    expect(rows.map((r) => r.status)).toEqual(['duplicate', 'duplicate']);
    rows.forEach((r, i) => {
      expect(r.errorMessage).toContain(
        `line ${i + 2} of cobrancas.csv (answered in ${original!.base}.result.csv): not sent again (original: succeeded)`,
      );
      // The original's outputs, with its PDF named from this answer's folder.
      expect(r.digitableLine).toMatch(/^\d{47}$/);
      expect(r.pdfFile).toBe(`../${original!.base}/${r.correlationId}.pdf`);
    });
    const pdf = await fs.readFile(path.join(ws.outbox, 'charges', copy!.base, rows[0]!.pdfFile!));
    expect(pdf.subarray(0, 4).toString('latin1')).toBe('%PDF');
    const summary = JSON.parse(await fs.readFile(copy!.summaries[0]!, 'utf8'));
    expect(summary).toMatchObject({
      file: 'copia.csv',
      resultFile: path.basename(copy!.results[0]!),
      counts: { duplicate: 2, succeeded: 0 },
      copyOf: { file: 'cobrancas.csv', resultFile: `${original!.base}.result.csv` },
    });
    expect(await created()).toBe(before);
    for (const e of await sandbox.effects()) expect(e.count, `${e.kind} ${e.key}`).toBe(1);
  }, 60_000);

  it('a copy answered while its original was in flight gets a new version once the original is done', async () => {
    // Its own daemon, whose time limits outlast the bank's slowness: the original must succeed, late.
    const ws = await makeWorkspace(sandbox.url, {
      bank: { timeouts: { connectMs: 2000, headersMs: 15_000, bodyMs: 15_000 } },
    });
    await inEnglish(ws);
    const daemon = startDaemon(ws);
    daemons.push(daemon);
    await sandbox.setFaults([{ route: 'POST /v1/charges', latencyMs: 4000 }]);
    try {
      const bytes = Buffer.from(csv(slip('SLOW-1', '60.00')));
      await drop(ws, bytes, 'charges/lento.csv');
      await waitFor(
        'the original taken',
        async () => (await fs.readdir(path.join(ws.data, 'work')).catch(() => [])).length === 1,
      );
      await drop(ws, bytes, 'charges/lento-copia.csv');
      const [copy] = await waitFor('the copy answered', async () => {
        const a = await answersOf(ws, 'charges', 'lento-copia');
        return a.length === 1 && a[0]!.summaries.length === 1 ? a : undefined;
      });
      const v1 = parseResultCsv(await fs.readFile(copy!.results[0]!, 'utf8'));
      expect(v1.map((r) => r.status)).toEqual(['duplicate']);
      expect(v1[0]!.errorMessage).toMatch(/\(original: not finished yet\)$/);
      expect(v1[0]!.digitableLine).toBe('');

      const [after] = await waitFor('the copy answered again', async () => {
        const a = await answersOf(ws, 'charges', 'lento-copia');
        return a[0]!.summaries.length === 2 ? a : undefined;
      });
      expect(after!.results.map((f) => path.basename(f))).toEqual([
        `${copy!.base}.result.csv`,
        `${copy!.base}.result.v2.csv`,
      ]);
      const v2 = parseResultCsv(await fs.readFile(after!.results[1]!, 'utf8'));
      expect(v2[0]!.errorMessage, JSON.stringify(v2)).toMatch(/\(original: succeeded\)$/);
      expect(v2[0]!.digitableLine).toMatch(/^\d{47}$/);
      const [original] = await answersOf(ws, 'charges', 'lento');
      expect(v2[0]!.pdfFile).toBe(`../${original!.base}/SLOW-1.pdf`);
    } finally {
      await sandbox.clearFaults();
      await stopDaemon(daemon);
    }
  }, 60_000);

  it('a 250-character file name: answered once, under a name that fits the file system', async () => {
    const before = await created();
    const name = `cobranca-${'x'.repeat(250 - 'cobranca-'.length - '.csv'.length)}.csv`;
    expect(name).toHaveLength(250);
    await drop(ws, Buffer.from(csv(slip('LONG-1', '30.00'))), `charges/${name}`);
    const answer = await waitFor('the answer to the long name', async () => {
      const files = await fs.readdir(path.join(ws.outbox, 'charges'));
      const result = files.find((f) => f.startsWith('cobranca-xxx') && f.endsWith('.result.csv'));
      const summary = files.find((f) => f.startsWith('cobranca-xxx') && f.endsWith('.summary.json'));
      return result && summary ? { result, summary } : undefined;
    });
    expect(Buffer.byteLength(answer.result)).toBeLessThanOrEqual(255);
    const base = answer.result.slice(0, -'.result.csv'.length);
    expect(base).toMatch(/^cobranca-x+~[0-9a-f]{8}\.\d{8}T\d{6}Z-[0-9a-f]{8}$/);
    const rows = parseResultCsv(await fs.readFile(path.join(ws.outbox, 'charges', answer.result), 'utf8'));
    expect(rows.map((r) => [r.correlationId, r.status])).toEqual([['LONG-1', 'succeeded']]);
    expect(await fs.readdir(path.join(ws.outbox, 'charges', base))).toEqual(['LONG-1.pdf']);
    // The summary keeps the whole name; the input is archived under the answer's name.
    expect(JSON.parse(await fs.readFile(path.join(ws.outbox, 'charges', answer.summary), 'utf8')).file).toBe(name);
    await waitFor('archived', async () => (await fs.readdir(path.join(ws.archive, 'charges'))).includes(`${base}.csv`));
    await waitFor('the work area emptied', async () => (await fs.readdir(path.join(ws.data, 'work'))).length === 0);
    expect(await created()).toBe(before + 1);
  }, 60_000);
});

describe('a row settled after its answer', () => {
  it('gets a new version of the answer, even after a crash between the row change and the rewrite', async () => {
    const ws = await makeWorkspace(sandbox.url, {
      bank: { retry: { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 20, maxRetryAfterMs: 100 } },
    });
    await inEnglish(ws);
    const file = path.join(ws.dir, 'charges-settle.csv');
    await fs.writeFile(file, csv(slip('SETTLE-1', '40.00'), slip('SETTLE-2', '41.00')));
    const env = { REMESSA_LOG_LEVEL: 'warn' };

    // 1. The bank fails every creation: both rows end uncertain, and that is the first answer.
    await sandbox.setFaults([{ route: 'POST /v1/charges', errorRate: 1, errorStatuses: [503] }]);
    const first = await runCli(['run', '--config', ws.config, file], { env });
    await sandbox.clearFaults();
    expect(first.code, first.stdout + first.stderr.slice(-2000)).toBe(3); // rows left uncertain: EXIT_UNSETTLED (src/exit-codes.ts)
    const [answer] = await answersOf(ws, 'charges', 'charges-settle');
    expect(answer!.base).toMatch(INTAKE_TAIL);
    expect(answer!.results).toHaveLength(1);
    const v1 = await fs.readFile(answer!.results[0]!, 'utf8');
    expect(parseResultCsv(v1).map((r) => r.status)).toEqual(['uncertain', 'uncertain']);

    // 2. The next run settles them, and dies right after (before any answer is rewritten).
    const crashed = await runCli(['run', '--config', ws.config], {
      env: { ...env, REMESSA_TEST_CRASH_AT: 'after-resume' },
    });
    expect(crashed.code).toBe('SIGKILL');
    const storeStates = () => {
      const db = new Database(path.join(ws.data, 'remessa.sqlite'), { readonly: true, fileMustExist: true });
      try {
        return (db.prepare('SELECT state FROM rows ORDER BY line').all() as Array<{ state: string }>).map(
          (r) => r.state,
        );
      } finally {
        db.close();
      }
    };
    expect(storeStates()).toEqual(['succeeded', 'succeeded']);
    expect((await answersOf(ws, 'charges', 'charges-settle'))[0]!.results).toHaveLength(1);

    // 3. The next start rewrites the stale answer as version 2 (and dies right after the rename: the store does
    //    not know yet that version 2 is there).
    const renamed = await runCli(['run', '--config', ws.config], {
      env: { ...env, REMESSA_TEST_CRASH_AT: 'answer-renamed' },
    });
    expect(renamed.code).toBe('SIGKILL');

    // 4. A start after that adopts version 2: no third version, the first one untouched.
    const last = await runCli(['run', '--config', ws.config], { env });
    expect(last.code, last.stdout + last.stderr.slice(-2000)).toBe(0);
    const [after] = await answersOf(ws, 'charges', 'charges-settle');
    expect(after!.results.map((f) => path.basename(f))).toEqual([
      `${answer!.base}.result.csv`,
      `${answer!.base}.result.v2.csv`,
    ]);
    expect(await fs.readFile(after!.results[0]!, 'utf8')).toBe(v1);
    const v2 = parseResultCsv(await fs.readFile(after!.results[1]!, 'utf8'));
    expect(v2.map((r) => [r.correlationId, r.status])).toEqual([
      ['SETTLE-1', 'succeeded'],
      ['SETTLE-2', 'succeeded'],
    ]);
    const summary = JSON.parse(await fs.readFile(after!.summaries.at(-1)!, 'utf8'));
    expect(summary).toMatchObject({
      version: 2,
      supersedes: `${answer!.base}.result.csv`,
      counts: { succeeded: 2, uncertain: 0 },
    });

    // 5. Nothing changed since: further starts write nothing.
    expect((await runCli(['run', '--config', ws.config], { env })).code).toBe(0);
    expect((await answersOf(ws, 'charges', 'charges-settle'))[0]!.results).toHaveLength(2);
    for (const e of await sandbox.effects()) expect(e.count, `${e.kind} ${e.key}`).toBe(1);
  }, 120_000);

  it('run FILE outside the inbox, killed before its answer was known: given again, it keeps its one taking', async () => {
    const ws = await makeWorkspace(sandbox.url);
    await inEnglish(ws);
    const file = path.join(ws.dir, 'charges-given.csv');
    await fs.writeFile(file, csv(slip('GIVEN-1', '50.00')));
    const env = { REMESSA_LOG_LEVEL: 'warn' };
    const killed = await runCli(['run', '--config', ws.config, file], {
      env: { ...env, REMESSA_TEST_CRASH_AT: 'answer-renamed' },
    });
    expect(killed.code).toBe('SIGKILL');
    const [answer] = await answersOf(ws, 'charges', 'charges-given');
    const v1 = await fs.readFile(answer!.results[0]!, 'utf8');

    const again = await runCli(['run', '--config', ws.config, file], { env });
    expect(again.code, again.stdout + again.stderr.slice(-2000)).toBe(0);
    expect(again.stdout).toContain(`-> ${answer!.results[0]!}`);
    const answers = await answersOf(ws, 'charges', 'charges-given');
    expect(answers).toHaveLength(1);
    expect(answers[0]!.results).toEqual([answer!.results[0]!]);
    expect(await fs.readFile(answer!.results[0]!, 'utf8')).toBe(v1);
    expect(parseResultCsv(v1).map((r) => r.status)).toEqual(['succeeded']);
    const status = await runCli(['status', '--config', ws.config, '--locale', 'en'], { env });
    expect(status.stdout).toContain(`-> ${answer!.base}`);
  }, 60_000);
});
