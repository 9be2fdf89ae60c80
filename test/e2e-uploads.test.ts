/**
 * End to end, issue 8 §1: uploads that stall half-way are never taken half-written.
 *
 * The daemon runs as a child process at the DEFAULT intake settings (no stableMs, cutOffMs or requireDoneMarker in
 * its config) against the sandbox in another process. Every upload style an ERP or an SFTP client uses writes its
 * file concurrently into the same inbox, stalling at some point (0 s, 2.5 s, or 10 s in one case: the longest stall
 * that lands exactly on a line end, where nothing in the file tells that more is coming). What must hold, for each:
 * every row of the uploaded file ends in exactly one result line (one answer, no rejection), each row reached the bank
 * once, and nothing is left in the inbox (no `.filepart`, no `.done`).
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makeWorkspace,
  type Proc,
  parseResultCsv,
  type SandboxProcess,
  startDaemon,
  startSandboxProcess,
  stopDaemon,
  type Workspace,
  waitFor,
  waitForAnswer,
} from './e2e-harness.js';

const ROWS = 40;
/** The amount is the last column: a cut inside it leaves a line with every column and a wrong amount. */
const HEADER = 'type,correlationId,description,amount\n';

let sandbox: SandboxProcess;
let ws: Workspace;
let daemon: Proc;

function rowsOf(name: string): string[] {
  return Array.from(
    { length: ROWS },
    (_, i) => `PIX_STATIC,UP-${name}-${String(i + 1).padStart(2, '0')},Pedido ${i + 1},1500.00\n`,
  );
}

/** A file's text, and the byte offset where the writer stalls: `row` rows written, then `extra` bytes of the next. */
function cutAt(rows: string[], row: number, extra: number): { text: string; cut: number } {
  const text = HEADER + rows.join('');
  return { text, cut: HEADER.length + rows.slice(0, row).join('').length + extra };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One open handle, written in two parts with a stall between (an SFTP server writing as the bytes come). */
async function writeInPlace(file: string, text: string, cut: number, stallMs: number): Promise<void> {
  const h = await fs.open(file, 'w');
  try {
    await h.write(text.slice(0, cut));
    await sleep(stallMs);
    await h.write(text.slice(cut));
  } finally {
    await h.close();
  }
}

/** Reopened and appended per chunk of 5 rows, stalling at `cut` (a writer that appends each chunk it receives). */
async function appendPerChunk(file: string, text: string, cut: number, stallMs: number): Promise<void> {
  const chunks: string[] = [];
  for (let at = 0; at < text.length; at += 200) chunks.push(text.slice(at, Math.min(at + 200, text.length)));
  let written = 0;
  for (const chunk of chunks) {
    if (written < cut && written + chunk.length > cut) {
      await fs.appendFile(file, chunk.slice(0, cut - written));
      await sleep(stallMs);
      await fs.appendFile(file, chunk.slice(cut - written));
    } else {
      await fs.appendFile(file, chunk);
      if (written + chunk.length === cut) await sleep(stallMs);
    }
    written += chunk.length;
  }
}

interface Upload {
  stem: string;
  text: string;
  write: () => Promise<void>;
}

const uploads: Upload[] = [];

beforeAll(async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-up-'));
  sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'));
  ws = await makeWorkspace(sandbox.url);
  // The default intake settings: what a new user gets.
  const config = JSON.parse(await fs.readFile(ws.config, 'utf8')) as Record<string, unknown>;
  delete config.intake;
  await fs.writeFile(ws.config, JSON.stringify(config, null, 2));
  daemon = startDaemon(ws);
  await waitFor('the daemon to be ready', () => /remessa daemon ready/.test(daemon.stderr() + daemon.stdout()), 60_000);
}, 90_000);

afterAll(async () => {
  if (daemon) await stopDaemon(daemon);
  if (second) await stopDaemon(second);
  if (sandbox) await sandbox.stop();
});

let second: Proc | undefined;

describe('uploads that stall are taken whole, at the default settings', () => {
  it('every style, with stalls of 0 s, 2.5 s and 10 s, in the middle of a row or at a line end', async () => {
    const charges = path.join(ws.inbox, 'charges');
    await fs.mkdir(charges, { recursive: true });
    const add = (
      stem: string,
      row: number,
      extra: number,
      write: (file: string, t: string, c: number) => Promise<void>,
    ) => {
      const { text, cut } = cutAt(rowsOf(stem), row, extra);
      uploads.push({ stem, text, write: () => write(path.join(charges, `${stem}.csv`), text, cut) });
    };
    // Written in place through one handle, stalling inside row 20's amount ("15" of "1500.00"): every column there.
    add('inplace', 19, 'PIX_STATIC,UP-inplace-20,Pedido 20,15'.length, (f, t, c) => writeInPlace(f, t, c, 2500));
    // The same, without a stall.
    add('inplace0', 19, 10, (f, t, c) => writeInPlace(f, t, c, 0));
    // Reopened and appended per chunk, stalling 10 s exactly after row 20's line end.
    add('append10', 20, 0, (f, t, c) => appendPerChunk(f, t, c, 10_000));
    // Reopened and appended per chunk, stalling 2.5 s in the middle of row 20.
    add('append', 19, 12, (f, t, c) => appendPerChunk(f, t, c, 2500));
    // WinSCP: `name.csv.filepart`, stalling 2.5 s in the middle of row 20, then renamed to `name.csv`.
    add('winscp', 19, 12, async (f, t, c) => {
      await writeInPlace(`${f}.filepart`, t, c, 2500);
      await fs.rename(`${f}.filepart`, f);
    });
    // `name.csv` (stalling 2.5 s at a line end), then `name.csv.done`, with requireDoneMarker off (the default).
    add('marker', 20, 0, async (f, t, c) => {
      await writeInPlace(f, t, c, 2500);
      await fs.writeFile(`${f}.done`, '');
    });

    await Promise.all(uploads.map((u) => u.write()));

    for (const u of uploads) {
      const answer = await waitForAnswer(ws, 'charges', u.stem, 90_000).catch((err: Error) => {
        throw new Error(`${err.message}\ndaemon stderr:\n${daemon.stderr().slice(-4000)}`);
      });
      expect(answer.type, `${u.stem}: ${answer.text.slice(0, 500)}`).toBe('result');
      const rows = parseResultCsv(answer.text);
      expect(
        rows.map((r) => r.correlationId),
        u.stem,
      ).toEqual(rowsOf(u.stem).map((line) => line.split(',')[1]));
      for (const r of rows) {
        expect(r.status, `${u.stem} ${JSON.stringify(r)}`).toBe('succeeded');
        expect(r.amount, `${u.stem} ${r.correlationId}`).toBe('1500.00');
      }
    }
    // One answer per file: no rejection besides the results, not even later.
    await sleep(1000);
    const outbox = await fs.readdir(path.join(ws.outbox, 'charges'));
    expect(outbox.filter((f) => f.endsWith('.rejected.txt'))).toEqual([]);
    // Each row reached the bank exactly once.
    const effects = await sandbox.effects('charge_created');
    expect(effects.length).toBe(uploads.length * ROWS);
    expect(effects.every((e) => e.count === 1)).toBe(true);
    // Nothing is left in the inbox: no .filepart, no .done marker.
    await waitFor('the inbox to be empty', async () => (await fs.readdir(charges)).length === 0, 30_000).catch(
      async () => {
        expect(await fs.readdir(charges)).toEqual([]);
      },
    );
    // The archive holds each whole file once, and the marker beside its file.
    const archived = await fs.readdir(path.join(ws.archive, 'charges'));
    for (const u of uploads) {
      const mine = archived.filter((f) => new RegExp(`^${u.stem}\\.\\d{8}T\\d{6}Z-[0-9a-f]{8}\\.csv$`).test(f));
      expect(mine, u.stem).toHaveLength(1);
      expect(await fs.readFile(path.join(ws.archive, 'charges', mine[0]!), 'utf8')).toBe(u.text);
    }
    expect(archived.filter((f) => /^marker\.\d{8}T\d{6}Z-[0-9a-f]{8}\.csv\.done$/.test(f))).toHaveLength(1);
  }, 150_000);
});

describe('a file that changes while it is processed', () => {
  it('is read again before its answer: one answer covering every row, each row sent once', async () => {
    // A short window and a slow bank (5 charges a second), so that the writer resumes while the rows are being sent:
    // the case a long stall at a line end past the window makes possible even at the default settings.
    const rate = { requests: 5, intervalMs: 1000 };
    const ws2 = await makeWorkspace(sandbox.url, {
      intake: { stableMs: 300 },
      queue: { rateLimits: { charges: rate, 'bill-payments': rate, pix: rate, claims: rate } },
    });
    const before = (await sandbox.effects('charge_created')).length;
    // At debug level, so that a timed-out wait shows where the batch stood (each request, each step).
    second = startDaemon(ws2, { REMESSA_LOG_LEVEL: 'debug' });
    await waitFor('the daemon to be ready', () => /remessa daemon ready/.test(second!.stderr()), 60_000);
    const rows = rowsOf('reread');
    const file = path.join(ws2.inbox, 'charges', 'reread.csv');
    const h = await fs.open(file, 'w');
    try {
      await h.write(HEADER + rows.slice(0, 20).join(''));
      // Taken after 300 ms; its 20 rows take about 4 s to send. The writer resumes meanwhile, through its handle.
      await waitFor('the file to be taken', async () => !(await fs.stat(file).catch(() => undefined)), 20_000);
      await sleep(1000);
      await h.write(rows.slice(20).join(''));
    } finally {
      await h.close();
    }
    // On a timeout, the daemon's log says where the file stands.
    const answer = await waitForAnswer(ws2, 'charges', 'reread', 60_000).catch((error: Error) => {
      throw new Error(`${error.message}\ndaemon log (tail):\n${second!.stderr().slice(-30000)}`);
    });
    expect(answer.type, answer.text.slice(0, 500)).toBe('result');
    const result = parseResultCsv(answer.text);
    expect(result.map((r) => r.correlationId)).toEqual(rows.map((line) => line.split(',')[1]));
    // The rows sent before the change are answered from their first outcome (duplicate of themselves), never sent
    // again; the rest are sent now.
    for (const r of result.slice(0, 20)) expect(['succeeded', 'duplicate'], JSON.stringify(r)).toContain(r.status);
    for (const r of result.slice(20)) expect(r.status, JSON.stringify(r)).toBe('succeeded');
    expect(second.stderr()).toMatch(/the file changed while it was processed; reading it again/);
    expect((await sandbox.effects('charge_created')).length).toBe(before + ROWS);
    for (const e of await sandbox.effects('charge_created')) expect(e.count).toBe(1);
    await sleep(500);
    expect((await fs.readdir(path.join(ws2.outbox, 'charges'))).filter((f) => f.endsWith('.txt'))).toEqual([]);
  }, 90_000);
});
