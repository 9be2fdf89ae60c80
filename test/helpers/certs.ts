/**
 * Test certificates, made at test time with the openssl command line (nothing private is committed): a CA, a server
 * certificate for 127.0.0.1/localhost, a client certificate from that CA (plain and passphrase-encrypted key), and a
 * client certificate from another CA. EC P-256, valid 2 days: they protect nothing.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface TestPki {
  dir: string;
  /** File paths. */
  files: {
    caCert: string;
    serverCert: string;
    serverKey: string;
    clientCert: string;
    clientKey: string;
    clientKeyEncrypted: string;
    otherCaCert: string;
    otherClientCert: string;
    otherClientKey: string;
  };
  /** Passphrase of `clientKeyEncrypted`. */
  passphrase: string;
  /** PEM text of a file. */
  pem(name: keyof TestPki['files']): string;
}

function openssl(args: string[], cwd: string): void {
  try {
    execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    const e = err as { code?: string; stderr?: Buffer };
    if (e.code === 'ENOENT')
      throw new Error('the TLS tests need the openssl command (Debian: apt-get install openssl)');
    throw new Error(`openssl ${args.join(' ')} failed: ${e.stderr?.toString() ?? String(err)}`);
  }
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

function makeCa(dir: string, name: string, cn: string): void {
  openssl(
    [
      'req',
      '-x509',
      '-new',
      ...EC,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.crt`,
      '-days',
      '2',
      '-subj',
      `/CN=${cn}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    dir,
  );
}

function makeLeaf(dir: string, name: string, ca: string, cn: string, extensions: string): void {
  openssl(['req', '-new', ...EC, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`], dir);
  writeFileSync(path.join(dir, `${name}.ext`), extensions);
  openssl(
    [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${ca}.crt`,
      '-CAkey',
      `${ca}.key`,
      '-CAcreateserial',
      '-out',
      `${name}.crt`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
    ],
    dir,
  );
}

/** Makes a fresh PKI in a temp folder (about 100 ms). */
export function makeTestPki(): TestPki {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'remessa-pki-'));
  makeCa(dir, 'ca', 'remessa test CA');
  makeCa(dir, 'other-ca', 'some other CA');
  makeLeaf(
    dir,
    'server',
    'ca',
    '127.0.0.1',
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n',
  );
  makeLeaf(dir, 'client', 'ca', 'remessa client', 'extendedKeyUsage=clientAuth\n');
  makeLeaf(dir, 'other-client', 'other-ca', 'intruder', 'extendedKeyUsage=clientAuth\n');
  const passphrase = 'test-passphrase-not-a-secret';
  openssl(
    [
      'pkcs8',
      '-topk8',
      '-in',
      'client.key',
      '-out',
      'client-encrypted.key',
      '-v2',
      'aes-256-cbc',
      '-passout',
      `pass:${passphrase}`,
    ],
    dir,
  );
  const files = {
    caCert: path.join(dir, 'ca.crt'),
    serverCert: path.join(dir, 'server.crt'),
    serverKey: path.join(dir, 'server.key'),
    clientCert: path.join(dir, 'client.crt'),
    clientKey: path.join(dir, 'client.key'),
    clientKeyEncrypted: path.join(dir, 'client-encrypted.key'),
    otherCaCert: path.join(dir, 'other-ca.crt'),
    otherClientCert: path.join(dir, 'other-client.crt'),
    otherClientKey: path.join(dir, 'other-client.key'),
  };
  return { dir, files, passphrase, pem: (name) => readFileSync(files[name], 'utf8') };
}
