/**
 * What an operator sees of a running daemon, over real HTTP: Prometheus metrics (names and labels by the conventions,
 * figures that match what happened), liveness and readiness with the reason when not ready, and a progress line per
 * batch in the log while a batch runs.
 */
import fs from 'node:fs/promises';
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
import { closedPort } from './helpers/net.js';

let sandbox: SandboxProcess;
let ws: Workspace;
let daemon: Proc;
let base: string;

async function get(route: string): Promise<{ status: number; text: string; type: string | null }> {
  const res = await fetch(`${base}${route}`);
  return { status: res.status, text: await res.text(), type: res.headers.get('content-type') };
}

/** `name{labels} value` samples of the exposition text. */
function samples(text: string): Array<{ name: string; labels: Record<string, string>; value: number }> {
  const out: Array<{ name: string; labels: Record<string, string>; value: number }> = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

beforeAll(async () => {
  const dir = await fs.mkdtemp(path.join((await import('node:os')).tmpdir(), 'remessa-ops-'));
  sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'));
  ws = await makeWorkspace(sandbox.url, {
    // Slow enough that the 5-row batch runs for a few seconds and logs its progress.
    queue: { rateLimits: { charges: { requests: 2, intervalMs: 1000 } } },
  });
  const port = await closedPort();
  const config = JSON.parse(await fs.readFile(ws.config, 'utf8')) as Record<string, unknown>;
  config.metrics = { host: '127.0.0.1', port, readyTimeoutMs: 1000, readyCacheMs: 0 };
  config.log = { progressIntervalMs: 1000, format: 'json' };
  await fs.writeFile(ws.config, JSON.stringify(config));
  base = `http://127.0.0.1:${port}`;
  daemon = startDaemon(ws);
  await waitFor('the daemon to be ready', () => /remessa daemon ready/.test(daemon.stderr()) || undefined, 30_000);
}, 60_000);

afterAll(async () => {
  if (daemon) await stopDaemon(daemon);
  await sandbox?.stop();
});

describe('the operator endpoint', () => {
  it('answers /healthz and /readyz (store, inbox and bank all ok)', async () => {
    expect(await get('/healthz')).toMatchObject({ status: 200, text: 'ok\n' });
    const ready = await get('/readyz');
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.text)).toEqual({ ready: true, checks: { store: 'ok', inbox: 'ok', bank: 'ok' } });
    expect((await get('/nope')).status).toBe(404);
  });

  it('counts a batch in metrics by the conventions, and logs its progress while it runs', async () => {
    await drop(ws, path.join(EXAMPLES, 'charges.csv'), 'charges/cobrancas.csv');
    const answer = await waitForAnswer(ws, 'charges', 'cobrancas');
    expect(answer.type).toBe('result');

    const progress = daemon
      .stderr()
      .split('\n')
      .filter((l) => l.includes('"batch progress"'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(progress.length).toBeGreaterThan(0);
    expect(progress[0]).toMatchObject({ level: 'info', file: 'charges/cobrancas.csv', kind: 'charges', total: 5 });
    expect(progress[0]).toHaveProperty('ratePerSecond');
    expect(progress[0]).toHaveProperty('counts');

    const res = await get('/metrics');
    expect(res.status).toBe(200);
    expect(res.type).toMatch(/^text\/plain; version=0\.0\.4/);
    const all = samples(res.text);
    // Every metric is ours and named by the conventions.
    for (const s of all) expect(s.name).toMatch(/^remessa_[a-z0-9_]+$/);
    for (const line of res.text.split('\n').filter((l) => l.startsWith('# TYPE'))) {
      const [, , name, type] = line.split(' ');
      if (type === 'counter') expect(name).toMatch(/_total$/);
    }
    const value = (name: string, labels: Record<string, string> = {}) =>
      all
        .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
        .reduce((n, s) => n + s.value, 0);
    expect(value('remessa_rows', { kind: 'charges', state: 'succeeded' })).toBe(5);
    expect(value('remessa_rows_uncertain')).toBe(0);
    expect(value('remessa_batches', { state: 'done' })).toBe(1);
    // Each of the 5 rows created its charge (and the slips among them were fetched); the readiness probe's unknown
    // charge is the one 404.
    const requests = all.filter((s) => s.name === 'remessa_bank_requests_total');
    expect(value('remessa_bank_requests_total', { method: 'POST', status: '200' }), JSON.stringify(requests)).toBe(5);
    expect(value('remessa_bank_requests_total', { group: 'charges', method: 'GET', status: '200' })).toBeGreaterThan(0);
    expect(value('remessa_bank_requests_total', { group: 'charges', method: 'GET', status: '404' })).toBe(1);
    expect(value('remessa_bank_request_duration_seconds_count', { group: 'charges' })).toBeGreaterThanOrEqual(6);
    const answeredAt = value('remessa_last_batch_answered_timestamp_seconds');
    expect(Math.abs(answeredAt - Date.now() / 1000)).toBeLessThan(120);
    expect(value('remessa_group_paused', { group: 'pix' })).toBe(0);
    expect(all.some((s) => s.name === 'remessa_queue_waiting_requests')).toBe(true);
    expect(all.some((s) => s.name === 'remessa_rows_in_flight')).toBe(true);
    expect(value('remessa_intake_errors_total')).toBe(0);
    // Bounded labels: groups and kinds from closed sets; paths never become labels.
    for (const s of all.filter((x) => x.name === 'remessa_bank_requests_total')) {
      expect(['charges', 'bill-payments', 'pix', 'claims', 'webhooks', 'other']).toContain(s.labels.group);
      expect(Object.keys(s.labels).sort()).toEqual(['group', 'method', 'status']);
    }
  });

  it('counts a file answered only by its rejection as the last batch answered', async () => {
    // A file whose headers cannot be read is answered (a .rejected.txt) without a stored batch: the metric read only
    // stored batches, so an ERP whose every file was refused looked like one that had stopped sending.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const before = Date.now() / 1000;
    await drop(ws, Buffer.from('nada,que,sirva\n1,2,3\n'), 'charges/cabecalho-errado.csv');
    const answer = await waitForAnswer(ws, 'charges', 'cabecalho-errado');
    expect(answer.type).toBe('rejected');
    const line = (await get('/metrics')).text
      .split('\n')
      .find((l) => l.startsWith('remessa_last_batch_answered_timestamp_seconds '));
    expect(Number(line?.split(' ')[1])).toBeGreaterThanOrEqual(before);
    // And it counts among the batches, rejected, as `remessa status` counts it (before: only stored batches).
    const batches = samples((await get('/metrics')).text).filter((s) => s.name === 'remessa_batches');
    expect(batches.find((s) => s.labels.state === 'rejected')?.value).toBe(1);
    expect(batches.find((s) => s.labels.state === 'done')?.value).toBe(1);
  });

  it('is not ready, and says why, when the bank is gone', async () => {
    await sandbox.stop();
    const ready = await get('/readyz');
    expect(ready.status).toBe(503);
    const body = JSON.parse(ready.text) as { ready: boolean; checks: Record<string, string> };
    expect(body.ready).toBe(false);
    expect(body.checks.store).toBe('ok');
    expect(body.checks.inbox).toBe('ok');
    expect(body.checks.bank).toMatch(/SERVICE_UNREACHABLE|SERVICE_CONNECTION|no answer/);
    expect((await get('/healthz')).status).toBe(200);
  });
});

describe('a metrics port another process holds', () => {
  it('is refused at start, naming the setting, before any file is taken (exit 2)', async () => {
    // Before: the daemon took the inbox's files, called the bank, then died with a listen EADDRINUSE stack (exit 1).
    const other = (await import('node:net')).createServer();
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const port = (other.address() as { port: number }).port;
    try {
      const busy = await makeWorkspace(sandbox.url);
      const config = JSON.parse(await fs.readFile(busy.config, 'utf8')) as Record<string, unknown>;
      config.metrics = { host: '127.0.0.1', port };
      await fs.writeFile(busy.config, JSON.stringify(config));
      await drop(busy, path.join(EXAMPLES, 'charges.csv'), 'charges/cedo.csv');
      const started = startDaemon(busy);
      const code = await new Promise<number | null>((resolve) => started.child.on('exit', resolve));
      expect(code).toBe(2);
      expect(started.stderr()).toContain(
        `metrics.port ${port} on 127.0.0.1 is used by another process: stop it, or set metrics.port to a free port`,
      );
      expect(started.stderr()).not.toContain('took file from the inbox');
      expect(await fs.readdir(path.join(busy.inbox, 'charges'))).toContain('cedo.csv');
    } finally {
      other.close();
    }
  });
});
