/**
 * Taking a changed configuration without a restart (the daemon, on SIGHUP or when the file changes).
 *
 * Applied live, from the next file taken on (a file already being processed keeps what it started with):
 * `mappings`, `defaults`, `policy`, `csv`, `results`, `approval`, `limits`, `locale` and `log.level` (`approval.pollMs`
 * needs a restart). They only change how a file is read, judged and answered.
 *
 * The API key (`bank.apiKey`, as REMESSA_API_KEY, `bank.apiKeyFile` or the systemd credential give it; against a real
 * bank) is applied live too: the running client sends the new key from its next request on, and when the bank gate is
 * closed because the bank refused the old one (src/runner/bank-gate.ts), one waiting row asks again at once. A key
 * rotated at night is so fixed by writing the new key to `bank.apiKeyFile` and `systemctl reload remessa`. The
 * account id is not: it names the idempotency keys.
 *
 * Need a restart (a reload logs which of them changed and keeps the running values): `folders`, the rest of `bank`
 * (URL, account id, headers, TLS, timeouts, retries), `sandbox`, `intake`, `queue`, `webhooks` (the receiver's port and
 * credential), `metrics`, `reconcile`, `log.format`, `log.progressIntervalMs` and `approval.pollMs`. They hold open
 * resources (the store, the watched inbox, the client's connections, the queue's limits, the receiver's and the
 * metrics' sockets, the log's stream, the timers) that cannot be swapped under rows in flight.
 *
 * What must hold: a configuration that does not load (syntax, unknown key, a mapping to a column that does not exist)
 * is refused whole, with its error logged, and the running one is kept; nothing is half-applied.
 */
import { type Config, EMBEDDED } from '../config.js';
import type { Logger } from '../log.js';
import type { RunnerOptions } from './options.js';

/** The top-level settings that take effect only after a restart. */
export const RESTART_SETTINGS = [
  'folders',
  'store',
  'bank',
  'sandbox',
  'intake',
  'queue',
  'webhooks',
  'reconcile',
  'metrics',
] as const;

/** Single settings of a live section that are read once at start (their timers and streams are made then). */
export const RESTART_KEYS = [
  ['approval', 'pollMs'],
  ['log', 'format'],
  ['log', 'progressIntervalMs'],
] as const;

/** The settings applied live on a reload. */
export const LIVE_SETTINGS = [
  'mappings',
  'defaults',
  'policy',
  'csv',
  'results',
  'approval',
  'limits',
  'locale',
  'log.level',
] as const;

/**
 * Settings of a restart section taken live all the same: the API key (where it is read from, and the key read), which
 * the running client swaps (`ReloadHooks.useApiKey`).
 */
export const LIVE_KEYS = [
  ['bank', 'apiKey'],
  ['bank', 'apiKeyFile'],
] as const;

const isLiveKey = (section: string, key: string) => LIVE_KEYS.some(([s, k]) => s === section && k === key);

/** Which restart-only settings differ between two configurations (`bank.url`, `folders.inbox`, ...). */
export function restartOnlyChanges(before: Config, after: Config): string[] {
  const changed: string[] = [];
  for (const section of RESTART_SETTINGS) {
    const a = before[section] as Record<string, unknown>;
    const b = after[section] as Record<string, unknown>;
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
      if (isLiveKey(section, key)) continue;
      if (JSON.stringify(a[key]) !== JSON.stringify(b[key])) changed.push(`${section}.${key}`);
    }
  }
  for (const [section, key] of RESTART_KEYS) {
    const a = before[section] as Record<string, unknown>;
    const b = after[section] as Record<string, unknown>;
    if (a[key] !== b[key]) changed.push(`${section}.${key}`);
  }
  return changed;
}

/** A live section of `config` without its single settings that need a restart (`RESTART_KEYS`). */
function liveSection(config: Config, section: keyof Config): unknown {
  const value = config[section];
  if (typeof value !== 'object' || value === null) return value;
  const live: Record<string, unknown> = { ...value };
  for (const [s, key] of RESTART_KEYS) if (s === section) delete live[key];
  return live;
}

/** Which live settings differ (for the log line). */
export function liveChanges(before: Config, after: Config): string[] {
  const changed: string[] = [];
  for (const key of ['mappings', 'defaults', 'policy', 'csv', 'results', 'approval', 'limits', 'locale'] as const) {
    if (JSON.stringify(liveSection(before, key)) !== JSON.stringify(liveSection(after, key))) changed.push(key);
  }
  if (before.log.level !== after.log.level) changed.push('log.level');
  return changed;
}

/**
 * `next` with every setting that needs a restart (`RESTART_SETTINGS`, `RESTART_KEYS`) as it runs in `running`, but
 * those taken live (`LIVE_KEYS`).
 */
function keepRunning(next: Config, running: Config, liveKeys: boolean): Config {
  const kept: Record<string, unknown> = { ...next, ...pick(running, RESTART_SETTINGS) };
  for (const [section, key] of liveKeys ? LIVE_KEYS : []) {
    kept[section] = { ...(kept[section] as object), [key]: (next[section] as Record<string, unknown>)[key] };
  }
  for (const [section, key] of RESTART_KEYS) {
    kept[section] = { ...(kept[section] as object), [key]: (running[section] as Record<string, unknown>)[key] };
  }
  return kept as Config;
}

/**
 * Puts the live settings of `next` (already mapped and checked) into the running options, in place: the pipeline
 * reads them when it takes each file.
 */
export function applyLiveSettings(running: RunnerOptions, next: RunnerOptions, log: Logger, level: string): void {
  running.mappings = next.mappings;
  running.defaults = next.defaults ?? {};
  running.policy = next.policy;
  running.csv = next.csv;
  running.results = next.results;
  if (next.controls) running.controls = next.controls;
  running.locale = next.locale;
  // REMESSA_LOG_LEVEL, when set, overrides the file at start and on every reload alike.
  log.level = process.env.REMESSA_LOG_LEVEL ?? level;
}

export interface ConfigReloader {
  /** The configuration running now. */
  current: Config;
  /** Loads the configuration file again (throws ConfigError when it cannot be used). */
  load(): Config;
  /** Maps a loaded configuration onto runner options (throws ConfigError for bad mappings or defaults). */
  toOptions(config: Config): RunnerOptions;
  /** The file to watch for changes, when there is one. */
  file?: string | undefined;
}

/** What a reload applies to the running pipeline beyond the options (the daemon's, once it is open). */
export interface ReloadHooks {
  /** A new API key against a real bank: the client sends it from now on; the bank gate probes at once. */
  useApiKey(apiKey: string): void;
}

/**
 * Loads the configuration again and applies what can be applied live; a configuration that cannot be used is refused
 * and the running one kept. Returns whether the new one was taken.
 */
export function reloadConfig(
  reloader: ConfigReloader,
  running: RunnerOptions,
  log: Logger,
  why: string,
  hooks?: ReloadHooks,
): boolean {
  let next: Config;
  let options: RunnerOptions;
  try {
    next = reloader.load();
    options = reloader.toOptions(next);
  } catch (err) {
    log.error({ err, reason: why }, 'configuration reload refused: the running configuration is kept');
    return false;
  }
  const needRestart = restartOnlyChanges(reloader.current, next);
  const changed = liveChanges(reloader.current, next);
  applyLiveSettings(running, options, log, next.log.level);
  // The key's value is never logged: only that it changed. Embedded, the sandbox's own key is used whatever it says;
  // before the pipeline is open (no hooks), the key it opens with is the one it started with: a restart applies it.
  const apiKey = next.bank.apiKey;
  const keyTaken = next.bank.url !== EMBEDDED && hooks !== undefined;
  if (apiKey !== reloader.current.bank.apiKey) {
    if (apiKey && keyTaken) {
      hooks.useApiKey(apiKey);
      changed.push('bank.apiKey');
    } else needRestart.push('bank.apiKey');
  }
  // What needs a restart stays as it runs: compare the next reload with what runs, so it is said again.
  reloader.current = keepRunning(next, reloader.current, keyTaken);
  log.info({ reason: why, applied: changed }, 'configuration reloaded');
  if (needRestart.length > 0) {
    log.warn({ settings: needRestart }, 'these settings changed but take effect only after a restart; kept as running');
  }
  return true;
}

function pick<T extends object, K extends keyof T>(value: T, keys: readonly K[]): Pick<T, K> {
  const out = {} as Pick<T, K>;
  for (const k of keys) out[k] = value[k];
  return out;
}
