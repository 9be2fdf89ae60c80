/**
 * End to end, the retorno (issue 11 "Done when"): the bank sandbox and the daemon as separate child processes, in the
 * profile REMESSA_TEST_PROFILE names (the harness's `TEST_PROFILE`; every path and header below comes from its
 * profile definition).
 *
 * Through the pipeline: charges issued (slips with a discount, with interest and fine rules, a Pix charge), one voided
 * through the charge-voids kind, dynamic and static QR codes created and paid by Pix QR payments; through the
 * sandbox's staging routes: slips paid, expired, expired then paid (interest and fine), the Pix charge paid. The
 * retorno must list exactly those changes, with the amounts (paid, discount, interest, fine) and the times the bank
 * itself records, once each, in three modes:
 *   (a) webhooks only (no reconciliation), with the daemon SIGKILLed in the middle of deliveries: the bank retries,
 *       nothing is lost, nothing is doubled;
 *   (b) reconciliation only (`remessa reconcile`, no receiver, nothing registered), with what no event reports: a
 *       bill payment scheduled a little ahead (SCHEDULED until the bank runs it on its date) and a key claim moved on
 *       to COMPLETED, both listed by `remessa status` as waiting until reconciliation tells their outcome;
 *   (c) both, with a delivery of a wrong authorization refused (401) and not stored, and /metrics scraped.
 * The sandbox's webhook retries and the daemon's retorno schedule are shortened by config, to keep the file quick.
 */

import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { brasiliaTime } from '../src/formats/brasilia-time.js';
import { BANK_PROFILE_DEFINITIONS, type BankOperation, fillPath } from '../src/formats/profiles.js';
import { instantIn } from '../src/i18n/index.js';
import { SANDBOX_BILL_FIXTURES } from '../src/sandbox/bills.js';
import { openDatabase } from '../src/store/db.js';
import {
  callSignal,
  drop,
  makeWorkspace,
  type Proc,
  parseResultCsv,
  runCli,
  type SandboxProcess,
  startDaemon,
  startSandboxProcess,
  stopDaemon,
  TEST_PROFILE,
  type Workspace,
  waitFor,
  waitForAnswer,
} from './e2e-harness.js';
import { closedPort } from './helpers/net.js';

const API_KEY = 'e2e-retorno-api-key-0001';
const AUTHORIZATION = 'e2e-retorno-receiver-token-7c1d';
const PROFILE = BANK_PROFILE_DEFINITIONS[TEST_PROFILE];
const DYNAMIC_QR = '6b1f0c2e-3d4a-4f5b-8c6d-7e8f9a0b1c2d';
const STATIC_QR = 'RT-QR-STATIC';

const procs: Proc[] = [];
const sandboxes: SandboxProcess[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const p of procs.splice(0).reverse()) {
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await p.exited;
  }
  for (const s of sandboxes.splice(0)) await s.stop();
  for (const d of dirs.splice(0)) await fs.rm(d, { recursive: true, force: true });
});

const CHARGES_CSV = `type,correlationId,amount,dueDate,yourNumber,expiresIn,payer.name,payer.document,payer.address.zipCode,payer.address.publicPlace,payer.address.city,payer.address.state,discount.type,discount.items.1.date,discount.items.1.amount,lateFine.type,lateFine.amount,latePayment.type,latePayment.amount
BANKSLIP,RT-PAID,100.00,2027-12-31,NF-1,,Cliente A,390.533.447-05,01310-100,Rua A,São Paulo,SP,,,,,,,
BANKSLIP_PIX,RT-DISC,200.00,2027-12-31,NF-2,,Cliente B,529.982.247-25,01310-100,Rua B,São Paulo,SP,Fixed,2027-12-01,10.00,,,,
BANKSLIP,RT-LATE,300.00,2027-12-31,NF-3,,Cliente C,123.456.789-09,01310-100,Rua C,São Paulo,SP,,,,Percentage,2.00,Fixed,0.50
BANKSLIP,RT-EXP,400.00,2027-12-31,NF-4,,Cliente D,390.533.447-05,01310-100,Rua D,São Paulo,SP,,,,,,,
BANKSLIP,RT-VOID,500.00,2027-12-31,NF-5,,Cliente E,390.533.447-05,01310-100,Rua E,São Paulo,SP,,,,,,,
BANKSLIP,RT-OPEN,600.00,2027-12-31,NF-6,,Cliente F,390.533.447-05,01310-100,Rua F,São Paulo,SP,,,,,,,
PIX_DYNAMIC,RT-PIXC,55.00,,,3600,Cliente G,390.533.447-05,,,,,,,,,,,
`;

const QR_CSV = `type,correlationId,amount,description,expiresIn,payer.name,payer.document,city.name,city.zipCode,additionalInformation
PIX_DYNAMIC,${DYNAMIC_QR},40.00,Pedido 1,3600,Cliente H,390.533.447-05,São Paulo,01310-100,
PIX_STATIC,${STATIC_QR},25.00,Cafe,,,,,,Obrigado
`;

type Mode = 'webhooks' | 'reconcile' | 'both';

interface World {
  mode: Mode;
  sandbox: SandboxProcess;
  ws: Workspace;
  env: NodeJS.ProcessEnv;
  receiverUrl: string | undefined;
  metricsPort: number;
}

async function world(mode: Mode): Promise<World> {
  const bankDir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-retorno-bank-'));
  dirs.push(bankDir);
  // The bank retries a failed delivery after 200 ms, doubling up to 1 s, for 40 attempts: a daemon down for a few
  // seconds misses nothing, and the test does not wait minutes.
  const bankConfig = path.join(bankDir, 'sandbox.jsonc');
  await fs.writeFile(
    bankConfig,
    JSON.stringify({
      sandbox: {
        webhookBackoffBaseMs: 200,
        webhookBackoffMaxMs: 1_000,
        webhookMaxAttempts: 40,
        webhookPollIntervalMs: 100,
      },
    }),
  );
  const sandbox = await startSandboxProcess(path.join(bankDir, 'bank.sqlite'), {
    args: ['-k', API_KEY, '--allow-loopback-webhooks', '--config', bankConfig],
  });
  sandboxes.push(sandbox);
  const ws = await makeWorkspace(sandbox.url, { bank: { apiKey: API_KEY } });
  dirs.push(ws.dir);
  const config = JSON.parse(await fs.readFile(ws.config, 'utf8')) as Record<string, unknown>;
  // Events applied every second; the daemon never reconciles on its own (reconciliation is `remessa reconcile`).
  config.reconcile = { everyMinutes: 0, applyEventsEverySeconds: 1 };
  const metricsPort = await closedPort();
  config.metrics = { port: metricsPort };
  let receiverUrl: string | undefined;
  if (mode !== 'reconcile') {
    const port = await closedPort();
    receiverUrl = `http://127.0.0.1:${port}/hooks/retorno`;
    config.webhooks = {
      receiver: { port, path: '/hooks/retorno', publicUrl: receiverUrl, authorizationScheme: 'BEARER' },
      events: ['CHARGE_PAID', 'PIX_RECEIVED', 'PIX_PAYMENT_UPDATED', 'CHARGE_EXPIRED'],
    };
  }
  await fs.writeFile(ws.config, JSON.stringify(config, null, 2));
  const env = { REMESSA_WEBHOOK_AUTHORIZATION: AUTHORIZATION };
  if (receiverUrl) {
    const registered = await runCli(['webhooks', 'register', '--config', ws.config], { env });
    expect(registered.code, registered.stderr).toBe(0);
    expect(registered.stdout + registered.stderr).not.toContain(AUTHORIZATION);
  }
  return { mode, sandbox, ws, env, receiverUrl, metricsPort };
}

/** A request to the bank in the suite's dialect (staging routes, look-ups for the expected values). */
async function bank(w: World, method: string, op: BankOperation, ids: string[] = []): Promise<unknown> {
  const res = await fetch(`${w.sandbox.url}${fillPath(PROFILE.paths[op], ...ids)}`, {
    signal: callSignal(`${method} ${op} ${ids.join(' ')}`),
    method,
    headers: { [PROFILE.headers.apiKey]: API_KEY, [PROFILE.headers.accountId]: '1234567' },
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${op} ${ids.join(' ')}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

const pay = (w: World, id: string) => bank(w, 'POST', 'chargeStagingPay', [id]);
const expire = (w: World, id: string) => bank(w, 'PUT', 'chargeStagingExpire', [id]);

/** Issues the charges and QR codes, and pays the QR codes through the pipeline; returns the payments' endToEndIds. */
async function issueAndPayQrCodes(w: World): Promise<string[]> {
  await drop(w.ws, Buffer.from(CHARGES_CSV), 'charges/rt-charges.csv');
  await drop(w.ws, Buffer.from(QR_CSV), 'qr-codes/rt-qr.csv');
  const charges = await waitForAnswer(w.ws, 'charges', 'rt-charges');
  expect(charges.type, charges.text).toBe('result');
  expect(parseResultCsv(charges.text).map((r) => r.status)).toEqual(Array(7).fill('succeeded'));
  const qr = await waitForAnswer(w.ws, 'qr-codes', 'rt-qr');
  expect(qr.type, qr.text).toBe('result');
  const codes = parseResultCsv(qr.text);
  expect(codes.map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
  const payments = `payload,amount,description\n${codes[0]!.qrCodePayload},40.00,Pedido 1\n${codes[1]!.qrCodePayload},25.00,Cafe\n`;
  await drop(w.ws, Buffer.from(payments), 'pix-payments/rt-pay.csv');
  const paid = await waitForAnswer(w.ws, 'pix-payments', 'rt-pay');
  expect(paid.type, paid.text).toBe('result');
  const rows = parseResultCsv(paid.text);
  expect(rows.map((r) => [r.status, r.paymentStatus])).toEqual([
    ['succeeded', 'PIX_PROCESSING'],
    ['succeeded', 'PIX_PROCESSING'],
  ]);
  return rows.map((r) => r.endToEndId!);
}

async function voidOne(w: World): Promise<void> {
  await drop(w.ws, Buffer.from('correlationId\nRT-VOID\n'), 'charge-voids/rt-void.csv');
}

async function voided(w: World): Promise<void> {
  const answer = await waitForAnswer(w.ws, 'charge-voids', 'rt-void');
  expect(parseResultCsv(answer.text)[0]).toMatchObject({ status: 'succeeded', chargeStatus: 'Voided' });
}

/** What the bank itself says happened: the expected retorno lines, each `kind key old>new paid discount interest fine at`. */
async function expectedLines(w: World, endToEndIds: string[]): Promise<string[]> {
  const charge = async (id: string) => (await bank(w, 'GET', 'charge', [id])) as Record<string, string>;
  const out: string[] = [];
  const paidAt = async (id: string) => (await charge(id)).paidAt!;
  const expiredAt = async (id: string) => (await charge(id)).expiredAt!;
  out.push(`charge RT-PAID Pending>Paid 100.00 0.00 0.00 0.00 ${await paidAt('RT-PAID')}`);
  out.push(`charge RT-DISC Created>Paid 190.00 10.00 0.00 0.00 ${await paidAt('RT-DISC')}`);
  out.push(`charge RT-LATE Pending>Expired - - - - ${await expiredAt('RT-LATE')}`);
  out.push(`charge RT-LATE Expired>Paid 306.50 0.00 0.50 6.00 ${await paidAt('RT-LATE')}`);
  out.push(`charge RT-EXP Pending>Expired - - - - ${await expiredAt('RT-EXP')}`);
  out.push(`charge RT-VOID Pending>Voided - - - - ${(await charge('RT-VOID')).voidedAt}`);
  out.push(`charge RT-PIXC Created>Paid 55.00 - - - ${await paidAt('RT-PIXC')}`);
  const dyn = (await bank(w, 'GET', 'dynamicQrGet', [DYNAMIC_QR])) as Record<string, string>;
  out.push(`qr-code ${DYNAMIC_QR} PENDING>CONCLUDED 40.00 - - - ${dyn.paidAt}`);
  // A static code stays ACTIVE: the Pix received on it is a line of its own, keyed by the payment's endToEndId.
  const stat = (await bank(w, 'GET', 'staticQrGet', [STATIC_QR])) as {
    payments: Array<{ endToEndId: string; receivedAt?: string; createdAt?: string }>;
  };
  expect(stat.payments.map((p) => p.endToEndId)).toEqual([endToEndIds[1]]);
  // The time of receipt: `receivedAt` in the interface dialect, `createdAt` in delbank's (the provider's name).
  const received = TEST_PROFILE === 'delbank' ? stat.payments[0]!.createdAt : stat.payments[0]!.receivedAt;
  out.push(`pix-received ${endToEndIds[1]} ACTIVE>RECEIVED 25.00 - - - ${received}`);
  for (const [i, e2e] of endToEndIds.entries()) {
    const p = (await bank(w, 'GET', 'pixPaymentGet', [e2e])) as Record<string, string>;
    out.push(`pix-payment ${e2e} PIX_PROCESSING>${p.status} ${i === 0 ? '40.00' : '25.00'} - - - ${p.createdAt}`);
  }
  return out.sort();
}

interface RetornoLine {
  key: string;
  eventIds: string[];
  reportedBy: string;
}

/** Every line of every retorno file (a run may straddle midnight in Brasília), as `expectedLines` writes them. */
async function retornoLines(ws: Workspace): Promise<RetornoLine[]> {
  const dir = path.join(ws.outbox, 'retorno');
  const names = (await fs.readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith('.csv')).sort();
  const out: RetornoLine[] = [];
  for (const name of names) {
    for (const r of parseResultCsv(await fs.readFile(path.join(dir, name)))) {
      const id =
        r.kind === 'pix-payment' || r.kind === 'pix-received'
          ? r.endToEndId
          : r.kind === 'bill-payment'
            ? r.paymentId
            : r.kind === 'claim'
              ? r.claimId
              : r.correlationId;
      const money = (v: string | undefined) => (v ? v : '-');
      out.push({
        key: [
          r.kind,
          id,
          `${r.oldStatus}>${r.newStatus}`,
          money(r.paidAmount),
          money(r.discountAmount),
          money(r.interestAmount),
          money(r.fineAmount),
          r.occurredAt,
        ].join(' '),
        eventIds: r.eventId ? r.eventId.split(' ') : [],
        reportedBy: r.reportedBy!,
      });
    }
  }
  return out;
}

function countStored(ws: Workspace, where = '1 = 1', ...params: string[]): number {
  const db = openDatabase(path.join(ws.data, 'remessa.sqlite'), { readonly: true });
  try {
    return (db.prepare(`SELECT COUNT(*) AS n FROM webhook_events WHERE ${where}`).get(...params) as { n: number }).n;
  } catch {
    return 0;
  } finally {
    db.close();
  }
}

async function deliveries(w: World): Promise<Array<{ state: string; lastStatus: number | null }>> {
  return (await w.sandbox.admin('GET', '/webhook-deliveries')) as never;
}

/** Waits until the retorno holds `expected` exactly, and holds it still after the bank delivered everything. */
async function expectRetorno(w: World, expected: string[]): Promise<RetornoLine[]> {
  const keys = async () => (await retornoLines(w.ws)).map((l) => l.key).sort();
  await waitFor(
    'the retorno to list every change',
    async () => JSON.stringify(await keys()) === JSON.stringify(expected),
    45_000,
    200,
  ).catch(async (err) => {
    expect(await keys(), String(err)).toEqual(expected);
  });
  if (w.mode !== 'reconcile') {
    await waitFor('every delivery delivered', async () => (await deliveries(w)).every((d) => d.state === 'delivered'));
    // One more application pass after the last delivery: nothing may be added twice.
    await new Promise((r) => setTimeout(r, 1_500));
  }
  const lines = await retornoLines(w.ws);
  expect(lines.map((l) => l.key).sort()).toEqual(expected);
  return lines;
}

describe(`the retorno end to end (${TEST_PROFILE} profile; sandbox and daemon in separate processes)`, () => {
  it('(a) webhooks only: every change once, with its amounts and times, through a daemon SIGKILLed mid-delivery', async () => {
    const w = await world('webhooks');
    let daemon = startDaemon(w.ws, w.env);
    procs.push(daemon);
    const e2e = await issueAndPayQrCodes(w);
    // Deliveries under way while the receiver dies: pay two slips, kill the daemon once the first event is stored.
    const before = countStored(w.ws);
    await pay(w, 'RT-PAID');
    await pay(w, 'RT-DISC');
    await waitFor('an event of the payments stored', () => countStored(w.ws) > before, 10_000, 5);
    daemon.child.kill('SIGKILL');
    expect(await daemon.exited).toBe('SIGKILL');
    // While it is down: more changes at the bank (their deliveries fail and wait for a retry), a void waits in the inbox.
    await expire(w, 'RT-LATE');
    await pay(w, 'RT-LATE');
    await expire(w, 'RT-EXP');
    await pay(w, 'RT-PIXC');
    await voidOne(w);
    await waitFor('a delivery refused while the receiver is down', async () =>
      (await deliveries(w)).some((d) => d.state === 'pending' && d.lastStatus === null),
    );
    daemon = startDaemon(w.ws, w.env);
    procs.push(daemon);
    await voided(w);
    const lines = await expectRetorno(w, await expectedLines(w, e2e));
    // Every line was told by its events; a Pix charge paid is one line told by CHARGE_PAID and PIX_RECEIVED.
    for (const l of lines) {
      if (l.key.includes('>Voided')) expect(l.reportedBy).toBe('row');
      else expect(l.eventIds.length, l.key).toBeGreaterThan(0);
    }
    expect(lines.find((l) => l.key.startsWith('charge RT-PIXC'))!.eventIds).toHaveLength(2);
    const ids = lines.flatMap((l) => l.eventIds);
    expect(new Set(ids).size).toBe(ids.length);
    expect(await stopDaemon(daemon)).toBe(0);
  }, 150_000);

  it('(b) reconciliation only: no receiver, `remessa reconcile` tells the same changes, and scheduled bill payments and claims', async () => {
    const w = await world('reconcile');
    const daemon = startDaemon(w.ws, w.env);
    procs.push(daemon);
    // Things no event reports: a bill payment scheduled a little ahead (it goes through at the bank on its date), and
    // a key claim (moved on by the other participant, here the sandbox's admin route).
    // Written as the clerk would, Brasília's wall time without a zone (as remessa sends it and the bank reads it).
    const payAt = new Date(Math.floor((Date.now() + 30_000) / 1000) * 1000);
    const payAtText = brasiliaTime(payAt.toISOString(), false).replace(' ', 'T');
    const bill = SANDBOX_BILL_FIXTURES.PENDING_PAYMENT;
    await drop(
      w.ws,
      Buffer.from(`digitableLine,amount,payAt\n${bill.digitableLine},150.00,${payAtText}\n`),
      'bill-payments/rt-bill.csv',
    );
    await drop(
      w.ws,
      Buffer.from(
        'type,key,account.number,account.branch,account.type,account.holder.document,account.holder.name,account.holder.type\n' +
          'EMAIL,retorno-e2e@example.com,123456-7,0001,CURRENT,123.456.789-09,Maria da Silva,NATURAL\n',
      ),
      'claims/rt-claim.csv',
    );
    const e2e = await issueAndPayQrCodes(w);
    const billRow = parseResultCsv((await waitForAnswer(w.ws, 'bill-payments', 'rt-bill')).text)[0]!;
    expect(billRow).toMatchObject({ status: 'succeeded', paymentStatus: 'SCHEDULED' });
    const claimRow = parseResultCsv((await waitForAnswer(w.ws, 'claims', 'rt-claim')).text)[0]!;
    expect(claimRow.status).toBe('succeeded');
    for (const status of ['AWAITING_RESOLUTION', 'CONFIRMED', 'COMPLETED']) {
      await w.sandbox.admin('PATCH', `/claims/${claimRow.claimId}`, { status });
    }
    await pay(w, 'RT-PAID');
    await pay(w, 'RT-DISC');
    await expire(w, 'RT-LATE');
    await pay(w, 'RT-LATE');
    await expire(w, 'RT-EXP');
    await pay(w, 'RT-PIXC');
    await voidOne(w);
    await voided(w);
    expect(await stopDaemon(daemon)).toBe(0);
    expect(await deliveries(w)).toEqual([]);
    // The Pix payments answered PIX_PROCESSING, the scheduled bill payment and the claim wait for their final status
    // until reconciliation tells it.
    const waiting = await runCli(['status', '--locale', 'en', '--config', w.ws.config]);
    expect(waiting.stdout).toContain('Waiting for a final status from the bank: 4');
    for (const id of e2e) expect(waiting.stdout).toContain(`pix-payment ${id}: PIX_PROCESSING`);
    expect(waiting.stdout).toContain(`bill-payment ${billRow.paymentId}: SCHEDULED since`);
    expect(waiting.stdout).toContain(`due ${instantIn('en', payAt.toISOString())}`);
    expect(waiting.stdout).toContain(`claim ${claimRow.claimId}: ${claimRow.claimStatus} since`);

    // Once the payment's date has passed (the bank runs it then).
    await new Promise((r) => setTimeout(r, Math.max(0, payAt.getTime() + 1_500 - Date.now())));
    const reconciled = await runCli(['reconcile', '--config', w.ws.config]);
    expect(reconciled.code, reconciled.stderr).toBe(0);
    const paidBill = (await bank(w, 'GET', 'billPaymentGet', [billRow.paymentId!])) as Record<string, string>;
    expect(paidBill.status).toBe('PAID');
    const claim = (await w.sandbox.admin('GET', `/claims/${claimRow.claimId}`)) as Record<string, string>;
    const expected = [
      ...(await expectedLines(w, e2e)),
      `bill-payment ${billRow.paymentId} SCHEDULED>PAID 150.00 0.00 0.00 0.00 ${paidBill.paidAt}`,
      `claim ${claimRow.claimId} ${claimRow.claimStatus}>COMPLETED - - - - ${claim.updatedAt}`,
    ].sort();
    const lines = await expectRetorno(w, expected);
    for (const l of lines) {
      expect(l.eventIds, l.key).toEqual([]);
      expect(l.reportedBy, l.key).toBe(l.key.includes('>Voided') ? 'row' : 'reconcile');
    }
    const settled = await runCli(['status', '--locale', 'en', '--config', w.ws.config]);
    expect(settled.stdout).toContain('Waiting for a final status from the bank: 0');
    // A second reconciliation learns nothing new: the same lines.
    expect((await runCli(['reconcile', '--config', w.ws.config])).code).toBe(0);
    expect((await retornoLines(w.ws)).map((l) => l.key).sort()).toEqual(lines.map((l) => l.key).sort());
  }, 150_000);

  it('(c) webhooks and reconciliation: the same changes once each; a wrong authorization is refused and not stored', async () => {
    const w = await world('both');
    const daemon = startDaemon(w.ws, w.env);
    procs.push(daemon);
    const e2e = await issueAndPayQrCodes(w);
    await pay(w, 'RT-PAID');
    await pay(w, 'RT-DISC');
    await expire(w, 'RT-LATE');
    await pay(w, 'RT-LATE');
    await expire(w, 'RT-EXP');
    await pay(w, 'RT-PIXC');
    await voidOne(w);
    await voided(w);

    // A delivery with a wrong authorization: 401, nothing stored.
    const forged = randomUUID();
    const res = await fetch(w.receiverUrl!, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer not-the-registered-value' },
      body: JSON.stringify({
        id: forged,
        event: 'CHARGE_PAID',
        createdAt: new Date().toISOString(),
        data: { correlationId: 'RT-OPEN', status: 'Paid', amount: 600 },
      }),
    });
    expect(res.status).toBe(401);
    const expected = await expectedLines(w, e2e);
    const viaEvents = await expectRetorno(w, expected);
    expect(countStored(w.ws, 'id = ?', forged)).toBe(0);

    // /metrics over HTTP: deliveries stored and rejected, events applied, nothing left unsettled.
    const metrics = await (await fetch(`http://127.0.0.1:${w.metricsPort}/metrics`)).text();
    const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1]);
    const stored = countStored(w.ws);
    expect(value('remessa_webhook_events_total\\{result="stored"\\}')).toBe(stored);
    expect(value('remessa_webhook_events_total\\{result="rejected"\\}')).toBe(1);
    expect(value('remessa_retorno_events_applied_total')).toBe(stored);
    expect(value('remessa_retorno_oldest_unsettled_seconds')).toBe(0);
    expect(await stopDaemon(daemon)).toBe(0);

    // The same config (receiver on) needs the same credential, even for reconciling.
    const reconciled = await runCli(['reconcile', '--config', w.ws.config], { env: w.env });
    expect(reconciled.code, reconciled.stderr).toBe(0);
    const both = await retornoLines(w.ws);
    expect(both.map((l) => l.key).sort()).toEqual(expected);
    // Reconciliation completed nothing and doubled nothing: the same lines, told by the same events.
    expect(both).toEqual(viaEvents);
  }, 150_000);
});
