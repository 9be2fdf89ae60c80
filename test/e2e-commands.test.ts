/**
 * End to end: the one-shot commands as real child processes, against the embedded sandbox (no bank URL configured,
 * its state in <data>/sandbox.sqlite, so a slip issued in one run is known to the next).
 * - `validate FILE`: every error with file, line, column and column name, then the totals; exit 1 when invalid;
 *   nothing sent, nothing stored.
 * - `run` without files: takes everything waiting in the inbox (files still being written are awaited), answers and
 *   archives it, exits 0 only when every row succeeded.
 * - `run FILE...`: processes files where they are (not moved).
 * - `status`: from the store.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  answersOf,
  EXAMPLES,
  parseResultCsv,
  ROOT,
  runCli,
  spawnCli,
  stopDaemon,
  TEST_PROFILE,
  type Workspace,
  waitFor,
  waitForAnswer,
} from './e2e-harness.js';

const outboxOf = (dir: string) => ({ outbox: path.join(dir, 'outbox') });

let dir: string;
let config: string;

beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-cmd-'));
  config = path.join(dir, 'remessa.jsonc');
  await fs.writeFile(
    config,
    JSON.stringify({
      folders: {
        inbox: path.join(dir, 'inbox'),
        outbox: path.join(dir, 'outbox'),
        archive: path.join(dir, 'archive'),
        data: path.join(dir, 'data'),
      },
      // The embedded sandbox serves the same profile (REMESSA_TEST_PROFILE; interface by default).
      bank: { profile: TEST_PROFILE },
      intake: { stableMs: 100 },
      queue: {
        rateLimits: {
          charges: { requests: 0, intervalMs: 1000 },
          'bill-payments': { requests: 0, intervalMs: 1000 },
          pix: { requests: 0, intervalMs: 1000 },
          claims: { requests: 0, intervalMs: 1000 },
        },
      },
    }),
  );
});

const env = { REMESSA_LOG_LEVEL: 'warn' };

describe('remessa validate', () => {
  it('prints every error with file, line, column and the totals; exit 1; sends and stores nothing', async () => {
    const file = path.join(dir, 'charges-bad.csv');
    await fs.writeFile(
      file,
      [
        'type,correlationId,amount,dueDate,payer.name,payer.document,payer.address.zipCode,payer.address.publicPlace,payer.address.city,payer.address.state',
        'BANKSLIP,OK-1,10.00,2027-01-10,Ana,390.533.447-05,01310-100,Rua A,São Paulo,SP',
        'BANKSLIP,BAD-1,1.234.5,2027-13-10,Ana,390.533.447-00,0131,Rua A,São Paulo,XX',
        'TICKET,BAD-2,10.00,2027-01-10,Ana,390.533.447-05,01310-100,Rua A,São Paulo,SP',
        '',
      ].join('\n'),
    );
    const { code, stdout } = await runCli(['validate', '--config', config, file], { env });
    expect(code).toBe(1);
    const lines = stdout.trim().split('\n');
    // Line 3: amount (col 3), dueDate (col 4), payer.document (col 6), zip (col 7), state (col 10).
    for (const [column, name] of [
      [3, 'amount'],
      [4, 'dueDate'],
      [6, 'payer.document'],
      [7, 'payer.address.zipCode'],
      [10, 'payer.address.state'],
    ] as const) {
      expect(
        lines.some((l) => l.startsWith(`charges-bad.csv linha 3, coluna ${column} (${name}): `)),
        `${name} in ${stdout}`,
      ).toBe(true);
    }
    expect(lines.some((l) => l.startsWith('charges-bad.csv linha 4, coluna 1 (type): '))).toBe(true);
    expect(lines.at(-1)).toMatch(/^charges-bad\.csv: 3 linhas, 1 válida, 2 inválidas, \d+ erros/);
    expect(await fs.readdir(dir)).toEqual(['charges-bad.csv', 'remessa.jsonc']);
  });

  it('a valid file exits 0; a file that cannot be read says why; an unknown kind says so', async () => {
    const ok = await runCli(['validate', '--config', config, path.join(EXAMPLES, 'charges-planilha-br.csv')], { env });
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/charges-planilha-br\.csv: 4 linhas, 4 válidas, 0 inválidas, 0 erros/);

    const missing = path.join(dir, 'claims-x.csv');
    await fs.writeFile(missing, 'type,key\nEMAIL,a@b.com\n');
    const bad = await runCli(['validate', '--config', config, missing], { env });
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(
      /claims-x\.csv linha 1: 6 problemas no cabeçalho:\n- Esperava a coluna obrigatória .*HEADER_MISSING_COLUMN/s,
    );

    const unknown = path.join(dir, 'payroll.csv');
    await fs.writeFile(unknown, 'a\n1\n');
    const u = await runCli(['validate', '--config', config, unknown], { env });
    expect(u.code).toBe(1);
    expect(u.stdout).toMatch(/Esperava .* veio "payroll\.csv"/);

    // --kind names the kind of a file that neither its folder nor its name gives.
    const exported = path.join(dir, 'export.csv');
    await fs.copyFile(path.join(EXAMPLES, 'claims.csv'), exported);
    const k = await runCli(['validate', '--config', config, '--kind', 'claims', exported], { env });
    expect(k.code, k.stdout).toBe(0);
    expect(k.stdout).toMatch(/export\.csv: 3 linhas, 3 válidas/);
  });
});

describe('remessa run', () => {
  it('without files: takes what waits in the inbox, answers, archives, exits 0 when all succeeded', async () => {
    await fs.mkdir(path.join(dir, 'inbox', 'charges'), { recursive: true });
    await fs.copyFile(path.join(EXAMPLES, 'charges.csv'), path.join(dir, 'inbox', 'charges', 'charges.csv'));
    await fs.copyFile(path.join(EXAMPLES, 'bill-payments.csv'), path.join(dir, 'inbox', 'bill-payments-nightly.csv'));
    await fs.writeFile(path.join(dir, 'inbox', 'charges', 'still-writing.csv.part'), 'type\n');
    const { code, stdout } = await runCli(['run', '--config', config], { env });
    expect(code, stdout).toBe(0);
    expect(stdout).toMatch(/charges\/charges\.csv: succeeded 5/);
    expect(stdout).toMatch(/bill-payments-nightly\.csv: succeeded 4/);
    const bills = parseResultCsv(
      await fs.readFile((await answersOf(outboxOf(dir), 'bill-payments', 'bill-payments-nightly'))[0]!.results[0]!),
    );
    expect(bills.map((b) => b.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
    // Taken files are archived; the partial file stays.
    expect(await fs.readdir(path.join(dir, 'inbox', 'charges'))).toEqual(['still-writing.csv.part']);
    expect((await fs.readdir(path.join(dir, 'archive', 'bill-payments'))).length).toBe(1);

    // The embedded sandbox kept its state: the slips of the first run can be updated by the next one.
    const update = path.join(dir, 'charge-updates-1.csv');
    await fs.copyFile(path.join(EXAMPLES, 'charge-updates.csv'), update);
    const second = await runCli(['run', '--config', config, update], { env });
    expect(second.code, second.stdout).toBe(0);
    expect(await fs.stat(update)).toBeTruthy();

    const status = await runCli(['status', '--config', config, '--locale', 'en'], { env });
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/Batches: 3/);
    expect(status.stdout).toMatch(/Rows: succeeded 10/);
  }, 90_000); // two files through the embedded sandbox and its slip PDFs: about 20 s alone, more on a loaded machine

  it('a file given from the inbox is taken and archived like the daemon does', async () => {
    const target = path.join(dir, 'inbox', 'qr-codes', 'qr.csv');
    await fs.mkdir(path.dirname(target), { recursive: true });
    await fs.copyFile(path.join(EXAMPLES, 'qr-codes.csv'), target);
    const { code, stdout } = await runCli(['run', '--config', config, target], { env });
    expect(code, stdout).toBe(0);
    expect(await fs.readdir(path.dirname(target))).toEqual([]);
    const base = (await answersOf(outboxOf(dir), 'qr-codes', 'qr'))[0]!.base;
    expect(await fs.readdir(path.join(dir, 'archive', 'qr-codes'))).toEqual([`${base}.csv`]);
    expect(await fs.readdir(path.join(dir, 'data', 'work'))).toEqual([]);
    expect(await fs.readdir(path.join(dir, 'outbox', 'qr-codes', base))).toHaveLength(2);
  });

  it('exits 1 when a row did not succeed, and for a rejected file', async () => {
    const file = path.join(dir, 'charge-voids-unknown.csv');
    await fs.writeFile(file, 'correlationId\nNEVER-ISSUED-1\n');
    const { code, stdout } = await runCli(['run', '--config', config, file], { env });
    expect(code).toBe(1);
    expect(stdout).toMatch(/failed 1/);
    const empty = path.join(dir, 'claims-empty.csv');
    await fs.writeFile(empty, '');
    const rejected = await runCli(['run', '--config', config, empty], { env });
    expect(rejected.code).toBe(1);
    expect(rejected.stdout).toMatch(/rejected/);
    expect(await fs.readFile((await answersOf(outboxOf(dir), 'claims', 'claims-empty'))[0]!.rejected!, 'utf8')).toMatch(
      /FILE_EMPTY/,
    );
  });

  it('the last progress line counts every row answered, those ended at ingestion too (it said 1 for 2)', async () => {
    const file = path.join(dir, 'charge-voids-twice.csv');
    await fs.writeFile(file, 'correlationId\nNEVER-ISSUED-2\nNEVER-ISSUED-2\n');
    const { code, stdout, stderr } = await runCli(['run', '--config', config, file], { env });
    expect(code).toBe(1);
    expect(stdout).toMatch(/failed 1/);
    expect(stdout).toMatch(/duplicate 1/);
    expect(stderr).toMatch(/charge-voids-twice\.csv: 2 (linhas processadas|rows done)/);
  });

  it('status before anything ran: an error with the config given (wrong folders?), "nothing yet" without', async () => {
    const given = await runCli(['status', '--config', config], { env });
    expect(given.code).toBe(2);
    expect(given.stderr).toMatch(/No store at .*remessa\.sqlite: the config .* names the data folder/);
    // No config at all (none in the working directory, no REMESSA_CONFIG): the defaults, and nothing ran there.
    const cwd = await fs.mkdtemp(path.join(ROOT, 'test', '.tmp-status-'));
    try {
      const plain = await runCli(['status', '--locale', 'en'], { env: { ...env, REMESSA_CONFIG: '' }, cwd });
      expect(plain.code, plain.stderr).toBe(0);
      expect(plain.stdout).toMatch(/nothing has been processed/);
    } finally {
      await fs.rm(cwd, { recursive: true, force: true });
    }
  });
});

describe('remessa daemon with polling and .done markers (network shares)', () => {
  it('takes a file only once its marker appears, found by polling', async () => {
    const cfg = JSON.parse(await fs.readFile(config, 'utf8'));
    cfg.intake = { mode: 'poll', pollIntervalMs: 100, stableMs: 100, requireDoneMarker: true };
    await fs.writeFile(config, JSON.stringify(cfg));
    const daemon = spawnCli(['daemon', '--config', config], { env: { REMESSA_LOG_LEVEL: 'info' } });
    // Stopped after the checks, not in a `finally` that would hide the first failure behind the exit code: a
    // failure says both, with the daemon's log.
    let failure: Error | undefined;
    try {
      // A daemon that exits at its start (it once did, in the delbank profile: its webhook registration with the
      // embedded sandbox was refused 401) fails here with its log, not after the whole wait.
      await waitFor(
        'the daemon to be ready',
        () => {
          if (daemon.child.exitCode !== null) {
            throw new Error(`the daemon exited ${daemon.child.exitCode}: ${daemon.stderr().slice(-2000)}`);
          }
          return /remessa daemon ready/.test(daemon.stderr()) || undefined;
        },
        30_000,
      );
      const target = path.join(dir, 'inbox', 'charge-voids', 'voids.csv');
      await fs.writeFile(target, 'correlationId\nNEVER-ISSUED-2\n');
      // No marker yet: the file stays where it is.
      await new Promise((r) => setTimeout(r, 800));
      expect(await fs.readdir(path.join(dir, 'inbox', 'charge-voids'))).toEqual(['voids.csv']);
      await fs.writeFile(`${target}.done`, '');
      const rows = parseResultCsv(
        (await waitForAnswer({ outbox: path.join(dir, 'outbox') } as Workspace, 'charge-voids', 'voids')).text,
      );
      expect(rows[0]!.status).toBe('failed');
      expect(rows[0]!.errorCode).toMatch(/NOT_FOUND/);
      // The marker went to the archive with its file.
      await waitFor(
        'the archive',
        async () =>
          (await fs.readdir(path.join(dir, 'archive', 'charge-voids')).catch(() => [])).length === 2 || undefined,
      );
      expect(await fs.readdir(path.join(dir, 'inbox', 'charge-voids'))).toEqual([]);
    } catch (err) {
      failure = err as Error;
    }
    const code = await stopDaemon(daemon);
    const log = `the daemon (exit ${code}) logged:\n${daemon.stderr().slice(-4000)}`;
    if (failure) throw new Error(`${failure.message}\n${log}`, { cause: failure });
    expect(code, log).toBe(0);
  }, 90_000); // a daemon start, a polled inbox and a slip through the sandbox: slow on a loaded machine
});
