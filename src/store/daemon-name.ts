/**
 * The settings of a daemon among several sharing one PostgreSQL store (./leases.ts): its name and its lease. Apart
 * from ./leases.ts so that the configuration (src/config.ts) checks them without loading the store.
 */
import os from 'node:os';

/** Letters, digits, `.`, `_`, `-`; 1 to 63 characters, starting with a letter or digit (a host name fits). */
export const DAEMON_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

export const DEFAULT_LEASE_MS = 30_000;
export const MIN_LEASE_MS = 3_000;
export const MAX_LEASE_MS = 600_000;

/** The default `store.daemonName`: the host's name, cut to what DAEMON_NAME allows. */
export function defaultDaemonName(host = os.hostname()): string {
  const cleaned = host.replace(/[^A-Za-z0-9._-]/g, '-').replace(/^[^A-Za-z0-9]+/, '');
  return (cleaned || 'remessa').slice(0, 63);
}
