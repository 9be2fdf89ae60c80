import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { renderBatchesDoc } from '../src/batches/docs.js';
import { KINDS } from '../src/batches/registry.js';
import { KIND_NAMES } from '../src/types.js';

describe('docs/batches.md', () => {
  it('is exactly what the column specs generate (run `npx tsx src/batches/docs.ts > docs/batches.md`)', async () => {
    const committed = await readFile(new URL('../docs/batches.md', import.meta.url), 'utf8');
    expect(committed).toBe(renderBatchesDoc());
  });

  it('lists every column of every kind', async () => {
    const doc = renderBatchesDoc();
    for (const name of KIND_NAMES) {
      expect(doc).toContain(`## ${name}\n`);
      for (const c of KINDS[name].columns) expect(doc).toContain(`| \`${c.name}\` |`);
    }
  });
});
