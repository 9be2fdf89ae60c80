import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import iconv from 'iconv-lite';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import type { Dialect } from '../src/batches/kind.js';
import { msg } from '../src/i18n/index.js';
import {
  answerFileNames,
  answerIntake,
  answerNameFor,
  archiveNameFor,
  cutToBytes,
  filesDirFor,
  MAX_ANSWER_NAME_BYTES,
  writeRejected,
  writeResult,
} from '../src/outbox/index.js';
import {
  batchIdForIntake,
  beginAnswer,
  getIntake,
  IdempotencyKeys,
  type IngestRow,
  intakeForBatch,
  intakesToAnswer,
  openDatabase,
  openStore,
  registerIntake,
  type Store,
} from '../src/store/index.js';
import { skipIfAsked, storeEngines } from './helpers/stores.js';

const engines = storeEngines();

let dir: string;
let store: Store;
beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'remessa-outbox-'));
});
afterEach(async () => {
  rmSync(dir, { recursive: true, force: true });
});

const kind = {
  name: 'charges' as const,
  resultColumns: ['ourNumber', 'paidAmount'],
  resultMoneyColumns: ['paidAmount'],
};
const BR: Dialect = { delimiter: ';', decimalMark: ',', encoding: 'windows-1252', bom: false, lineEnding: '\r\n' };
const keys = new IdempotencyKeys('acc');

function valid(line: number, id: string, payer: string, cents: number): IngestRow {
  return {
    line,
    record: { correlationId: id, 'payer.name': payer, amount: String(cents) },
    cells: [id, payer, `${Math.floor(cents / 100)},${String(cents % 100).padStart(2, '0')}`],
    valid: true,
    parsed: {},
    naturalKey: id,
    idempotencyKey: keys.forRow('charges', id),
    amountCents: cents,
  };
}

describe.each(engines)('on $name', (engine) => {
  skipIfAsked(engine);
  beforeEach(async () => {
    store = await engine.open();
  });
  afterEach(async () => {
    await store.close();
  });

  describe('writeResult', () => {
    it('one line per input row in input order, input dialect kept, formulas neutralised, summary beside it', async () => {
      await store.createBatch({
        id: 'b1',
        kind: 'charges',
        fileName: 'cobranças.csv',
        dialect: BR,
        header: ['correlationId', 'payer.name', 'amount'],
      });
      await store.ingest(
        'b1',
        [
          valid(2, 'A-1', 'José Conceição', 123456),
          {
            line: 3,
            record: { correlationId: '=cmd|calc' },
            cells: ['=cmd|calc', '@SUM(1)', '-1'],
            valid: false,
            errors: [
              { column: 'amount', code: 'INVALID_AMOUNT', message: msg('INVALID_AMOUNT.sign', { got: '"-1"' }) },
            ],
          },
          valid(5, 'A-1', 'José Conceição', 123456),
          valid(6, 'A-3', 'Ana', 1000),
        ],
        'en',
      );
      await store.finishIngest('b1', 'send-valid');
      await store.recordIntent('b1', 2, 'create');
      await store.recordStepDone('b1', 2, 'create', { ourNumber: '00000000042', paidAmount: 123456 }, true);
      await store.recordIntent('b1', 6, 'create');
      await store.recordRowUncertain('b1', 6, 'create', { code: 'UNKNOWN_OUTCOME', message: '+ timed out' });
      await store.markBatchDone('b1');

      const out = await writeResult(store, 'b1', {
        outboxDir: path.join(dir, 'outbox'),
        kind,
        name: 'cobranças',
        locale: 'en',
      });
      expect(out.resultPath).toBe(path.join(dir, 'outbox', 'charges', 'cobranças.result.csv'));
      const bytes = readFileSync(out.resultPath);
      expect(bytes.includes(Buffer.from('Concei\xe7\xe3o', 'latin1'))).toBe(true); // Windows-1252, not UTF-8
      const lines = iconv.decode(bytes, 'windows-1252').split('\r\n');
      expect(lines.slice(0, 5)).toEqual([
        'correlationId;payer.name;amount;status;errorCode;errorMessage;ourNumber;paidAmount',
        'A-1;José Conceição;1234,56;succeeded;;;00000000042;1234,56',
        `'=cmd|calc;'@SUM(1);-1;rejected;INVALID_AMOUNT;"column amount: Expected an amount without a sign, got ""-1""";;`,
        `A-1;José Conceição;1234,56;duplicate;DUPLICATE_NATURAL_KEY;Same charges natural key as line 2 of this file: not sent again, nothing paid by this line (original: succeeded);00000000042;`,
        `A-3;Ana;10,00;uncertain;UNKNOWN_OUTCOME;'+ timed out;;`,
      ]);
      expect(lines[5]).toBe('');
      expect(out.summary).toMatchObject({
        rows: 4,
        counts: { succeeded: 1, rejected: 1, duplicate: 1, uncertain: 1, failed: 0 },
        amounts: {
          succeeded: { cents: 123456, formatted: 'R$1,234.56' },
          duplicate: { cents: 123456, formatted: 'R$1,234.56' },
          uncertain: { cents: 1000, formatted: 'R$10.00' },
        },
        file: 'cobranças.csv',
      });
      expect(JSON.parse(readFileSync(out.summaryPath, 'utf8')).counts.succeeded).toBe(1);
      // no temporary file left behind
      expect(readdirSync(path.join(dir, 'outbox', 'charges')).sort()).toEqual([
        'cobranças.result.csv',
        'cobranças.summary.json',
      ]);
    });

    it("a Windows-1252 sheet's result keeps the bank's text it cannot carry: UTF-8 with a BOM, never '?'", async () => {
      await store.createBatch({
        id: 'b1',
        kind: 'charges',
        fileName: 'cobranças.csv',
        dialect: BR,
        header: ['correlationId', 'payer.name', 'amount'],
      });
      await store.ingest('b1', [valid(2, 'A-1', 'José Conceição', 1000)], 'en');
      await store.finishIngest('b1', 'send-valid');
      await store.recordIntent('b1', 2, 'create');
      await store.recordRowUncertain('b1', 2, 'create', { code: 'UNKNOWN_OUTCOME', message: 'Łukasz Nowak 🙂' });
      await store.markBatchDone('b1');
      const out = await writeResult(store, 'b1', {
        outboxDir: path.join(dir, 'outbox'),
        kind,
        name: 'c',
        locale: 'en',
      });
      const bytes = readFileSync(out.resultPath);
      expect(bytes.subarray(0, 3)).toEqual(Buffer.from([0xef, 0xbb, 0xbf]));
      expect(bytes.subarray(3).toString('utf8').split('\r\n')[1]).toBe(
        'A-1;José Conceição;10,00;uncertain;UNKNOWN_OUTCOME;Łukasz Nowak 🙂;;',
      );
    });

    it('streams a large batch page by page', async () => {
      await store.createBatch({
        id: 'big',
        kind: 'charges',
        fileName: 'big.csv',
        dialect: { ...BR, encoding: 'utf8' },
        header: ['correlationId', 'payer.name', 'amount'],
      });
      const rows: IngestRow[] = [];
      for (let i = 0; i < 2_000; i++) rows.push(valid(i + 2, `K-${i}`, 'P', 100 + i));
      await store.ingest('big', rows);
      await store.finishIngest('big', 'send-valid');
      const out = await writeResult(store, 'big', { outboxDir: dir, kind, name: 'big' });
      const lines = readFileSync(out.resultPath, 'utf8').trimEnd().split('\r\n');
      expect(lines).toHaveLength(2_001);
      expect(lines[2_000]).toMatch(/^K-1999;P;20,99;uncertain;/); // pending rows show as uncertain
    });

    it('refuses names that are paths', async () => {
      await store.createBatch({ id: 'b', kind: 'charges', fileName: 'x.csv', dialect: BR, header: [] });
      await expect(writeResult(store, 'b', { outboxDir: dir, kind, name: '../escape' })).rejects.toMatchObject({
        code: 'OUTBOX_UNSAFE_NAME',
      });
      expect(() => filesDirFor(dir, 'charges', '..')).toThrow(/Expected a plain name/);
      expect(filesDirFor(dir, 'charges', 'jan')).toBe(path.join(dir, 'charges', 'jan'));
    });
  });

  describe('writeRejected', () => {
    it('writes <name>.rejected.txt saying why, atomically', async () => {
      const file = await writeRejected({
        outboxDir: dir,
        kind: 'bill-payments',
        name: 'pagamentos',
        fileName: 'pagamentos.csv',
        error: {
          code: 'HEADER_MISSING_COLUMN',
          message: 'pagamentos.csv line 1: Expected a column "amount", got none',
        },
        details: ['columns found: barCode, payAt'],
        locale: 'en',
      });
      expect(file).toBe(path.join(dir, 'bill-payments', 'pagamentos.rejected.txt'));
      expect(readFileSync(file, 'utf8')).toBe(
        'pagamentos.csv was not processed: nothing was sent to the bank.\n\nHEADER_MISSING_COLUMN: pagamentos.csv line 1: Expected a column "amount", got none\ncolumns found: barCode, payAt\n',
      );
      expect(readdirSync(path.join(dir, 'bill-payments'))).toEqual(['pagamentos.rejected.txt']);
    });
  });

  describe('answerIntake: versions, never overwritten', () => {
    const outboxDir = () => path.join(dir, 'outbox');
    async function setUp(id: string, fileName: string, sha = 'c0ffee') {
      await registerIntake(store, {
        id,
        folder: 'charges',
        fileName,
        source: `charges/${fileName}`,
        contentSha256: sha,
        takenAt: `2026-11-23T13:40:${id.slice(-2)}.000Z`,
        answerName: answerNameFor(fileName, id),
      });
      const batchId = await batchIdForIntake(store, (await getIntake(store, id))!);
      expect(batchId).toBe(id);
      await store.createBatch({
        id,
        kind: 'charges',
        fileName,
        dialect: BR,
        header: ['correlationId', 'payer.name', 'amount'],
      });
      return id;
    }

    it('writes v1; a row settled later makes v2 (v1 untouched); nothing changed: nothing written', async () => {
      const id = await setUp('20261123T134001Z-00000001', 'jan.csv');
      await store.ingest(id, [valid(2, 'V-1', 'Ana', 1000), valid(3, 'V-2', 'Bia', 2000)]);
      await store.finishIngest(id, 'send-valid');
      await store.recordIntent(id, 2, 'create');
      await store.recordStepDone(id, 2, 'create', { ourNumber: '1' }, true);
      await store.recordIntent(id, 3, 'create');
      await store.recordRowUncertain(id, 3, 'create', { code: 'UNKNOWN_OUTCOME', message: 'timed out' });
      await store.markBatchDone(id);
      expect((await intakesToAnswer(store)).map((i) => i.id)).toEqual([id]);

      const v1 = await answerIntake(store, id, { outboxDir: outboxDir(), kind });
      expect(v1).toMatchObject({ version: 1, written: true });
      expect(path.basename(v1.resultPath)).toBe(`jan.${id}.result.csv`);
      const v1Text = readFileSync(v1.resultPath, 'utf8');
      expect(v1Text).toContain('V-2;Bia;20,00;uncertain');
      expect(await intakesToAnswer(store)).toEqual([]);
      expect(await answerIntake(store, id, { outboxDir: outboxDir(), kind })).toMatchObject({
        version: 1,
        written: false,
      });

      // Retried and still uncertain with the same message: the same bytes, so no new version, and not stale any more.
      await store.markBatchRunning(id);
      await store.transitionRow(id, 3, 'in_flight');
      await store.recordRowUncertain(id, 3, 'create', { code: 'UNKNOWN_OUTCOME', message: 'timed out' });
      await store.markBatchDone(id);
      expect((await intakesToAnswer(store)).map((i) => i.id)).toEqual([id]);
      expect(await answerIntake(store, id, { outboxDir: outboxDir(), kind })).toMatchObject({
        version: 1,
        written: false,
      });
      expect(await intakesToAnswer(store)).toEqual([]);

      // Settled: v2.
      await store.markBatchRunning(id);
      await store.recordStepDone(id, 3, 'create', { ourNumber: '2' }, true);
      await store.markBatchDone(id);
      expect((await intakesToAnswer(store)).map((i) => i.id)).toEqual([id]);
      const v2 = await answerIntake(store, id, { outboxDir: outboxDir(), kind });
      expect(v2).toMatchObject({ version: 2, written: true });
      expect(path.basename(v2.resultPath)).toBe(`jan.${id}.result.v2.csv`);
      expect(readFileSync(v2.resultPath, 'utf8')).toContain('V-2;Bia;20,00;succeeded;;;2');
      expect(readFileSync(v1.resultPath, 'utf8')).toBe(v1Text);
      expect(JSON.parse(readFileSync(v2.summaryPath, 'utf8'))).toMatchObject({
        version: 2,
        supersedes: `jan.${id}.result.csv`,
        file: 'jan.csv',
        source: 'charges/jan.csv',
      });
      expect(readdirSync(path.join(outboxDir(), 'charges')).sort()).toEqual([
        `jan.${id}.result.csv`,
        `jan.${id}.result.v2.csv`,
        `jan.${id}.summary.json`,
        `jan.${id}.summary.v2.json`,
      ]);
    });

    it('a version name already taken is skipped, never replaced; files a crash left complete are adopted', async () => {
      const id = await setUp('20261123T134002Z-00000002', 'fev.csv');
      await store.ingest(id, [valid(2, 'W-1', 'Ana', 1000)]);
      await store.finishIngest(id, 'send-valid');
      await store.markBatchRunning(id);
      await store.recordIntent(id, 2, 'create');
      await store.recordStepDone(id, 2, 'create', { ourNumber: '1' }, true);
      await store.markBatchDone(id);
      const taken = path.join(outboxDir(), 'charges', `fev.${id}.result.csv`);
      mkdirSync(path.dirname(taken), { recursive: true });
      writeFileSync(taken, 'a person put this here\n');
      await expect(writeResult(store, id, { outboxDir: outboxDir(), kind, name: `fev.${id}` })).rejects.toMatchObject({
        code: 'EEXIST',
      });
      const out = await answerIntake(store, id, { outboxDir: outboxDir(), kind });
      expect(path.basename(out.resultPath)).toBe(`fev.${id}.result.v2.csv`);
      expect(readFileSync(taken, 'utf8')).toBe('a person put this here\n');

      // A crash after the files of v1 were renamed, before the store knew: the next writer adopts them.
      const id2 = await setUp('20261123T134003Z-00000003', 'mar.csv');
      await store.ingest(id2, [valid(2, 'W-2', 'Bia', 1000)]);
      await store.finishIngest(id2, 'send-valid');
      await store.markBatchRunning(id2);
      await store.recordIntent(id2, 2, 'create');
      await store.recordStepDone(id2, 2, 'create', { ourNumber: '2' }, true);
      await store.markBatchDone(id2);
      const changes = (await store.getBatch(id2))!.changes;
      await beginAnswer(store, id2, 1, changes);
      await writeResult(store, id2, { outboxDir: outboxDir(), kind, name: `mar.${id2}` });
      const adopted = await answerIntake(store, id2, { outboxDir: outboxDir(), kind });
      expect(adopted).toMatchObject({ version: 1, written: false });
      expect(await getIntake(store, id2)).toMatchObject({ answerVersion: 1, writingVersion: null });
      expect(readdirSync(path.join(outboxDir(), 'charges')).filter((f) => f.startsWith('mar.'))).toHaveLength(2);

      // A crash between the two renames (the result in place, its summary not): the summary is written, nothing else.
      const id3 = await setUp('20261123T134006Z-00000006', 'abr.csv');
      await store.ingest(id3, [valid(2, 'W-3', 'Cid', 3000)]);
      await store.finishIngest(id3, 'send-valid');
      await store.markBatchRunning(id3);
      await store.recordIntent(id3, 2, 'create');
      await store.recordStepDone(id3, 2, 'create', { ourNumber: '3' }, true);
      await store.markBatchDone(id3);
      await beginAnswer(store, id3, 1, (await store.getBatch(id3))!.changes);
      const half = await writeResult(store, id3, { outboxDir: outboxDir(), kind, name: `abr.${id3}` });
      const resultText = readFileSync(half.resultPath, 'utf8');
      rmSync(half.summaryPath);
      expect(await answerIntake(store, id3, { outboxDir: outboxDir(), kind })).toMatchObject({
        version: 1,
        written: false,
      });
      expect(readdirSync(path.join(outboxDir(), 'charges')).filter((f) => f.startsWith('abr.'))).toEqual([
        `abr.${id3}.result.csv`,
        `abr.${id3}.summary.json`,
      ]);
      expect(readFileSync(half.resultPath, 'utf8')).toBe(resultText);
      expect(JSON.parse(readFileSync(half.summaryPath, 'utf8'))).toMatchObject({
        version: 1,
        counts: { succeeded: 1 },
      });
    });

    it('a duplicate of another file: marked stale when its original settles; file columns name the original folder', async () => {
      const a = await setUp('20261123T134004Z-00000004', 'a.csv', 'same');
      await store.ingest(a, [valid(2, 'D-1', 'Ana', 1000)]);
      await store.finishIngest(a, 'send-valid');
      await store.markBatchRunning(a);
      await store.recordIntent(a, 2, 'create');
      await store.recordRowUncertain(a, 2, 'create', { code: 'UNKNOWN_OUTCOME', message: 'timed out' });
      await store.markBatchDone(a);
      const b = await setUp('20261123T134005Z-00000005', 'b.csv', 'same');
      await store.ingest(b, [valid(2, 'D-1', 'Ana', 1000)], 'en');
      await store.finishIngest(b, 'send-valid');
      await store.markBatchDone(b);
      const fileKind = { ...kind, resultColumns: ['ourNumber', 'pdfFile'], resultFileColumns: ['pdfFile'] };
      await answerIntake(store, a, { outboxDir: outboxDir(), kind: fileKind, locale: 'en' });
      const b1 = await answerIntake(store, b, { outboxDir: outboxDir(), kind: fileKind, locale: 'en' });
      expect(readFileSync(b1.resultPath, 'utf8')).toContain(
        `duplicate;DUPLICATE_NATURAL_KEY;Same charges natural key as line 2 of a.csv (answered in a.${a}.result.csv): not sent again (original: uncertain)`,
      );
      expect(JSON.parse(readFileSync(b1.summaryPath, 'utf8')).copyOf).toEqual({
        file: 'a.csv',
        takenAt: '2026-11-23T13:40:04.000Z',
        resultFile: `a.${a}.result.csv`,
      });

      // The original settles: both answers are stale, in the same transaction as the row.
      await store.markBatchRunning(a);
      await store.recordStepDone(a, 2, 'create', { ourNumber: '7', pdfFile: 'D-1.pdf' }, true);
      await store.markBatchDone(a);
      expect((await intakesToAnswer(store)).map((i) => i.id)).toEqual([a, b]);
      const b2 = await answerIntake(store, b, { outboxDir: outboxDir(), kind: fileKind, locale: 'en' });
      expect(b2.version).toBe(2);
      expect(readFileSync(b2.resultPath, 'utf8')).toContain(`(original: succeeded);7;../a.${a}/D-1.pdf`);
    });
  });
});

// Pure functions, and the file system's limits: no store but the last test's, on SQLite.
describe('answer names (src/outbox/names.ts)', () => {
  const ID = '20261123T134049Z-5f3c9e21';

  it('<name>.<intake id>; the archive keeps the extension', async () => {
    expect(answerNameFor('cobranças.csv', ID)).toBe(`cobranças.${ID}`);
    expect(archiveNameFor('cobranças.CSV', ID)).toBe(`cobranças.${ID}.CSV`);
    expect(answerNameFor('sem-extensao', ID)).toBe(`sem-extensao.${ID}`);
    // Separators and control characters never make a path.
    expect(answerNameFor('a\\b\u0001.csv', ID)).toBe(`a_b_.${ID}`);
  });

  it('long names are cut to fit NAME_MAX in UTF-8 bytes, at a character boundary, deterministic and distinct', async () => {
    const ascii = `${'x'.repeat(246)}.csv`;
    const accented = `${'ã'.repeat(120)}.csv`; // 244 bytes: a name Linux accepts
    for (const name of [ascii, accented]) {
      const base = answerNameFor(name, ID);
      expect(Buffer.byteLength(base)).toBeLessThanOrEqual(MAX_ANSWER_NAME_BYTES);
      expect(base).toMatch(new RegExp(`~[0-9a-f]{8}\\.${ID}$`));
      expect(base).not.toContain('\ufffd');
      expect(answerNameFor(name, ID)).toBe(base);
      // Every file made from it fits, with a writer's temporary name around the longest of them.
      const longest = `.${answerFileNames(base, 9999).summary}.${'f'.repeat(12)}.tmp`;
      expect(Buffer.byteLength(longest)).toBeLessThanOrEqual(255);
      expect(Buffer.byteLength(archiveNameFor(name, ID))).toBeLessThanOrEqual(255 - 20);
    }
    expect(answerNameFor(`${'x'.repeat(246)}.csv`, ID)).not.toBe(answerNameFor(`${'x'.repeat(245)}y.csv`, ID));
    expect(cutToBytes('aã😀b', 4)).toBe('aã');
    expect(cutToBytes('aã😀b', 7)).toBe('aã😀');
  });

  it('a 250-character name is written and read back on this file system', async () => {
    // About the file system, not the store: on SQLite only.
    store = await openStore(path.join(dir, 'state.sqlite'));
    onTestFinished(() => store.close());
    const name = answerNameFor(`${'é'.repeat(125)}.csv`, ID);
    await store.createBatch({
      id: 'long',
      kind: 'charges',
      fileName: 'x.csv',
      dialect: BR,
      header: ['correlationId'],
    });
    const out = await writeResult(store, 'long', { outboxDir: dir, kind, name, version: 12 });
    expect(path.basename(out.resultPath)).toBe(`${name}.result.v12.csv`);
    expect(readFileSync(out.summaryPath, 'utf8')).toContain('"version": 12');
  });
});

// The SQLite files of before migration 003 (PostgreSQL stores began after it).
describe('migration 003', () => {
  it('batches from before get one intake each, named as their answers were, and are resumed by a new taking', async () => {
    const old = mkdtempSync(path.join(tmpdir(), 'remessa-mig-'));
    try {
      const migrations = path.join(old, 'migrations');
      mkdirSync(migrations);
      const source = path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'src', 'store', 'migrations');
      writeFileSync(
        path.join(migrations, '001-batches-rows-steps.sql'),
        readFileSync(path.join(source, '001-batches-rows-steps.sql')),
      );
      const file = path.join(old, 'state.sqlite');
      // Written as the code before 003 wrote them (id = the content's SHA-256).
      const before = openDatabase(file, { migrationsDir: migrations });
      const insert = before.prepare(
        `INSERT INTO batches (id, kind, file_name, dialect, header, status, created_at)
         VALUES (?, 'charges', ?, '{}', '[]', ?, '2026-11-01T00:00:00.000Z')`,
      );
      insert.run('a'.repeat(64), 'jan.csv', 'done');
      insert.run('b'.repeat(64), 'fev.txt', 'ingesting');
      before.close();

      const after = await openStore(file);
      try {
        expect(await intakeForBatch(after, 'a'.repeat(64))).toMatchObject({
          answerName: 'jan',
          answerType: 'result',
          answerVersion: 1,
          contentSha256: 'a'.repeat(64),
        });
        expect(await intakeForBatch(after, 'b'.repeat(64))).toMatchObject({ answerName: 'fev.txt', answerVersion: 0 });
        // The unfinished one is taken over by the new taking of the same bytes (a work folder resumed after an
        // upgrade): its stored rows are not answered as duplicates of themselves.
        const intake = await registerIntake(after, {
          id: '20261123T134049Z-5f3c9e21',
          folder: 'charges',
          fileName: 'fev.txt',
          source: 'charges/fev.txt',
          contentSha256: 'b'.repeat(64),
          takenAt: '2026-11-23T13:40:49.000Z',
          answerName: answerNameFor('fev.txt', '20261123T134049Z-5f3c9e21'),
        });
        expect(await batchIdForIntake(after, intake)).toBe('b'.repeat(64));
        expect((await intakeForBatch(after, 'b'.repeat(64)))?.id).toBe(intake.id);
      } finally {
        await after.close();
      }
    } finally {
      rmSync(old, { recursive: true, force: true });
    }
  });
});
