/**
 * A folder on another file system than the temp folder (where the tests put remessa's data and work area), for what
 * only happens across file systems: a take that is a copy (EXDEV), not a rename, as with an inbox on an SFTP or
 * network mount. /dev/shm when it is another file system; else, as root, a small tmpfs mounted for the test; else
 * none, with the reason, which the suite prints before skipping (never a silent skip).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

export interface OtherFileSystem {
  /** A fresh folder there. */
  dir: string;
  /** Removes the folder (and unmounts the tmpfs when one was mounted). */
  remove(): Promise<void>;
}

/** A fresh folder on another file system than `os.tmpdir()`, or the reason there is none. */
export async function otherFileSystem(): Promise<OtherFileSystem | { reason: string }> {
  const tmpDev = (await fs.stat(os.tmpdir())).dev;
  const shm = await fs.mkdtemp('/dev/shm/remessa-other-fs-').catch(() => undefined);
  if (shm !== undefined) {
    if ((await fs.stat(shm)).dev !== tmpDev) {
      return { dir: shm, remove: () => fs.rm(shm, { recursive: true, force: true }) };
    }
    await fs.rm(shm, { recursive: true, force: true });
  }
  if (process.getuid?.() !== 0) {
    return { reason: `/dev/shm is not another file system than ${os.tmpdir()}, and mounting a tmpfs needs root` };
  }
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-other-fs-'));
  try {
    await promisify(execFile)('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', dir]);
  } catch (err) {
    await fs.rm(dir, { recursive: true, force: true });
    return { reason: `mounting a tmpfs on ${dir} failed: ${(err as Error).message.split('\n')[0]}` };
  }
  return {
    dir,
    remove: async () => {
      await promisify(execFile)('umount', [dir]).catch(() => undefined);
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}
