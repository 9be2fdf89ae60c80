/**
 * End to end: `remessa status`, `resolve` and `retry` as child processes against the sandbox (own process).
 *
 * - status: `--json` shape, a running batch with its rate and ETA, the same batch parked once its run is stopped,
 *   files rejected as a whole (store and outbox), filters by date, kind and state, and the config's folders found
 *   from another working directory.
 * - resolve and retry: rows left `uncertain` for real (every request to the bank answered 5xx), refused while the
 *   daemon drives the data folder; then a person settles two of them (recorded in the store, result file written
 *   again), and `retry` settles the rest once the bank answers.
 */
import fs from 'node:fs/promises';
import os, { userInfo } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildStatusReport, parseStatusDate, type StatusFilters, type StatusReport } from '../src/runner/status.js';
import { openStore, RESOLVED_AS_FAILED } from '../src/store/index.js';
import {
  answersOf,
  drop,
  EXAMPLES,
  makeWorkspace,
  parseResultCsv,
  ROOT,
  runCli,
  type SandboxProcess,
  spawnCli,
  startDaemon,
  startSandboxProcess,
  stopDaemon,
  waitFor,
  waitForAnswer,
} from './e2e-harness.js';

/** Not the config's folder nor the repository root (inside it only so that `--import tsx` resolves). */
const ELSEWHERE = path.join(ROOT, 'test');

let sandbox: SandboxProcess;

beforeAll(async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-settle-sb-'));
  sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'));
}, 60_000);

afterAll(async () => {
  await sandbox?.stop();
});

function chargesCsv(prefix: string, rows: number): string {
  const lines = [
    'type,correlationId,amount,dueDate,payer.name,payer.document,payer.address.zipCode,payer.address.publicPlace,payer.address.city,payer.address.state',
  ];
  for (let i = 0; i < rows; i++) {
    lines.push(
      `BANKSLIP,${prefix}-${i},${(10 + i).toFixed(2)},2027-08-31,Cliente,390.533.447-05,01310-100,Rua A,Recife,PE`,
    );
  }
  return `${lines.join('\n')}\n`;
}

async function statusJson(config: string, ...args: string[]): Promise<StatusReport> {
  const result = await runCli(['status', '--config', config, '--json', ...args], { cwd: ELSEWHERE });
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as StatusReport;
}

function rowCounts(dataDir: string, batchFile: string): Record<string, number> {
  const db = new Database(path.join(dataDir, 'remessa.sqlite'), { readonly: true, fileMustExist: true });
  try {
    const rows = db
      .prepare(
        `SELECT r.state, COUNT(*) AS n FROM rows r JOIN batches b ON b.batch_no = r.batch_no
         WHERE b.file_name = ? GROUP BY r.state`,
      )
      .all(batchFile) as Array<{ state: string; n: number }>;
    return Object.fromEntries(rows.map((r) => [r.state, r.n]));
  } finally {
    db.close();
  }
}

describe('remessa status', () => {
  it('a running batch with rate and ETA, parked once stopped, rejected files, filters; run from anywhere; retry ends it', async () => {
    const ws = await makeWorkspace(sandbox.url, { queue: { concurrency: 1, maxRowsInFlight: 1 } });
    // Relative folders: they follow the config file, not the working directory (which is elsewhere below).
    const cfg = JSON.parse(await fs.readFile(ws.config, 'utf8'));
    cfg.folders = { inbox: 'inbox', outbox: 'outbox', archive: 'archive', data: 'data' };
    await fs.writeFile(ws.config, JSON.stringify(cfg, null, 2));
    const files = path.join(ws.dir, 'files');
    await fs.mkdir(path.join(files, 'charges'), { recursive: true });
    const empty = path.join(files, 'charges', 'empty.csv');
    await fs.writeFile(empty, '');
    const unknown = path.join(files, 'notes.csv');
    await fs.writeFile(unknown, 'a,b\n1,2\n');
    const slow = path.join(files, 'charges', 'slow.csv');
    await fs.writeFile(slow, chargesCsv('SLOW', 24));

    // Before anything ran, a config given explicitly that leads to no store is an error, not "nothing yet".
    const none = await runCli(['status', '--config', ws.config, '--locale', 'en'], { cwd: ELSEWHERE });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain(`No store at ${path.join(ws.data, 'remessa.sqlite')}`);

    const rejected = await runCli(['run', '--config', ws.config, empty, unknown], { cwd: ELSEWHERE });
    expect(rejected.code, rejected.stderr).toBe(1);

    await sandbox.setFaults([{ route: '*', latencyMs: 150 }]);
    const run = spawnCli(['run', '--config', ws.config, slow], { cwd: ELSEWHERE });
    try {
      await waitFor(
        'the slow batch to finish a few rows',
        async () => (rowCounts(ws.data, 'slow.csv').succeeded ?? 0) >= 3,
        60_000,
        100,
      );
      const running = await statusJson(ws.config);
      expect(running.version).toBe(1);
      expect(running.store).toBe(path.join(ws.data, 'remessa.sqlite'));
      expect(running.driver?.pid).toBe(run.child.pid);
      const batch = running.batches.find((b) => b.fileName === 'slow.csv')!;
      expect(batch).toMatchObject({ kind: 'charges', state: 'running', storeStatus: 'running', rows: 24 });
      expect(batch.id).toMatch(/^\d{8}T\d{6}Z-[0-9a-f]{8}$/); // the taking (src/intake/work-area.ts)
      expect(batch.progress!.finished).toBeGreaterThanOrEqual(3);
      expect(batch.progress!.remaining).toBeGreaterThan(0);
      expect(batch.progress!.remaining + batch.progress!.finished).toBe(24);
      expect(batch.progress!.ratePerSecond).toBeGreaterThan(0);
      expect(batch.progress!.etaSeconds).toBeGreaterThan(0);
    } finally {
      run.child.kill('SIGTERM');
      await run.exited;
    }
    await sandbox.clearFaults();
    expect(await run.exited).toBe(3); // stopped early: rows left unsettled

    const parked = await statusJson(ws.config);
    expect(parked.driver).toBeNull();
    const slowBatch = parked.batches.find((b) => b.fileName === 'slow.csv')!;
    expect(slowBatch).toMatchObject({ state: 'parked', storeStatus: 'running', progress: null });
    expect((slowBatch.counts.pending ?? 0) + (slowBatch.counts.succeeded ?? 0)).toBe(24);
    expect(slowBatch.counts.pending).toBeGreaterThan(0);
    // Files rejected as a whole, known only by their answer in the outbox.
    const answers = parked.batches.filter((b) => b.state === 'rejected');
    expect(answers.map((b) => [b.kind, b.fileName, b.error?.code, b.id]).sort()).toEqual([
      ['_unknown', 'notes.csv', 'UNKNOWN_KIND', null],
      ['charges', 'empty.csv', 'FILE_EMPTY', null],
    ]);
    expect(answers.every((b) => b.answerFile?.endsWith('.rejected.txt'))).toBe(true);
    expect(parked.totals).toMatchObject({ batches: 3, byState: { parked: 1, rejected: 2 } });

    const text = await runCli(['status', '--config', ws.config, '--locale', 'en'], { cwd: ELSEWHERE });
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/charges\s+slow\.csv\s+\[parked\]/);
    // Times as read in Brazil, and said so (before: UTC instants, 2026-11-28T07:48:01.766Z).
    expect(text.stdout).toMatch(/^Times in Brasília time \(America\/Sao_Paulo\)$/m);
    expect(text.stdout).toMatch(/^ {2}\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} BRT {2}charges\s+slow\.csv/m);
    expect(text.stdout).toMatch(/_unknown\s+notes\.csv\s+\[rejected\]\s+rejected as a whole: UNKNOWN_KIND/);
    expect(text.stdout).not.toContain('[running]');

    // Filters: through the CLI once, then the same report built in-process (each CLI start costs seconds).
    const names = (r: StatusReport) => r.batches.map((b) => b.fileName).sort();
    expect(names(await statusJson(ws.config, '--state', 'parked,done', '--kind', 'charges'))).toEqual(['slow.csv']);
    const store = await openStore(path.join(ws.data, 'remessa.sqlite'));
    try {
      const report = (filters: StatusFilters) => buildStatusReport(store, { folders: ws }, { filters });
      // Days are Brasília's (UTC-3), as status shows its times.
      const day = (offset: number) =>
        new Date(Date.now() - 3 * 3_600_000 + offset * 86_400_000).toISOString().slice(0, 10);
      expect(names(await report({ kinds: ['charges'] }))).toEqual(['empty.csv', 'slow.csv']);
      expect(names(await report({ kinds: ['_unknown'] }))).toEqual(['notes.csv']);
      expect(names(await report({ states: ['rejected'] }))).toEqual(['empty.csv', 'notes.csv']);
      expect((await report({ since: parseStatusDate(day(1), 'start') })).batches).toEqual([]);
      expect((await report({ until: parseStatusDate(day(-1), 'end') })).batches).toEqual([]);
      const dated = await report({ since: parseStatusDate(day(-1), 'start'), until: parseStatusDate(day(0), 'end') });
      expect(names(dated)).toEqual(['empty.csv', 'notes.csv', 'slow.csv']);
      expect(dated.filters.since).toBe(new Date(`${day(-1)}T00:00:00.000-03:00`).toISOString());
      expect(dated.filters.until).toBe(new Date(`${day(0)}T23:59:59.999-03:00`).toISOString());
    } finally {
      await store.close();
    }
    const bad = await runCli(['status', '--config', ws.config, '--state', 'sleeping'], { cwd: ELSEWHERE });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(
      'Esperava um estado de lote (ingesting, running, parked, done, rejected, awaiting_approval, approved), veio "sleeping"',
    );
    // A window that ends before it begins is refused, not answered with an empty list (before: exit 0, no batch).
    const backwards = await runCli(
      ['status', '--config', ws.config, '--since', '28/11/2026', '--until', '2026-11-27'],
      {
        cwd: ELSEWHERE,
      },
    );
    expect(backwards.code).toBe(2);
    expect(backwards.stderr).toBe(
      'remessa: --since (28/11/2026 00:00:00) é depois de --until (27/11/2026 23:59:59): nenhum arquivo é recebido entre os dois\n',
    );
    // Every state status shows can be asked for (awaiting_approval was refused).
    const waiting = await runCli(['status', '--config', ws.config, '--state', 'awaiting_approval'], { cwd: ELSEWHERE });
    expect(waiting.code, waiting.stderr).toBe(0);

    // retry names the batch by its file name and finishes it; its answer is written.
    const retry = await runCli(['retry', '--config', ws.config, 'slow.csv', '--locale', 'en'], { cwd: ELSEWHERE });
    expect(retry.code, retry.stderr).toBe(0);
    expect(retry.stdout).toMatch(/^slow\.csv \(batch \d{8}T\d{6}Z-[0-9a-f]{8}\): succeeded 24 -> /m);
    const result = parseResultCsv(await fs.readFile((await answersOf(ws, 'charges', 'slow')).at(-1)!.results.at(-1)!));
    expect(result.map((r) => r.status)).toEqual(Array(24).fill('succeeded'));
    const after = await statusJson(ws.config, '--kind', 'charges', '--state', 'done');
    expect(after.batches.map((b) => [b.fileName, b.counts.succeeded])).toEqual([['slow.csv', 24]]);
    // answerFile is the answer as a file (docs/operations.md): the latest result CSV, there to be read. It was the
    // answer's base name ("slow.<taking>", "... v2" for a second version): no such file.
    const answered = after.batches[0]!.answerFile!;
    expect(answered).toBe((await answersOf(ws, 'charges', 'slow')).at(-1)!.results.at(-1));
    expect((await fs.stat(answered)).isFile()).toBe(true);
  }, 180_000);
});

describe('remessa resolve and retry', () => {
  it('settle uncertain rows: refused while the daemon drives the folder; recorded; answers written again', async () => {
    const ws = await makeWorkspace(sandbox.url, {
      bank: { retry: { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 50, maxRetryAfterMs: 100 } },
    });
    // Every request fails before the bank acts: the engine cannot learn any outcome, the rows end uncertain.
    await sandbox.setFaults([{ route: '*', errorRate: 1 }]);
    const daemon = startDaemon(ws);
    let lines: number[];
    let batchId: string;
    try {
      await drop(ws, path.join(EXAMPLES, 'charges.csv'), 'charges/charges.csv');
      const answer = await waitForAnswer(ws, 'charges', 'charges');
      expect(parseResultCsv(answer.text).map((r) => r.status)).toEqual(Array(5).fill('uncertain'));

      const report = await statusJson(ws.config);
      expect(report.driver?.pid).toBe(daemon.child.pid);
      expect(report.batches).toHaveLength(1);
      expect(report.batches[0]).toMatchObject({ state: 'done', counts: { uncertain: 5 } });
      expect(report.uncertainRows).toHaveLength(5);
      expect(report.uncertainRows[0]).toMatchObject({ kind: 'charges', fileName: 'charges.csv' });
      lines = report.uncertainRows.map((r) => r.line).sort((a, b) => a - b);
      batchId = report.batches[0]!.id!;

      // One writer per data folder: a person does not settle a row the daemon may be resending.
      const refused = await runCli(
        ['resolve', '--config', ws.config, 'charges.csv', String(lines[0]), '--as', 'failed', '--note', 'x'],
        { cwd: ELSEWHERE },
      );
      expect(refused.code).toBe(2);
      // In the locale (pt-BR by default), naming the daemon; not told of --wait-lock, which resolve and retry lack.
      const refusal = (command: string) =>
        new RegExp(
          `^remessa: Esperava ser o único processo usando a pasta de dados ${ws.data}, mas outro a está usando: ` +
            `pid ${daemon.child.pid} na máquina "[^"]+", comando "[^"]*daemon --config [^"]*", desde \\d\\d/\\d\\d/\\d{4} \\d\\d:\\d\\d:\\d\\d\\. ` +
            `Pare-o antes e rode \`remessa ${command}\` de novo\\.\n$`,
        );
      expect(refused.stderr).toMatch(refusal('resolve'));
      const retryRefused = await runCli(['retry', '--config', ws.config], { cwd: ELSEWHERE });
      expect(retryRefused.code).toBe(2);
      expect(retryRefused.stderr).toMatch(refusal('retry'));
    } finally {
      await stopDaemon(daemon);
    }

    const failed = await runCli(
      [
        'resolve',
        '--config',
        ws.config,
        batchId.slice(-8), // the 8-character tag at the end of the id, as answer names show it
        String(lines[0]),
        '--as',
        'failed',
        '--note',
        'not in the bank statement of 2026-11-23',
        '--by',
        'Ana Souza',
      ],
      { cwd: ELSEWHERE },
    );
    expect(failed.code, failed.stderr).toBe(0);
    // In Portuguese by default; in English with --locale en.
    expect(failed.stdout).toMatch(
      new RegExp(
        `^charges\\.csv linha ${lines[0]} \\(lote \\d{8}T\\d{6}Z-[0-9a-f]{8}\\): uncertain -> failed, resolvida por Ana Souza em \\d\\d/\\d\\d/\\d{4} \\d\\d:\\d\\d:\\d\\d; resposta escrita de novo: \\S+\\.csv\\n$`,
      ),
    );
    const paid = await runCli(
      [
        'resolve',
        '--config',
        ws.config,
        'charges.csv',
        String(lines[1]),
        '--as',
        'succeeded',
        '--note',
        'paid',
        '--locale',
        'en',
      ],
      { cwd: ELSEWHERE },
    );
    expect(paid.code, paid.stderr).toBe(0);
    expect(paid.stdout).toContain(`charges.csv line ${lines[1]}`);
    expect(paid.stdout).toMatch(
      /uncertain -> succeeded, settled by \S+ at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d BRT; answer written again: /,
    );

    // Only an uncertain row; a line the file does not have; a wrong outcome: refused, nothing changed.
    const again = await runCli(
      [
        'resolve',
        '--config',
        ws.config,
        'charges.csv',
        String(lines[0]),
        '--as',
        'succeeded',
        '--note',
        'paid after all',
      ],
      { cwd: ELSEWHERE },
    );
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(
      `Esperava uma linha incerta (uncertain), veio a linha ${lines[0]} de charges.csv, com falha (failed), resolvida por Ana Souza em `,
    );
    const noBatch = await runCli(
      ['resolve', '--config', ws.config, 'other.csv', String(lines[2]), '--as', 'failed', '--note', 'x'],
      { cwd: ELSEWHERE },
    );
    expect(noBatch.code).toBe(2);
    expect(noBatch.stderr).toContain('veio "other.csv": nenhum lote corresponde');

    // The store keeps who, when and why.
    const store = await openStore(path.join(ws.data, 'remessa.sqlite'));
    try {
      const records = await store.resolutions(batchId);
      expect(records.map((r) => [r.line, r.from, r.to, r.by, r.note])).toEqual([
        [lines[0], 'uncertain', 'failed', 'Ana Souza', 'not in the bank statement of 2026-11-23'],
        [lines[1], 'uncertain', 'succeeded', userInfo().username, 'paid'],
      ]);
      expect(records.every((r) => r.step !== null && r.error !== null)).toBe(true);
      expect(Date.now() - Date.parse(records[0]!.at)).toBeLessThan(120_000);
      expect(await store.getRow(batchId, lines[0]!)).toMatchObject({ state: 'failed', errorCode: RESOLVED_AS_FAILED });
    } finally {
      await store.close();
    }
    // The answer says so.
    const rewritten = parseResultCsv(
      await fs.readFile((await answersOf(ws, 'charges', 'charges')).at(-1)!.results.at(-1)!),
    );
    expect(rewritten.map((r) => r.status)).toEqual(
      lines.map((_, i) => (i === 0 ? 'failed' : i === 1 ? 'succeeded' : 'uncertain')),
    );
    expect(rewritten[0]!.errorCode).toBe(RESOLVED_AS_FAILED);
    expect(rewritten[0]!.errorMessage).toMatch(
      /^Dado como falho por Ana Souza em \d\d\/\d\d\/\d{4} \d\d:\d\d:\d\d: not in the bank statement of 2026-11-23$/,
    );

    // The bank answers again: retry settles the rest (exit 1: one row failed, by a person's word).
    await sandbox.clearFaults();
    const retry = await runCli(['retry', '--config', ws.config], { cwd: ELSEWHERE });
    expect(retry.code, retry.stderr).toBe(1);
    expect(retry.stdout).toMatch(
      /charges\.csv \(lote \d{8}T\d{6}Z-[0-9a-f]{8}\): succeeded 4, failed 1 -> .*charges\.\S+\.result(\.v\d+)?\.csv/,
    );
    const lastResult = (await answersOf(ws, 'charges', 'charges')).at(-1)!.results.at(-1)!;
    // The path it prints is the answer it just wrote, the newest version (it printed the first one, still uncertain).
    expect(lastResult).toMatch(/\.result\.v\d+\.csv$/);
    expect(retry.stdout).toContain(`-> ${lastResult}\n`);
    const settled = parseResultCsv(await fs.readFile(lastResult));
    expect(settled.map((r) => r.status)).toEqual(['failed', 'succeeded', 'succeeded', 'succeeded', 'succeeded']);
    // Sent once each: only the three rows nobody settled were created at the bank.
    const created = (await sandbox.effects()).filter((e) => e.kind === 'charge_created' && e.key.startsWith('EX-CHG-'));
    expect(created.map((e) => e.count)).toEqual([1, 1, 1]);
    const last = await statusJson(ws.config);
    expect(last.uncertainRows).toEqual([]);
    expect(last.batches[0]!.counts).toMatchObject({ succeeded: 4, failed: 1, uncertain: 0 });
    const nothing = await runCli(['retry', '--config', ws.config], { cwd: ELSEWHERE });
    expect(nothing.code, nothing.stderr).toBe(0);
    expect(nothing.stdout).toBe(
      'nada a tentar de novo: nenhum lote tem linhas incertas, aguardando o banco ou paradas\n',
    );
    const settledAlready = await runCli(['retry', '--config', ws.config, 'charges.csv'], { cwd: ELSEWHERE });
    expect(settledAlready.stdout).toMatch(
      /^charges\.csv \(lote \d{8}T\d{6}Z-[0-9a-f]{8}\): nada a tentar de novo, toda linha está resolvida\n$/,
    );
  }, 180_000);
});
