/**
 * End to end on PostgreSQL (issue 13): the daemon (a child process) with `store.url` on a throw-away cluster
 * (test/helpers/postgres.ts) takes a charges file from its inbox against the sandbox (own process), answers it, and
 * keeps its state in that database, not in a SQLite file; `remessa status` reads it there and says which engine and
 * where, never the password. One daemon per store (docs/postgres.md): its data folder and lock stay its own.
 */
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StatusReport } from '../src/runner/status.js';
import {
  drop,
  EXAMPLES,
  makeWorkspace,
  parseResultCsv,
  ROOT,
  runCli,
  type SandboxProcess,
  startDaemon,
  startSandboxProcess,
  stopDaemon,
  waitForAnswer,
} from './e2e-harness.js';
import { skipPostgres, useTestCluster } from './helpers/postgres.js';

const cluster = skipPostgres ? undefined : useTestCluster();
let sandbox: SandboxProcess | undefined;

describe.skipIf(skipPostgres)('the daemon on a PostgreSQL store', () => {
  beforeAll(async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-pg-sb-'));
    sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'));
  }, 60_000);

  afterAll(async () => {
    await sandbox?.stop();
  });

  it('answers a charges file with its rows in the database; status reads them there and names the engine', async () => {
    const c = cluster!();
    const { name, url } = await c.createDatabase();
    const ws = await makeWorkspace(sandbox!.url);
    const passwordFile = path.join(ws.dir, 'store-password');
    await fs.writeFile(passwordFile, `${c.password}\n`, { mode: 0o600 });
    const config = JSON.parse(await fs.readFile(ws.config, 'utf8')) as Record<string, unknown>;
    config.store = { url, passwordFile };
    await fs.writeFile(ws.config, JSON.stringify(config, null, 2));

    const daemon = startDaemon(ws);
    try {
      await drop(ws, path.join(EXAMPLES, 'charges.csv'), 'charges/charges.csv');
      const answer = await waitForAnswer(ws, 'charges', 'charges');
      expect(answer.type).toBe('result');
      expect(parseResultCsv(answer.text).map((r) => r.status)).toEqual(Array(5).fill('succeeded'));
    } finally {
      expect(await stopDaemon(daemon)).toBe(0);
    }
    // Every create reached the bank exactly once.
    const effects = await sandbox!.effects('charge_created');
    expect(effects.map((e) => e.count)).toEqual(Array(5).fill(1));

    // The state is in PostgreSQL, and no SQLite store was made in the data folder.
    expect(existsSync(path.join(ws.data, 'remessa.sqlite'))).toBe(false);
    const rows = await c.query<{ state: string; n: string }>(
      'SELECT state, COUNT(*) AS n FROM rows GROUP BY state',
      name,
    );
    expect(rows.map((r) => [r.state, Number(r.n)])).toEqual([['succeeded', 5]]);
    // Each row's steps went through intent and done there; a succeeded row keeps no record of a step done at its first
    // attempt whose output the row holds (migration 015), so none is left, and none in another state.
    const steps = await c.query<{ state: string }>('SELECT DISTINCT state FROM steps', name);
    expect(steps).toEqual([]);

    const text = await runCli(['status', '--config', ws.config], { cwd: path.join(ROOT, 'test') });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`Store: PostgreSQL ${url}`);
    expect(text.stdout).toContain('charges.csv');
    const json = await runCli(['status', '--config', ws.config, '--json'], { cwd: path.join(ROOT, 'test') });
    expect(json.code, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout) as StatusReport;
    expect(report).toMatchObject({ store: url, storeEngine: 'postgres' });
    expect(report.batches).toHaveLength(1);
    expect(report.batches[0]).toMatchObject({ fileName: 'charges.csv', state: 'done', counts: { succeeded: 5 } });
    for (const out of [text.stdout, text.stderr, json.stdout, json.stderr]) expect(out).not.toContain(c.password);
    await fs.rm(ws.dir, { recursive: true, force: true });
  }, 180_000);

  it('a daemon or run with a SQLite store (no store.url, by mistake) on the inbox the PostgreSQL daemons serve is refused', async () => {
    // Before: it started and took files from the shared inbox into a store of its own, where a row the others had
    // paid, dropped again, was no duplicate and status on either side missed the other's files.
    const c = cluster!();
    const { url } = await c.createDatabase();
    const ws = await makeWorkspace(sandbox!.url);
    const passwordFile = path.join(ws.dir, 'store-password');
    await fs.writeFile(passwordFile, `${c.password}\n`, { mode: 0o600 });
    const config = JSON.parse(await fs.readFile(ws.config, 'utf8')) as Record<string, unknown>;
    await fs.writeFile(ws.config, JSON.stringify({ ...config, store: { url, passwordFile } }, null, 2));
    const sqliteConfig = path.join(ws.dir, 'sqlite.jsonc');
    const folders = config.folders as Record<string, string>;
    const sqliteData = path.join(ws.dir, 'data-sqlite');
    await fs.writeFile(sqliteConfig, JSON.stringify({ ...config, folders: { ...folders, data: sqliteData } }, null, 2));

    const daemon = startDaemon(ws);
    try {
      // Not the charges of the test above: the sandbox is theirs too.
      await drop(ws, path.join(EXAMPLES, 'qr-codes.csv'), 'qr-codes/qr.csv');
      await waitForAnswer(ws, 'qr-codes', 'qr');
    } finally {
      expect(await stopDaemon(daemon)).toBe(0);
    }

    await drop(ws, path.join(EXAMPLES, 'qr-codes.csv'), 'qr-codes/again.csv');
    const cwd = path.join(ROOT, 'test');
    for (const command of ['run', 'daemon']) {
      const refused = await runCli([command, '--config', sqliteConfig], { cwd });
      expect(refused.code, refused.stdout).toBe(2);
      expect(refused.stderr).toContain(
        `Esperava uma inbox deste store SQLite, mas ${ws.inbox} é atendida pelos daemons do store PostgreSQL ${url}`,
      );
      expect(refused.stderr).toContain(`rode \`remessa ${command}\` de novo`);
    }
    // Nothing taken, no SQLite store made.
    expect(existsSync(path.join(ws.inbox, 'qr-codes', 'again.csv'))).toBe(true);
    expect(existsSync(path.join(sqliteData, 'remessa.sqlite'))).toBe(false);
    // The PostgreSQL daemons themselves start again on it, and take the file.
    const again = startDaemon(ws);
    try {
      const answer = await waitForAnswer(ws, 'qr-codes', 'again');
      const statuses = parseResultCsv(answer.text).map((r) => r.status);
      expect(statuses.length).toBeGreaterThan(0);
      expect(new Set(statuses)).toEqual(new Set(['duplicate']));
    } finally {
      expect(await stopDaemon(again)).toBe(0);
    }
    await fs.rm(ws.dir, { recursive: true, force: true });
  }, 180_000);

  it('doctor opens the PostgreSQL store: a wrong password file fails it, never printing the password', async () => {
    // Before: doctor checked the bank only and said the configuration worked, exit 0, whatever the store's password.
    const c = cluster!();
    const { url } = await c.createDatabase();
    const ws = await makeWorkspace(sandbox!.url);
    const config = JSON.parse(await fs.readFile(ws.config, 'utf8')) as Record<string, unknown>;
    const cwd = path.join(ROOT, 'test');
    const doctor = async (password: string) => {
      const passwordFile = path.join(ws.dir, 'store-password');
      await fs.writeFile(passwordFile, password, { mode: 0o600 });
      await fs.writeFile(ws.config, JSON.stringify({ ...config, store: { url, passwordFile } }, null, 2));
      return runCli(['doctor', '--config', ws.config], { cwd });
    };
    const wrong = await doctor('not-the-password-42\n');
    expect(wrong.code, wrong.stderr).toBe(1);
    expect(wrong.stdout).toMatch(
      new RegExp(`^Store: PostgreSQL ${url.replace(/[.?]/g, '\\$&')}: FAIL .*password authentication failed`, 'm'),
    );
    expect(wrong.stdout + wrong.stderr).not.toContain('not-the-password-42');
    // The right one, written as Windows' Notepad does (CRLF): the store opens, exit 0.
    const right = await doctor(`${c.password}\r\n`);
    expect(right.code, right.stdout + right.stderr).toBe(0);
    expect(right.stdout).toContain(`Store: PostgreSQL ${url}: connected (read-only).`);
    expect(right.stdout + right.stderr).not.toContain(c.password);
    await fs.rm(ws.dir, { recursive: true, force: true });
  }, 120_000);
});
