/**
 * `validate` says what the run will refuse among rows that share a key within one file (rule 4 of
 * src/store/rows.ts): a key reused for another operation (NATURAL_KEY_REUSED), an explicit idempotency key reused by
 * another operation (the bank refuses the second request), and a plain duplicate (a note: nothing sent). Each file is
 * validated and then run against the embedded sandbox; the lines `validate` refuses are the lines the run does not
 * succeed, and its duplicates are the run's.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileKeys } from '../src/runner/file-keys.js';
import { CLI, runCli } from './e2e-harness.js';

const QR1 =
  '00020126440014br.gov.bcb.pix0122fornecedor@example.com5204000053039865406100.005802BR5923Fornecedor Exemplo Ltda' +
  '6009Sao Paulo62130509PEDIDO123630473BB';
const QR2 =
  '00020126360014br.gov.bcb.pix0114+5511987654321520400005303986540545.505802BR5918Padaria Pao Quente6008Campinas' +
  '62100506NF45506304C420';
const KEY = '3f1c2a4e-1b2c-4d5e-8f90-123456789abc';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'remessa-file-keys-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function validateAndRun(kind: string, name: string, text: string) {
  const base = path.join(dir, name);
  await mkdir(path.join(base, 'inbox', kind), { recursive: true });
  const config = path.join(base, 'remessa.jsonc');
  await writeFile(config, '{ "policy": { "pix-payments": "send-valid", "claims": "send-valid" } }\n');
  const file = path.join(base, 'inbox', kind, `${name}.csv`);
  await writeFile(file, text);
  const env = { ...process.env, NODE_ENV: 'test' };
  const validated = await runCli(['validate', '--config', config, file], { env });
  const run = await runCli(['run', '--config', config], { env, timeoutMs: 60_000 });
  if (run.code !== 0 && run.code !== 1) throw new Error(`run exited ${run.code}: ${run.stderr}${run.stdout}`);
  const outbox = path.join(base, 'outbox', kind);
  const result = (await readdir(outbox)).find((f) => f.endsWith('.result.csv'));
  const lines = (await readFile(path.join(outbox, result!), 'utf8')).trim().split(/\r?\n/);
  const statusAt = lines[0]!.split(';').indexOf('status');
  const statuses = lines.slice(1).map((l) => l.split(';')[statusAt]);
  return { validated: validated.stdout, statuses, run };
}

/** The lines `validate` names in its errors (`file linha L`). */
function refusedLines(out: string, tag: string): number[] {
  return [...out.matchAll(new RegExp(`linha (\\d+)[^\\n]*\\[${tag}\\]`, 'g'))].map((m) => Number(m[1]));
}

describe('validate finds the keys the run finds within one file', () => {
  it('charge-updates: a change is a repeat only of the last change of its charge, as the run decides', async () => {
    // The run sends lines 2, 3 and 4 (20/12, then 27/12, then 20/12 again: three changes) and answers line 5, a
    // repeat of line 4, duplicate. Before: validate noted lines 4 and 5 as duplicates of line 2.
    const base = path.join(dir, 'updates');
    await mkdir(base, { recursive: true });
    const file = path.join(base, 'charge-updates-prazos.csv');
    const rows = ['20/12/2030', '27/12/2030', '20/12/2030', '20/12/2030'].map((d) => `INV-1;${d}`);
    await writeFile(file, ['correlationId;dueDate', ...rows, 'INV-2;20/12/2030', ''].join('\r\n'));
    const out = (await runCli(['validate', file], { env: { ...process.env, NODE_ENV: 'test' } })).stdout;
    expect([...out.matchAll(/linha (\d+)[^\n]*\[DUPLICATE_NATURAL_KEY\]/g)].map((m) => Number(m[1]))).toEqual([5]);
    expect(out).toContain('linha 5');
  });

  it('pix-payments: a duplicate is noted and an idempotency key reused by another payment is refused', async () => {
    const csv = [
      'payload;amount;description;idempotencyKey',
      `${QR1};100,00;a;`,
      `${QR1};100,00;b;`,
      `${QR1};100,00;c;${KEY}`,
      `${QR2};45,50;d;${KEY}`,
    ].join('\n');
    const { validated, statuses } = await validateAndRun('pix-payments', 'pix', `${csv}\n`);
    // Line 5 is refused by the run at ingestion, as validate says (it was sent, and failed by the bank's refusal).
    expect(statuses).toEqual(['succeeded', 'duplicate', 'succeeded', 'rejected']);
    expect(refusedLines(validated, 'DUPLICATE_NATURAL_KEY')).toEqual([3]);
    expect(refusedLines(validated, 'IDEMPOTENCY_KEY_REUSED')).toEqual([5]);
    expect(validated).toContain('pix.csv: 4 linhas, 3 válidas, 1 inválida, 1 erro;');
    // What would be paid: rows 2 and 4 (the duplicate is not paid again, row 5 is refused).
    expect(validated).toContain('valores: R$ 200,00 válidos, R$ 45,50 inválidos');
  }, 120_000);

  it('claims: a key claimed again for another account is refused as the run refuses it', async () => {
    const header =
      'type;key;account.number;account.branch;account.type;account.holder.document;account.holder.name;account.holder.type';
    const a = 'EMAIL;ana@example.com;123456-7;0001;CURRENT;123.456.789-09;Ana da Silva;NATURAL';
    const b = 'EMAIL;ana@example.com;999999-9;0001;CURRENT;123.456.789-09;Ana da Silva;NATURAL';
    const { validated, statuses } = await validateAndRun('claims', 'claims', `${[header, a, a, b].join('\n')}\n`);
    expect(statuses).toEqual(['succeeded', 'duplicate', 'rejected']);
    expect(refusedLines(validated, 'NATURAL_KEY_REUSED')).toEqual([4]);
    expect(refusedLines(validated, 'DUPLICATE_NATURAL_KEY')).toEqual([3]);
  }, 120_000);
});

describe('FileKeys', () => {
  it('answers the first line of a key, for a million keys', () => {
    const keys = new FileKeys();
    let hits = 0;
    for (let i = 1; i <= 1_000_000; i++) if (keys.claim(`k${i}`, i + 1) !== undefined) hits++;
    expect(hits).toBe(0);
    expect(keys.claim('k500000', 3)).toBe(500_001);
    expect(keys.claim('new', 3)).toBeUndefined();
  });
});
void CLI;
