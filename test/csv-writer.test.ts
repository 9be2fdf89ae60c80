import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import iconv from 'iconv-lite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Dialect } from '../src/batches/kind.js';
import { readBatch } from '../src/csv/reader.js';
import { cellText, createResultWriter, neutraliseFormula, uniqueHeader } from '../src/csv/writer.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'remessa-csvw-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const BR: Dialect = { encoding: 'windows-1252', bom: false, delimiter: ';', decimalMark: ',', lineEnding: '\r\n' };
const US: Dialect = { encoding: 'utf8', bom: true, delimiter: ',', decimalMark: '.', lineEnding: '\n' };

describe('neutraliseFormula', () => {
  it('prefixes a quote to cells that would start a formula, and only those', () => {
    for (const bad of ['=1+1', '+55 11', '-2', '@SUM(A1)', '\tx', '\rx', '=HYPERLINK("http://x")']) {
      expect(neutraliseFormula(bad)).toBe(`'${bad}`);
    }
    for (const ok of ['', 'Ana', '12,34', "'already", ' =x', 'a=b']) expect(neutraliseFormula(ok)).toBe(ok);
  });
});

describe('uniqueHeader', () => {
  it('renames later repeats so every column can be told apart', () => {
    expect(uniqueHeader(['ourNumber', 'status', 'ourNumber', 'status', 'ourNumber'])).toEqual([
      'ourNumber',
      'status',
      'ourNumber (result)',
      'status (result)',
      'ourNumber (result 2)',
    ]);
    expect(uniqueHeader(['a', 'b'])).toEqual(['a', 'b']);
  });
});

describe('cellText', () => {
  it('formats cents with the dialect decimal mark, and other values plainly', () => {
    expect(cellText({ cents: 123456 }, BR)).toBe('1234,56');
    expect(cellText({ cents: 5 }, US)).toBe('0.05');
    expect(cellText(null, US)).toBe('');
    expect(cellText(undefined, US)).toBe('');
    expect(cellText(true, US)).toBe('true');
    expect(cellText(1.5, BR)).toBe('1,5');
    expect(cellText(42, US)).toBe('42');
  });
});

describe('createResultWriter', () => {
  it('writes Windows-1252 with ; and decimal comma, renames only on close, neutralises formulas', async () => {
    const path = join(dir, 'out.result.csv');
    const w = await createResultWriter(path, { dialect: BR, header: ['payer.name', 'amount', 'status', 'note'] });
    await w.write(['Conceição', { cents: 123456 }, 'succeeded', '=cmd|x']);
    await w.write(['Preço €; "aspas"', { cents: 1 }, 'failed', 'linha\nnova']);
    expect(await readdir(dir)).not.toContain('out.result.csv');
    await w.close();
    expect(await readdir(dir)).toEqual(['out.result.csv']);
    const bytes = await readFile(path);
    const text = iconv.decode(bytes, 'windows-1252');
    expect(text).toBe(
      'payer.name;amount;status;note\r\nConceição;1234,56;succeeded;\'=cmd|x\r\n"Preço €; ""aspas""";0,01;failed;"linha\nnova"\r\n',
    );
    expect(bytes.includes(0x80)).toBe(true); // the euro sign as Windows-1252
  });

  it('keeps the BOM of a UTF-8 input and round-trips through the reader', async () => {
    const path = join(dir, 'b.csv');
    const w = await createResultWriter(path, { dialect: US, header: ['correlationId', 'payer.name', 'amount'] });
    await w.write(['c1', 'João', { cents: 1000 }]);
    await w.close();
    const bytes = await readFile(path);
    expect([...bytes.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    const reader = await readBatch(path, {
      columns: [
        { name: 'correlationId', required: true },
        { name: 'payer.name', required: true },
        { name: 'amount', required: true },
      ],
    });
    expect(reader.dialect).toEqual(US);
    const rows = [];
    for await (const r of reader.rows) rows.push(r.record);
    expect(rows).toEqual([{ correlationId: 'c1', 'payer.name': 'João', amount: '10.00' }]);
  });

  it('abort leaves no file and keeps an older result untouched', async () => {
    const path = join(dir, 'x.csv');
    await writeFile(path, 'old');
    const w = await createResultWriter(path, { dialect: US, header: ['a'] });
    await w.write(['new']);
    await w.abort();
    expect(await readdir(dir)).toEqual(['x.csv']);
    expect(await readFile(path, 'utf8')).toBe('old');
  });
});
