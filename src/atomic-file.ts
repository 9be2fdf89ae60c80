/**
 * Writing a file so that no reader ever sees half of it: the text (or bytes) goes to a temporary name in the same folder
 * (same file system, so the rename is atomic), is flushed to disk, then renamed over the final name. On any failure
 * the temporary file is removed and the final name is untouched.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';

export async function writeFileAtomic(file: string, text: string | Uint8Array): Promise<void> {
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const handle = await fs.open(temp, 'wx');
    try {
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(temp, file);
  } catch (error) {
    await fs.rm(temp, { force: true });
    throw error;
  }
}
