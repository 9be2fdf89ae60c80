/**
 * A batch parked by a stop and resumed at the next start logs its `batch progress` lines while it runs, as a batch
 * taken fresh does (docs/operations.md "Logs"). It was driven by the start's resume pass, which had no progress: a
 * big payment file resumed after a restart was silent until its answer, then got one line with a rate counting the
 * rows done before the stop.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  drop,
  EXAMPLES,
  makeWorkspace,
  type Proc,
  type SandboxProcess,
  startDaemon,
  startSandboxProcess,
  stopDaemon,
  type Workspace,
  waitFor,
  waitForAnswer,
} from './e2e-harness.js';

let sandbox: SandboxProcess;
let ws: Workspace;
let daemons: Proc[] = [];

beforeAll(async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-pr-'));
  sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'));
  // A slow bank (few charge requests a second): the batch runs for several progress intervals.
  ws = await makeWorkspace(sandbox.url, {
    queue: { rateLimits: { charges: { requests: 12, intervalMs: 1000 } } },
  });
  const config = JSON.parse(await fs.readFile(ws.config, 'utf8')) as Record<string, unknown>;
  config.log = { format: 'json', progressIntervalMs: 1000 };
  await fs.writeFile(ws.config, JSON.stringify(config, null, 2));
}, 90_000);

afterAll(async () => {
  for (const d of daemons) await stopDaemon(d);
  if (sandbox) await sandbox.stop();
});

function progressLines(stderr: string): Array<Record<string, unknown>> {
  return stderr
    .split('\n')
    .filter((l) => l.includes('"batch progress"'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('a batch resumed after a stop', () => {
  it('logs batch progress lines while it runs, before its answer', async () => {
    const [header, row] = (await fs.readFile(path.join(EXAMPLES, 'charges.csv'), 'utf8')).split('\n');
    const lines = [header!];
    for (let i = 0; i < 80; i++) {
      const cells = row!.split(',');
      cells[1] = `PR-${i}`;
      cells[4] = `NF-PR-${i}`;
      lines.push(cells.join(','));
    }
    const first = startDaemon(ws);
    daemons.push(first);
    await waitFor('the daemon to be ready', () => first.stderr().includes('remessa daemon ready'), 60_000);
    await drop(ws, Buffer.from(`${lines.join('\n')}\n`), 'charges/slow.csv');
    await waitFor('a first progress line', () => progressLines(first.stderr()).length > 0, 60_000);
    await stopDaemon(first);
    daemons = [];
    expect(first.stderr()).toContain('batch parked');

    const second = startDaemon(ws);
    daemons.push(second);
    await waitForAnswer(ws, 'charges', 'slow', 120_000);
    await waitFor('the answer logged', () => second.stderr().includes('"batch answered"'), 30_000);
    const err = second.stderr();
    const beforeAnswer = progressLines(err.slice(0, err.indexOf('"batch answered"')));
    expect(beforeAnswer.length, err.slice(-3000)).toBeGreaterThan(0);
    const line = beforeAnswer[0]!;
    expect(line.file).toBe('charges/slow.csv');
    expect(line.total).toBeGreaterThan(line.done as number);
  }, 240_000);
});
