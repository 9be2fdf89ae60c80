/**
 * The pipeline's side of "an answer never covers part of a file": a taken file that changes while it is read (its
 * writer resumed through a handle it still held) sends nothing and writes no answer; the intake reads it again, and
 * the second reading is answered whole, each row sent once.
 *
 * Real pipeline (on both engines: a store file in a temp folder, a PostgreSQL database; embedded sandbox over HTTP); the writer's resumption is timed by the check
 * itself: it appends a row right after the check made before reading, so the check after the last byte sees it.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TakenBatch } from '../src/intake/intake.js';
import { FileChangedError, fingerprintOf, sameFingerprint, sha256File } from '../src/intake/work-area.js';
import type { Pipeline } from '../src/runner/commands.js';
import { SANDBOX_ADMIN_PREFIX, SANDBOX_PUBLIC_API_KEY } from '../src/sandbox/options.js';
import { answersOf } from './e2e-harness.js';
import { openTestPipeline } from './helpers/pipeline.js';
import { skipIfAsked, storeEngines } from './helpers/stores.js';

const engines = storeEngines();

const HEADER = 'type,correlationId,description,amount\n';
const row = (n: number) => `PIX_STATIC,CHG-FILE-${n},Pedido ${n},10.00\n`;

let dir: string;
let open: Pipeline | undefined;

beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-changed-'));
});

afterEach(async () => {
  await open?.close();
  open = undefined;
  await fs.rm(dir, { recursive: true, force: true });
});

async function effects(bankUrl: string): Promise<unknown[]> {
  const res = await fetch(`${bankUrl}${SANDBOX_ADMIN_PREFIX}/effects`, {
    headers: { 'x-service-api-key': SANDBOX_PUBLIC_API_KEY },
  });
  return (await res.json()) as unknown[];
}

describe.each(engines)('a taken file that changes while it is read ($name)', (engine) => {
  skipIfAsked(engine);
  it('sends nothing and answers nothing; read again, it is answered whole and each row sent once', async () => {
    const { pipeline, folders, store, take } = await openTestPipeline(engine, dir, 'run');
    open = pipeline;
    const item = await take('charges', 'open.csv', HEADER + row(1) + row(2) + row(3));
    let checks = 0;
    const first: TakenBatch = {
      item,
      sha256: await sha256File(item.file),
      stem: 'open',
      unchanged: async () => {
        const same = sameFingerprint(fingerprintOf(await fs.lstat(item.file)), item.meta.taken);
        // The writer resumes right after the check made before reading.
        if (++checks === 1) await fs.appendFile(item.file, row(4));
        return same;
      },
    };
    await expect(pipeline.handleBatch(first, { signal: new AbortController().signal })).rejects.toBeInstanceOf(
      FileChangedError,
    );
    expect(checks).toBeGreaterThanOrEqual(2);
    expect(await effects(pipeline.bankUrl)).toEqual([]);
    expect(await fs.readdir(path.join(folders.outbox, 'charges')).catch(() => [])).toEqual([]);

    // Read again (what the intake does once the file settled): the whole file, answered once.
    item.meta.taken = fingerprintOf(await fs.lstat(item.file));
    const second: TakenBatch = {
      item,
      sha256: await sha256File(item.file),
      stem: 'open',
      unchanged: async () => sameFingerprint(fingerprintOf(await fs.lstat(item.file)), item.meta.taken),
    };
    expect(await pipeline.handleBatch(second, { signal: new AbortController().signal })).toBe('done');
    const result = await fs.readFile((await answersOf(folders, 'charges', 'open'))[0]!.results[0]!, 'utf8');
    const lines = result.trim().split('\n').slice(1);
    expect(lines).toHaveLength(4);
    for (const line of lines) expect(line).toMatch(/succeeded/);
    expect(await effects(pipeline.bankUrl)).toHaveLength(4);
    // The partial reading is in the store as given up (its keys released), so its rows were never duplicates.
    await pipeline.close();
    open = undefined;
    const reopened = await store.place.open();
    try {
      // One taking, two batches: the given-up partial reading, then the whole file (src/store/intakes.ts retakeIntake).
      expect((await reopened.listBatches()).map((b) => b.status).sort()).toEqual(['done', 'rejected']);
    } finally {
      await reopened.close();
    }
  }, 60_000);
});
