/**
 * Who dropped a file, as the intake records it when it takes the file (src/intake/work-area.ts `ownerUid`), and the
 * maker that makes of it (src/runner/approval.ts `makerOf`, src/store/approvals.ts rule 3): read from the file moved,
 * as it was in the inbox, so that a take across file systems (a copy, owned by remessa's own account) still names the
 * uploader; a file with more than one name, or owned by remessa's own account, has no maker.
 *
 * Across file systems for real (test/helpers/other-fs.ts: /dev/shm, else a tmpfs mounted as root; without either,
 * those cases are skipped with the reason printed). Files are given another owner with chown, which needs root (the
 * tests run as root here and in CI; otherwise skipped, the reason printed).
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { moveFile, takeIntoWorkArea, type WorkItem } from '../src/intake/work-area.js';
import { makerOf } from '../src/runner/approval.js';
import { type OtherFileSystem, otherFileSystem } from './helpers/other-fs.js';

/** The clerk who drops the files: a uid without a name in /etc/passwd (`uid 23456`). */
const MAKER_UID = 23456;
const ME = process.getuid?.();
const isRoot = ME === 0;
if (!isRoot) console.warn('test/intake-owner.test.ts skipped: giving a file another owner (chown) needs root');

const other = isRoot ? await otherFileSystem() : { reason: 'not root' };
const mount: OtherFileSystem | undefined = 'dir' in other ? other : undefined;
if (isRoot && !mount) {
  console.warn(
    `test/intake-owner.test.ts: the cases across file systems are skipped: ${'reason' in other && other.reason}`,
  );
}

let root: string;
beforeEach(async () => {
  root = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-intake-owner-'));
});
afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});
afterAll(async () => {
  await mount?.remove();
});

/** Writes `inbox/bill-payments/<name>` under `base`, owned by `uid`, and takes it into `root`'s work area. */
async function dropAndTake(base: string, name: string, uid: number, extra?: (file: string) => Promise<void>) {
  const inbox = await fs.mkdtemp(path.join(base, 'inbox-'));
  const file = path.join(inbox, 'bill-payments', name);
  await fs.mkdir(path.dirname(file), { recursive: true });
  await fs.writeFile(file, 'barCode,amount\n');
  await fs.chown(file, uid, uid);
  await extra?.(file);
  const item = (await takeIntoWorkArea(path.join(root, 'work'), file, {
    kind: 'bill-payments',
    name,
    folder: 'bill-payments',
    relativePath: `bill-payments/${name}`,
  })) as WorkItem;
  const onDisk = JSON.parse(await fs.readFile(path.join(item.dir, 'meta.json'), 'utf8'));
  return { item, onDisk, source: file };
}

describe.skipIf(!isRoot)('the owner of a taken file', () => {
  it('a rename (one file system): the uploader, recorded in meta.json; the maker', async () => {
    const { item, onDisk } = await dropAndTake(root, 'a.csv', MAKER_UID);
    expect(item.meta.ownerUid).toBe(MAKER_UID);
    expect(onDisk.ownerUid).toBe(MAKER_UID);
    expect((await fs.stat(item.file)).uid).toBe(MAKER_UID);
    expect(await makerOf(item)).toBe(`uid ${MAKER_UID}`);
  });

  it.skipIf(!mount)('a copy (another file system): still the uploader, though the copy is remessa’s own', async () => {
    const { item, onDisk, source } = await dropAndTake(mount!.dir, 'b.csv', MAKER_UID);
    expect((await fs.stat(item.file)).uid).toBe(ME);
    await expect(fs.lstat(source)).rejects.toThrow();
    expect(await fs.readFile(item.file, 'utf8')).toBe('barCode,amount\n');
    expect(onDisk.ownerUid).toBe(MAKER_UID);
    expect(await makerOf(item)).toBe(`uid ${MAKER_UID}`);
    // What was read before (the taken file's own owner, as for a meta.json without ownerUid): remessa's, no maker.
    expect(await makerOf({ file: item.file, meta: {} })).toBeNull();
    expect((await fs.readdir(item.dir)).filter((f) => f.endsWith('.part'))).toEqual([]);
  });

  for (const where of ['one file system', 'another file system'] as const) {
    it.skipIf(where === 'another file system' && !mount)(`${where}: a file with two names has no maker`, async () => {
      const base = where === 'one file system' ? root : mount!.dir;
      const { item, onDisk } = await dropAndTake(base, 'c.csv', MAKER_UID, (file) =>
        fs.link(file, path.join(path.dirname(file), '..', 'other-name.csv')),
      );
      expect(onDisk.ownerUid).toBeNull();
      expect(await makerOf(item)).toBeNull();
    });

    it.skipIf(where === 'another file system' && !mount)(
      `${where}: a file of remessa's own account has no maker`,
      async () => {
        const base = where === 'one file system' ? root : mount!.dir;
        const { item, onDisk } = await dropAndTake(base, 'd.csv', ME!);
        expect(onDisk.ownerUid).toBe(ME);
        expect(await makerOf(item)).toBeNull();
      },
    );
  }

  it.skipIf(!mount)('moveFile across file systems refuses a FIFO, leaving it where it is', async () => {
    const { execFileSync } = await import('node:child_process');
    const fifo = path.join(mount!.dir, `fifo-${process.pid}`);
    execFileSync('mkfifo', [fifo]);
    try {
      await expect(moveFile(fifo, path.join(root, 'fifo'))).rejects.toMatchObject({ code: 'INTAKE_NOT_MOVABLE' });
      expect((await fs.lstat(fifo)).isFIFO()).toBe(true);
    } finally {
      await fs.rm(fifo, { force: true });
    }
  });
});
