/**
 * Taking a changed configuration without a restart (the daemon, on SIGHUP or when the file changes).
 *
 * Applied live, from the next file taken on (a file already being processed keeps what it started with):
 * `mappings`, `defaults`, `policy`, `csv`, `results`, `approval`, `limits`, `locale` and `log.level` (`approval.pollMs`
 * needs a restart). They only change how a file is read, judged and answered.
 *
 * Need a restart (a reload logs which of them changed and keeps the running values): `folders`, `bank` (URL,
 * credentials, headers, TLS, timeouts, retries), `sandbox`, `intake`, `queue`, `webhooks` (the receiver's port and
 * credential), `metrics`, `reconcile`, `log.format`, `log.progressIntervalMs` and `approval.pollMs`. They hold open
 * resources (the store, the watched inbox, the client's connections, the queue's limits, the receiver's and the
 * metrics' sockets, the log's stream, the timers) that cannot be swapped under rows in flight.
 *
 * What must hold: a configuration that does not load (syntax, unknown key, a mapping to a column that does not exist)
 * is refused whole, with its error logged, and the running one is kept; nothing is half-applied.
 */
import type { Config } from '../config.js';
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

/** Which restart-only settings differ between two configurations (`bank.url`, `folders.inbox`, ...). */
export function restartOnlyChanges(before: Config, after: Config): string[] {
  const changed: string[] = [];
  for (const section of RESTART_SETTINGS) {
    const a = before[section] as Record<string, unknown>;
    const b = after[section] as Record<string, unknown>;
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
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

/** `next` with every setting that needs a restart (`RESTART_SETTINGS`, `RESTART_KEYS`) as it runs in `running`. */
function keepRunning(next: Config, running: Config): Config {
  const kept: Record<string, unknown> = { ...next, ...pick(running, RESTART_SETTINGS) };
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

/**
 * Loads the configuration again and applies what can be applied live; a configuration that cannot be used is refused
 * and the running one kept. Returns whether the new one was taken.
 */
export function reloadConfig(reloader: ConfigReloader, running: RunnerOptions, log: Logger, why: string): boolean {
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
  // What needs a restart stays as it runs: compare the next reload with what runs, so it is said again.
  reloader.current = keepRunning(next, reloader.current);
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
