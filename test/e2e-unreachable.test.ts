/**
 * Issue 8 §3: a bank that is down. Before, a whole batch turned `uncertain` within 3 s, each line saying "nothing was
 * sent". Now rows of which certainly nothing was sent (connection refused) wait, show `waiting` with why, get no
 * answer yet, and are sent once the bank is back. Real processes: the daemon against a closed port, then the
 * sandbox started on that very port.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildBankSlipBarCode } from '../src/formats/index.js';
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
  waitForAnswer,
} from './e2e-harness.js';
import { closedPort } from './helpers/net.js';

const procs: Proc[] = [];
const sandboxes: SandboxProcess[] = [];
afterAll(async () => {
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  for (const s of sandboxes) await s.stop();
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

describe('the bank is down', () => {
  it('the daemon keeps rows waiting (not uncertain) and sends them once the bank is back', async () => {
    const port = await closedPort();
    const ws = await makeWorkspace(`http://127.0.0.1:${port}`, {
      bank: { unreachable: { retryDelaysMs: [200, 400], runMaxWaitMs: 1000 } },
    });
    const daemon = startDaemon(ws);
    procs.push(daemon);
    await drop(ws, Buffer.from(bills(6, 3000)), 'bill-payments/down.csv');
    // Let it try for longer than the 3 s in which the whole batch used to turn uncertain.
    await new Promise((r) => setTimeout(r, 4000));
    const status = await runCli(['status', '--config', ws.config, '--locale', 'en']);
    expect(status.stdout).toContain('waiting 6');
    expect(status.stdout).not.toMatch(/uncertain \d/);
    expect(status.stdout).toContain('Waiting rows: 6');
    // Not answered while the rows wait.
    expect(await answersOf(ws, 'bill-payments', 'down')).toEqual([]);

    // The bank comes up on that very port: the rows are sent, the file answered.
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-down-sb-'));
    const sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'), { port });
    sandboxes.push(sandbox);
    const answer = await waitForAnswer(ws, 'bill-payments', 'down', 30_000);
    const rows = parseResultCsv(answer.text);
    expect(rows.map((r) => r.status)).toEqual(Array(6).fill('succeeded'));
    const paid = await sandbox.effects('bill_paid');
    expect(paid).toHaveLength(6);
    for (const e of paid) expect(e.count).toBe(1);
    expect(await stopDaemon(daemon)).toBe(0);
  }, 90_000);

  it('`run` waits at most runMaxWaitMs, then leaves the rows waiting (unanswered); the next run sends them', async () => {
    const port = await closedPort();
    const ws = await makeWorkspace(`http://127.0.0.1:${port}`, {
      bank: { unreachable: { retryDelaysMs: [100], runMaxWaitMs: 800 } },
    });
    await drop(ws, Buffer.from(bills(3, 4000)), 'bill-payments/later.csv');
    const first = await runCli(['run', '--config', ws.config]);
    expect(first.code).toBe(3); // rows left unsettled (waiting): EXIT_UNSETTLED, src/exit-codes.ts
    expect(first.stdout).toContain('waiting 3');
    expect(first.stdout).toContain(
      '(3 linhas aguardando: o banco não pode ser alcançado e nada delas foi enviado; ainda sem resposta: a próxima execução ou o daemon as envia)',
    );
    expect(await answersOf(ws, 'bill-payments', 'later')).toEqual([]);
    // `retry` while the bank is still down: the same bound and exit code as `run` (it exited 13, saying nothing).
    const retry = await runCli(['retry', '--config', ws.config]);
    expect(retry.code, retry.stdout + retry.stderr.slice(-2000)).toBe(3);

    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-later-sb-'));
    const sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'), { port });
    sandboxes.push(sandbox);
    const second = await runCli(['run', '--config', ws.config]);
    expect(second.code, second.stdout + second.stderr.slice(-2000)).toBe(0);
    const answer = (await waitForAnswer(ws, 'bill-payments', 'later')).text;
    expect(parseResultCsv(answer).map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect(await sandbox.effects('bill_paid')).toHaveLength(3);
  }, 90_000);
});
