/**
 * Messages and notes quote at most a short excerpt of the input (issue 8 section 4): a 10 MB one-line header made a
 * 20 MB rejection note. Every quote of input text goes through src/errors.ts `excerpt`/`clip` (200 characters, then
 * an ellipsis and the length), cells through `shown` (60), and no record may exceed MAX_RECORD_CHARS.
 */

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chargesKind } from '../src/batches/charges.js';
import { readBatch } from '../src/csv/reader.js';
import { clip, EXCERPT_MAX_CHARS, excerpt, InputError } from '../src/errors.js';
import { render } from '../src/i18n/index.js';
import { answersOf, runCli } from './e2e-harness.js';

let dir: string;
beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-excerpt-'));
});
afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

async function readError(file: string): Promise<InputError> {
  try {
    const reader = await readBatch(file, { columns: chargesKind.columns });
    for await (const _ of reader.rows) {
      // read to the end
    }
  } catch (err) {
    expect(err).toBeInstanceOf(InputError);
    return err as InputError;
  }
  throw new Error('expected an InputError');
}

describe('excerpt and clip', () => {
  it('quote short text whole, and long text cut with an ellipsis and its length', () => {
    expect(excerpt('Ana')).toBe('"Ana"');
    const long = 'x'.repeat(10_000);
    expect(excerpt(long)).toBe(`"${'x'.repeat(EXCERPT_MAX_CHARS)}…" (10000 characters)`);
    expect(clip(long, 5)).toBe('xxxxx…');
    // Never half of a surrogate pair.
    expect(clip('ab😀cd', 3)).toBe('ab…');
  });
});

describe('file-level messages quote at most an excerpt', () => {
  it('a 10 MB one-line header is refused in a short message', async () => {
    const file = path.join(dir, 'huge.csv');
    await fs.writeFile(file, `${'H'.repeat(10 * 1024 * 1024)}\nx\n`);
    const err = await readError(file);
    expect(err.code).toBe('CSV_SYNTAX');
    expect(err.location.line).toBe(1);
    expect(err.message.length).toBeLessThan(1000);
    expect(err.describe('pt-BR')).toMatch(
      /^huge\.csv linha 1, coluna 1: Esperava um registro de no máximo 1048576 caracteres/,
    );
  });

  it('a long unknown header is quoted as an excerpt, in the message and the location', async () => {
    const file = path.join(dir, 'long-header.csv');
    const header = `type,correlationId,amount,${'Z'.repeat(300_000)}`;
    await fs.writeFile(file, `${header}\nPIX_STATIC,c1,1.00,x\n`);
    const err = await readError(file);
    expect(err.code).toBe('HEADER_UNKNOWN_COLUMN');
    expect(err.message.length).toBeLessThan(3 * EXCERPT_MAX_CHARS + 300);
    expect(err.message).toContain('(300000 characters)');
    expect((err.location.columnName ?? '').length).toBeLessThanOrEqual(EXCERPT_MAX_CHARS + 1);
  });
});

describe('cell errors quote at most an excerpt', () => {
  it('a 100 000-character amount or name gives a short message', () => {
    const dialect = { delimiter: ',', decimalMark: '.', encoding: 'utf8', bom: false } as const;
    const parsed = chargesKind.parse(
      {
        type: 'PIX_STATIC',
        correlationId: 'c1',
        amount: `1${'2'.repeat(50_000)}.${'3'.repeat(50_000)}`,
        description: `${'d'.repeat(100_000)}\n`,
      },
      dialect,
    );
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.errors.map((e) => e.column)).toEqual(['amount', 'description']);
    for (const e of parsed.errors) expect(render('en', e.message).length).toBeLessThanOrEqual(501);
    expect(render('en', parsed.errors[1]!.message)).toContain('(100001 characters)');
  });
});

describe('the rejection note of a hostile file', () => {
  it('stays small (a 10 MB header made a 20 MB note)', async () => {
    const config = path.join(dir, 'remessa.jsonc');
    const data = path.join(dir, 'data');
    const outbox = path.join(dir, 'outbox');
    await fs.writeFile(
      config,
      JSON.stringify({
        folders: { inbox: path.join(dir, 'inbox'), outbox, archive: path.join(dir, 'archive'), data },
      }),
    );
    const file = path.join(dir, 'charges-huge.csv');
    await fs.writeFile(file, `type,${'H'.repeat(600_000)}\nPIX_STATIC,x\n`);
    const run = await runCli(['run', '--config', config, file], { env: { REMESSA_LOG_LEVEL: 'warn' } });
    expect(run.code).toBe(1);
    const note = await fs.readFile((await answersOf({ outbox }, 'charges', 'charges-huge'))[0]!.rejected!, 'utf8');
    expect(note).toContain('HEADER_UNKNOWN_COLUMN');
    expect(note).toContain('(600000 caracteres)'); // the note is in the locale (pt-BR by default), its excerpt too
    expect(note.length).toBeLessThan(2000);
    expect(run.stdout.length + run.stderr.length).toBeLessThan(20_000);
  }, 60_000);
});
