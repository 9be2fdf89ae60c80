/**
 * Writing a file so that no reader ever sees half of it: the text (or bytes) goes to a temporary name in the same folder
 * (same file system, so the rename is atomic), is flushed to disk, then renamed over the final name. On any failure
 * the temporary file is removed and the final name is untouched.
 *
 * `noClobber`: the final name must not exist yet; it is never replaced (answers are never overwritten). The temporary
 * file is then hard-linked to the final name, which fails atomically when the name is taken; on file systems without
 * hard links it is renamed after a check (not atomic against another writer, but remessa has one writer per folder).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';

export interface WriteFileAtomicOptions {
  /** Fail with EEXIST instead of replacing an existing file. @defaultValue false */
  noClobber?: boolean;
}

export async function writeFileAtomic(
  file: string,
  text: string | Uint8Array,
  options: WriteFileAtomicOptions = {},
): Promise<void> {
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const handle = await fs.open(temp, 'wx');
    try {
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    if (options.noClobber) await renameNoClobber(temp, file);
    else await fs.rename(temp, file);
  } catch (error) {
    await fs.rm(temp, { force: true });
    throw error;
  }
}

/** Renames `from` to `to` unless `to` exists (then throws EEXIST and leaves both as they were). */
export async function renameNoClobber(from: string, to: string): Promise<void> {
  try {
    await fs.link(from, to);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw error;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'ENOSYS' && code !== 'EOPNOTSUPP') throw error;
    // No hard links here (some network shares): check, then rename.
    if (
      await fs.lstat(to).then(
        () => true,
        () => false,
      )
    ) {
      throw Object.assign(new Error(`EEXIST: file already exists, rename '${from}' -> '${to}'`), {
        code: 'EEXIST',
        path: to,
      });
    }
    await fs.rename(from, to);
    return;
  }
  await fs.unlink(from);
}
