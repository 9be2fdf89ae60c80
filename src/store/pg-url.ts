/**
 * What a `store.url` names (libpq's URL form, with the options the store supports), read by one function for the
 * config's check at load and for the PostgreSQL driver, so that a URL the driver reads is never refused at load.
 * Free of the drivers (no `pg`, no SQLite): the config imports it.
 */
import { RemessaError } from '../errors.js';

/** The URL as a person may read it: user, host, port and database (no password, no option). */
export function describePgUrl(text: string): string {
  try {
    const t = parsePgUrl(text);
    return `postgres://${t.user === undefined ? '' : `${t.user}@`}${t.host}:${t.port}/${t.database ?? ''}`;
  } catch {
    return 'postgres://(unreadable URL)';
  }
}

/** What a `store.url` names: libpq's URL form, with the options the store supports. */
export interface PgTarget {
  host: string;
  port: number;
  user: string | undefined;
  database: string | undefined;
  ssl: boolean | { rejectUnauthorized: false };
}

/**
 * Reads `postgres://user@host:port/database?sslmode=...&host=/socket/dir`. The password is refused in the URL (it
 * would sit in the config file, which is not a secret). `sslmode`: disable (default), require (encrypted, the
 * server's certificate not checked, as libpq's require), verify-full (checked against Node's CAs). `host=` in the
 * query names a unix socket folder when the URL's host is empty (`postgres://remessa@/remessa?host=/var/run/postgresql`),
 * `port=` its port (the socket file's name, .s.PGSQL.<port>).
 * Any other query option is refused, never ignored. Messages never quote the URL (it might hold a password).
 */
export function parsePgUrl(text: string): PgTarget {
  // `postgres://user@/db` (a user, no host: libpq's way to name a socket with ?host=) is no WHATWG URL: a stand-in host.
  const NO_HOST = 'no-host.invalid';
  const userNoHost = /^(postgres(?:ql)?:\/\/[^/@?#]+@)(?=[/?]|$)/;
  let url: URL;
  try {
    url = new URL(text.replace(userNoHost, `$1${NO_HOST}`));
  } catch {
    throw new RemessaError('STORE_URL_INVALID', 'store.url: Expected a URL postgres://user@host:port/database');
  }
  const hostname = url.hostname === NO_HOST ? '' : url.hostname;
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new RemessaError(
      'STORE_URL_INVALID',
      `store.url: Expected postgres:// or postgresql://, got ${url.protocol}//`,
    );
  }
  const passwordInUrl = () =>
    new RemessaError(
      'STORE_URL_INVALID',
      'store.url: the password does not belong in the URL: give it by store.passwordFile or the systemd credential remessa-store-password',
    );
  // libpq takes it after the user (user:password@) and as an option (?password=): neither, and neither is quoted.
  if (url.password || url.searchParams.has('password')) throw passwordInUrl();
  let ssl: PgTarget['ssl'] = false;
  let socketDir: string | undefined;
  let queryPort: number | undefined;
  for (const [key, value] of url.searchParams) {
    if (key === 'sslmode' && (value === 'disable' || value === 'require' || value === 'verify-full')) {
      ssl = value === 'disable' ? false : value === 'require' ? { rejectUnauthorized: false } : true;
    } else if (key === 'host' && value.startsWith('/')) {
      socketDir = value;
    } else if (key === 'port' && /^\d{1,5}$/.test(value) && Number(value) <= 65_535) {
      queryPort = Number(value);
    } else {
      throw new RemessaError(
        'STORE_URL_INVALID',
        `store.url: Expected only sslmode=disable|require|verify-full, host=/socket/folder or port=N after "?", got "${key}"`,
      );
    }
  }
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  return {
    host: hostname ? decodeURIComponent(hostname).replace(/^\[(.*)\]$/, '$1') : (socketDir ?? 'localhost'),
    port: queryPort ?? (url.port ? Number(url.port) : 5432),
    user: url.username ? decodeURIComponent(url.username) : undefined,
    database: database === '' ? undefined : database,
    ssl,
  };
}
