/**
 * One inbox, one store. Several daemons share an inbox only through one PostgreSQL store (claims, leases, the
 * duplicates of earlier files: src/store/leases.ts); a daemon or `run` with its own SQLite store beside them (a config
 * without `store.url`, by mistake) would take files from the same inbox with none of that: a row already paid by the
 * others, dropped again, would not be found a duplicate, and `remessa status` of either side would miss the other's.
 *
 * The daemons of a PostgreSQL store mark the inbox they serve: `<inbox>/.remessa-work/store` (their shared work area;
 * a dot name, never taken) names the store, never with a password (src/config.ts refuses one in `store.url`). A
 * daemon or `run` on SQLite refuses to start on an inbox so marked (exit 2), saying which store serves it. The mark
 * stays when the daemons stop (they are the inbox's servers still); an operator who moves the inbox back to SQLite
 * deletes the file, as the refusal says.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { RemessaError } from '../errors.js';
import { type Locale, t } from '../i18n/index.js';
import { describeStorePlace, type StorePlace } from '../store/place.js';

/** The work area of a shared inbox, inside it (same file system: atomic renames; a dot name: never taken). */
export const SHARED_WORK_DIR = '.remessa-work';

/** The file in a shared inbox's work area naming the PostgreSQL store whose daemons serve it. */
export const INBOX_STORE_FILE = 'store';

/**
 * Checks that `place` may take files from `inbox` and, for a PostgreSQL store, marks the inbox as served by it.
 * Throws INBOX_SERVED_BY_OTHER_STORE for a SQLite store on an inbox that PostgreSQL daemons serve.
 */
export function claimInboxForStore(
  inbox: string,
  place: Pick<StorePlace, 'engine' | 'where'>,
  taker: { command: string; locale: Locale },
): void {
  const file = path.join(inbox, SHARED_WORK_DIR, INBOX_STORE_FILE);
  if (place.engine === 'postgres') {
    if (existsSync(file)) return;
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, `${describeStorePlace(place)}\n`);
    return;
  }
  if (!existsSync(file)) return;
  const other = readFileSync(file, 'utf8').trim();
  throw new RemessaError(
    'INBOX_SERVED_BY_OTHER_STORE',
    t(taker.locale, 'INBOX_SERVED_BY_OTHER_STORE', {
      inbox,
      store: other,
      file,
      command: taker.command,
    }),
  );
}
