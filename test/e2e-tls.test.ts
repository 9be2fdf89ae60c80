/**
 * End to end over mutual TLS (issue 12, section 2): `remessa sandbox --tls-cert --tls-key --tls-client-ca` as a child
 * process, and the daemon as another, presenting its client certificate from systemd credentials (an encrypted key
 * and its passphrase credential, as a unit with LoadCredential= gives them) and trusting the sandbox's CA through
 * `bank.tls.caFile`. Charges and bill payments go through; the effects ledger shows every effect exactly once. A
 * client without a certificate, or with one from another CA, is refused by the same sandbox process.
 * In the suite's profile (REMESSA_TEST_PROFILE): `npm test` runs it in `interface`, `npm run test:e2e:delbank` in
 * `delbank`, so CI proves the pipeline over mutual TLS in both.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callBank,
  drop,
  EXAMPLES,
  makeWorkspace,
  type Proc,
  parseResultCsv,
  type SandboxProcess,
  startDaemon,
  startSandboxProcess,
  stopDaemon,
  type Workspace,
  waitFor,
  waitForAnswer,
} from './e2e-harness.js';
import { makeTestPki, type TestPki } from './helpers/certs.js';

let pki: TestPki;
let dir: string;
let sandbox: SandboxProcess;
let ws: Workspace;
let daemon: Proc;

beforeAll(async () => {
  pki = makeTestPki();
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-tls-'));
  sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'), {
    args: ['--tls-cert', pki.files.serverCert, '--tls-key', pki.files.serverKey, '--tls-client-ca', pki.files.caCert],
    clientTls: { cert: pki.pem('clientCert'), key: pki.pem('clientKey'), ca: pki.pem('caCert') },
  });
  const credentials = path.join(dir, 'credentials');
  await fs.mkdir(credentials);
  await fs.copyFile(pki.files.clientCert, path.join(credentials, 'remessa-tls-cert'));
  await fs.copyFile(pki.files.clientKeyEncrypted, path.join(credentials, 'remessa-tls-key'));
  await fs.writeFile(path.join(credentials, 'remessa-tls-passphrase'), `${pki.passphrase}\n`);
  ws = await makeWorkspace(sandbox.url, {
    bank: { tls: { caFile: pki.files.caCert } },
    // The queue's gate on the way too: an overall limit across groups.
    queue: { overallRateLimit: { requests: 40, intervalMs: 1000 } },
  });
  daemon = startDaemon(ws, { CREDENTIALS_DIRECTORY: credentials });
}, 60_000);

afterAll(async () => {
  if (daemon) await stopDaemon(daemon);
  if (sandbox) await sandbox.stop();
  if (pki) await fs.rm(pki.dir, { recursive: true, force: true });
  if (dir) await fs.rm(dir, { recursive: true, force: true });
  if (ws) await fs.rm(ws.dir, { recursive: true, force: true });
});

async function resultOf(kind: string, stem: string): Promise<Array<Record<string, string>>> {
  const answer = await waitForAnswer(ws, kind, stem).catch((err: Error) => {
    throw new Error(`${err.message}\ndaemon exit ${daemon.child.exitCode}, stderr:\n${daemon.stderr().slice(-4000)}`);
  });
  expect(answer.type, answer.text).toBe('result');
  return parseResultCsv(await fs.readFile(answer.file));
}

describe('the pipeline over mutual TLS, daemon and sandbox as child processes', () => {
  it('the sandbox listens on https', () => {
    expect(sandbox.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
  });

  it('charges and bill payments succeed, each effect exactly once', async () => {
    await drop(ws, path.join(EXAMPLES, 'charges.csv'), 'charges/charges.csv');
    await drop(ws, path.join(EXAMPLES, 'bill-payments.csv'), 'bill-payments/bill-payments.csv');
    const charges = await resultOf('charges', 'charges');
    const bills = await resultOf('bill-payments', 'bill-payments');
    expect(charges.length).toBeGreaterThan(0);
    expect(bills.length).toBeGreaterThan(0);
    for (const r of [...charges, ...bills]) expect(r.status, JSON.stringify(r)).toBe('succeeded');
    const effects = await sandbox.effects();
    expect(effects.length).toBeGreaterThan(0);
    for (const e of effects) expect(e.count, JSON.stringify(e)).toBe(1);
    // the key's passphrase never reaches the log
    expect(daemon.stderr() + daemon.stdout()).not.toContain(pki.passphrase);
  }, 90_000);

  it('the same sandbox refuses a client without a certificate, or with one from another CA', async () => {
    const attempt = async (connect: Record<string, string>) => {
      const agent = new Agent({ connect: { ca: pki.pem('caCert'), ...connect } });
      try {
        // A read of the bank's API (the webhooks list) in the sandbox's profile.
        return (await callBank({ url: sandbox.url, dispatcher: agent }, 'GET', 'webhooks')).status;
      } catch (err) {
        return err as Error;
      } finally {
        await agent.close();
      }
    };
    expect(await attempt({ cert: pki.pem('clientCert'), key: pki.pem('clientKey') })).toBe(200);
    expect(await attempt({})).toBeInstanceOf(Error);
    expect(await attempt({ cert: pki.pem('otherClientCert'), key: pki.pem('otherClientKey') })).toBeInstanceOf(Error);
  });
});

describe('the daemon with the embedded sandbox over mutual TLS', () => {
  // Its webhook receiver registers itself with the embedded sandbox at start: over HTTPS, with the client certificate
  // and CA of bank.tls, in the profile's dialect. The registration client once had none of them, and such a daemon
  // exited 1 at its start.
  it('starts, registers its receiver, and a file goes through', async () => {
    const embedded = await makeWorkspace('embedded', {
      bank: { tls: { certFile: pki.files.clientCert, keyFile: pki.files.clientKey, caFile: pki.files.caCert } },
    });
    try {
      const config = JSON.parse(await fs.readFile(embedded.config, 'utf8')) as Record<string, Record<string, unknown>>;
      const { tls, retry, profile } = config.bank!;
      config.bank = { url: 'embedded', profile, retry, tls };
      config.sandbox = {
        tls: { certFile: pki.files.serverCert, keyFile: pki.files.serverKey, clientCaFile: pki.files.caCert },
      };
      await fs.writeFile(embedded.config, JSON.stringify(config, null, 2));
      const d = startDaemon(embedded);
      try {
        await waitFor('the registration with the embedded sandbox', () => {
          if (d.child.exitCode !== null) throw new Error(`the daemon exited ${d.child.exitCode}: ${d.stderr()}`);
          return /"url":"https:\/\/127\.0\.0\.1:\d+".*embedded sandbox started/.test(d.stderr()) &&
            /registered with the embedded sandbox/.test(d.stderr())
            ? true
            : undefined;
        });
        await drop(embedded, Buffer.from('type,correlationId,amount\nPIX_STATIC,EMB-TLS-1,7.00\n'), 'charges/emb.csv');
        const answer = await waitForAnswer(embedded, 'charges', 'emb');
        expect(parseResultCsv(answer.text).map((r) => r.status)).toEqual(['succeeded']);
        expect(await stopDaemon(d)).toBe(0);
      } finally {
        await stopDaemon(d);
      }
    } finally {
      await fs.rm(embedded.dir, { recursive: true, force: true });
    }
  }, 90_000);
});
