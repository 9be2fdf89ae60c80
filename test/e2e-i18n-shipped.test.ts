/**
 * End to end (issue 9, "Done when"): examples/charges-planilha-pt.csv (only Portuguese headers, no type and no
 * identifier column, as Excel exports it) succeeds with the SHIPPED configuration, byte for byte: config/remessa.jsonc
 * copied unchanged into a temp folder's config/ (its `folders.base` ".." then names that temp folder), with the
 * embedded sandbox it selects. `remessa run` is the child process; nothing is replaced or added.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { answersOf, EXAMPLES, parseResultCsv, ROOT, runCli } from './e2e-harness.js';

describe('the Portuguese sheet of examples/ with the shipped configuration as it is', () => {
  it('succeeds: every row a bank slip with its derived correlationId, answered in Portuguese', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-shipped-'));
    const config = path.join(dir, 'config', 'remessa.jsonc');
    await fs.mkdir(path.dirname(config));
    await fs.copyFile(path.join(ROOT, 'config', 'remessa.jsonc'), config);
    const sheet = path.join(dir, 'charges-planilha-pt.csv');
    await fs.copyFile(path.join(EXAMPLES, 'charges-planilha-pt.csv'), sheet);

    const run = await runCli(['run', '--config', config, sheet]);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const answer = (await answersOf({ outbox: path.join(dir, 'outbox') }, 'charges', 'charges-planilha-pt')).at(-1);
    expect(answer?.rejected).toBeUndefined();
    const rows = parseResultCsv(await fs.readFile(answer!.results.at(-1)!), 'windows-1252');
    expect(rows.map((r) => [r.status, r.type])).toEqual(Array(4).fill(['succeeded', 'BANKSLIP']));
    expect(rows.map((r) => r.correlationId)).toEqual([
      'NF~203001~2FA',
      'NF~203002~2FA',
      expect.stringMatching(/^[0-9a-f-]{36}$/),
      expect.stringMatching(/^[0-9a-f-]{36}$/),
    ]);
    // A Brazilian sheet's answer: the line as printed on the slip, which Excel keeps as text (README).
    for (const r of rows) expect(r.digitableLine).toMatch(/^\d{5}\.\d{5} \d{5}\.\d{6} \d{5}\.\d{6} \d \d{14}$/);
    // The shipped locale is pt-BR: the progress line speaks it (the JSON log lines are for operators, in English).
    expect(run.stdout + run.stderr).toContain('charges charges-planilha-pt.csv: 4 linhas processadas');
    expect(run.stdout + run.stderr).not.toMatch(/\brows\b|Expected/);
  }, 120_000);
});
