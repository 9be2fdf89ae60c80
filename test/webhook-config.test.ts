/**
 * The receiver's settings (`webhooks.*`) and its credential: where the authorization value comes from (never the
 * config file or the command line), when the receiver is on, what is refused; and the `remessa webhooks` command's
 * refusals that need no bank (embedded sandbox, unknown event types).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { assertReceiverCredential, buildConfig } from '../src/config.js';
import { ConfigError } from '../src/errors.js';
import { parseEventTypes } from '../src/webhooks/commands.js';
import { runCli } from './e2e-harness.js';

const REAL = { bank: { url: 'https://bank.example.com', apiKey: 'key-12345678', accountId: '1234567' } };

function tempDir(): string {
  return mkdtempSync(path.join(tmpdir(), 'remessa-webhook-config-'));
}

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('webhooks settings', () => {
  it('the receiver is on with the embedded sandbox, off with a real bank unless a port is set or enabled', () => {
    expect(buildConfig({}, { env: {} }).webhookReceiverEnabled).toBe(true);
    expect(buildConfig({ webhooks: { receiver: { enabled: false } } }, { env: {} }).webhookReceiverEnabled).toBe(false);
    expect(buildConfig(REAL, { env: {} }).webhookReceiverEnabled).toBe(false);
    const on = buildConfig(
      { ...REAL, webhooks: { receiver: { port: 8443 } } },
      { env: { REMESSA_WEBHOOK_AUTHORIZATION: 'tok-1234567890' } },
    );
    expect(on.webhookReceiverEnabled).toBe(true);
    expect(on.webhooks.receiver).toMatchObject({ host: '127.0.0.1', path: '/webhooks/bank', bodyLimitBytes: 262144 });
  });

  it('a receiver on with a real bank needs the authorization credential: in the daemon, not in run or reconcile', () => {
    // The configuration is the daemon's and the nightly run's alike: reading it needs no receiver credential (the
    // nightly unit loads none), starting the receiver does.
    const config = buildConfig({ ...REAL, webhooks: { receiver: { port: 8443 } } }, { env: {} });
    expect(config.webhookReceiverEnabled).toBe(true);
    const error = errorOf(() => assertReceiverCredential(config));
    expect(error.code).toBe('CONFIG_MISSING_SECRET');
    expect(error.message).toContain('REMESSA_WEBHOOK_AUTHORIZATION');
    const withIt = buildConfig(
      { ...REAL, webhooks: { receiver: { port: 8443 } } },
      { env: { REMESSA_WEBHOOK_AUTHORIZATION: 'tok-1234567890' } },
    );
    expect(() => assertReceiverCredential(withIt)).not.toThrow();
    expect(() => assertReceiverCredential(buildConfig({}, { env: {} }))).not.toThrow(); // embedded: drawn at start
  });

  it('takes the value from the environment, then the file setting, then the systemd credential', () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'remessa-webhook-authorization'), 'from-credential-123\n');
    writeFileSync(path.join(dir, 'file'), 'from-file-123456\n');
    const withFile = { webhooks: { receiver: { authorizationFile: path.join(dir, 'file') } } };
    expect(buildConfig({}, { env: { CREDENTIALS_DIRECTORY: dir } }).webhookAuthorization).toBe('from-credential-123');
    expect(buildConfig(withFile, { env: { CREDENTIALS_DIRECTORY: dir } }).webhookAuthorization).toBe(
      'from-file-123456',
    );
    expect(
      buildConfig(withFile, { env: { CREDENTIALS_DIRECTORY: dir, REMESSA_WEBHOOK_AUTHORIZATION: 'from-env-123' } })
        .webhookAuthorization,
    ).toBe('from-env-123');
    expect(buildConfig({}, { env: {} }).webhookAuthorization).toBeUndefined();
  });

  it('never takes the value from the config file, and refuses unknown settings by name', () => {
    const error = errorOf(() => buildConfig({ webhooks: { receiver: { authorization: 'in-the-file' } } }, { env: {} }));
    expect(error.code).toBe('CONFIG_UNKNOWN_KEY');
    expect(error.message).toContain('webhooks.receiver.authorization');
    expect(errorOf(() => buildConfig({ webhooks: { events: ['CHARGE_PAYED'] } }, { env: {} })).message).toContain(
      'webhooks.events',
    );
  });

  it('refuses a value the scheme cannot carry, without quoting it', () => {
    const error = errorOf(() =>
      buildConfig(
        { webhooks: { receiver: { authorizationScheme: 'BASIC' } } },
        { env: { REMESSA_WEBHOOK_AUTHORIZATION: 'not base64 and no colon!' } },
      ),
    );
    expect(error.message).toContain('BASIC');
    expect(error.message).not.toContain('not base64 and no colon!');
    const injection = errorOf(() => buildConfig({}, { env: { REMESSA_WEBHOOK_AUTHORIZATION: 'tok\r\nX-Evil: 1' } }));
    expect(injection.message).toContain('control characters');
  });

  it('--events takes known types, case-insensitively, and names the unknown ones', () => {
    expect(parseEventTypes('charge_paid, PIX_RECEIVED,CHARGE_PAID')).toEqual(['CHARGE_PAID', 'PIX_RECEIVED']);
    expect(errorOf(() => parseEventTypes('CHARGE_PAID,CLAIM_DONE')).message).toContain('got "CLAIM_DONE"');
  });
});

describe('remessa webhooks (no bank needed)', () => {
  it('with the embedded sandbox says the daemon registers itself, and exits 2', async () => {
    const dir = tempDir();
    const config = path.join(dir, 'remessa.jsonc');
    writeFileSync(config, JSON.stringify({ folders: { data: path.join(dir, 'data') } }));
    const r = await runCli(['webhooks', 'list', '--config', config]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('the daemon registers its receiver there itself');
  });
});
