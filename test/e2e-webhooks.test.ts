/**
 * End to end: the bank sandbox and the daemon as separate child processes; the daemon's webhook receiver registered
 * with `remessa webhooks register` and fed by the sandbox's real delivery (with its retries).
 *
 * - charges issued through the pipeline and paid through the sandbox's staging route land in `webhook_events`
 *   once each;
 * - the daemon SIGKILLed in the middle of deliveries loses no event: the sandbox retries, the restarted daemon stores
 *   each missing one, still once each;
 * - a wrong authorization is refused 401 and nothing is stored (until `remessa webhooks update` sends the right one);
 * - a duplicate delivery is stored once; an oversized body is refused 413;
 * - with the embedded sandbox (the default config) the daemon registers its own receiver: the whole loop in one
 *   process, as `npm start` shows it, in every profile.
 * The sandbox serves the suite's profile (REMESSA_TEST_PROFILE); the test's own calls to it (paying a charge at the
 * staging route, the webhook list) go through the harness in that dialect.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/store/db.js';
import { openStore } from '../src/store/store.js';
import { listWebhookEvents, type WebhookEventRecord } from '../src/store/webhook-events.js';
import {
  callBank,
  drop,
  E2E_PROFILES,
  makeWorkspace,
  type Proc,
  runCli,
  type SandboxProcess,
  startDaemon,
  startSandboxProcess,
  stopDaemon,
  type Workspace,
  waitFor,
  waitForAnswer,
} from './e2e-harness.js';
import { closedPort } from './helpers/net.js';

const API_KEY = 'e2e-webhooks-api-key-0001';
const AUTHORIZATION = 'e2e-receiver-token-5f2c9a71d3';
const CHARGES = 12;

const procs: Proc[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const p of procs.splice(0).reverse()) {
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await p.exited;
  }
  for (const d of dirs.splice(0)) await fs.rm(d, { recursive: true, force: true });
});

interface Setup {
  sandbox: SandboxProcess;
  ws: Workspace;
  port: number;
  eventsUrl: string;
  env: NodeJS.ProcessEnv;
}

async function setup(authorization = AUTHORIZATION): Promise<Setup> {
  const sandboxDir = await fs.mkdtemp(path.join((await import('node:os')).tmpdir(), 'remessa-e2e-bank-'));
  dirs.push(sandboxDir);
  // In the suite's profile (REMESSA_TEST_PROFILE), like the daemon's client; the test's own calls go through
  // `sandbox.call` in the same dialect, with the daemon's key.
  const sandbox = await startSandboxProcess(path.join(sandboxDir, 'bank.sqlite'), {
    apiKey: API_KEY,
    args: ['--allow-loopback-webhooks'],
  });
  procs.push(sandbox.proc);
  const ws = await makeWorkspace(sandbox.url, { bank: { apiKey: API_KEY } });
  dirs.push(ws.dir);
  const port = await closedPort();
  const eventsUrl = `http://127.0.0.1:${port}/hooks/remessa`;
  const config = JSON.parse(await fs.readFile(ws.config, 'utf8')) as Record<string, unknown>;
  config.webhooks = {
    receiver: {
      port,
      path: '/hooks/remessa',
      publicUrl: eventsUrl,
      authorizationScheme: 'BEARER',
      bodyLimitBytes: 4096,
    },
    events: ['CHARGE_PAID', 'PIX_RECEIVED', 'CHARGE_EXPIRED'],
  };
  await fs.writeFile(ws.config, JSON.stringify(config, null, 2));
  const env = { REMESSA_WEBHOOK_AUTHORIZATION: authorization };
  const registered = await runCli(['webhooks', 'register', '--config', ws.config], { env });
  expect(registered.code, registered.stderr).toBe(0);
  expect(registered.stdout).toContain('CHARGE_PAID');
  expect(registered.stdout + registered.stderr).not.toContain(authorization);
  return { sandbox, ws, port, eventsUrl, env };
}

function chargesCsv(prefix: string): string {
  const lines = [
    'type,correlationId,amount,dueDate,payer.name,payer.document,payer.address.zipCode,payer.address.publicPlace,payer.address.city,payer.address.state',
  ];
  for (let i = 0; i < CHARGES; i++) {
    lines.push(
      `BANKSLIP,${prefix}-${i},${(50 + i).toFixed(2)},2027-09-30,Cliente ${i},390.533.447-05,01310-100,Rua A,São Paulo,SP`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** Every stored event, read from the daemon's store with a connection of our own. */
async function storedEvents(ws: Workspace): Promise<WebhookEventRecord[]> {
  const store = await openStore(path.join(ws.data, 'remessa.sqlite'), { readonly: true });
  try {
    return await listWebhookEvents(store);
  } finally {
    await store.close();
  }
}

function countEvents(ws: Workspace): number {
  const db = openDatabase(path.join(ws.data, 'remessa.sqlite'), { readonly: true });
  try {
    return (db.prepare('SELECT COUNT(*) AS n FROM webhook_events').get() as { n: number }).n;
  } catch {
    return 0;
  } finally {
    db.close();
  }
}

async function issueCharges(s: Setup, prefix: string): Promise<string[]> {
  await drop(s.ws, Buffer.from(chargesCsv(prefix)), `charges/${prefix}.csv`);
  const answer = await waitForAnswer(s.ws, 'charges', prefix);
  expect(answer.type).toBe('result');
  return Array.from({ length: CHARGES }, (_, i) => `${prefix}-${i}`);
}

async function deliveries(s: Setup): Promise<Array<{ state: string; lastStatus: number | null }>> {
  return (await s.sandbox.admin('GET', '/webhook-deliveries')) as never;
}

/** Asks the sandbox to attempt every pending delivery now, until none is pending. */
async function drainDeliveries(s: Setup): Promise<void> {
  await waitFor('every delivery delivered', async () => {
    await s.sandbox.admin('POST', '/webhook-deliveries/run?ignoreBackoff=true');
    const all = await deliveries(s);
    return all.length > 0 && all.every((d) => d.state === 'delivered');
  });
}

async function expectOncePerCharge(ws: Workspace, ids: readonly string[]): Promise<void> {
  const events = await storedEvents(ws);
  const paid = events.filter((e) => e.type === 'CHARGE_PAID');
  expect(paid.map((e) => e.correlationId).sort()).toEqual([...ids].sort());
  expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
  for (const e of paid) {
    expect(e.ourNumber).toMatch(/^\d+$/);
    expect(e.occurredAt).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(e.appliedAt).toBeNull();
    expect(JSON.parse(e.payload)).toMatchObject({ id: e.id, event: 'CHARGE_PAID', data: { status: 'Paid' } });
  }
}

describe('webhooks end to end (sandbox and daemon in separate processes)', () => {
  it('charges issued by the pipeline and paid at the bank land in webhook_events once each', async () => {
    const s = await setup();
    const daemon = startDaemon(s.ws, s.env);
    procs.push(daemon);
    const ids = await issueCharges(s, 'WH');
    for (const id of ids) expect((await s.sandbox.call('POST', 'chargeStagingPay', { params: [id] })).status).toBe(200);
    await waitFor('an event per charge paid', () => countEvents(s.ws) >= CHARGES);
    await drainDeliveries(s);
    await expectOncePerCharge(s.ws, ids);
    expect(await stopDaemon(daemon)).toBe(0);
    expect(daemon.stdout() + daemon.stderr()).not.toContain(AUTHORIZATION);
  }, 120_000);

  it('a daemon SIGKILLed in the middle of deliveries loses no event: the bank retries, the restart stores them', async () => {
    const s = await setup();
    let daemon = startDaemon(s.ws, s.env);
    procs.push(daemon);
    const ids = await issueCharges(s, 'KILL');
    // Pay half while the daemon receives, and kill it part-way through their deliveries; pay the rest while down.
    const pay = async (some: readonly string[]) => {
      for (const id of some) {
        expect((await s.sandbox.call('POST', 'chargeStagingPay', { params: [id] })).status).toBe(200);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const half = ids.slice(0, CHARGES / 2);
    const paying = pay(half);
    await waitFor('some events stored', () => countEvents(s.ws) >= 2);
    daemon.child.kill('SIGKILL');
    expect(await daemon.exited).toBe('SIGKILL');
    await paying;
    await pay(ids.slice(CHARGES / 2));
    // Deliveries attempted while it was down failed and wait for their retry.
    await s.sandbox.admin('POST', '/webhook-deliveries/run?ignoreBackoff=true');
    const before = countEvents(s.ws);
    expect(before).toBeLessThan(CHARGES);
    expect((await deliveries(s)).some((d) => d.state === 'pending')).toBe(true);

    daemon = startDaemon(s.ws, s.env);
    procs.push(daemon);
    await waitFor('the daemon to listen again', () => /webhook receiver listening/.test(logs(daemon)));
    await drainDeliveries(s);
    await expectOncePerCharge(s.ws, ids);
    expect(await stopDaemon(daemon)).toBe(0);
  }, 120_000);

  it('refuses a wrong authorization with 401 and stores nothing, until the registration is updated', async () => {
    // Registered with another value than the one the daemon checks (a credential rotated on one side only).
    const s = await setup('a-stale-token-from-last-year');
    const current = { REMESSA_WEBHOOK_AUTHORIZATION: AUTHORIZATION };
    const daemon2 = startDaemon(s.ws, current);
    procs.push(daemon2);
    const ids = (await issueCharges(s, 'AUTH')).slice(0, 3);
    for (const id of ids) expect((await s.sandbox.call('POST', 'chargeStagingPay', { params: [id] })).status).toBe(200);
    await waitFor('three refused deliveries', async () => {
      const all = await deliveries(s);
      return all.length === 3 && all.every((d) => d.lastStatus === 401 && d.state === 'pending');
    });
    expect(countEvents(s.ws)).toBe(0);
    expect(logs(daemon2)).toContain('wrong or missing authorization');

    const updated = await runCli(['webhooks', 'update', '--config', s.ws.config], { env: current });
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.stdout).toContain('updated');
    expect(updated.stdout + updated.stderr).not.toContain(AUTHORIZATION);
    await drainDeliveries(s);
    expect((await storedEvents(s.ws)).map((e) => e.correlationId).sort()).toEqual([...ids].sort());
    expect(await stopDaemon(daemon2)).toBe(0);
  }, 120_000);

  it('stores a duplicate delivery once, refuses an oversized body with 413; webhooks list and delete', async () => {
    const s = await setup();
    const daemon = startDaemon(s.ws, s.env);
    procs.push(daemon);
    await waitFor('the receiver', () => /webhook receiver listening/.test(logs(daemon)));
    const post = (body: string) =>
      fetch(s.eventsUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${AUTHORIZATION}` },
        body,
      });
    const event = JSON.stringify({
      id: 'dup-event-1',
      event: 'CHARGE_PAID',
      createdAt: '2026-11-23T10:00:00.000Z',
      data: { correlationId: 'not-ours-1', status: 'Paid' },
    });
    expect((await post(event)).status).toBe(200);
    expect((await post(event)).status).toBe(200);
    const big = JSON.stringify({ id: 'big-1', event: 'CHARGE_PAID', data: { note: 'x'.repeat(8000) } });
    expect((await post(big)).status).toBe(413);
    const events = await storedEvents(s.ws);
    expect(events.map((e) => e.id)).toEqual(['dup-event-1']);
    expect(await stopDaemon(daemon)).toBe(0);

    // What is registered, shown without the value; deleting one type leaves the others.
    const listed = await runCli(['webhooks', 'list', '--config', s.ws.config], { env: s.env });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout.split('\n').filter((l) => l.startsWith('*') && l.includes(s.eventsUrl))).toHaveLength(3);
    expect(listed.stdout).toContain('BEARER');
    expect(listed.stdout + listed.stderr).not.toContain(AUTHORIZATION);
    const deleted = await runCli(['webhooks', 'delete', '--events', 'CHARGE_EXPIRED', '--config', s.ws.config], {
      env: s.env,
    });
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toContain('deleted');
    const registered = (await s.sandbox.call('GET', 'webhooks')).json as Array<{ eventType: string }>;
    expect(registered.map((w) => w.eventType).sort()).toEqual(['CHARGE_PAID', 'PIX_RECEIVED']);
  }, 90_000);

  // In every profile: the daemon's registration client speaks the embedded sandbox's dialect (it once spoke the
  // default one, and a daemon in the delbank profile exited 1 at its start on the 401).
  it.each(E2E_PROFILES)(
    'with the embedded sandbox (%s) the daemon registers its own receiver and stores what it delivers',
    async (profile) => {
      const ws = await makeWorkspace('embedded');
      dirs.push(ws.dir);
      const config = JSON.parse(await fs.readFile(ws.config, 'utf8')) as { bank: Record<string, unknown> };
      config.bank = { url: 'embedded', profile, retry: config.bank.retry };
      await fs.writeFile(ws.config, JSON.stringify(config, null, 2));
      const daemon = startDaemon(ws);
      procs.push(daemon);
      const bankUrl = await waitFor('the embedded sandbox', () => {
        const m = /"url":"(http:\/\/127\.0\.0\.1:\d+)".*embedded sandbox started/.exec(logs(daemon));
        return m?.[1];
      });
      await waitFor('the registration', () => /registered with the embedded sandbox/.test(logs(daemon)));
      await drop(ws, Buffer.from(`${chargesCsv('EMB').split('\n').slice(0, 3).join('\n')}\n`), 'charges/EMB.csv');
      expect((await waitForAnswer(ws, 'charges', 'EMB')).type).toBe('result');
      for (const id of ['EMB-0', 'EMB-1']) {
        const res = await callBank({ url: bankUrl, profile }, 'POST', 'chargeStagingPay', { params: [id] });
        expect(res.status, res.text).toBe(200);
      }
      await waitFor('two events', () => countEvents(ws) >= 2);
      expect((await storedEvents(ws)).map((e) => `${e.type} ${e.correlationId}`).sort()).toEqual([
        'CHARGE_PAID EMB-0',
        'CHARGE_PAID EMB-1',
      ]);
      expect(await stopDaemon(daemon)).toBe(0);
    },
    60_000,
  );
});

/** Everything a process wrote (the daemon logs to stderr). */
function logs(p: Proc): string {
  return p.stdout() + p.stderr();
}
