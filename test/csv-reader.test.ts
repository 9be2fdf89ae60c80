import { isUtf8 } from 'node:buffer';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import iconv from 'iconv-lite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { emptyEvidence, weighUtf8 } from '../src/csv/detect.js';
import { type BatchRecord, type ReadBatchOptions, readBatch } from '../src/csv/reader.js';
import { InputError } from '../src/errors.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'remessa-csv-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const COLUMNS: ReadBatchOptions['columns'] = [
  { name: 'correlationId', required: true },
  { name: 'payer.name', required: true },
  { name: 'amount', required: true },
  { name: 'dueDate', required: false },
  { name: 'description', required: false },
];

async function file(name: string, content: string | Buffer): Promise<string> {
  const p = join(dir, name);
  await writeFile(p, content);
  return p;
}

async function readAll(path: string, options: Partial<ReadBatchOptions> = {}) {
  const reader = await readBatch(path, { columns: COLUMNS, ...options });
  const rows: BatchRecord[] = [];
  for await (const r of reader.rows) rows.push(r);
  return { reader, rows };
}

async function inputError(promise: Promise<unknown>): Promise<InputError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(InputError);
    return err as InputError;
  }
  throw new Error('expected an InputError');
}

describe('dialect detection', () => {
  it('reads UTF-8 without BOM, comma, decimal point', async () => {
    const p = await file('a.csv', 'correlationId,payer.name,amount\nc1,João Ávila,10.50\n');
    const { reader, rows } = await readAll(p);
    expect(reader.dialect).toEqual({
      encoding: 'utf8',
      bom: false,
      delimiter: ',',
      decimalMark: '.',
      lineEnding: '\n',
    });
    expect(rows).toHaveLength(1);
    expect(rows[0]!.record).toEqual({ correlationId: 'c1', 'payer.name': 'João Ávila', amount: '10.50' });
    expect(rows[0]!.line).toBe(2);
  });

  it('reads UTF-8 with BOM and keeps the BOM out of the first header', async () => {
    const p = await file(
      'b.csv',
      Buffer.concat([
        Buffer.from([0xef, 0xbb, 0xbf]),
        Buffer.from('correlationId;payer.name;amount\r\nc1;Zé;1.234,56\r\n'),
      ]),
    );
    const { reader, rows } = await readAll(p);
    expect(reader.dialect).toEqual({
      encoding: 'utf8',
      bom: true,
      delimiter: ';',
      decimalMark: ',',
      lineEnding: '\r\n',
    });
    expect(reader.header[0]).toEqual({ source: 'correlationId', column: 'correlationId' });
    expect(rows[0]!.record.amount).toBe('1.234,56');
  });

  it('reads Windows-1252 with accented names and the euro sign', async () => {
    const text = 'correlationId;payer.name;amount;description\r\nc1;Conceição Araújo;1.234,56;Preço € 10\r\n';
    const p = await file('c.csv', iconv.encode(text, 'windows-1252'));
    const { reader, rows } = await readAll(p);
    expect(reader.dialect.encoding).toBe('windows-1252');
    expect(reader.dialect.bom).toBe(false);
    expect(reader.dialect.decimalMark).toBe(',');
    expect(rows[0]!.record['payer.name']).toBe('Conceição Araújo');
    expect(rows[0]!.record.description).toBe('Preço € 10');
  });

  it('finds Windows-1252 even when the first non-ASCII byte is far into the file', async () => {
    const filler = Array.from({ length: 3000 }, (_, i) => `c${i},Plain Name,1.00`).join('\n');
    const p = await file(
      'd.csv',
      Buffer.concat([
        Buffer.from(`correlationId,payer.name,amount\n${filler}\n`),
        iconv.encode('z,José,2.00\n', 'windows-1252'),
      ]),
    );
    const { reader, rows } = await readAll(p);
    expect(reader.dialect.encoding).toBe('windows-1252');
    expect(rows.at(-1)!.record['payer.name']).toBe('José');
  });

  it('detects tab, and honours configured encoding, delimiter and decimal mark', async () => {
    const p = await file('e.csv', 'correlationId\tpayer.name\tamount\nc1\tAna\t10,5\n');
    expect((await readAll(p)).reader.dialect.delimiter).toBe('\t');
    const forced = await readAll(p, { decimalMark: ',', encoding: 'windows-1252' });
    expect(forced.reader.dialect).toMatchObject({ delimiter: '\t', decimalMark: ',', encoding: 'windows-1252' });
  });

  it('rejects invalid UTF-8 after a valid UTF-8 start, naming the place', async () => {
    // The invalid byte lies beyond the detection window (64 KiB after the first non-ASCII byte).
    const filler = Array.from({ length: 8000 }, (_, i) => `c${i},Plain Name,1.00`).join('\n');
    const p = await file(
      'f.csv',
      Buffer.concat([
        Buffer.from(`correlationId,payer.name,amount\nc1,João,1.00\n${filler}\n`),
        Buffer.from([0x63, 0x32, 0x2c, 0xe9, 0x2c, 0x31, 0x0a]),
      ]),
    );
    const err = await inputError(readAll(p));
    expect(err.code).toBe('FILE_ENCODING');
    expect(err.location.line).toBe(8003);
  });
});

describe('encoding by evidence (issue 8 section 4)', () => {
  const header = 'correlationId,payer.name,amount\n';
  const utf8Rows = (from: number, to: number) =>
    Array.from({ length: to - from + 1 }, (_, i) => `c${from + i},São João Conceição,1.00\n`).join('');
  /** Line `line` (the header is line 1) of a UTF-8 file with accents on every row, with one stray 0xE3 in it. */
  const strayAt = (rows: number, line: number): Buffer =>
    Buffer.concat([
      Buffer.from(header + utf8Rows(2, line - 1)),
      Buffer.from(`c${line},Jo`),
      Buffer.from([0xe3]),
      Buffer.from(`o Silva,1.00\n${utf8Rows(line + 1, rows + 1)}`),
    ]);

  it('a UTF-8 file with one stray byte on line 51 is UTF-8 with an error, not Windows-1252', async () => {
    const p = await file('stray.csv', strayAt(400, 51));
    const err = await inputError(readAll(p));
    expect(err.code).toBe('FILE_ENCODING');
    expect(err.location.line).toBe(51);
    // `c51,Jo` is 6 characters: the stray byte is the 7th.
    expect(err.values).toMatchObject({ line: 51, column: 7 });
    expect(err.message).toMatch(/^stray\.csv line 51: Expected UTF-8 text .*\(0xE3\) at column 7 \(byte offset \d+\)/);
  });

  it('the stray byte on line 2, before every accent, is found the same way', async () => {
    const p = await file('stray2.csv', strayAt(400, 2));
    const err = await inputError(readAll(p));
    expect(err.code).toBe('FILE_ENCODING');
    expect(err.values).toMatchObject({ line: 2, column: 'c2,Jo'.length + 1 });
  });

  it('the same byte far past the detection window is rejected with its line and column', async () => {
    const p = await file('stray-far.csv', strayAt(3000, 2900));
    const err = await inputError(readAll(p));
    expect(err.code).toBe('FILE_ENCODING');
    expect(err.values).toMatchObject({ line: 2900, column: 'c2900,Jo'.length + 1 });
  });

  it('a UTF-8 file with a BOM counts columns without it', async () => {
    const p = await file(
      'bom.csv',
      Buffer.concat([
        Buffer.from([0xef, 0xbb, 0xbf]),
        Buffer.from('correlationId,payer.name,amount'),
        Buffer.from([0xff]),
      ]),
    );
    const err = await inputError(readAll(p));
    expect(err.values).toMatchObject({ line: 1, column: 32 });
  });

  it('the Brazilian spreadsheet example still reads as Windows-1252', async () => {
    const { reader, rows } = await readAll(join(__dirname, '..', 'examples', 'charges-planilha-br.csv'), {
      unknownColumns: 'ignore',
    });
    expect(reader.dialect.encoding).toBe('windows-1252');
    expect(rows[0]!.record['payer.name']).toBe('José Conceição Araújo');
  });

  it('Windows-1252 with UTF-8 text further down mixes encodings: rejected naming the first UTF-8 bytes', async () => {
    const cp = (n: number) =>
      iconv.encode(Array.from({ length: n }, (_, i) => `w${i},Conceição Araújo,1.00\n`).join(''), 'windows-1252');
    const p = await file(
      'mixed-far.csv',
      Buffer.concat([Buffer.from(header), cp(3000), Buffer.from('u1,São Paulo,1.00\n')]),
    );
    const err = await inputError(readAll(p));
    expect(err.code).toBe('FILE_ENCODING_MIXED');
    expect(err.values).toMatchObject({ line: 3002, column: 5 });
    expect(err.message).toContain('(0xC3 0xA3)');

    // Within the window: most accents are Windows-1252, one row is UTF-8.
    const near = await file(
      'mixed-near.csv',
      Buffer.concat([Buffer.from(header), cp(20), Buffer.from('u1,São Paulo,1.00\n'), cp(5)]),
    );
    const e2 = await inputError(readAll(near));
    expect(e2.code).toBe('FILE_ENCODING_MIXED');
    expect(e2.values).toMatchObject({ line: 22, column: 5 });
  });

  it('a configured encoding is not second-guessed', async () => {
    const p = await file(
      'forced.csv',
      Buffer.concat([
        Buffer.from(header),
        iconv.encode('w1,Araújo,1.00\n', 'windows-1252'),
        Buffer.from('u1,São,1.00\n'),
      ]),
    );
    const { rows } = await readAll(p, { encoding: 'windows-1252' });
    expect(rows.map((r) => r.record['payer.name'])).toEqual(['Araújo', 'SÃ£o']);
  });

  it('a Windows-1252 upper-case accent before a curly quote (valid UTF-8 by chance, not text) stays Windows-1252', async () => {
    const text = `${header}c1,Bar “DO ZÉ”,1.00\nc2,Conceição,2.00\n`;
    const p = await file('ze.csv', iconv.encode(text, 'windows-1252'));
    const { reader, rows } = await readAll(p);
    expect(reader.dialect.encoding).toBe('windows-1252');
    expect(rows.map((r) => r.record['payer.name'])).toEqual(['Bar “DO ZÉ”', 'Conceição']);
  });

  it('property: the evidence finds no invalid byte exactly when the bytes are valid UTF-8', () => {
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 64 }),
      fc.string({ unit: 'binary', maxLength: 32 }).map((t) => new Uint8Array(Buffer.from(t))),
      fc.string({ unit: 'binary', maxLength: 32 }).map((t) => new Uint8Array(iconv.encode(t, 'windows-1252'))),
    );
    fc.assert(
      fc.property(bytes, (buf) => {
        const e = emptyEvidence();
        const end = weighUtf8(buf, 0, e);
        // An incomplete sequence at the end is left to the caller: count it as invalid, as the end of a file does.
        const invalid = e.invalid + (end < buf.length ? 1 : 0);
        expect(invalid === 0).toBe(isUtf8(buf));
        if (invalid > 0) expect(isUtf8(buf.subarray(0, e.firstInvalid === -1 ? end : e.firstInvalid))).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('property: Portuguese text reads back exactly as written, in UTF-8 and in Windows-1252', async () => {
    // Words of letters (accented ones too) and signs standing apart, as in real names and descriptions. (An upper-case
    // accented letter glued to a sign, `Âª`, is valid UTF-8 by chance: no reading can tell, see src/csv/detect.ts.)
    const word = fc
      .array(fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCZ áàâãéêíóôõúüçÁÀÂÃÉÊÍÓÔÕÚÇ'.split('')), {
        minLength: 1,
        maxLength: 12,
      })
      .map((cs) => cs.join(''));
    const sign = fc.constantFrom('º', 'ª', '°', '“', '”', '–', '€', '.', '-');
    const name = fc
      .array(fc.oneof(word, word, sign), { minLength: 1, maxLength: 5 })
      .map((parts) => parts.join(' ').replace(/\s+/g, ' ').trim())
      .filter((n) => n !== '');
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(name, { minLength: 1, maxLength: 20 }), fc.boolean(), async (names, utf8) => {
        const text = header + names.map((nm, i) => `c${i},${nm},1.00\n`).join('');
        const p = await file(`prop${n++}.csv`, utf8 ? Buffer.from(text) : iconv.encode(text, 'windows-1252'));
        const { rows, reader } = await readAll(p);
        expect(rows.map((r) => r.record['payer.name'])).toEqual(names);
        if (/[^\x00-\x7f]/.test(text)) expect(reader.dialect.encoding).toBe(utf8 ? 'utf8' : 'windows-1252');
      }),
      { numRuns: 150 },
    );
  });
});

describe('file-level problems', () => {
  it('empty file, blank lines, header without rows', async () => {
    expect((await inputError(readBatch(await file('e1.csv', ''), { columns: COLUMNS }))).code).toBe('FILE_EMPTY');
    expect((await inputError(readBatch(await file('e2.csv', '\n\r\n'), { columns: COLUMNS }))).code).toBe('FILE_EMPTY');
    const noRows = await inputError(
      readBatch(await file('e3.csv', 'correlationId,payer.name,amount\n\n'), { columns: COLUMNS }),
    );
    expect(noRows.code).toBe('FILE_NO_ROWS');
    expect(noRows.location).toMatchObject({ file: 'e3.csv', line: 1 });
  });

  it('binary content', async () => {
    const err = await inputError(
      readBatch(await file('x.csv', Buffer.from([0x50, 0x4b, 0x03, 0x04, 0, 0, 1])), { columns: COLUMNS }),
    );
    expect(err.code).toBe('FILE_NOT_TEXT');
    // A zip is what an .xlsx saved as such is: the reason says so, in the person's words.
    expect(err.describe('pt-BR')).toBe(
      'x.csv: Esperava um arquivo de texto CSV, veio uma pasta de trabalho do Excel (.xlsx ou .xls): salve-a no Excel como CSV',
    );
    const nul = await inputError(readBatch(await file('n.csv', Buffer.from('a,b\n\0\0,1\n')), { columns: COLUMNS }));
    expect(nul.describe('pt-BR')).toBe('n.csv: Esperava um arquivo de texto CSV, veio conteúdo binário (bytes NUL)');
    expect(nul.describe('en')).toBe('n.csv: Expected a CSV text file, got binary content (NUL bytes)');
  });

  it('duplicate, unknown and missing columns name the place', async () => {
    const dup = await inputError(
      readBatch(await file('d.csv', 'correlationId,payer.name,amount,Amount\nc,n,1\n'), { columns: COLUMNS }),
    );
    expect(dup.code).toBe('HEADER_DUPLICATE_COLUMN');
    expect(dup.location).toMatchObject({ line: 1, column: 4, columnName: 'Amount' });
    const unknown = await inputError(
      readBatch(await file('u.csv', 'correlationId,payer.name,amount,pay_at\nc,n,1,x\n'), { columns: COLUMNS }),
    );
    expect(unknown.code).toBe('HEADER_UNKNOWN_COLUMN');
    expect(unknown.message).toContain('column 4 (pay_at)');
    const missing = await inputError(
      readBatch(await file('m.csv', 'correlationId,amount\nc,1\n'), { columns: COLUMNS }),
    );
    expect(missing.code).toBe('HEADER_MISSING_COLUMN');
    expect(missing.message).toContain('payer.name');
  });

  it('unknown columns can be ignored with a warning; a mapping renames ERP headers', async () => {
    const p = await file('g.csv', 'ID;Cliente;VALOR;Obs\nc1;Ana;10,00;x\n');
    const { reader, rows } = await readAll(p, {
      mapping: { ID: 'correlationId', Cliente: 'payer.name', Valor: 'amount' },
      unknownColumns: 'ignore',
    });
    expect(reader.warnings).toHaveLength(1);
    expect(rows[0]!.record).toEqual({ correlationId: 'c1', 'payer.name': 'Ana', amount: '10,00' });
    expect(rows[0]!.cells).toEqual(['c1', 'Ana', '10,00', 'x']);
  });

  it('malformed quotes raise CSV_SYNTAX with a line', async () => {
    const p = await file('q.csv', 'correlationId,payer.name,amount\nc0,Zoe,1\nc1,"Ana,1\nc2,Bia,2\n');
    const err = await inputError(readAll(p));
    expect(err.code).toBe('CSV_SYNTAX');
    expect(err.location.line).toBe(3);
    // The quote opens in the 2nd cell; csv-parse's own English stays out of the Portuguese, and in the English detail.
    expect(err.location.column).toBe(2);
    expect(err.describe('pt-BR')).toBe(
      'q.csv linha 3, coluna 2: Esperava que o valor entre aspas aberto na coluna 2 fechasse com aspas ("), veio o fim ' +
        'do arquivo: aspas abertas e nunca fechadas engolem as linhas seguintes',
    );
    expect(err.describe('en')).toContain('q.csv line 3, column 2: Expected the quoted value that opens in column 2');
    expect(err.describe('en')).toContain('(csv-parse: Quote Not Closed:');
  });
});

describe('rows', () => {
  it('keeps physical line numbers across quoted multi-line cells (LF, CRLF, CR) and skipped blank lines', async () => {
    for (const eol of ['\n', '\r\n', '\r']) {
      const text = [
        'correlationId,payer.name,amount,description',
        'c1,Ana,1.00,"two',
        `lines"`,
        '',
        'c2,Bia,2.00,"three',
        '',
        'lines"',
        ',,,',
        `c3,"Caio${eol}Lima",3.00,plain`,
        'c4,Dora,4.00,x',
      ].join(eol);
      const { rows } = await readAll(await file(`l${eol.length}${eol.charCodeAt(0)}.csv`, text));
      expect(rows.map((r) => [r.record.correlationId, r.line])).toEqual([
        ['c1', 2],
        ['c2', 5],
        ['c3', 9],
        ['c4', 11],
      ]);
      expect(rows[1]!.record.description).toBe(`three${eol}${eol}lines`);
    }
  });

  it('trims cells, drops empty ones, flags wrong cell counts, tolerates trailing delimiters', async () => {
    const text = 'correlationId;payer.name;amount;\n  c1 ; Ana  ;; \nc2;Bia\nc3;Caio;1;;;\nc4;Dora;1;;x\n';
    const { rows } = await readAll(await file('t.csv', text));
    expect(rows[0]!.record).toEqual({ correlationId: 'c1', 'payer.name': 'Ana' });
    expect(rows[0]!.problems).toBeUndefined();
    expect(rows[1]!.problems).toMatchObject([
      { code: 'COLUMN_COUNT', message: { key: 'COLUMN_COUNT', params: { expected: 4, got: 2 } } },
    ]);
    expect(rows[2]!.problems).toBeUndefined();
    expect(rows[3]!.problems?.[0]?.code).toBe('COLUMN_COUNT');
  });

  it('a header whose first cell holds a line break (wrapped in the spreadsheet) still gives its delimiter', async () => {
    const text = '"payer\nname";correlationId;amount\r\nAna;c1;1,50\r\n';
    const { rows, reader } = await readAll(await file('w.csv', text), { mapping: { 'payer\nname': 'payer.name' } });
    expect(reader.dialect.delimiter).toBe(';');
    expect(reader.dialect.lineEnding).toBe('\r\n');
    expect(rows[0]!.record).toEqual({ 'payer.name': 'Ana', correlationId: 'c1', amount: '1,50' });
  });

  it('a value under a column with no header is refused, never dropped (an empty one is fine)', async () => {
    const text = 'correlationId;;payer.name;amount;\nc1;;Ana;1;\nc2;Desconto 5,00;Bia;1;\nc3;;Caio;1;x\n';
    const { rows } = await readAll(await file('u.csv', text));
    expect(rows[0]!.problems).toBeUndefined();
    expect(rows[1]!.problems).toMatchObject([
      { code: 'UNNAMED_COLUMN', message: { key: 'UNNAMED_COLUMN', params: { column: 2, got: '"Desconto 5,00"' } } },
    ]);
    expect(rows[2]!.problems).toMatchObject([{ code: 'UNNAMED_COLUMN', message: { params: { column: 5 } } }]);
  });

  it('keeps quotes inside unquoted cells as text', async () => {
    const { rows } = await readAll(await file('rq.csv', 'correlationId;payer.name;amount\nc1;Bar do "Zé";1\n'));
    expect(rows[0]!.record['payer.name']).toBe('Bar do "Zé"');
  });

  it('streams a large file one record at a time', async () => {
    const n = 50_000;
    const body = Array.from({ length: n }, (_, i) => `c${i},Name ${i},${i}.00`).join('\n');
    const { rows } = await readAll(await file('big.csv', `correlationId,payer.name,amount\n${body}\n`));
    expect(rows).toHaveLength(n);
    expect(rows.at(-1)!.line).toBe(n + 1);
  });

  it('batches hand over the same records as rows, in order, in bounded arrays', async () => {
    const n = 5_000;
    const body = Array.from({ length: n }, (_, i) => (i % 7 === 3 ? ',,' : `c${i},"Name\n${i}",${i}.00`)).join('\n');
    const path = await file('batches.csv', `correlationId,payer.name,amount\n${body}\n`);
    const { rows } = await readAll(path);
    const reader = await readBatch(path, { columns: COLUMNS });
    const fromBatches: BatchRecord[] = [];
    let arrays = 0;
    for await (const batch of reader.batches) {
      expect(batch.length).toBeGreaterThan(0);
      expect(batch.length).toBeLessThanOrEqual(2048);
      arrays++;
      fromBatches.push(...batch);
    }
    expect(arrays).toBeGreaterThan(1);
    expect(fromBatches.map((r) => [r.line, r.record.correlationId])).toEqual(
      rows.map((r) => [r.line, r.record.correlationId]),
    );
    // Blank records (every 7th) take one line, the others two (a line break inside the quoted name).
    let line = 2;
    for (let i = 0; i < n - 1; i++) line += i % 7 === 3 ? 1 : 2;
    expect(rows).toHaveLength(n - Math.ceil((n - 3) / 7));
    expect(rows.at(-1)!.line).toBe(line);
  });

  it('a syntax error far down the file names the line of the record that failed', async () => {
    const good = Array.from({ length: 3000 }, (_, i) => `c${i},N,1`).join('\n');
    const p = await file('far.csv', `correlationId,payer.name,amount\n${good}\nc3000,"Ana,1\nc3001,Bia,2\n`);
    const err = await inputError(readAll(p));
    expect(err.code).toBe('CSV_SYNTAX');
    expect(err.location.line).toBe(3002);
  });

  it('stops reading when the consumer breaks out', async () => {
    const body = Array.from({ length: 1000 }, (_, i) => `c${i},N,1`).join('\n');
    const reader = await readBatch(await file('br.csv', `correlationId,payer.name,amount\n${body}\n`), {
      columns: COLUMNS,
    });
    let count = 0;
    for await (const _ of reader.rows) {
      if (++count === 3) break;
    }
    expect(count).toBe(3);
  });
});
