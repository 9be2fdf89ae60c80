/**
 * Exit codes of a scheduled `run` mean something: 3 when rows are left unsettled (here: the bank is down, so every row waits and no row
 * could be settled), distinct from 1 (answered, some row rejected or failed) and 2 (could not run).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT_CANNOT_RUN, EXIT_UNSETTLED } from '../src/exit-codes.js';
import { EXAMPLES, makeWorkspace, runCli } from './e2e-harness.js';
import { closedPort } from './helpers/net.js';

describe('remessa run exit codes', () => {
  it('exits 3 when the bank is down and rows are left unsettled, 2 for a file that is not there', async () => {
    const ws = await makeWorkspace(`http://127.0.0.1:${await closedPort()}`, {
      bank: {
        retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 5, maxRetryAfterMs: 10 },
        unreachable: { retryDelaysMs: [100], runMaxWaitMs: 500 },
      },
    });
    const file = path.join(ws.dir, 'charges-down.csv');
    await fs.copyFile(path.join(EXAMPLES, 'charges.csv'), file);
    const down = await runCli(['run', '--config', ws.config, file]);
    expect(down.code, down.stdout + down.stderr).toBe(EXIT_UNSETTLED);

    const missing = await runCli(['run', '--config', ws.config, path.join(ws.dir, 'charges-nope.csv')]);
    expect(missing.code).toBe(EXIT_CANNOT_RUN);
    expect(missing.stdout).toMatch(/charges-nope\.csv: não encontrado/);
  });
});
