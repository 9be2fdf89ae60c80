import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BankClient } from '../src/bank/client.js';
import { errorFromResponse, RateLimitedError, ServiceTimeoutError } from '../src/bank/errors.js';
import { chargesKind } from '../src/batches/charges.js';
import type { BatchKind, StepContext } from '../src/batches/kind.js';
import { qrCodesKind } from '../src/batches/qr-codes.js';
import { type ReadBatchOptions, readBatch } from '../src/csv/reader.js';
import { InputError } from '../src/errors.js';
import { filesDirFor, writeResult } from '../src/outbox/index.js';
import { RequestQueue } from '../src/queue/index.js';
import { BatchRejectedError, ENGINE_CODES, type ProcessBatchOptions, processBatch } from '../src/runner/engine.js';
import { readOptions } from '../src/runner/options.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY, startSandbox } from '../src/sandbox/server.js';
import { BATCH_HAS_INVALID_ROWS, type Store } from '../src/store/index.js';
import { type IdRow, type IdRowStep, idRowKind } from './helpers/fake-kind.js';
import { type StoreEngine, skipIfAsked, storeEngines } from './helpers/stores.js';

const ACCOUNT = '0001234';
const HEADER =
  'type,correlationId,amount,dueDate,yourNumber,payer.name,payer.document,payer.address.zipCode,payer.address.publicPlace,payer.address.city,payer.address.state';
const slip = (id: string, amount = '150.00', yourNumber = 'NF-1') =>
  `BANKSLIP,${id},${amount},2027-01-15,${yourNumber},Maria da Silva,529.982.247-25,01310-100,Av Paulista 1000,Sao Paulo,SP`;
const pixStatic = (id: string, amount = '10.50') => `PIX_STATIC,${id},${amount},,,,,,,,`;

const engines = storeEngines();

let dir: string;
let sandbox: RunningSandbox;
let client: BankClient;
/** The engine of the `describe.each(engines)` block running (set by its beforeEach). */
let engine: StoreEngine;
let stores: Store[];
let queues: RequestQueue[];

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'remessa-engine-'));
  stores = [];
  queues = [];
  // The fake-kind tests never reach the bank; the sandbox tests replace this with a real client.
  client = {} as BankClient;
});
afterEach(async () => {
  for (const s of stores) await s.close();
  for (const q of queues) q.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A fresh store of the engine under test. */
async function open(): Promise<Store> {
  const s = await engine.open();
  stores.push(s);
  return s;
}

/**
 * `describe.each(engines)` with the engine set for `open` and the tests skipped on request (REMESSA_TEST_NO_POSTGRES).
 */
function describeOnEachEngine(title: string, body: () => void): void {
  describe.each(engines)(`${title} ($name)`, (e) => {
    skipIfAsked(e);
    beforeEach(() => {
      engine = e;
    });
    body();
  });
}
function queue(concurrency = 4): RequestQueue {
  const q = new RequestQueue({ concurrency, maxRowsInFlight: 8 });
  queues.push(q);
  return q;
}

function writeCsv(name: string, lines: string[]): { file: string; batchId: string } {
  const file = path.join(dir, name);
  writeFileSync(file, `${lines.join('\r\n')}\r\n`);
  return { file, batchId: createHash('sha256').update(readFileSync(file)).digest('hex') };
}

/** Opens what `engine.crash` left, closed after the test. */
async function openCrashed(image: Awaited<ReturnType<StoreEngine['crash']>>): Promise<Store> {
  const s = await image.open();
  stores.push(s);
  return s;
}

/**
 * The end of a run that `engine.crash` stopped. On SQLite it ends as a stopped run does (its store stays usable); on
 * PostgreSQL its store's database is gone from under it, as from under a dead process, so its end may be an error.
 */
async function thrownAway<T>(run: Promise<T>): Promise<void> {
  try {
    await run;
  } catch (error) {
    if (engine.name === 'sqlite') throw error;
  }
}

/** Counts every call of a resource method of the client (each call is one request: maxAttempts is 1). */
type Hook = (call: () => Promise<unknown>, ...args: unknown[]) => Promise<unknown>;
function counting(inner: BankClient, hooks: Record<string, Hook> = {}) {
  const calls: Record<string, number> = {};
  const wrapped = new Proxy(inner, {
    get(target, resource: string) {
      const value = Reflect.get(target, resource) as object;
      if (typeof value !== 'object' || value === null) return value;
      return new Proxy(value, {
        get(res, method: string) {
          const fn = Reflect.get(res, method) as unknown;
          if (typeof fn !== 'function') return fn;
          return (...args: unknown[]) => {
            const name = `${resource}.${method}`;
            calls[name] = (calls[name] ?? 0) + 1;
            const hook = hooks[name];
            const call = () => (fn as (...a: unknown[]) => Promise<unknown>).apply(res, args);
            return hook ? hook(call, ...args) : call();
          };
        },
      });
    },
  }) as BankClient;
  return { client: wrapped, calls, total: () => Object.values(calls).reduce((a, b) => a + b, 0) };
}

/** `read`: how the file is read (by default by the kind's own column names, no header names, nothing supplied). */
async function run(
  store: Store,
  csv: { file: string; batchId: string },
  { read, ...extra }: Partial<ProcessBatchOptions> & { read?: ReadBatchOptions } = {},
) {
  const reader = await readBatch(csv.file, read ?? { columns: chargesKind.columns });
  const name = path.basename(csv.file, '.csv');
  try {
    return await processBatch({
      store,
      kind: chargesKind,
      batchId: csv.batchId,
      fileName: path.basename(csv.file),
      input: reader,
      client,
      queue: queue(),
      filesDir: filesDirFor(path.join(dir, 'outbox'), 'charges', name),
      accountId: ACCOUNT,
      ...extra,
    });
  } finally {
    reader.close();
  }
}

async function result(store: Store, csv: { file: string; batchId: string }) {
  const name = path.basename(csv.file, '.csv');
  const out = await writeResult(store, csv.batchId, { outboxDir: path.join(dir, 'outbox'), kind: chargesKind, name });
  const lines = readFileSync(out.resultPath, 'utf8').trimEnd().split('\r\n');
  const header = lines[0]!.split(',');
  const col = (line: number, c: string) => parseCsvLine(lines[line - 1]!)[header.indexOf(c)];
  return { out, lines, header, col };
}

/** Enough CSV for our own result lines (quoted cells with commas). */
function parseCsvLine(line: string): string[] {
  const cells: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        cur += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cur += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      cells.push(cur);
      cur = '';
    } else cur += c;
  }
  cells.push(cur);
  return cells;
}

const created = (id?: string) =>
  sandbox.ctx.ledger.counts(id ? { kind: 'charge_created', key: id } : { kind: 'charge_created' });

describeOnEachEngine('engine against the sandbox: charges', () => {
  beforeEach(async () => {
    sandbox = await startSandbox({ port: 0 });
    client = new BankClient({ baseUrl: sandbox.url, apiKey: SANDBOX_PUBLIC_API_KEY, maxAttempts: 1 });
  });
  afterEach(async () => {
    await client.close();
    await sandbox.close();
  });

  it('runs a batch end to end: created, PDFs fetched, invalid rows rejected, formulas neutralised', async () => {
    const csv = writeCsv('charges-jan.csv', [
      HEADER,
      slip('INV-1', '150.00', '=SUM(A1:A9)'),
      pixStatic('PIX-1'),
      'BANKSLIP,INV-BAD,abc,2027-01-15,,,,,,,',
      slip('INV-2', '99.90'),
    ]);
    const store = await open();
    const res = await run(store, csv);
    expect(res).toMatchObject({ complete: true, stopped: false });
    expect(res.counts).toMatchObject({ succeeded: 3, rejected: 1, pending: 0, in_flight: 0 });

    const { col, lines, header, out } = await result(store, csv);
    expect(lines).toHaveLength(5);
    expect(header.slice(-10)).toEqual([
      'status',
      'errorCode',
      'errorMessage',
      'chargeStatus',
      'ourNumber',
      'barCode',
      'digitableLine',
      'qrCode',
      'pdfFile',
      'imageFile',
    ]);
    expect(col(2, 'status')).toBe('succeeded');
    expect(col(2, 'yourNumber')).toBe("'=SUM(A1:A9)");
    expect(col(2, 'barCode')).toMatch(/^\d{44}$/);
    expect(col(2, 'pdfFile')).toBe('INV-1.pdf');
    expect(col(3, 'qrCode')).toMatch(/^000201/);
    expect(col(4, 'status')).toBe('rejected');
    expect(col(4, 'errorMessage')).toContain('amount');
    expect(col(5, 'status')).toBe('succeeded');
    const pdf = path.join(dir, 'outbox', 'charges', 'charges-jan', 'INV-1.pdf');
    expect(readFileSync(pdf).subarray(0, 5).toString()).toBe('%PDF-');
    expect(out.summary.counts).toMatchObject({ succeeded: 3, rejected: 1 });
    expect(out.summary.amounts.succeeded).toEqual({ cents: 15000 + 1050 + 9990, formatted: 'R$ 260,40' });
    expect(created()).toEqual([
      { kind: 'charge_created', key: 'INV-1', count: 1 },
      { kind: 'charge_created', key: 'INV-2', count: 1 },
      { kind: 'charge_created', key: 'PIX-1', count: 1 },
    ]);
  });

  it('the same file twice, and the same row in another file: zero new requests', async () => {
    const csv = writeCsv('a.csv', [HEADER, slip('D-1'), pixStatic('D-2')]);
    const store = await open();
    await run(store, csv);
    const again = counting(client);
    const second = await run(store, csv, { client: again.client });
    expect(again.total()).toBe(0);
    expect(second.attempts).toBe(0);
    expect(second.counts).toMatchObject({ succeeded: 2 });

    const other = writeCsv('b.csv', [HEADER, pixStatic('D-2'), pixStatic('D-3')]);
    const third = counting(client);
    const r = await run(store, other, { client: third.client });
    expect(third.calls).toEqual({ 'charges.create': 1 });
    expect(r.counts).toMatchObject({ duplicate: 1, succeeded: 1 });
    const { col } = await result(store, other);
    expect(col(2, 'status')).toBe('duplicate');
    expect(col(2, 'errorCode')).toBe('DUPLICATE_NATURAL_KEY');
    expect(col(2, 'errorMessage')).toContain('a.csv');
    expect(col(2, 'qrCode')).toMatch(/^000201/); // repeats the original outcome
    expect(created()).toHaveLength(3);
    expect(created().every((c) => c.count === 1)).toBe(true);
  });

  it("a Seu número reused for another charge (other amount, payer): refused, never answered with the other row's slip", async () => {
    // A sheet as finance staff write it: Portuguese headers, no correlationId (derived from Seu número), no type.
    const header = 'Seu número,Valor,Vencimento,Nome do pagador,CPF/CNPJ,CEP,Logradouro,Cidade,UF';
    const address = '01310-100,Av Paulista 1000,Sao Paulo,SP';
    const maria = `123,10.00,2027-01-15,Maria da Silva,529.982.247-25,${address}`;
    const joao = `123,999.00,2027-01-15,Joao Souza,111.444.777-35,${address}`;
    const read = (file: string) =>
      readOptions({ mappings: {}, defaults: {}, csv: {} }, 'charges', path.basename(file)) as ReadBatchOptions;
    const store = await open();
    // In one file: line 3 reuses line 2's Seu número with another amount and payer.
    const a = writeCsv('a.csv', [header, maria, joao, `124,50.00,2027-01-15,Ana Lima,529.982.247-25,${address}`]);
    const first = await run(store, a, { read: read(a.file) });
    expect(first.counts).toMatchObject({ succeeded: 2, rejected: 1, duplicate: 0 });
    const one = await result(store, a);
    expect(one.col(3, 'status')).toBe('rejected');
    expect(one.col(3, 'errorCode')).toBe('NATURAL_KEY_REUSED');
    const inFile = one.col(3, 'errorMessage')!;
    expect(inFile).toContain('Seu número');
    expect(inFile).toContain('linha 2 deste arquivo');
    expect(inFile).toMatch(/R\$ 10,00 .*R\$ 999,00 aqui/);
    expect(inFile).toContain('52998224725');
    expect(inFile).toContain('11144477735');
    expect(one.col(3, 'barCode')).toBe('');
    expect(one.col(3, 'pdfFile')).toBe('');
    expect(one.col(2, 'barCode')).toMatch(/^\d{44}$/);

    // In a later file: João's row again is refused the same way, naming a.csv; an honest copy of Maria's row (the
    // same charge, written otherwise: due date and CPF formatted differently) is still a duplicate, sent nothing.
    const mariaAgain = `123,10.00,15/01/2027,Maria da Silva,52998224725,${address}`;
    const b = writeCsv('b.csv', [header, joao, mariaAgain]);
    const again = counting(client);
    const second = await run(store, b, { read: read(b.file), client: again.client });
    expect(again.total()).toBe(0);
    expect(second.counts).toMatchObject({ rejected: 1, duplicate: 1, succeeded: 0 });
    const two = await result(store, b);
    expect(two.col(2, 'status')).toBe('rejected');
    expect(two.col(2, 'errorCode')).toBe('NATURAL_KEY_REUSED');
    expect(two.col(2, 'errorMessage')).toContain('linha 2 de a.csv');
    expect(two.col(2, 'errorMessage')).toMatch(/R\$ 10,00 .*R\$ 999,00 aqui/);
    expect(two.col(2, 'barCode')).toBe('');
    expect(two.col(2, 'pdfFile')).toBe('');
    expect(two.col(3, 'status')).toBe('duplicate');
    expect(two.col(3, 'barCode')).toBe(one.col(2, 'barCode'));
    // One charge for Seu número 123: Maria's, created once.
    expect(created('123')).toEqual([{ kind: 'charge_created', key: '123', count: 1 }]);
  });

  it('all-or-nothing: one invalid row and nothing is sent', async () => {
    const csv = writeCsv('strict.csv', [HEADER, slip('S-1'), 'BANKSLIP,S-2,,2027-01-15,,,,,,,']);
    const store = await open();
    const c = counting(client);
    const r = await run(store, csv, { client: c.client, policy: 'all-or-nothing' });
    expect(c.total()).toBe(0);
    expect(r.counts).toMatchObject({ rejected: 2 });
    expect((await store.getRow(csv.batchId, 2))!.errorCode).toBe(BATCH_HAS_INVALID_ROWS);
  });

  describe('crash at any instant, then a restart from the store as it was on disk: exactly once', () => {
    /**
     * A "crash" is a copy of the store's committed state taken at a chosen instant (what a SIGKILL leaves on disk or
     * in the server: `engine.crash`), after which the original run is stopped and thrown away. The restart opens the
     * copy and resumes.
     */
    async function crashAt(
      hookName: string,
      when: 'before-request' | 'after-request',
    ): Promise<{ crashed: Store; csv: { file: string; batchId: string } }> {
      const csv = writeCsv('crash.csv', [HEADER, slip('C-1'), slip('C-2'), pixStatic('C-3')]);
      const store = await open();
      const ac = new AbortController();
      let image: Awaited<ReturnType<StoreEngine['crash']>> | undefined;
      const c = counting(client, {
        [hookName]: async (call, ...args) => {
          const id = String((args[0] as { correlationId?: string }).correlationId ?? args[0]);
          if (image || id !== 'C-2') return call();
          if (when === 'after-request') await call();
          image = await engine.crash(store);
          ac.abort();
          throw new Error('the process died here');
        },
      });
      await thrownAway(run(store, csv, { client: c.client, signal: ac.signal, queue: queue(1) }));
      expect(image).toBeDefined();
      return { crashed: await openCrashed(image!), csv };
    }

    it('between the intent and the request: the charge is looked up, then created once', async () => {
      const { crashed, csv } = await crashAt('charges.create', 'before-request');
      expect((await crashed.getSteps(csv.batchId, 3)).get('create')?.state).toBe('intent');
      expect((await crashed.getRow(csv.batchId, 3))!.state).toBe('in_flight');
      const c = counting(client);
      const r = await run(crashed, csv, { client: c.client });
      expect(r.counts).toMatchObject({ succeeded: 3 });
      // the recovery lookup of C-2 (404: not created); C-1's, if its answer was not yet committed at the crash
      expect(c.calls['charges.get']).toBeGreaterThanOrEqual(1);
      expect((await crashed.getSteps(csv.batchId, 3)).get('create')).toMatchObject({ state: 'done', attempts: 2 });
      expect(created()).toEqual([
        { kind: 'charge_created', key: 'C-1', count: 1 },
        { kind: 'charge_created', key: 'C-2', count: 1 },
        { kind: 'charge_created', key: 'C-3', count: 1 },
      ]);
    });

    it('between the request and its answer: found by the lookup, never created twice', async () => {
      const { crashed, csv } = await crashAt('charges.create', 'after-request');
      expect(created('C-2')).toEqual([{ kind: 'charge_created', key: 'C-2', count: 1 }]);
      const c = counting(client);
      const r = await run(crashed, csv, { client: c.client });
      expect(r.counts).toMatchObject({ succeeded: 3 });
      expect(c.calls['charges.create'] ?? 0).toBeLessThanOrEqual(1); // never C-2's again; C-3's if not yet sent
      expect(c.calls['charges.get']).toBeGreaterThanOrEqual(1);
      expect(created().map((x) => x.count)).toEqual([1, 1, 1]);
      const row = (await crashed.getRow(csv.batchId, 3))!;
      expect(row.outputs.barCode).toMatch(/^\d{44}$/);
      expect(row.outputs.pdfFile).toBe('C-2.pdf');
    });

    it('between steps: a created charge whose PDF was not fetched only fetches the PDF', async () => {
      const { crashed, csv } = await crashAt('charges.streamPdf', 'before-request');
      expect((await crashed.getSteps(csv.batchId, 3)).get('create')?.state).toBe('done');
      // Which other creates had been answered at the crash depends on timing (rows reach the queue and the store in
      // an order that varies, PostgreSQL above all): a row whose charge was created is never created again.
      let createdBefore = 0;
      for (const line of [2, 3, 4]) {
        if ((await crashed.getSteps(csv.batchId, line)).get('create')?.state === 'done') createdBefore++;
      }
      const c = counting(client);
      const r = await run(crashed, csv, { client: c.client });
      expect(r.counts).toMatchObject({ succeeded: 3 });
      // C-2 only fetches its PDF; a create is sent again only for a row whose create had no answer stored.
      expect(c.calls['charges.create'] ?? 0).toBeLessThanOrEqual(3 - createdBefore);
      expect(c.calls['charges.streamPdf']).toBeGreaterThanOrEqual(1);
      expect(created().map((x) => x.count)).toEqual([1, 1, 1]);
      expect(existsSync(path.join(dir, 'outbox', 'charges', 'crash', 'C-2.pdf'))).toBe(true);
    });
  });

  it('qr-codes: PNGs saved under outbox/qr-codes/<name>/; a lost answer is recovered by lookup, created once', async () => {
    const file = path.join(dir, 'qr.csv');
    const ids = ['5f0c2a9e-8d41-4c7b-9a3e-2b6d1f8e4c10', '6a1d3b0f-9e52-4d8c-8b4f-3c7e2a9f5d21'];
    writeFileSync(
      file,
      [
        'type,correlationId,amount,formatResponse',
        ...ids.map((id) => `PIX_DYNAMIC,${id},25.00,PAYLOAD_AND_QRCODE`),
        'PIX_STATIC,ST-1,3.00,PAYLOAD_AND_QRCODE',
        '',
      ].join('\n'),
    );
    const batchId = createHash('sha256').update(readFileSync(file)).digest('hex');
    const store = await open();
    const ac = new AbortController();
    let image: Awaited<ReturnType<StoreEngine['crash']>> | undefined;
    const seen: string[] = [];
    let crashError: unknown;
    // The process dies once the bank has created the second dynamic QR code, before its answer is stored. Which row
    // that is depends on the order the rows reach the request queue (a row slot each; on PostgreSQL their reads
    // before the request take varying time): the one whose request goes second, whichever it is.
    const c = counting(client, {
      'qrCodes.createDynamic': async (call, input) => {
        seen.push((input as { correlationId: string }).correlationId);
        if (image || seen.length < 2) return call();
        await call();
        image = await engine.crash(store).catch((error: unknown) => {
          crashError = error;
          return undefined;
        });
        ac.abort();
        throw new Error('the process died here');
      },
    });
    const go = async (s: Store, bank: BankClient, signal?: AbortSignal) => {
      const reader = await readBatch(file, { columns: qrCodesKind.columns });
      try {
        return await processBatch({
          store: s,
          kind: qrCodesKind,
          batchId,
          fileName: 'qr.csv',
          input: reader,
          client: bank,
          queue: queue(1),
          filesDir: filesDirFor(path.join(dir, 'outbox'), 'qr-codes', 'qr'),
          accountId: ACCOUNT,
          signal,
        });
      } finally {
        reader.close();
      }
    };
    const first = await go(store, c.client, ac.signal).catch((error: unknown) => error);
    if (engine.name === 'sqlite' && first instanceof Error) throw first;
    expect(crashError).toBeUndefined();
    expect({ seen: [...seen].sort(), image: image !== undefined, first }).toMatchObject({ seen: ids, image: true });
    const restarted = await openCrashed(image!);
    const again = counting(client);
    const r = await go(restarted, again.client);
    expect(r.counts).toMatchObject({ succeeded: 3 });
    expect(again.calls['qrCodes.createDynamic'] ?? 0).toBe(0); // the second one was found, not created again
    const effects = sandbox.ctx.ledger.counts({ kind: 'qr_created' });
    expect(effects.length).toBeGreaterThanOrEqual(2);
    expect(effects.every((e) => e.count === 1)).toBe(true);
    const images = readdirSync(path.join(dir, 'outbox', 'qr-codes', 'qr')).sort();
    expect(images).toEqual([`${ids[0]}.png`, `${ids[1]}.png`, 'ST-1.png']);
    const png = readFileSync(path.join(dir, 'outbox', 'qr-codes', 'qr', `${ids[1]}.png`));
    expect(png.subarray(1, 4).toString()).toBe('PNG');
  });

  it('a graceful stop parks the rows; the next run finishes them once', async () => {
    const csv = writeCsv('stop.csv', [HEADER, ...Array.from({ length: 6 }, (_, i) => pixStatic(`G-${i}`))]);
    const store = await open();
    const ac = new AbortController();
    let n = 0;
    const c = counting(client, {
      'charges.create': async (call) => {
        const out = await call();
        if (++n === 2) ac.abort();
        return out;
      },
    });
    const first = await run(store, csv, { client: c.client, signal: ac.signal, queue: queue(1) });
    expect(first.stopped).toBe(true);
    expect(first.complete).toBe(false);
    expect(c.calls['charges.create']).toBe(2);
    // parked between steps, or before their first: nothing unknown, nothing lost
    expect(first.counts.pending).toBe(6 - first.counts.succeeded);
    expect(first.counts.uncertain + first.counts.in_flight).toBe(0);
    // A row stopped while it waited for the connection had its intent committed (src/runner/engine.ts): its step is
    // recorded as certainly not sent, not left in `intent` for the next run to resolve as an unknown outcome.
    const steps = await store.getStepsBetween(first.batch.id, 2, 7);
    const states = [...steps.values()].flatMap((m) => [...m.values()]).map((r) => [r.state, r.errorCode ?? null]);
    expect(states.filter(([state]) => state === 'intent' || state === 'unknown')).toEqual([]);
    expect(states).toContainEqual(['not_sent', 'STOPPED_BEFORE_SEND']);
    const rest = counting(client);
    const second = await run(store, csv, { client: rest.client });
    expect(second.counts).toMatchObject({ succeeded: 6, pending: 0 });
    expect(rest.calls['charges.create']).toBe(4);
    expect(created().map((x) => x.count)).toEqual([1, 1, 1, 1, 1, 1]);
  });

  it('a crash while rows wait for the connection, their intents committed: the next run creates each charge once', async () => {
    const csv = writeCsv('waiting.csv', [HEADER, ...Array.from({ length: 6 }, (_, i) => pixStatic(`W-${i}`))]);
    const store = await open();
    const ac = new AbortController();
    let image: Awaited<ReturnType<StoreEngine['crash']>> | undefined;
    let crashError: unknown;
    // The process dies as the first request is about to leave; the rows behind it wait for the one connection.
    const c = counting(client, {
      'charges.create': async () => {
        if (!image) {
          image = await engine.crash(store).catch((error: unknown) => {
            crashError = error;
            return undefined;
          });
          ac.abort();
        }
        throw new Error('the process died here');
      },
    });
    await thrownAway(run(store, csv, { client: c.client, signal: ac.signal, queue: queue(1) }));
    expect(crashError).toBeUndefined();
    const crashed = await openCrashed(image!);
    // Their intents were committed before they waited (src/runner/engine.ts): the crash leaves them unknown.
    const steps = await crashed.getStepsBetween(csv.batchId, 2, 7);
    const intents = [...steps.values()].filter((m) => m.get('create')?.state === 'intent').length;
    expect(intents).toBeGreaterThan(1);
    // Rule 2 of src/store/rows.ts: looked up first (no IdempotencyKey on a charge), found absent, created once.
    const again = counting(client);
    const r = await run(crashed, csv, { client: again.client });
    expect(r.counts).toMatchObject({ succeeded: 6, uncertain: 0, failed: 0 });
    expect(again.calls['charges.create']).toBe(6);
    expect(created().map((x) => x.count)).toEqual([1, 1, 1, 1, 1, 1]);
  });
});

describeOnEachEngine('engine: unknown outcomes of effect steps (fake kinds, no bank)', () => {
  type Row = IdRow;
  function fakeKind(step: Partial<IdRowStep> & Pick<IdRowStep, 'run'>) {
    return idRowKind([{ name: 'pay', effect: 'money', usesIdempotencyKey: false, ...step }], ['paid']);
  }
  const timeout = () =>
    new ServiceTimeoutError('POST /pay: no response headers in time', {
      method: 'POST',
      path: '/pay',
      phase: 'headers',
    });

  async function runFake(store: Store, kind: BatchKind<Row>, ids: string[], batchId = 'fake') {
    const rows = (async function* () {
      let line = 1;
      for (const id of ids) yield { line: ++line, record: { id }, cells: [id] };
    })();
    return processBatch({
      store,
      kind,
      batchId,
      fileName: `${batchId}.csv`,
      input: { dialect: { delimiter: ',', decimalMark: '.', encoding: 'utf8', bom: false }, header: ['id'], rows },
      client,
      queue: queue(),
      filesDir: path.join(dir, 'files'),
      accountId: ACCOUNT,
      retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2, maxRetryAfterMs: 10 },
    });
  }

  it('a money step without key or lookup is never resent blind: uncertain, and still not resent next run', async () => {
    let calls = 0;
    const kind = fakeKind({
      async run() {
        calls++;
        throw timeout();
      },
    });
    const store = await open();
    const r = await runFake(store, kind, ['p1']);
    expect(calls).toBe(1);
    expect(r.counts.uncertain).toBe(1);
    expect((await store.getRow('fake', 2))!.errorCode).toBe(ENGINE_CODES.unknownNotResent);
    const again = await runFake(store, kind, ['p1']);
    expect(calls).toBe(1);
    expect(again.counts.uncertain).toBe(1);
  });

  it('a keyed step is resent with the same key after an unknown outcome', async () => {
    const keys: string[] = [];
    const kind = fakeKind({
      usesIdempotencyKey: true,
      async run(ctx: StepContext<Row>) {
        keys.push(ctx.idempotencyKey);
        if (keys.length === 1) throw timeout();
        return { paid: true };
      },
    });
    const store = await open();
    const r = await runFake(store, kind, ['p1']);
    expect(r.counts.succeeded).toBe(1);
    expect(keys).toHaveLength(2);
    expect(keys[0]).toBe(keys[1]);
    expect((await store.getSteps('fake', 2)).get('pay')).toMatchObject({ state: 'done', attempts: 2 });
  });

  // Regression: a resend answered 409 "key still being processed" (the first request, sent before a restart, was
  // still running at the bank) used to end the row uncertain at once; it is an unknown outcome to wait out.
  it('a keyed step answered 409 "key still in use" waits and resends with the same key', async () => {
    const keys: string[] = [];
    const inUse = () =>
      errorFromResponse({
        method: 'POST',
        path: '/pay',
        status: 409,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ title: 'Conflict', code: 'IDEMPOTENCY_KEY_IN_USE', errors: ['key in use'] }),
      });
    const kind = fakeKind({
      usesIdempotencyKey: true,
      async run(ctx: StepContext<Row>) {
        keys.push(ctx.idempotencyKey);
        if (keys.length <= 2) throw inUse();
        return { paid: true };
      },
    });
    const store = await open();
    const r = await runFake(store, kind, ['p1']);
    expect(r.counts.succeeded).toBe(1);
    expect(keys).toHaveLength(3);
    expect(new Set(keys).size).toBe(1);
  });

  it('a step without key is recovered first and created only when absent', async () => {
    let created = 0;
    let exists = false;
    const kind = fakeKind({
      effect: 'create',
      async run() {
        created++;
        exists = true;
        if (created === 1) throw timeout(); // it was created, but the answer was lost
        return { paid: 'created' };
      },
      async recover() {
        return exists ? { paid: 'found' } : undefined;
      },
    });
    const store = await open();
    const r = await runFake(store, kind, ['c1']);
    expect(r.counts.succeeded).toBe(1);
    expect(created).toBe(1);
    expect((await store.getRow('fake', 2))!.outputs).toEqual({ paid: 'found' });
  });

  it('after the retry budget the row ends uncertain and the next run resolves it', async () => {
    let fail = true;
    let sent = 0;
    const kind = fakeKind({
      usesIdempotencyKey: true,
      async run() {
        sent++;
        if (fail) throw timeout();
        return { paid: true };
      },
    });
    const store = await open();
    const r = await runFake(store, kind, ['p1']);
    expect(r.counts.uncertain).toBe(1);
    expect(sent).toBe(3);
    expect((await store.getRow('fake', 2))!.errorCode).toBe(ENGINE_CODES.unknownAfterRetries);
    fail = false;
    const again = await runFake(store, kind, ['p1']);
    expect(again.counts).toMatchObject({ succeeded: 1, uncertain: 0 });
    expect(sent).toBe(4);
  });

  it('a file broken further down is rejected whole: nothing sent, its rows give their keys up', async () => {
    let sent = 0;
    const kind = fakeKind({
      usesIdempotencyKey: true,
      async run() {
        sent++;
        return { paid: true };
      },
    });
    const store = await open();
    const rows = (async function* () {
      yield { line: 2, record: { id: 'k1' }, cells: ['k1'] };
      yield { line: 3, record: { id: 'k2' }, cells: ['k2'] };
      throw new InputError('CSV_SYNTAX', 'Expected a closing quote, got the end of the file', {
        file: 'x.csv',
        line: 4,
      });
    })();
    const dialect = { delimiter: ',' as const, decimalMark: '.' as const, encoding: 'utf8' as const, bom: false };
    const base = {
      store,
      kind,
      fileName: 'x.csv',
      client,
      queue: queue(),
      filesDir: path.join(dir, 'files'),
      accountId: ACCOUNT,
    };
    const err = await processBatch({ ...base, batchId: 'x', input: { dialect, header: ['id'], rows } }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(BatchRejectedError);
    expect(err).toMatchObject({ code: 'CSV_SYNTAX', message: expect.stringContaining('x.csv line 4') });
    expect(sent).toBe(0);
    expect(await store.getBatch('x')).toMatchObject({ status: 'rejected', error: { code: 'CSV_SYNTAX' } });
    // the same content again: rejected again, from the store
    await expect(processBatch({ ...base, batchId: 'x' })).rejects.toBeInstanceOf(BatchRejectedError);
    // the corrected file sends k1 and k2
    const r = await runFake(store, kind, ['k1', 'k2'], 'fixed');
    expect(r.counts.succeeded).toBe(2);
    expect(sent).toBe(2);
  });

  it('batches run at once; a batch whose steps all break does not hold the others up', async () => {
    const broken = fakeKind({
      async run() {
        throw new Error('bug in a kind');
      },
    });
    const fine = {
      ...fakeKind({ run: async () => ({ paid: true }) }),
      name: 'claims' as const,
      group: 'claims' as const,
    };
    const store = await open();
    const ids = Array.from({ length: 30 }, (_, i) => `r${i}`);
    const [a, b] = await Promise.all([runFake(store, broken, ids, 'broken'), runFake(store, fine, ids, 'fine')]);
    expect(a.counts.uncertain).toBe(30);
    expect((await store.getRow('broken', 2))!.errorCode).toBe(ENGINE_CODES.stepError);
    expect(b.counts.succeeded).toBe(30);
  });

  it('the same batch started twice at once is driven once', async () => {
    let sent = 0;
    const kind = fakeKind({
      usesIdempotencyKey: true,
      async run() {
        sent++;
        await new Promise((r) => setTimeout(r, 2));
        return { paid: true };
      },
    });
    const store = await open();
    const ids = Array.from({ length: 20 }, (_, i) => `p${i}`);
    const [a, b] = await Promise.all([runFake(store, kind, ids), runFake(store, kind, ids)]);
    expect(sent).toBe(20);
    expect(a.counts.succeeded).toBe(20);
    expect(b.counts.succeeded).toBe(20);
    expect(b.attempts).toBe(0);
  });

  it('a 429 pauses the group and the step goes again; a 4xx fails the row', async () => {
    let n = 0;
    const kind = fakeKind({
      async run(ctx: StepContext<Row>) {
        if (ctx.row.id === 'bad') {
          throw new (await import('../src/bank/errors.js')).ValidationError('SERVICE_VALIDATION', 'HTTP 400: no', {
            method: 'POST',
            path: '/pay',
            status: 400,
            messages: ['amount: Expected more than 0'],
          });
        }
        if (++n === 1) {
          throw new RateLimitedError('HTTP 429', { method: 'POST', path: '/pay', status: 429, retryAfterMs: 5 });
        }
        return { paid: true };
      },
    });
    const store = await open();
    const r = await runFake(store, kind, ['ok', 'bad']);
    expect(r.counts).toMatchObject({ succeeded: 1, failed: 1 });
    expect((await store.getSteps('fake', 2)).get('pay')).toMatchObject({ state: 'done', attempts: 2 });
    expect(await store.getRow('fake', 3)).toMatchObject({ errorCode: 'SERVICE_VALIDATION', state: 'failed' });
    expect((await store.getRow('fake', 3))!.errorMessage).toContain('Expected more than 0');
  });
});
