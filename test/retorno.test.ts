/**
 * The retorno end to end (issue 11 §2-3): the sandbox in its own process, `remessa run` and `remessa reconcile` as
 * real child processes. Charges issued through the pipeline from a Brazilian sheet (`;`, decimal comma,
 * Windows-1252) and a UTF-8 file; some paid and some expired through the staging routes; one voided through the
 * charge-voids kind; a dynamic QR code created and paid by a Pix QR payment. The retorno must list exactly those
 * changes, with the right amounts and times, once each: by reconciliation with no webhook, by events alone (inserted
 * into `webhook_events` as the receiver stores them), and by both.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import iconv from 'iconv-lite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/log.js';
import { retornoPass } from '../src/runner/retorno.js';
import { SANDBOX_PUBLIC_API_KEY } from '../src/sandbox/options.js';
import { openStore } from '../src/store/index.js';
import {
  answersOf,
  drop,
  makeWorkspace,
  parseResultCsv,
  runCli,
  type SandboxProcess,
  startDaemon,
  startSandboxProcess,
  stopDaemon,
  type Workspace,
  waitFor,
  waitForAnswer,
} from './e2e-harness.js';

let sandbox: SandboxProcess;
let tmp: string;

beforeAll(async () => {
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-retorno-'));
  sandbox = await startSandboxProcess(path.join(tmp, 'sandbox.sqlite'));
}, 30_000);

afterAll(async () => {
  await sandbox?.stop();
  await fs.rm(tmp, { recursive: true, force: true });
});

async function bank(method: string, route: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${sandbox.url}${route}`, {
    method,
    headers: {
      'x-service-api-key': SANDBOX_PUBLIC_API_KEY,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${text}`);
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}

async function cli(ws: Workspace, ...args: string[]) {
  const r = await runCli([...args, '--config', ws.config]);
  return r;
}

interface Scenario {
  ws: Workspace;
  ids: { pay: string; exp: string; void: string; open: string; pix: string; qr: string; e2e: string };
  /** The lines the retorno must hold, keyed by `kind id`. */
  expected: Map<string, { old: string; new: string; paid: string; at: string }>;
}

/** Issues the things, acts on them at the bank, and returns what the retorno must say. */
async function issueAndAct(tag: string): Promise<Scenario> {
  const ws = await makeWorkspace(sandbox.url);
  const files = path.join(ws.dir, 'files');
  await fs.mkdir(files);
  const ids = {
    pay: `${tag}-PAY`,
    exp: `${tag}-EXP`,
    void: `${tag}-VOID`,
    open: `${tag}-OPEN`,
    pix: `${tag}-PIX`,
    qr: randomUUID(),
    e2e: '',
  };
  const br = [
    'Nome do pagador;CPF/CNPJ;CEP;Endereço;Cidade;UF;Vencimento;Valor (R$);Seu número;correlationId',
    `Maria da Conceição;123.456.789-09;01310-100;Avenida Paulista;São Paulo;SP;15/03/2027;1.234,56;NF 1;${ids.pay}`,
    `João Araújo;529.982.247-25;20040-020;Rua da Assembleia;Rio de Janeiro;RJ;20/03/2027;200,00;NF 2;${ids.exp}`,
    `José Simões;123.456.789-09;01310-100;Avenida São João;São Paulo;SP;25/03/2027;300,10;NF 3;${ids.void}`,
    `Ana Lúcia;529.982.247-25;01310-100;Rua Augusta;São Paulo;SP;30/03/2027;50,00;NF 4;${ids.open}`,
  ].join('\r\n');
  await fs.writeFile(path.join(files, 'charges-br.csv'), iconv.encode(`${br}\r\n`, 'windows-1252'));
  await fs.writeFile(path.join(files, 'charges-pix.csv'), `type,correlationId,amount\nPIX_STATIC,${ids.pix},75.25\n`);
  await fs.writeFile(
    path.join(files, 'qr-codes-dyn.csv'),
    `type,correlationId,amount,description\nPIX_DYNAMIC,${ids.qr},150.00,Pedido ${tag}\n`,
  );
  const first = await cli(
    ws,
    'run',
    path.join(files, 'charges-br.csv'),
    path.join(files, 'charges-pix.csv'),
    path.join(files, 'qr-codes-dyn.csv'),
  );
  expect(first.code, first.stdout + first.stderr).toBe(0);

  const qrResult = parseResultCsv(
    await fs.readFile((await answersOf(ws, 'qr-codes', 'qr-codes-dyn')).at(-1)!.results.at(-1)!),
  );
  const payload = qrResult[0]!.qrCodePayload!;
  await fs.writeFile(path.join(files, 'pix-payments-qr.csv'), `payload,amount\n${payload},150.00\n`);
  const paid = await cli(ws, 'run', path.join(files, 'pix-payments-qr.csv'));
  expect(paid.code, paid.stdout + paid.stderr).toBe(0);
  const pixResult = parseResultCsv(
    await fs.readFile((await answersOf(ws, 'pix-payments', 'pix-payments-qr')).at(-1)!.results.at(-1)!),
  );
  // The row says what was known when the bank answered.
  expect(pixResult[0]!.paymentStatus).toBe('PIX_PROCESSING');
  ids.e2e = pixResult[0]!.endToEndId!;

  // Still waiting for its final status: `remessa status` says so.
  const status = await cli(ws, 'status', '--locale', 'en');
  expect(status.stdout).toMatch(/Waiting for a final status from the bank: 1/);
  expect(status.stdout).toContain(`pix-payment ${ids.e2e}: PIX_PROCESSING`);
  // In Portuguese by default, like the rest of `status`.
  const statusPt = await cli(ws, 'status');
  expect(statusPt.stdout).toMatch(/Aguardando status final do banco: 1/);
  expect(statusPt.stdout).toContain(`pix-payment ${ids.e2e}: PIX_PROCESSING desde `);

  await bank('POST', `/v1/charges/${ids.pay}/pay`);
  await bank('PUT', `/v1/charges/${ids.exp}/expire`);
  await bank('POST', `/v1/charges/${ids.pix}/pay`);
  await fs.writeFile(path.join(files, 'charge-voids-one.csv'), `correlationId\n${ids.void}\n`);
  const voided = await cli(ws, 'run', path.join(files, 'charge-voids-one.csv'));
  expect(voided.code, voided.stdout + voided.stderr).toBe(0);

  const get = (id: string) => bank('GET', `/v1/charges/${id}`);
  const [pay, exp, vd, pix] = await Promise.all([get(ids.pay), get(ids.exp), get(ids.void), get(ids.pix)]);
  const qr = await bank('GET', `/baas/api/v1/pix/qrcode/dynamic/${ids.qr}`);
  const pixPayment = await bank('GET', `/baas/api/v2/pix/qrcode/payment/${ids.e2e}`);
  expect(pixPayment.status).toBe('PIX_EXECUTED');
  const expected = new Map([
    [`charge ${ids.pay}`, { old: 'Pending', new: 'Paid', paid: '1234,56', at: pay.paidAt as string }],
    [`charge ${ids.exp}`, { old: 'Pending', new: 'Expired', paid: '', at: exp.expiredAt as string }],
    [`charge ${ids.void}`, { old: 'Pending', new: 'Voided', paid: '', at: vd.voidedAt as string }],
    [`charge ${ids.pix}`, { old: 'Created', new: 'Paid', paid: '75,25', at: pix.paidAt as string }],
    [`qr-code ${ids.qr}`, { old: 'PENDING', new: 'CONCLUDED', paid: '150,00', at: qr.paidAt as string }],
    [
      `pix-payment ${ids.e2e}`,
      { old: 'PIX_PROCESSING', new: 'PIX_EXECUTED', paid: '150,00', at: pixPayment.createdAt as string },
    ],
  ]);
  for (const [k, v] of expected) expect(v.at, k).toMatch(/^\d{4}-\d\d-\d\dT/);
  return { ws, ids, expected };
}

async function readRetorno(
  ws: Workspace,
): Promise<{ file: string; raw: Buffer; lines: Array<Record<string, string>> }> {
  const dir = path.join(ws.outbox, 'retorno');
  const csvs = (await fs.readdir(dir)).filter((f) => f.endsWith('.csv'));
  expect(csvs).toHaveLength(1);
  const raw = await fs.readFile(path.join(dir, csvs[0]!));
  return { file: path.join(dir, csvs[0]!), raw, lines: parseResultCsv(raw, 'windows-1252') };
}

function keyOf(line: Record<string, string>): string {
  return `${line.kind} ${line.kind === 'pix-payment' ? line.endToEndId : line.correlationId}`;
}

/** Every expected change once, nothing else; amounts and times as the bank has them (`voidTimeExact`: see below). */
function expectExactly(s: Scenario, lines: Array<Record<string, string>>, voidTimeExact: boolean): void {
  expect(lines.map(keyOf).sort()).toEqual([...s.expected.keys()].sort());
  for (const line of lines) {
    const want = s.expected.get(keyOf(line))!;
    expect(line.oldStatus, keyOf(line)).toBe(want.old);
    expect(line.newStatus, keyOf(line)).toBe(want.new);
    expect(line.paidAmount, keyOf(line)).toBe(want.paid);
    if (keyOf(line) === `charge ${s.ids.void}` && !voidTimeExact) {
      // No event tells a void: the void row's answer is the first word, within moments of the bank's voidedAt.
      expect(Math.abs(Date.parse(line.occurredAt!) - Date.parse(want.at))).toBeLessThan(10_000);
    } else {
      expect(line.occurredAt, keyOf(line)).toBe(want.at);
    }
  }
  const byKey = new Map(lines.map((l) => [keyOf(l), l]));
  const pay = byKey.get(`charge ${s.ids.pay}`)!;
  expect(pay.yourNumber).toBe('NF 1');
  // A Brazilian sheet's retorno: the Nosso número reaches Excel as text, its leading zeros kept.
  expect(pay.ourNumber).toMatch(/^="\d{11}"$/);
  expect(pay.sourceFile).toBe('charges-br.csv');
  expect(pay.sourceLine).toBe('2');
  expect(pay.payerName).toBe('Maria da Conceição');
  expect(byKey.get(`charge ${s.ids.void}`)!.sourceLine).toBe('4');
  expect(byKey.get(`pix-payment ${s.ids.e2e}`)!.sourceFile).toBe('pix-payments-qr.csv');
}

/** The sandbox's recorded events, as its webhook delivery would send them, into the store's `webhook_events`. */
async function receiveEvents(ws: Workspace, ids: string[]): Promise<number> {
  const res = await fetch(`${sandbox.url}/__sandbox/events?limit=1000`, {
    headers: { 'x-service-api-key': SANDBOX_PUBLIC_API_KEY },
  });
  const events = (await res.json()) as Array<{
    id: string;
    type: string;
    payload: Record<string, unknown>;
    occurredAt: string;
  }>;
  const mine = events.filter((e) => ids.includes(String(e.payload.correlationId ?? e.payload.endToEndId)));
  const db = new Database(path.join(ws.data, 'remessa.sqlite'));
  try {
    const insert = db.prepare(
      `INSERT INTO webhook_events (id, event_type, correlation_id, end_to_end_id, occurred_at, received_at, payload)
       VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    );
    // Out of order, as a bank's retries may deliver them; and each twice (at-least-once delivery).
    for (const e of [...mine].reverse().concat(mine)) {
      const envelope = { id: e.id, event: e.type, createdAt: e.occurredAt, data: e.payload };
      insert.run(
        e.id,
        e.type,
        (e.payload.correlationId as string | undefined) ?? null,
        (e.payload.endToEndId as string | undefined) ?? null,
        e.occurredAt,
        new Date().toISOString(),
        JSON.stringify(envelope),
      );
    }
  } finally {
    db.close();
  }
  return mine.length;
}

/** One events-only pass, as the daemon runs every `reconcile.applyEventsEverySeconds`. */
async function applyEventsOnly(ws: Workspace): Promise<void> {
  const store = await openStore(path.join(ws.data, 'remessa.sqlite'));
  try {
    await retornoPass({ store, outboxDir: ws.outbox, logger: createLogger({ level: 'silent' }), reconcile: false });
  } finally {
    await store.close();
  }
}

describe('the retorno', () => {
  it('by reconciliation alone (no webhook): every change once, in the Brazilian sheet dialect', async () => {
    const s = await issueAndAct(`R${Date.now().toString(36)}`);
    const r = await cli(s.ws, 'reconcile');
    expect(r.code, r.stdout + r.stderr).toBe(0);
    // In Portuguese by default.
    expect(r.stdout).toMatch(
      /^conciliado: \d+ mudanças?, \d+ cobranças? listadas?, \d+ consultadas?, \d+ eventos? aplicados?\nretorno: /,
    );
    const { raw, lines } = await readRetorno(s.ws);
    // The first line comes from the Windows-1252 sheet: `;` and decimal comma, accents in Windows-1252.
    expect(raw.subarray(0, 200).toString('latin1')).toMatch(/^kind;correlationId;/);
    expect(raw.includes(Buffer.from('Conceição', 'latin1'))).toBe(true);
    expectExactly(s, lines, true);
    expect(lines.every((l) => l.reportedBy !== 'event')).toBe(true);
    const summary = JSON.parse(
      await fs.readFile(
        path.join(s.ws.outbox, 'retorno', `${path.basename((await readRetorno(s.ws)).file, '.csv')}.summary.json`),
        'utf8',
      ),
    );
    expect(summary.lines).toBe(6);
    expect(summary.paid.charge.cents).toBe(123_456 + 7_525);

    // Again: nothing new happened, nothing new is reported.
    const again = await cli(s.ws, 'reconcile', '--locale', 'en');
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(
      /^reconciled: 0 change\(s\), \d+ charge\(s\) listed, \d+ looked up, \d+ event\(s\) applied\n/,
    );
    expect((await readRetorno(s.ws)).lines).toHaveLength(6);

    // Nothing waits for a final status any more.
    const status = await cli(s.ws, 'status', '--locale', 'en');
    expect(status.stdout).toMatch(/Waiting for a final status from the bank: 0/);
  }, 120_000);

  it('by events alone, then by both: one line per change, each event id on the change it told', async () => {
    const s = await issueAndAct(`E${Date.now().toString(36)}`);
    const told = await receiveEvents(s.ws, [s.ids.pay, s.ids.exp, s.ids.void, s.ids.pix, s.ids.qr, s.ids.e2e]);
    // CHARGE_PAID x2, CHARGE_EXPIRED, PIX_RECEIVED x2 (Pix charge, QR code), PIX_PAYMENT_UPDATED.
    expect(told).toBe(6);
    await applyEventsOnly(s.ws);
    const { lines } = await readRetorno(s.ws);
    expectExactly(s, lines, false);
    const byKey = new Map(lines.map((l) => [keyOf(l), l]));
    // A Pix charge paid sends CHARGE_PAID and PIX_RECEIVED: one line carrying both.
    expect(byKey.get(`charge ${s.ids.pix}`)!.eventId!.split(' ')).toHaveLength(2);
    expect(byKey.get(`charge ${s.ids.pay}`)!.eventId!.split(' ')).toHaveLength(1);
    expect(byKey.get(`pix-payment ${s.ids.e2e}`)!.reportedBy).toBe('event');
    const db = new Database(path.join(s.ws.data, 'remessa.sqlite'), { readonly: true });
    try {
      const unapplied = db.prepare('SELECT COUNT(*) AS n FROM webhook_events WHERE applied_at IS NULL').get() as {
        n: number;
      };
      expect(unapplied.n).toBe(0);
    } finally {
      db.close();
    }

    // Then reconciliation: the same state, no line more; the void gets the bank's own time.
    const r = await cli(s.ws, 'reconcile');
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const after = await readRetorno(s.ws);
    expectExactly(s, after.lines, true);
    expect(new Map(after.lines.map((l) => [keyOf(l), l.eventId]))).toEqual(
      new Map(lines.map((l) => [keyOf(l), l.eventId])),
    );
  }, 120_000);

  it('the daemon applies the events it received on its schedule and writes the retorno', async () => {
    const ws = await makeWorkspace(sandbox.url);
    const config = JSON.parse(await fs.readFile(ws.config, 'utf8'));
    await fs.writeFile(
      ws.config,
      JSON.stringify({ ...config, reconcile: { everyMinutes: 0, applyEventsEverySeconds: 1 } }, null, 2),
    );
    const id = `D${Date.now().toString(36)}-PIX`;
    const daemon = startDaemon(ws);
    try {
      await drop(ws, Buffer.from(`type,correlationId,amount\nPIX_STATIC,${id},12.34\n`), 'charges/pix.csv');
      const answer = await waitForAnswer(ws, 'charges', 'pix');
      expect(answer.type).toBe('result');
      await bank('POST', `/v1/charges/${id}/pay`);
      expect(await receiveEvents(ws, [id])).toBe(2);
      const line = await waitFor(
        'the retorno line',
        async () => {
          const dir = path.join(ws.outbox, 'retorno');
          const files = (await fs.readdir(dir).catch(() => [] as string[])).filter((f) => f.endsWith('.csv'));
          if (files.length === 0) return undefined;
          const lines = parseResultCsv(await fs.readFile(path.join(dir, files[0]!)));
          return lines.find((l) => l.correlationId === id && l.eventId?.split(' ').length === 2);
        },
        30_000,
        200,
      );
      // A UTF-8 file with `,` and decimal point: the retorno of its things too.
      expect(line).toMatchObject({ kind: 'charge', oldStatus: 'Created', newStatus: 'Paid', paidAmount: '12.34' });
    } finally {
      expect(await stopDaemon(daemon)).toBe(0);
    }
  }, 90_000);
});
