/**
 * A refused API key (a key rotated at night, a client secret expired): the bank answers 401 to every request. Before,
 * every row of the night's file was sent, each ended `failed` (SERVICE_AUTHENTICATION), and the operator dropped the
 * file again by hand. Now the first 401 closes the bank gate for credentials (src/runner/bank-gate.ts): no row fails,
 * every row waits (BANK_CREDENTIALS_REFUSED), only the requests already on their way are refused, and the rows go
 * once the bank accepts the key: `run` answers the file with them waiting and exits 4, the next run sends them; the
 * daemon asks again every `bank.credentialsRefused.retryEveryMs` and takes a new key on a reload. Real processes
 * against the sandbox, which refuses an unknown key with 401 (src/sandbox/auth.ts).
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CREDENTIALS_REFUSED, EXIT_OK } from '../src/exit-codes.js';
import { buildBankSlipBarCode } from '../src/formats/index.js';
import { SANDBOX_PUBLIC_API_KEY } from '../src/sandbox/options.js';
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
  waitFor,
  waitForAnswer,
} from './e2e-harness.js';
import { closedPort } from './helpers/net.js';

const WRONG_KEY = 'rotated-last-night-0000';
const CONCURRENCY = 4;

let sandbox: SandboxProcess;
const procs: Proc[] = [];
beforeAll(async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-keys-sb-'));
  sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'));
}, 30_000);
afterAll(async () => {
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  await sandbox?.stop();
});

function bills(count: number, seed: number): string {
  const lines = ['barCode,amount'];
  for (let i = 0; i < count; i++) {
    const cents = seed + i;
    const barCode = buildBankSlipBarCode({
      bankCode: '341',
      dueDate: '2030-06-30',
      amountCents: cents,
      freeField: `10900001234567${String(seed).padStart(6, '0')}${String(i).padStart(5, '0')}`,
    });
    lines.push(`${barCode},${(cents / 100).toFixed(2)}`);
  }
  return `${lines.join('\n')}\n`;
}

/** Requests the sandbox refused for their key so far. */
async function refusedSoFar(): Promise<number> {
  return ((await sandbox.admin('GET', '/auth')) as { refused: number }).refused;
}

describe('the bank refuses the API key', () => {
  it('`run`: no row fails, all wait and are answered so, exit 4; run again with the key fixed: each paid once', async () => {
    const ws = await makeWorkspace(sandbox.url, {
      bank: { apiKey: WRONG_KEY },
      queue: { concurrency: CONCURRENCY },
    });
    const file = path.join(ws.dir, 'bill-payments-night.csv');
    await fs.writeFile(file, bills(12, 5100));
    const paidBefore = (await sandbox.effects('bill_paid')).length;
    const refusedBefore = await refusedSoFar();

    const first = await runCli(['run', '--config', ws.config, '--locale', 'en', file]);
    expect(first.code, first.stdout + first.stderr.slice(-3000)).toBe(EXIT_CREDENTIALS_REFUSED);
    expect(first.stdout).toContain("12 rows waiting: the bank refused remessa's credentials");
    // Only the requests already on their way when the first 401 came back were refused: not one per row.
    const refused = (await refusedSoFar()) - refusedBefore;
    expect(refused).toBeGreaterThan(0);
    expect(refused).toBeLessThanOrEqual(CONCURRENCY);
    expect((await sandbox.effects('bill_paid')).length).toBe(paidBefore);

    // The file is answered, every row waiting with why; the key itself is never written.
    const answer = await waitForAnswer(ws, 'bill-payments', 'bill-payments-night', 5_000);
    const rows = parseResultCsv(answer.text);
    expect(rows).toHaveLength(12);
    for (const r of rows) {
      expect(r.status).toBe('waiting');
      expect(r.errorCode).toBe('BANK_CREDENTIALS_REFUSED');
      expect(r.errorMessage).toContain("The bank refused remessa's credentials");
      expect(r.errorMessage).toContain('REMESSA_API_KEY, bank.apiKeyFile or the systemd credential remessa-api-key');
    }
    expect(answer.text).not.toContain(WRONG_KEY);
    expect(first.stdout + first.stderr).not.toContain(WRONG_KEY);
    const status = await runCli(['status', '--config', ws.config, '--locale', 'en']);
    expect(status.stdout).toContain("Waiting rows: 12 (the bank refused remessa's credentials");

    // The key fixed (the environment wins over the file's): the same file sends its rows, with the same keys.
    const second = await runCli(['run', '--config', ws.config, '--locale', 'en', file], {
      env: { REMESSA_API_KEY: SANDBOX_PUBLIC_API_KEY },
    });
    expect(second.code, second.stdout + second.stderr.slice(-3000)).toBe(EXIT_OK);
    const answers = await answersOf(ws, 'bill-payments', 'bill-payments-night');
    // One taking: its answer's next version, not a second batch of duplicates.
    expect(answers).toHaveLength(1);
    expect(answers[0]!.results).toHaveLength(2);
    const latest = parseResultCsv(await fs.readFile(answers[0]!.results.at(-1)!, 'utf8'));
    expect(latest.map((r) => r.status)).toEqual(Array(12).fill('succeeded'));
    const paid = await sandbox.effects('bill_paid');
    expect(paid.length - paidBefore).toBe(12);
    for (const e of paid) expect(e.count).toBe(1);
  }, 60_000);

  it('the daemon: rows wait, one asks again every retryEveryMs; a new key taken on SIGHUP sends them', async () => {
    const keyFile = path.join(await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-keys-')), 'api-key');
    await fs.writeFile(keyFile, `${WRONG_KEY}\n`);
    const ws = await makeWorkspace(sandbox.url, {
      bank: { apiKeyFile: keyFile, credentialsRefused: { retryEveryMs: 1500 } },
      queue: { concurrency: CONCURRENCY },
    });
    const port = await closedPort();
    const config = JSON.parse(await fs.readFile(ws.config, 'utf8')) as Record<string, unknown>;
    config.metrics = { host: '127.0.0.1', port };
    await fs.writeFile(ws.config, JSON.stringify(config));
    const gauge = async () => {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      return Number(/^remessa_bank_credentials_refused (\S+)$/m.exec(text)?.[1]);
    };
    const daemon = startDaemon(ws);
    procs.push(daemon);
    await waitFor('the daemon to be ready', () => /remessa daemon ready/.test(daemon.stderr()) || undefined, 30_000);
    expect(await gauge()).toBe(0);
    const refusedBefore = await refusedSoFar();
    await drop(ws, Buffer.from(bills(8, 6200)), 'bill-payments/nightly.csv');

    await waitFor('the gate to close for credentials', async () => (await gauge()) === 1 || undefined, 20_000);
    const closedAt = (await refusedSoFar()) - refusedBefore;
    expect(closedAt).toBeLessThanOrEqual(CONCURRENCY);
    // Probes: one row at a time asks again, every 1.5 s.
    await waitFor('a probe', async () => (await refusedSoFar()) - refusedBefore > closedAt || undefined, 10_000);
    const status = await runCli(['status', '--config', ws.config, '--locale', 'en']);
    expect(status.stdout).toContain("Waiting rows: 8 (the bank refused remessa's credentials");
    expect(status.stdout).not.toMatch(/failed \d/);
    expect(await answersOf(ws, 'bill-payments', 'nightly')).toEqual([]);
    const paidBefore = (await sandbox.effects('bill_paid')).length;

    // The key fixed in its file, then a reload: the rows go (at once: the reload lets a probe through).
    await fs.writeFile(keyFile, `${SANDBOX_PUBLIC_API_KEY}\n`);
    daemon.child.kill('SIGHUP');
    const answer = await waitForAnswer(ws, 'bill-payments', 'nightly', 20_000);
    expect(parseResultCsv(answer.text).map((r) => r.status)).toEqual(Array(8).fill('succeeded'));
    expect(await gauge()).toBe(0);
    const paid = await sandbox.effects('bill_paid');
    expect(paid.length - paidBefore).toBe(8);
    for (const e of paid) expect(e.count).toBe(1);
    expect(daemon.stderr()).toContain('"applied":["bank.apiKey"]');
    expect(daemon.stderr()).not.toContain(WRONG_KEY);
    expect(await stopDaemon(daemon)).toBe(0);
  }, 60_000);
});
