#!/usr/bin/env -S node --single-threaded
/**
 * The command line: `remessa daemon | run | validate | status | approve | reject | resolve | retry | reconcile |
 * webhooks | doctor | sandbox`.
 *
 * Parses the arguments and the configuration once, then hands over to src/runner (the pipeline) or src/sandbox.
 * Exit codes (src/exit-codes.ts): 0 all good; 1 the command ran but some row did not succeed or the file is invalid;
 * 2 the command could not run (bad configuration, bad arguments, bank unreachable); 3 (`run`, `retry`) rows left
 * unsettled; 4 (`run`, `retry`) the bank refused remessa's API key: rows left waiting.
 */
// First: the V8 flags of a run are set before the other modules load (./v8-flags.ts says why each).
import './v8-flags.js';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Command, Help, InvalidArgumentError, Option } from 'commander';
import {
  assertReceiverCredential,
  type Config,
  DEFAULT_CONFIG_FILE,
  loadConfig,
  parseConfigText,
  sandboxTlsFrom,
} from './config.js';
import { readIfSet } from './config-files.js';
import { RemessaError } from './errors.js';
import { EXIT_CANNOT_RUN } from './exit-codes.js';
import { BANK_PROFILES, type BankProfileName } from './formats/profiles.js';
import {
  CATALOGUES,
  DEFAULT_LOCALE,
  instantIn,
  isLocale,
  LOCALES,
  type Locale,
  type MessageKey,
  type Params,
  t,
} from './i18n/index.js';
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

/**
 * The language of the command line itself (its help, its refusals of what was typed), known before the arguments are
 * parsed: `--locale` as typed, else the config file's `locale` (the file `--config`, REMESSA_CONFIG or the default
 * names, read for that key alone), else pt-BR. A file that cannot be read here is read again, and its error told, by
 * the command that needs it.
 */
export function commandLineLocale(args: readonly string[], env: NodeJS.ProcessEnv, cwd: string): Locale {
  const typedValue = (names: readonly string[]): string | undefined => {
    let found: string | undefined;
    for (const [i, arg] of args.entries()) {
      if (arg === '--') break;
      for (const name of names) {
        if (arg === name) found = args[i + 1];
        else if (name.startsWith('--') && arg.startsWith(`${name}=`)) found = arg.slice(name.length + 1);
      }
    }
    return found;
  };
  const typed = typedValue(['--locale']);
  if (isLocale(typed)) return typed;
  const file = typedValue(['-c', '--config']) ?? (env.REMESSA_CONFIG || undefined) ?? DEFAULT_CONFIG_FILE;
  try {
    const config = parseConfigText(readFileSync(path.resolve(cwd, file), 'utf8')) as { locale?: unknown };
    if (isLocale(config.locale)) return config.locale;
  } catch {
    // No file, or not one that parses: the default language, and the command tells what is wrong with the file.
  }
  return DEFAULT_LOCALE;
}

const LOCALE = commandLineLocale(process.argv.slice(2), process.env, process.cwd());
const say = (key: MessageKey, params?: Params): string => t(LOCALE, key, params);
const quoted = (value: string): string => `"${value}"`;

function parseLocale(value: string): Locale {
  if (!isLocale(value)) {
    throw new InvalidArgumentError(say('CLI.expect.locale', { locales: LOCALES.join(', '), got: quoted(value) }));
  }
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
    throw new InvalidArgumentError(say('CLI.expect.port', { got: quoted(value) }));
  return port;
}

function parseInteger(value: string): number {
  if (!/^-?\d+$/.test(value)) throw new InvalidArgumentError(say('CLI.expect.integer', { got: quoted(value) }));
  return Number(value);
}

function parseWaitSeconds(value: string): number {
  if (!/^\d+(\.\d+)?$/.test(value)) {
    throw new InvalidArgumentError(say('CLI.expect.waitLock', { got: quoted(value) }));
  }
  return Number(value);
}

/** A plain calendar date (reconcile's charge creation dates). */
function parseDay(value: string): string {
  const d = new Date(`${value}T00:00:00Z`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value) || Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== value) {
    throw new InvalidArgumentError(say('CLI.expect.day', { got: quoted(value) }));
  }
  return value;
}

function parseKind(value: string): KindName {
  if (!isKindName(value)) {
    throw new InvalidArgumentError(say('CLI.expect.kind', { kinds: KIND_NAMES.join(', '), got: quoted(value) }));
  }
  return value;
}

function parseProfile(value: string): BankProfileName {
  if (!(BANK_PROFILES as readonly string[]).includes(value)) {
    throw new InvalidArgumentError(
      say('CLI.expect.profile', { profiles: BANK_PROFILES.join(', '), got: quoted(value) }),
    );
  }
  return value as BankProfileName;
}

function parseStates(value: string): string[] {
  const states = value.split(',').map((s) => s.trim());
  for (const state of states) {
    if (!(BATCH_STATES as readonly string[]).includes(state)) {
      throw new InvalidArgumentError(say('CLI.expect.state', { states: BATCH_STATES.join(', '), got: quoted(state) }));
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
    throw new InvalidArgumentError(say('CLI.expect.date', { got: quoted(value) }));
  }
  return at;
}

function parseLine(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) {
    throw new InvalidArgumentError(say('CLI.expect.line', { got: quoted(value) }));
  }
  return Number(value);
}

/** A repeatable option's values (none given: undefined, so the help shows no `(default: [])`). */
function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
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

/**
 * commander's refusals of what was typed, said in the command line's language. commander words them in English and
 * gives each a stable code; the values are taken back from its words (the option, the argument, its suggestion). A
 * refusal whose words are not recognised (another commander version) is left as commander said it: never lost.
 */
export function commanderMessage(message: string, code: string | undefined): string {
  const error = (text: string, suggestion?: string) =>
    [say('CLI.error', { message: text }), ...(suggestion ? [say('CLI.suggest', { what: suggestion })] : [])].join('\n');
  const why = (text: string, got: string) => {
    const choices = /^Allowed choices are (.+)\.$/.exec(text);
    return choices ? say('CLI.invalidChoice', { choices: choices[1], got: `'${got}'` }) : text;
  };
  let m: RegExpExecArray | null;
  switch (code) {
    case 'commander.unknownOption':
      m = /^error: unknown option ('.+?')(?:\n\(Did you mean (.+?)\?\))?$/.exec(message);
      return m ? error(say('CLI.unknownOption', { option: m[1] }), m[2]) : message;
    case 'commander.unknownCommand':
      m = /^error: unknown command ('.+?')(?:\n\(Did you mean (.+?)\?\))?$/.exec(message);
      return m ? error(say('CLI.unknownCommand', { command: m[1] }), m[2]) : message;
    case 'commander.missingArgument':
      m = /^error: missing required argument ('.+?')$/.exec(message);
      return m ? error(say('CLI.missingArgument', { argument: m[1] })) : message;
    case 'commander.optionMissingArgument':
      m = /^error: option ('.+?') argument missing$/.exec(message);
      return m ? error(say('CLI.optionMissingArgument', { option: m[1] })) : message;
    case 'commander.missingMandatoryOptionValue':
      m = /^error: required option ('.+?') not specified$/.exec(message);
      return m ? error(say('CLI.missingMandatoryOptionValue', { option: m[1] })) : message;
    case 'commander.excessArguments':
      m = /^error: too many arguments(?: for '.+?')?\. Expected (\d+) arguments? but got (\d+)\.$/.exec(message);
      return m ? error(say('CLI.excessArguments', { expected: m[1], got: m[2] })) : message;
    case 'commander.invalidArgument':
      m = /^error: option ('.+?') argument '(.*)' is invalid\. ([\s\S]*)$/.exec(message);
      if (m) return error(say('CLI.invalidOption', { option: m[1], why: why(m[3]!, m[2]!) }));
      m = /^error: command-argument value '(.*)' is invalid for argument ('.+?')\. ([\s\S]*)$/.exec(message);
      return m ? error(say('CLI.invalidArgument', { argument: m[2], why: why(m[3]!, m[1]!) })) : message;
    default:
      return message;
  }
}

/** A command whose refusals and help speak the command line's language (its subcommands too). */
class LocalizedCommand extends Command {
  override createCommand(name?: string): Command {
    return new LocalizedCommand(name);
  }

  override error(message: string, errorOptions?: { code?: string; exitCode?: number }): never {
    return super.error(commanderMessage(message, errorOptions?.code), errorOptions);
  }
}

/** The help's headings and commander's `(choices: ...)`, in the command line's language. */
const LOCALIZED_HELP = {
  styleTitle(title: string): string {
    const key = `CLI.title.${title}`;
    return key in CATALOGUES.en ? say(key as MessageKey) : title;
  },
  optionDescription(this: Help, option: Option): string {
    return Help.prototype.optionDescription
      .call(this, option)
      .replace(/\(choices: (.*)\)$/, (_whole, choices: string) => `(${say('CLI.choices', { choices })})`);
  },
};

function buildProgram(): Command {
  const program = new LocalizedCommand('remessa')
    .description(say('CLI.program'))
    .option('-c, --config <file>', say('CLI.opt.config'))
    .option('--locale <locale>', say('CLI.opt.locale'), parseLocale)
    .helpOption('-h, --help', say('CLI.opt.help'))
    .helpCommand('help [command]', say('CLI.cmd.help'))
    .configureHelp(LOCALIZED_HELP)
    .showHelpAfterError()
    .exitOverride((err) => {
      process.exit(err.exitCode === 0 ? 0 : EXIT_CANNOT_RUN);
    });

  program
    .command('daemon')
    .description(say('CLI.daemon'))
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
    .description(say('CLI.run'))
    .argument('[files...]', say('CLI.run.files'))
    .option('-k, --kind <kind>', say('CLI.run.kind'), parseKind)
    .option('--wait-lock [seconds]', say('CLI.opt.waitLock'), parseWaitSeconds)
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
    .description(say('CLI.validate'))
    .argument('<file>', say('CLI.validate.file'))
    .option('-k, --kind <kind>', say('CLI.validate.kind'), parseKind)
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
    .description(say('CLI.reconcile'))
    .option('--since <date>', say('CLI.reconcile.since'), parseDay)
    .option('--until <date>', say('CLI.reconcile.until'), parseDay)
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

  // Who decides is the OS user running the command (src/store/approvals.ts rule 3), the caller of sudo when started by
  // `sudo -u remessa` (./runner/os-users.ts commandUser); `--by` is the name they write, recorded beside it (a person's
  // name differs from their login, so it is not refused for differing).
  const decide = (
    ref: string,
    decision:
      | Omit<Extract<Decision, { approve: true }>, 'user' | 'ranAs'>
      | Omit<Extract<Decision, { approve: false }>, 'user' | 'ranAs'>,
  ) =>
    guard(async () => {
      const { config, log } = setup(program, { bankSecrets: false });
      const [{ decideCommand }, { runnerOptionsFromConfig }, { runnerStorePlace }, { commandUser }] = await Promise.all(
        [
          import('./runner/approval.js'),
          import('./runner/options.js'),
          import('./store/place.js'),
          import('./runner/os-users.js'),
        ],
      );
      const options = runnerOptionsFromConfig(config, log);
      const store = runnerStorePlace(options);
      if (!store.exists()) throw new RemessaError('APPROVAL_NO_STORE', say('CLI.noStore', { where: store.where }));
      return decideCommand({
        store,
        ref,
        decision: { ...decision, ...(await commandUser()) },
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
    .description(say('CLI.approve'))
    .argument('<batch>', say('CLI.arg.batch'))
    .requiredOption('--by <name>', say('CLI.approve.by'))
    .action((ref: string, flags: { by: string }) => decide(ref, { approve: true, by: flags.by, via: 'command' }));

  program
    .command('reject')
    .description(say('CLI.reject'))
    .argument('<batch>', say('CLI.arg.batch'))
    .requiredOption('--by <name>', say('CLI.reject.by'))
    .requiredOption('--note <text>', say('CLI.reject.note'))
    .action((ref: string, flags: { by: string; note: string }) =>
      decide(ref, { approve: false, by: flags.by, via: 'command', note: flags.note }),
    );

  program
    .command('status')
    .description(say('CLI.status'))
    .option('--json', say('CLI.status.json'))
    .option('--since <date>', say('CLI.status.since'), (v) => parseDate(v, 'start'))
    .option('--until <date>', say('CLI.status.until'), (v) => parseDate(v, 'end'))
    .option('-k, --kind <kind>', say('CLI.status.kind'), (v: string, prev: string[] = []) => [
      ...prev,
      parseStatusKind(v),
    ])
    .option(
      '-s, --state <state>',
      say('CLI.status.state', { states: BATCH_STATES.join(', ') }),
      (v: string, prev: string[] = []) => [...prev, ...parseStates(v)],
    )
    .action((flags: { json?: boolean; since?: Date; until?: Date; kind?: string[]; state?: string[] }) => {
      // A window that ends before it begins lists nothing: said, not answered with an empty report.
      if (flags.since && flags.until && flags.since > flags.until) {
        const [since, until] = [flags.since, flags.until].map((d) => instantIn(LOCALE, d.toISOString()));
        process.stderr.write(`remessa: ${say('CLI.status.backwards', { since, until })}\n`);
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
    .description(say('CLI.resolve'))
    .argument('<batch>', say('CLI.arg.batch'))
    .argument('<line>', say('CLI.resolve.line'), parseLine)
    .addOption(
      new Option('--as <outcome>', say('CLI.resolve.as')).choices(['succeeded', 'failed']).makeOptionMandatory(),
    )
    .requiredOption('--note <text>', say('CLI.resolve.note'))
    .option('--by <name>', say('CLI.resolve.by'))
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
    .description(say('CLI.retry'))
    .argument('[batch]', say('CLI.retry.batch'))
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

  const webhooks = program.command('webhooks').description(say('CLI.webhooks'));
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
    .description(say('CLI.webhooks.register'))
    .option('--events <types>', say('CLI.webhooks.events'))
    .action(webhooksAction('register'));
  webhooks.command('list').description(say('CLI.webhooks.list')).action(webhooksAction('list'));
  webhooks
    .command('update')
    .description(say('CLI.webhooks.update'))
    .option('--events <types>', say('CLI.webhooks.events'))
    .option('--id <id>', say('CLI.webhooks.id'), collect)
    .action(webhooksAction('update'));
  webhooks
    .command('delete')
    .description(say('CLI.webhooks.delete'))
    .option('--events <types>', say('CLI.webhooks.events'))
    .option('--id <id>', say('CLI.webhooks.id'), collect)
    .action(webhooksAction('delete'));

  program
    .command('doctor')
    .description(say('CLI.doctor'))
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
    .description(say('CLI.sandbox'))
    .addOption(new Option('-p, --port <port>', say('CLI.sandbox.port')).argParser(parsePort))
    .option('-H, --host <host>', say('CLI.sandbox.host'))
    .option('-d, --data <file>', say('CLI.sandbox.data'))
    .option('-k, --api-key <key>', say('CLI.sandbox.apiKey'), collect)
    .addOption(new Option('--fault-seed <n>', say('CLI.sandbox.faultSeed')).argParser(parseInteger))
    .option('--allow-loopback-webhooks', say('CLI.sandbox.loopback'))
    .addOption(
      new Option('--profile <profile>', say('CLI.sandbox.profile', { profiles: BANK_PROFILES.join(', ') })).argParser(
        parseProfile,
      ),
    )
    .option('--tls-cert <file>', say('CLI.sandbox.tlsCert'))
    .option('--tls-key <file>', say('CLI.sandbox.tlsKey'))
    .option('--tls-client-ca <file>', say('CLI.sandbox.tlsClientCa'))
    .action(
      (flags: {
        profile?: BankProfileName;
        port?: number;
        host?: string;
        data?: string;
        apiKey?: string[];
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
            apiKeys: [...config.sandbox.apiKeys, ...(flags.apiKey ?? [])],
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
