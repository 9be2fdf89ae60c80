import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'csv-stringify';
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
    for (const bad of [
      '=1+1',
      '+55 11',
      '-2+3',
      '-A1',
      '-1,',
      '-',
      '@SUM(A1)',
      '\tx',
      '\rx',
      '=HYPERLINK("http://x")',
    ]) {
      expect(neutraliseFormula(bad)).toBe(`'${bad}`);
    }
    for (const ok of ['', 'Ana', '12,34', "'already", ' =x', 'a=b']) expect(neutraliseFormula(ok)).toBe(ok);
  });

  it("echoes a negative number as typed: it computes nothing (it was written back as '-5,00)", () => {
    for (const n of ['-2', '-5,00', '-1.234,56', '-0.5']) expect(neutraliseFormula(n)).toBe(n);
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

  it("leaves the empty names of a sheet's trailing columns empty: they are no result column", () => {
    // Before: Excel's `;;;` after the last column came back headed `" (result)"`, `" (result 2)"`.
    expect(uniqueHeader(['Valor', '', '', '', 'status'])).toEqual(['Valor', '', '', '', 'status']);
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
  it('writes a Windows-1252 file in UTF-8 with a BOM when a cell, however late, holds what Windows-1252 cannot carry', async () => {
    // Before: the bank's `Łukasz` or a payer's emoji, 300 rows down a sheet saved by Excel, was written as `?`.
    const path = join(dir, 'late.result.csv');
    const w = await createResultWriter(path, { dialect: BR, header: ['payer.name', 'amount', 'note'] });
    const names = Array.from({ length: 300 }, (_, i) => (i === 299 ? 'Łukasz 🙂' : `Conceição ${i} €`));
    for (const name of names) await w.write([name, { cents: 150 }, 'Avenida São João? sim']);
    await w.close();
    expect(w.dialect).toMatchObject({ encoding: 'utf8', bom: true, delimiter: ';', decimalMark: ',' });
    const bytes = await readFile(path);
    expect(bytes.subarray(0, 3)).toEqual(Buffer.from([0xef, 0xbb, 0xbf]));
    const lines = bytes.subarray(3).toString('utf8').split('\r\n');
    expect(lines[0]).toBe('payer.name;amount;note');
    expect(lines.slice(1, -1)).toEqual(names.map((n) => `${n};1,50;Avenida São João? sim`));
    expect(await readdir(dir)).toEqual(['late.result.csv']);
  });

  it('keeps Windows-1252 when every cell fits it, a question mark of its own included', async () => {
    const path = join(dir, 'fits.result.csv');
    const w = await createResultWriter(path, { dialect: BR, header: ['note'] });
    await w.write(['Pagou? Sim, R$ 10,00 — “ok” €']);
    await w.close();
    expect(w.dialect).toEqual(BR);
    expect(iconv.decode(await readFile(path), 'windows-1252')).toBe('note\r\nPagou? Sim, R$ 10,00 — “ok” €\r\n');
  });

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

  it('writes, over several chunks of rows, the bytes a csv-stringify stream writes', async () => {
    // The writer makes a page of rows text at once (csv-stringify's sync API); the stream it replaced, one row at a
    // time. 1,000 rows cross the writer's chunks at 256, 512 and 768: each row the same bytes at any place.
    const cells = ['Conceição', ' lead', 'trail ', 'a;b', 'a,b', 'say "x"', 'one\ntwo', 'cr\rx', '', '€ 1,00'];
    const rows = Array.from({ length: 1000 }, (_, i) => [String(i), cells[i % cells.length]!, cells[(i * 7) % 10]!]);
    for (const dialect of [BR, US]) {
      const path = join(dir, `many-${dialect.delimiter === ';' ? 'br' : 'us'}.csv`);
      const w = await createResultWriter(path, { dialect, header: ['n', 'a', 'b'] });
      for (const row of rows) await w.write(row);
      await w.close();
      const stream = stringify({
        delimiter: dialect.delimiter,
        record_delimiter: dialect.lineEnding === '\n' ? 'unix' : 'windows',
        quoted_match: /[\r\n]|^\s|\s$/,
      });
      const parts: string[] = [];
      stream.on('data', (d: Buffer) => parts.push(d.toString('utf8')));
      const ended = new Promise((resolve) => stream.on('end', resolve));
      for (const row of [['n', 'a', 'b'], ...rows]) stream.write(row);
      stream.end();
      await ended;
      const expected = parts.join('');
      const bytes = await readFile(path);
      if (dialect.encoding === 'utf8') {
        expect([...bytes.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
        expect(bytes.subarray(3).toString('utf8')).toBe(expected);
      } else expect(bytes.equals(iconv.encode(expected, 'windows-1252'))).toBe(true);
    }
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
