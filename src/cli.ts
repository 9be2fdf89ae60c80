#!/usr/bin/env node
/**
 * The command line: `remessa daemon | run | validate | status | sandbox`.
 *
 * Parses the arguments and the configuration once, then hands over to src/runner (the pipeline) or src/sandbox.
 * Exit codes: 0 all good; 1 the command ran but some row did not succeed or the file is invalid; 2 the command
 * could not run (bad configuration, bad arguments, bank unreachable).
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { type Config, loadConfig } from './config.js';
import { RemessaError } from './errors.js';
import { EXIT_CANNOT_RUN } from './exit-codes.js';
import { isLocale, LOCALES, type Locale } from './i18n/index.js';
import { createLogger, type Logger, scrubSecrets } from './log.js';
import { isKindName, KIND_NAMES, type KindName } from './types.js';

/**
 * The pipeline is loaded only by the commands that use it, so `remessa sandbox` starts without it (faster, and
 * independent of the pipeline's modules).
 */
const pipeline = async () => {
  const [commands, daemon] = await Promise.all([import('./runner/commands.js'), import('./runner/daemon.js')]);
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

function parseKind(value: string): KindName {
  if (!isKindName(value)) {
    throw new InvalidArgumentError(`Expected a batch kind (${KIND_NAMES.join(', ')}), got "${value}"`);
  }
  return value;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function setup(program: Command): { config: Config; log: Logger } {
  const options = program.opts<GlobalOptions>();
  const config = withLocaleFlag(program, loadConfig(options.config ? { file: options.config } : {}));
  const log = createLogger({
    level: process.env.REMESSA_LOG_LEVEL ?? config.log.level,
    format: config.log.format,
    secrets: [config.bank.apiKey],
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
        const { runDaemon, runnerOptionsFromConfig } = await pipeline();
        const file = program.opts<GlobalOptions>().config;
        return runDaemon(runnerOptionsFromConfig(config, log), {
          reload: {
            current: config,
            file: config.sourceFile,
            load: () => withLocaleFlag(program, loadConfig(file ? { file } : {})),
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
        const { config, log } = setup(program);
        // Not the whole pipeline: validate needs neither the bank client nor the store (starts ~0.3 s sooner).
        const [{ validateFile }, { runnerOptionsFromConfig }] = await Promise.all([
          import('./runner/validate.js'),
          import('./runner/options.js'),
        ]);
        return validateFile(runnerOptionsFromConfig(config, log), file, flags.kind);
      }),
    );

  program
    .command('status')
    .description('batches, rows by status, and what is uncertain, from the store')
    .action(() =>
      guard(async () => {
        const { config, log } = setup(program);
        const { showStatus, runnerOptionsFromConfig } = await pipeline();
        return showStatus(runnerOptionsFromConfig(config, log));
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
    .action(
      (flags: {
        port?: number;
        host?: string;
        data?: string;
        apiKey: string[];
        faultSeed?: number;
        allowLoopbackWebhooks?: boolean;
      }) =>
        guard(async () => {
          const { config, log } = setup(program);
          // Imported here, not at the top: every other command starts faster and smaller without it.
          const { startSandbox } = await import('./sandbox/server.js');
          const sandbox = await startSandbox({
            host: flags.host ?? config.sandbox.host,
            port: flags.port ?? config.sandbox.port,
            ...(flags.data ? { dataFile: flags.data } : {}),
            apiKeys: [...config.sandbox.apiKeys, ...flags.apiKey],
            pixPaymentPath: config.bank.pixPaymentPath,
            idempotencyModel: config.sandbox.idempotencyModel,
            pixEndToEndIdTtlSeconds: config.sandbox.pixEndToEndIdTtlSeconds,
            faultSeed: flags.faultSeed ?? config.sandbox.faultSeed,
            webhookAllowLoopbackUrls: flags.allowLoopbackWebhooks ?? config.sandbox.webhookAllowLoopbackUrls,
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
