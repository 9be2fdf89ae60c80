#!/usr/bin/env node
/**
 * The command line: `remessa daemon | run | validate | status | approve | reject | resolve | retry | reconcile |
 * webhooks | doctor | sandbox`.
 *
 * Parses the arguments and the configuration once, then hands over to src/runner (the pipeline) or src/sandbox.
 * Exit codes: 0 all good; 1 the command ran but some row did not succeed or the file is invalid; 2 the command
 * could not run (bad configuration, bad arguments, bank unreachable).
 */
// First: the V8 flags of a run are set before the other modules load (./v8-flags.ts says why each).
import './v8-flags.js';
import { Command, InvalidArgumentError, Option } from 'commander';
import { assertReceiverCredential, type Config, loadConfig, sandboxTlsFrom } from './config.js';
import { readIfSet } from './config-files.js';
import { RemessaError } from './errors.js';
import { EXIT_CANNOT_RUN } from './exit-codes.js';
import { BANK_PROFILES, type BankProfileName } from './formats/profiles.js';
import { instantIn, isLocale, LOCALES, type Locale } from './i18n/index.js';
import { createLogger, type Logger, scrubSecrets } from './log.js';
import { BATCH_STATES, type BatchState } from './runner/batch-states.js';
import { parseStatusDate } from './runner/status-dates.js';
import type { Decision } from './store/approvals.js';
import { isKindName, KIND_NAMES, type KindName } from './types.js';

/**
 * The pipeline is loaded only by the commands that use it, so `remessa sandbox` starts without it (faster, and
 * independent of the pipeline's modules); the daemon's own modules (its watcher, the ops server and the webhook
 * receiver on fastify, the metrics on prom-client) only by `daemon`: a nightly `run` neither loads nor holds them
 * (docs/performance.md (d): ~100 ms of CPU and ~7 MB at every start).
 */
const pipeline = () => import('./runner/commands.js');
const daemonPipeline = async () => {
  const [commands, daemon] = await Promise.all([pipeline(), import('./runner/daemon.js')]);
  return { ...commands, runDaemon: daemon.runDaemon };
};

interface GlobalOptions {
  config?: string;
  locale?: Locale;
}

function parseLocale(value: string): Locale {
  if (!isLocale(value)) throw new InvalidArgumentError(`Expected a locale (${LOCALES.join(', ')}), got "${value}"`);
  return value;
}

/** The configuration with `--locale` over its `locale` (on every command, and on every reload of the daemon). */
function withLocaleFlag(program: Command, config: Config): Config {
  const locale = program.opts<GlobalOptions>().locale;
  return locale === undefined || locale === config.locale ? config : Object.freeze({ ...config, locale });
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535)
    throw new InvalidArgumentError(`Expected a port from 0 to 65535, got "${value}"`);
  return port;
}

function parseInteger(value: string): number {
  if (!/^-?\d+$/.test(value)) throw new InvalidArgumentError(`Expected a whole number, got "${value}"`);
  return Number(value);
}

function parseWaitSeconds(value: string): number {
  if (!/^\d+(\.\d+)?$/.test(value)) {
    throw new InvalidArgumentError(`Expected --wait-lock=SECONDS with a number of seconds, got "${value}"`);
  }
  return Number(value);
}

/** A plain calendar date (reconcile's charge creation dates). */
function parseDay(value: string): string {
  const d = new Date(`${value}T00:00:00Z`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value) || Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== value) {
    throw new InvalidArgumentError(`Expected a date yyyy-mm-dd, got "${value}"`);
  }
  return value;
}

function parseKind(value: string): KindName {
  if (!isKindName(value)) {
    throw new InvalidArgumentError(`Expected a batch kind (${KIND_NAMES.join(', ')}), got "${value}"`);
  }
  return value;
}

function parseProfile(value: string): BankProfileName {
  if (!(BANK_PROFILES as readonly string[]).includes(value)) {
    throw new InvalidArgumentError(`Expected a provider profile (${BANK_PROFILES.join(', ')}), got "${value}"`);
  }
  return value as BankProfileName;
}

function parseStates(value: string): string[] {
  const states = value.split(',').map((s) => s.trim());
  for (const state of states) {
    if (!(BATCH_STATES as readonly string[]).includes(state)) {
      throw new InvalidArgumentError(`Expected a batch state (${BATCH_STATES.join(', ')}), got "${state}"`);
    }
  }
  return states;
}

/** A kind, or `_unknown` (the answers to files of no known kind dropped at the inbox root). */
function parseStatusKind(value: string): string {
  if (value === '_unknown') return value;
  return parseKind(value);
}

function parseDate(value: string, edge: 'start' | 'end'): Date {
  const at = parseStatusDate(value, edge);
  if (!at) {
    throw new InvalidArgumentError(
      `Expected a date YYYY-MM-DD or DD/MM/YYYY, or an ISO 8601 time with its offset (2026-11-23T14:00:00Z), got "${value}"`,
    );
  }
  return at;
}

function parseLine(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) {
    throw new InvalidArgumentError(`Expected a line number (1 or more), got "${value}"`);
  }
  return Number(value);
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** `bankSecrets: false`: a command that never talks to the bank (see `LoadConfigOptions.bankSecrets`). */
function setup(program: Command, { bankSecrets = true } = {}): { config: Config; log: Logger } {
  const options = program.opts<GlobalOptions>();
  const config = withLocaleFlag(
    program,
    loadConfig({ ...(options.config ? { file: options.config } : {}), bankSecrets }),
  );
  const log = createLogger({
    level: process.env.REMESSA_LOG_LEVEL ?? config.log.level,
    format: config.log.format,
    secrets: [config.bank.apiKey, config.webhookAuthorization],
  });
  return { config, log };
}

/** Runs a command body, turning a RemessaError into one clear line on stderr and exit code 2. */
async function guard(body: () => Promise<number>): Promise<never> {
  let code: number;
  try {
    code = await body();
  } catch (error) {
    // Scrubbed like a log line: an error's text may quote a URL or header that carried a secret.
    const text =
      error instanceof RemessaError
        ? error.message
        : `unexpected failure: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`;
    process.stderr.write(`remessa: ${scrubSecrets(text)}\n`);
    code = EXIT_CANNOT_RUN;
  }
  process.exit(code);
}

function buildProgram(): Command {
  const program = new Command('remessa')
    .description('Batch daemon for a Brazilian banking-as-a-service API')
    .option('-c, --config <file>', 'config file (default: REMESSA_CONFIG or config/remessa.jsonc)')
    .option(
      '--locale <locale>',
      "language of the messages: pt-BR (default) or en (over the config's locale)",
      parseLocale,
    )
    .showHelpAfterError()
    .exitOverride((err) => {
      process.exit(err.exitCode === 0 ? 0 : EXIT_CANNOT_RUN);
    });

  program
    .command('daemon')
    .description('watch the inbox and process batches until SIGTERM/SIGINT')
    .action(() =>
      guard(async () => {
        const { config, log } = setup(program);
        assertReceiverCredential(config);
        const { runDaemon, runnerOptionsFromConfig } = await daemonPipeline();
        const file = program.opts<GlobalOptions>().config;
        return runDaemon(runnerOptionsFromConfig(config, log), {
          reload: {
            current: config,
            file: config.sourceFile,
            load: () => {
              const next = withLocaleFlag(program, loadConfig(file ? { file } : {}));
              assertReceiverCredential(next);
              return next;
            },
            toOptions: (next) => runnerOptionsFromConfig(next, log),
          },
        });
      }),
    );

  program
    .command('run')
    .description(
      'process the given files, or everything waiting in the inbox, then exit (non-zero if any row did not succeed)',
    )
    .argument('[files...]', 'CSV files to process')
    .option('-k, --kind <kind>', 'batch kind of the given files (default: from their folder or name prefix)', parseKind)
    .option(
      '--wait-lock [seconds]',
      'when another process (a daemon) drives the data folder, wait for it (up to SECONDS; without, until it is free) instead of exiting 2',
      parseWaitSeconds,
    )
    .action((files: string[], flags: { kind?: KindName; waitLock?: number | true }) =>
      guard(async () => {
        const { config, log } = setup(program);
        const { runOnce, runnerOptionsFromConfig } = await pipeline();
        const waitLockMs =
          flags.waitLock === undefined ? 0 : flags.waitLock === true ? Infinity : flags.waitLock * 1000;
        return runOnce(runnerOptionsFromConfig(config, log), files, flags.kind, { waitLockMs });
      }),
    );

  program
    .command('validate')
    .description('dry run: print every error and the totals; no request is sent')
    .argument('<file>', 'CSV file to check')
    .option('-k, --kind <kind>', 'batch kind of the file (default: from its folder or name prefix)', parseKind)
    .action((file: string, flags: { kind?: KindName }) =>
      guard(async () => {
        const { config, log } = setup(program, { bankSecrets: false });
        // Not the whole pipeline: validate needs neither the bank client nor the store (starts ~0.3 s sooner).
        const [{ validateFile }, { runnerOptionsFromConfig }] = await Promise.all([
          import('./runner/validate.js'),
          import('./runner/options.js'),
        ]);
        return validateFile(runnerOptionsFromConfig(config, log), file, flags.kind);
      }),
    );

  program
    .command('reconcile')
    .description(
      'learn what the bank did with the charges, QR codes and payments remessa created (events and look-ups); write the retorno',
    )
    .option(
      '--since <date>',
      'first creation date (yyyy-mm-dd) of the charges to list (default: the oldest open one)',
      parseDay,
    )
    .option('--until <date>', 'last creation date (yyyy-mm-dd) of the charges to list (default: today)', parseDay)
    .option(
      '--wait-lock [seconds]',
      'when another process (a daemon) drives the data folder, wait for it (up to SECONDS; without, until it is free) instead of exiting 2',
      parseWaitSeconds,
    )
    .action((flags: { since?: string; until?: string; waitLock?: number | true }) =>
      guard(async () => {
        const { config, log } = setup(program);
        const { runReconcile, runnerOptionsFromConfig } = await pipeline();
        const waitLockMs =
          flags.waitLock === undefined ? 0 : flags.waitLock === true ? Infinity : flags.waitLock * 1000;
        return runReconcile(runnerOptionsFromConfig(config, log), {
          since: flags.since,
          until: flags.until,
          waitLockMs,
        });
      }),
    );

  const decide = (ref: string, decision: Decision) =>
    guard(async () => {
      const { config, log } = setup(program, { bankSecrets: false });
      const [{ decideCommand }, { runnerOptionsFromConfig }, { runnerStorePlace }] = await Promise.all([
        import('./runner/approval.js'),
        import('./runner/options.js'),
        import('./store/place.js'),
      ]);
      const options = runnerOptionsFromConfig(config, log);
      const store = runnerStorePlace(options);
      if (!store.exists()) throw new RemessaError('APPROVAL_NO_STORE', `No store at ${store.where}: nothing waits`);
      return decideCommand({
        store,
        ref,
        decision,
        rules: {
          forbidSameAsOwner: options.controls?.forbidSameAsOwner ?? true,
          makers: options.controls?.makers ?? [],
        },
        out: process.stdout,
        locale: options.locale,
      });
    });

  program
    .command('approve')
    .description('let a file that waits for approval be paid (money controls: README "Money controls")')
    .argument('<batch>', 'batch id, a unique prefix of it, or the file name')
    .requiredOption('--by <name>', 'who approves (recorded with the time)')
    .action((ref: string, flags: { by: string }) => decide(ref, { approve: true, by: flags.by, via: 'command' }));

  program
    .command('reject')
    .description('answer a file that waits for approval with every row rejected; nothing is sent')
    .argument('<batch>', 'batch id, a unique prefix of it, or the file name')
    .requiredOption('--by <name>', 'who rejects (recorded with the time)')
    .requiredOption('--note <text>', 'why: written in every row of the answer')
    .action((ref: string, flags: { by: string; note: string }) =>
      decide(ref, { approve: false, by: flags.by, via: 'command', note: flags.note }),
    );

  program
    .command('status')
    .description('batches (parked, running with rate and ETA, rejected files too), rows by status, what is uncertain')
    .option('--json', 'print one JSON document (its shape: docs/operations.md, "remessa status --json")')
    .option(
      '--since <date>',
      "only batches taken at or after DATE (YYYY-MM-DD or DD/MM/YYYY, Brasília's whole day, or ISO 8601 time)",
      (v) => parseDate(v, 'start'),
    )
    .option('--until <date>', "only batches taken at or before DATE (a day includes Brasília's whole day)", (v) =>
      parseDate(v, 'end'),
    )
    .option('-k, --kind <kind>', 'only this kind (repeatable)', (v: string, prev: string[] = []) => [
      ...prev,
      parseStatusKind(v),
    ])
    .option(
      '-s, --state <state>',
      `only batches in this state: ${BATCH_STATES.join(', ')} (repeatable, or comma-separated)`,
      (v: string, prev: string[] = []) => [...prev, ...parseStates(v)],
    )
    .action((flags: { json?: boolean; since?: Date; until?: Date; kind?: string[]; state?: string[] }) => {
      // A window that ends before it begins lists nothing: said, not answered with an empty report.
      if (flags.since && flags.until && flags.since > flags.until) {
        const [since, until] = [flags.since, flags.until].map((d) => instantIn('en', d.toISOString()));
        process.stderr.write(
          `remessa: --since (${since}) is after --until (${until}): no file is taken between them\n`,
        );
        process.exit(EXIT_CANNOT_RUN);
      }
      return guard(async () => {
        const { config, log } = setup(program, { bankSecrets: false });
        const [{ showStatus }, { runnerOptionsFromConfig }] = await Promise.all([
          import('./runner/status.js'),
          import('./runner/options.js'),
        ]);
        return showStatus(runnerOptionsFromConfig(config, log), {
          json: flags.json ?? false,
          explicitConfig: program.opts<GlobalOptions>().config ?? (process.env.REMESSA_CONFIG || undefined),
          filters: {
            since: flags.since,
            until: flags.until,
            kinds: flags.kind ?? [],
            states: (flags.state ?? []) as BatchState[],
          },
        });
      });
    });

  program
    .command('resolve')
    .description('settle an uncertain row a person checked with the bank: who, when and why are kept in the store')
    .argument('<batch>', 'batch id, a unique prefix of it, or the file name')
    .argument('<line>', "the row's line in the file (as `status` and the result file show it)", parseLine)
    .addOption(
      new Option('--as <outcome>', 'what the bank says happened')
        .choices(['succeeded', 'failed'])
        .makeOptionMandatory(),
    )
    .requiredOption('--note <text>', 'what was checked, and where (kept with the row)')
    .option('--by <name>', 'who checked (default: the OS user)')
    .action((batch: string, line: number, flags: { as: 'succeeded' | 'failed'; note: string; by?: string }) =>
      guard(async () => {
        const { config, log } = setup(program);
        const [{ resolveRow }, { runnerOptionsFromConfig }] = await Promise.all([
          import('./runner/settle.js'),
          import('./runner/options.js'),
        ]);
        return resolveRow(runnerOptionsFromConfig(config, log), {
          batch,
          line,
          as: flags.as,
          note: flags.note,
          by: flags.by,
        });
      }),
    );

  program
    .command('retry')
    .description(
      'ask the bank again now about the uncertain, waiting and parked rows of one batch (or all); answer again',
    )
    .argument('[batch]', 'batch id, a unique prefix of it, or the file name (default: every batch with such rows)')
    .action((batch: string | undefined) =>
      guard(async () => {
        const { config, log } = setup(program);
        const [{ retryBatches }, { runnerOptionsFromConfig }] = await Promise.all([
          import('./runner/settle.js'),
          import('./runner/options.js'),
        ]);
        return retryBatches(runnerOptionsFromConfig(config, log), batch);
      }),
    );

  const webhooks = program
    .command('webhooks')
    .description("the bank's webhook registrations for remessa's receiver (webhooks.receiver.publicUrl)");
  const webhooksAction =
    (action: 'register' | 'list' | 'update' | 'delete') => (flags: { events?: string; id?: string[] }) =>
      guard(async () => {
        const { config, log } = setup(program);
        const { runWebhooksCommand, parseEventTypes } = await import('./webhooks/commands.js');
        return runWebhooksCommand(action, config, log, {
          events: flags.events === undefined ? undefined : parseEventTypes(flags.events),
          ids: flags.id,
        });
      });
  webhooks
    .command('register')
    .description('register the public url for the event types (default: those that matter to remessa)')
    .option('--events <types>', 'comma-separated event types, e.g. CHARGE_PAID,PIX_RECEIVED')
    .action(webhooksAction('register'));
  webhooks.command('list').description('show what is registered with the bank').action(webhooksAction('list'));
  webhooks
    .command('update')
    .description('send the current url, scheme and authorization again (e.g. after rotating the credential)')
    .option('--events <types>', 'comma-separated event types')
    .option('--id <id>', 'a registration id (repeatable); default: those of the public url', collect, [])
    .action(webhooksAction('update'));
  webhooks
    .command('delete')
    .description('remove registrations')
    .option('--events <types>', 'comma-separated event types')
    .option('--id <id>', 'a registration id (repeatable); default: those of the public url', collect, [])
    .action(webhooksAction('delete'));

  program
    .command('doctor')
    .description(
      'check the provider profile against the bank with read-only GET requests; report what answered (docs/providers.md)',
    )
    .action(() =>
      guard(async () => {
        const { config, log } = setup(program);
        const [{ runDoctor }, { runnerOptionsFromConfig }] = await Promise.all([
          import('./runner/doctor.js'),
          import('./runner/options.js'),
        ]);
        return runDoctor(runnerOptionsFromConfig(config, log));
      }),
    );

  program
    .command('sandbox')
    .description('start the bank sandbox on its own')
    .addOption(new Option('-p, --port <port>', 'TCP port; 0 picks a free one').argParser(parsePort))
    .option('-H, --host <host>', 'interface to listen on (default 127.0.0.1)')
    .option('-d, --data <file>', 'SQLite file for its state (default: in memory)')
    .option('-k, --api-key <key>', 'accept this API key too (repeatable)', collect, [])
    .addOption(new Option('--fault-seed <n>', 'seed of the fault injector').argParser(parseInteger))
    .option('--allow-loopback-webhooks', 'let webhook urls name localhost (for local receivers)')
    .addOption(
      new Option(
        '--profile <profile>',
        `dialect to serve: ${BANK_PROFILES.join(' or ')} (default: sandbox.profile, else bank.profile)`,
      ).argParser(parseProfile),
    )
    .option('--tls-cert <file>', 'serve HTTPS with this certificate (PEM; default: sandbox.tls.certFile)')
    .option('--tls-key <file>', 'private key of --tls-cert (PEM, unencrypted; default: sandbox.tls.keyFile)')
    .option(
      '--tls-client-ca <file>',
      'require client certificates issued by this CA (mutual TLS; default: sandbox.tls.clientCaFile)',
    )
    .action(
      (flags: {
        profile?: BankProfileName;
        port?: number;
        host?: string;
        data?: string;
        apiKey: string[];
        faultSeed?: number;
        allowLoopbackWebhooks?: boolean;
        tlsCert?: string;
        tlsKey?: string;
        tlsClientCa?: string;
      }) =>
        guard(async () => {
          const { config, log } = setup(program);
          const tls =
            flags.tlsCert || flags.tlsKey || flags.tlsClientCa
              ? sandboxTlsFrom(
                  readIfSet('--tls-cert', flags.tlsCert, process.cwd()),
                  readIfSet('--tls-key', flags.tlsKey, process.cwd()),
                  readIfSet('--tls-client-ca', flags.tlsClientCa, process.cwd()),
                  { cert: '--tls-cert', key: '--tls-key' },
                )
              : config.sandboxTls;
          // Imported here, not at the top: every other command starts faster and smaller without it.
          const { startSandbox } = await import('./sandbox/server.js');
          const profile = flags.profile ?? config.sandbox.profile ?? config.bank.profile;
          const sandbox = await startSandbox({
            host: flags.host ?? config.sandbox.host,
            port: flags.port ?? config.sandbox.port,
            ...(flags.data ? { dataFile: flags.data } : {}),
            apiKeys: [...config.sandbox.apiKeys, ...flags.apiKey],
            profile,
            // The interface does not show the payment path: one the user moved is served there (delbank's is fixed).
            ...(profile === 'interface' && config.bank.paths.pixPayment
              ? { pixPaymentPath: config.bank.paths.pixPayment }
              : {}),
            idempotencyModel: config.sandbox.idempotencyModel,
            pixEndToEndIdTtlSeconds: config.sandbox.pixEndToEndIdTtlSeconds,
            faultSeed: flags.faultSeed ?? config.sandbox.faultSeed,
            webhookAllowLoopbackUrls: flags.allowLoopbackWebhooks ?? config.sandbox.webhookAllowLoopbackUrls,
            webhookBackoffBaseMs: config.sandbox.webhookBackoffBaseMs,
            webhookBackoffMaxMs: config.sandbox.webhookBackoffMaxMs,
            webhookMaxAttempts: config.sandbox.webhookMaxAttempts,
            webhookPollIntervalMs: config.sandbox.webhookPollIntervalMs,
            ...(tls ? { tls } : {}),
            // Crash tests (test/sandbox-crash.test.ts): die after a matching request committed, before answering.
            ...(process.env.REMESSA_SANDBOX_CRASH_AFTER_COMMIT
              ? { crashAfterCommit: process.env.REMESSA_SANDBOX_CRASH_AFTER_COMMIT }
              : {}),
            logger: log.child({ component: 'sandbox' }),
          });
          process.stdout.write(`sandbox listening on ${sandbox.url}\n`);
          const signal = await new Promise<string>((resolve) => {
            process.once('SIGINT', () => resolve('SIGINT'));
            process.once('SIGTERM', () => resolve('SIGTERM'));
          });
          log.info({ signal }, 'sandbox stopping');
          await sandbox.close();
          return 0;
        }),
    );

  return program;
}

await buildProgram().parseAsync(process.argv);
