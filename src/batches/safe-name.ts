/**
 * File names for outputs (slip PDFs, QR PNGs) made from a row's correlationId.
 *
 * What must hold, whatever the row contains:
 * - the name is a single path segment: no '/', '\\', NUL, no '.' or '..', no leading dot (hidden file), no drive
 *   letter or device name (CON, NUL, COM1... on Windows shares);
 * - it is at most 120 characters plus the extension;
 * - two different ids never get the same name: whenever the id had to be changed to be safe, a short hash of the
 *   original id is appended (`a_b-5f3c9e21.pdf` for `a/b`).
 *
 * A correlationId derived from a Seu número (./derived-ids.ts: `NF~203001~2FA` for `NF 3001/A`) is named after the Seu
 * número the clerk typed (`NF_3001_A-ba9be141.pdf`, was `NF_203001_2FA-...`); the hash is still the id's own.
 */
import { createHash } from 'node:crypto';

const MAX_STEM_LENGTH = 120;
const SAFE = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;
const WINDOWS_DEVICE = /^(con|prn|aux|nul|com\d|lpt\d)(\..*)?$/i;

/**
 * A safe file name for `id` with `extension` (without the dot, e.g. "pdf"). Ids that are already safe keep their
 * exact name (`A-12.pdf`).
 */
export function safeFileName(id: string, extension: string): string {
  const ext = extension.replace(/[^A-Za-z0-9]/g, '').toLowerCase() || 'bin';
  if (id.length <= MAX_STEM_LENGTH && SAFE.test(id) && !id.endsWith('.') && !WINDOWS_DEVICE.test(id)) {
    return `${id}.${ext}`;
  }
  const hash = createHash('sha256').update(id, 'utf8').digest('hex').slice(0, 8);
  let stem = unescapeDerived(id)
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '') // accents off: "São" -> "Sao"
    .replace(/[^A-Za-z0-9._-]+/g, '_')
    .replace(/\.{2,}/g, '_')
    .replace(/^[._]+/, '')
    .replace(/[._]+$/, '');
  stem = stem.slice(0, MAX_STEM_LENGTH - 9);
  return `${stem === '' ? 'row' : stem}-${hash}.${ext}`;
}

/** `~XX` escapes of a derived correlationId (UTF-8 bytes in hex) back to their characters, for a name only. */
function unescapeDerived(id: string): string {
  return id.includes('~')
    ? id.replace(/(?:~[0-9A-F]{2})+/g, (run) => Buffer.from(run.replaceAll('~', ''), 'hex').toString('utf8'))
    : id;
}
