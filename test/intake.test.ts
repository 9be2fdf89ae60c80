import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { classifyInboxPath, kindFromRootName, stemOf } from '../src/intake/classify.js';
import { Intake, type IntakeOptions, type TakenBatch } from '../src/intake/intake.js';
import { listWorkItems, moveFile, takeIntoWorkArea } from '../src/intake/work-area.js';
import { KIND_NAMES } from '../src/types.js';

describe('classifyInboxPath', () => {
  it('takes the kind from the folder', () => {
    expect(classifyInboxPath('charges/jan.csv')).toEqual({
      type: 'batch',
      kind: 'charges',
      name: 'jan.csv',
      folder: 'charges',
    });
    expect(classifyInboxPath('bill-payments\\x.txt')).toMatchObject({ type: 'batch', kind: 'bill-payments' });
  });

  it('takes the kind from a root name prefix, longest kind first, any case', () => {
    expect(classifyInboxPath('charges-jan.csv')).toMatchObject({ type: 'batch', kind: 'charges' });
    expect(classifyInboxPath('charge-updates_0412.CSV')).toMatchObject({ type: 'batch', kind: 'charge-updates' });
    expect(classifyInboxPath('claim-cancellations-1.csv')).toMatchObject({
      type: 'batch',
      kind: 'claim-cancellations',
    });
    expect(classifyInboxPath('Claims_1.csv')).toMatchObject({ type: 'batch', kind: 'claims' });
    expect(kindFromRootName('charges.csv')).toBeUndefined();
    expect(kindFromRootName('charges-x.txt')).toBeUndefined();
  });

  it('answers unknown kinds instead of ignoring them', () => {
    const root = classifyInboxPath('payroll.csv');
    expect(root.type).toBe('unknown-kind');
    expect(root.type === 'unknown-kind' && root.reason).toMatch(/Expected .* got "payroll.csv"/);
    expect(classifyInboxPath('payroll/x.csv')).toMatchObject({ type: 'unknown-kind', folder: 'payroll' });
  });

  it('ignores writers at work, lock files, markers and deeper folders', () => {
    for (const p of [
      '.hidden.csv',
      'charges/.x.csv',
      'charges-a.csv.tmp',
      'charges/a.part',
      '~$charges-a.csv',
      'charges/a.csv.done',
      'charges/sub/a.csv',
      '.git/x.csv',
    ]) {
      expect(classifyInboxPath(p).type, p).toBe('ignored');
    }
  });

  it('every kind folder maps to its kind (property)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...KIND_NAMES),
        fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,20}\.csv$/),
        (kind, name) => {
          expect(classifyInboxPath(`${kind}/${name}`)).toMatchObject({ type: 'batch', kind, name });
          expect(classifyInboxPath(`${kind}-${name}`)).toMatchObject({ type: 'batch', kind });
        },
      ),
    );
  });

  it('stemOf drops only the last extension', () => {
    expect(stemOf('jan.csv')).toBe('jan');
    expect(stemOf('a.b.csv')).toBe('a.b');
    expect(stemOf('noext')).toBe('noext');
  });
});

describe('Intake', () => {
  let root: string;
  let opts: IntakeOptions;
  let running: Intake[] = [];

  beforeEach(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-intake-'));
    opts = {
      inboxDir: path.join(root, 'inbox'),
      workDir: path.join(root, 'data', 'work'),
      archiveDir: path.join(root, 'archive'),
      stableMs: 150,
      rescanIntervalMs: 0,
    };
  });

  afterEach(async () => {
    await Promise.all(running.map((i) => i.stop()));
    running = [];
    await fs.rm(root, { recursive: true, force: true });
  });

  function recorder(outcome: 'done' | 'parked' = 'done') {
    const seen: Array<TakenBatch & { content: string }> = [];
    const handler = async (b: TakenBatch) => {
      seen.push({ ...b, content: await fs.readFile(b.item.file, 'utf8') });
      return outcome;
    };
    return { seen, handler };
  }

  async function until(check: () => boolean | Promise<boolean>, timeoutMs = 8000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > end) throw new Error('timed out waiting');
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  async function listArchive(): Promise<string[]> {
    const out: string[] = [];
    for (const sub of await fs.readdir(opts.archiveDir).catch(() => [] as string[])) {
      for (const f of await fs.readdir(path.join(opts.archiveDir, sub))) out.push(`${sub}/${f}`);
    }
    return out.sort();
  }

  it('start-up scan takes files that arrived while down, hashes them and archives them', async () => {
    await fs.mkdir(path.join(opts.inboxDir, 'charges'), { recursive: true });
    const old = new Date(Date.now() - 60_000);
    await fs.writeFile(path.join(opts.inboxDir, 'charges', 'jan.csv'), 'a,b\n1,2\n');
    await fs.utimes(path.join(opts.inboxDir, 'charges', 'jan.csv'), old, old);
    await fs.writeFile(path.join(opts.inboxDir, 'bill-payments_x.csv'), 'c\n3\n');
    await fs.writeFile(path.join(opts.inboxDir, 'charges', 'skip.tmp'), 'x');
    await fs.writeFile(path.join(opts.inboxDir, '.hidden'), 'x');
    const { seen, handler } = recorder();
    const intake = new Intake(opts, handler);
    await intake.drain();
    expect(seen.map((s) => [s.item.meta.kind, s.item.meta.name, s.stem]).sort()).toEqual([
      ['bill-payments', 'bill-payments_x.csv', 'bill-payments_x'],
      ['charges', 'jan.csv', 'jan'],
    ]);
    const jan = seen.find((s) => s.stem === 'jan')!;
    expect(jan.sha256).toBe(createHash('sha256').update('a,b\n1,2\n').digest('hex'));
    expect(jan.content).toBe('a,b\n1,2\n');
    const archived = await listArchive();
    expect(archived).toHaveLength(2);
    // Archived under the taking's name (src/outbox/names.ts): the answers' base name and the input's extension.
    expect(jan.item.id).toMatch(/^\d{8}T\d{6}Z-[0-9a-f]{8}$/);
    expect(archived).toContain(`charges/jan.${jan.item.id}.csv`);
    // Ignored files stay where they are; the work area is empty.
    expect(await fs.readdir(path.join(opts.inboxDir, 'charges'))).toEqual(['skip.tmp']);
    expect(await fs.readdir(opts.inboxDir)).toContain('.hidden');
    expect(await listWorkItems(opts.workDir)).toEqual([]);
    // Kind folders are created for users.
    for (const k of KIND_NAMES) expect((await fs.stat(path.join(opts.inboxDir, k))).isDirectory()).toBe(true);
  });

  it('waits until a file being written stops changing', async () => {
    const { seen, handler } = recorder();
    // Writes come every 50 ms, far inside the 2500 ms window even on a loaded machine.
    const intake = new Intake({ ...opts, stableMs: 2500 }, handler);
    running.push(intake);
    await intake.start();
    const file = path.join(opts.inboxDir, 'charges', 'slow.csv');
    const handle = await fs.open(file, 'w');
    for (let i = 0; i < 5; i++) {
      await handle.write(`line ${i}\n`);
      await new Promise((r) => setTimeout(r, 50));
      expect(seen).toHaveLength(0);
    }
    await handle.close();
    await until(() => seen.length === 1);
    expect(seen[0]!.content.split('\n')).toHaveLength(6);
  });

  it('with requireDoneMarker, takes a file only when its marker appears, and archives the marker too', async () => {
    const { seen, handler } = recorder();
    const intake = new Intake({ ...opts, requireDoneMarker: true }, handler);
    running.push(intake);
    await intake.start();
    await fs.writeFile(path.join(opts.inboxDir, 'claims', 'k.csv'), 'x\n');
    await new Promise((r) => setTimeout(r, 600));
    expect(seen).toHaveLength(0);
    await fs.writeFile(path.join(opts.inboxDir, 'claims', 'k.csv.done'), '');
    await until(() => seen.length === 1);
    await intake.onIdle();
    await until(async () => (await listArchive()).length === 2);
    expect((await listArchive()).some((a) => /^claims\/k\.\d{8}T\d{6}Z-[0-9a-f]{8}\.csv\.done$/.test(a))).toBe(true);
  });

  it('polling mode sees new files too', async () => {
    const { seen, handler } = recorder();
    const intake = new Intake({ ...opts, usePolling: true, pollIntervalMs: 50 }, handler);
    running.push(intake);
    await intake.start();
    await fs.writeFile(path.join(opts.inboxDir, 'qr-codes-a.csv'), 'x\n');
    await until(() => seen.length === 1);
    expect(seen[0]!.item.meta.kind).toBe('qr-codes');
  });

  it('hands unknown kinds to the handler with the reason (they are answered, not ignored)', async () => {
    const { seen, handler } = recorder();
    await fs.mkdir(opts.inboxDir, { recursive: true });
    await fs.writeFile(path.join(opts.inboxDir, 'payroll.csv'), 'x\n');
    await new Intake({ ...opts, stableMs: 0 }, handler).drain();
    expect(seen).toHaveLength(1);
    expect(seen[0]!.item.meta.kind).toBeNull();
    expect(seen[0]!.item.meta.unknownKindReason).toMatch(/payroll\.csv/);
    expect(await listArchive()).toHaveLength(1);
    expect((await listArchive())[0]).toMatch(/^_unknown\//);
  });

  it('a parked or failed batch stays in the work area and is resumed on the next start', async () => {
    await fs.mkdir(path.join(opts.inboxDir, 'charges'), { recursive: true });
    await fs.writeFile(path.join(opts.inboxDir, 'charges', 'p.csv'), 'p\n');
    await fs.writeFile(path.join(opts.inboxDir, 'charges', 'f.csv'), 'f\n');
    const first = new Intake({ ...opts, stableMs: 0 }, async (b) => {
      if (b.stem === 'f') throw new Error('store down');
      return 'parked';
    });
    await first.drain();
    expect(first.counts).toEqual({ done: 0, parked: 1, failed: 1 });
    expect((await listWorkItems(opts.workDir)).map((w) => w.meta.name).sort()).toEqual(['f.csv', 'p.csv']);
    expect(await listArchive()).toEqual([]);

    const { seen, handler } = recorder();
    await new Intake({ ...opts, stableMs: 0 }, handler).drain();
    expect(seen.map((s) => s.stem).sort()).toEqual(['f', 'p']);
    expect(await listWorkItems(opts.workDir)).toEqual([]);
    expect(await listArchive()).toHaveLength(2);
  });

  it('while watching, a batch whose handler threw is handled again later', async () => {
    let calls = 0;
    const intake = new Intake({ ...opts, stableMs: 0, retryFailedMs: 100 }, async () => {
      calls++;
      if (calls === 1) throw new Error('disk full');
      return 'done';
    });
    running.push(intake);
    await intake.start();
    await fs.writeFile(path.join(opts.inboxDir, 'charges', 'r.csv'), 'r\n');
    await until(() => intake.counts.done === 1);
    expect(calls).toBe(2);
    expect(intake.counts.failed).toBe(1);
    expect(await listArchive()).toHaveLength(1);
  });

  it('a crash between the work folder and the move leaves nothing behind and loses nothing', async () => {
    await fs.mkdir(path.join(opts.workDir, '20260101T000000Z-dead'), { recursive: true });
    await fs.writeFile(
      path.join(opts.workDir, '20260101T000000Z-dead', 'meta.json'),
      JSON.stringify({ name: 'gone.csv' }),
    );
    await fs.mkdir(path.join(opts.workDir, '20260101T000001Z-nometa'), { recursive: true });
    expect(await listWorkItems(opts.workDir)).toEqual([]);
    expect(await fs.readdir(opts.workDir)).toEqual([]);
  });

  it('moveFile works across file systems (an inbox on another mount): copied, synced, renamed, source removed', async () => {
    let shm: string;
    try {
      shm = await fs.mkdtemp('/dev/shm/remessa-intake-');
    } catch {
      return; // no second file system here
    }
    try {
      const from = path.join(shm, 'x.csv');
      await fs.writeFile(from, 'a,b\n1,2\n');
      const to = path.join(root, 'moved.csv');
      await moveFile(from, to);
      expect(await fs.readFile(to, 'utf8')).toBe('a,b\n1,2\n');
      await expect(fs.stat(from)).rejects.toThrow();
      expect((await fs.readdir(root)).filter((f) => f.endsWith('.part'))).toEqual([]);
    } finally {
      await fs.rm(shm, { recursive: true, force: true });
    }
  });

  it('takeIntoWorkArea returns undefined when the file vanished', async () => {
    await fs.mkdir(opts.workDir, { recursive: true });
    const r = await takeIntoWorkArea(opts.workDir, path.join(root, 'nope.csv'), {
      kind: 'charges',
      name: 'nope.csv',
      folder: null,
      relativePath: 'nope.csv',
    });
    expect(r).toBeUndefined();
    expect(await fs.readdir(opts.workDir)).toEqual([]);
  });

  it('stop aborts handlers and leaves their files in the work area', async () => {
    let started = false;
    let sawAbort = false;
    const intake = new Intake({ ...opts, stableMs: 0 }, (_b, signal) => {
      started = true;
      return new Promise((resolve) => {
        signal.addEventListener('abort', () => {
          sawAbort = true;
          resolve('parked');
        });
      });
    });
    await intake.start();
    await fs.writeFile(path.join(opts.inboxDir, 'charges', 'a.csv'), 'a\n');
    await until(() => started);
    await intake.stop();
    expect(sawAbort).toBe(true);
    expect(intake.counts.parked).toBe(1);
    expect(await listWorkItems(opts.workDir)).toHaveLength(1);
  });

  it('rejects nonsense options with Expected/got', () => {
    expect(() => new Intake({ ...opts, stableMs: -1 }, async () => 'done')).toThrow(/Expected intake option stableMs/);
  });
});
