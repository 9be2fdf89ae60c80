/**
 * TLS settings: an extra CA (the bank's private CA, trusted besides Node's roots) and a client certificate for
 * mutual TLS, against a local HTTPS server that requires a client certificate. Test-only keys, generated for this
 * file (P-256, valid for 100 years); they protect nothing.
 */
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BankClient, type BankClientOptions } from '../src/bank/client.js';
import { ServiceConnectionError } from '../src/bank/errors.js';

const CA_PEM = `-----BEGIN CERTIFICATE-----
MIIBijCCATGgAwIBAgIUHDeHXihizWujXW8RMwEbmHEI7FYwCgYIKoZIzj0EAwIw
GjEYMBYGA1UEAwwPcmVtZXNzYSB0ZXN0IENBMCAXDTI2MTEyMjAwMTUwNVoYDzIx
MjYxMDI5MDAxNTA1WjAaMRgwFgYDVQQDDA9yZW1lc3NhIHRlc3QgQ0EwWTATBgcq
hkjOPQIBBggqhkjOPQMBBwNCAAQ21My8HS+lSQ/e8Xp6id3JVNa2KVixYWT43vpM
3fptHtRnBH7zFHzm3UAwecCTpn6Xb/lsBY/58NZAAcS/N7Tqo1MwUTAdBgNVHQ4E
FgQU/kxXqxMRqD7si0talMloAJO3Xd8wHwYDVR0jBBgwFoAU/kxXqxMRqD7si0ta
lMloAJO3Xd8wDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNHADBEAiBlmfCe
YWHEXrXX90zL9eglnw2sRl2Av0Ae5s4sGEM1SwIgZ2hIL1DenGzycSwYMRIzQpZo
BJLFpGRDWXf8TEDN09s=
-----END CERTIFICATE-----
`;

const SERVER_CERT = `-----BEGIN CERTIFICATE-----
MIIBpDCCAUugAwIBAgIUcapfK8CHWWMjRq6UDB65y5sBj3gwCgYIKoZIzj0EAwIw
GjEYMBYGA1UEAwwPcmVtZXNzYSB0ZXN0IENBMCAXDTI2MTEyMjAwMTUwNVoYDzIx
MjYxMDI5MDAxNTA1WjAUMRIwEAYDVQQDDAkxMjcuMC4wLjEwWTATBgcqhkjOPQIB
BggqhkjOPQMBBwNCAASK1m1USjbJ/XMHsHyhKyHNTFx8JdyWfeh0zDfgBEInRQMH
UDV2fKhMJsHCbP/Gh9I9O0bsGqrvLOP3kHuKufpVo3MwcTAaBgNVHREEEzARhwR/
AAABgglsb2NhbGhvc3QwEwYDVR0lBAwwCgYIKwYBBQUHAwEwHQYDVR0OBBYEFGuw
QBR+GVGz4FGlC/n7ZWPmNH0vMB8GA1UdIwQYMBaAFP5MV6sTEag+7ItLWpTJaACT
t13fMAoGCCqGSM49BAMCA0cAMEQCIAgY63IKeh9SUqosl23ERUvjiuS98oFtlK1Z
ZT3GE3NxAiAq66U7ytssREg0n8oh+DDBwJ/+Z8cQh/XuzbF3nnrmxQ==
-----END CERTIFICATE-----
`;

const SERVER_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgfc/onEiPBfQuUb3F
8RbsPAKgfG1a6VfB0xx44hTt5WOhRANCAASK1m1USjbJ/XMHsHyhKyHNTFx8JdyW
feh0zDfgBEInRQMHUDV2fKhMJsHCbP/Gh9I9O0bsGqrvLOP3kHuKufpV
-----END PRIVATE KEY-----
`;

const CLIENT_CERT = `-----BEGIN CERTIFICATE-----
MIIBjzCCATSgAwIBAgIUcapfK8CHWWMjRq6UDB65y5sBj3kwCgYIKoZIzj0EAwIw
GjEYMBYGA1UEAwwPcmVtZXNzYSB0ZXN0IENBMCAXDTI2MTEyMjAwMTUwNVoYDzIx
MjYxMDI5MDAxNTA1WjAZMRcwFQYDVQQDDA5yZW1lc3NhIGNsaWVudDBZMBMGByqG
SM49AgEGCCqGSM49AwEHA0IABAbzWUKOqU9tn/EqmMI7ktQIlXTENw8q0Xir8OCg
6SnMDGPKwtat0O3EpXXkKz3Qw7c4cLKsbCao0fOB2IVh3hmjVzBVMBMGA1UdJQQM
MAoGCCsGAQUFBwMCMB0GA1UdDgQWBBRl5JEto9+LFLJshvCLId+moNS/mTAfBgNV
HSMEGDAWgBT+TFerExGoPuyLS1qUyWgAk7dd3zAKBggqhkjOPQQDAgNJADBGAiEA
2MkIV/n0Dh1Y0dXzeSUWEp0tCb75Te6lXDDAMZfMlL8CIQD0tOFyHFrrYb0TWg07
skThPmfXAavntNVgiXQNrLIxQQ==
-----END CERTIFICATE-----
`;

const CLIENT_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgTGSGsrnfzq1FXDdV
YBhGpHq6hbk/AOyBFJm2/p45sIyhRANCAAQG81lCjqlPbZ/xKpjCO5LUCJV0xDcP
KtF4q/DgoOkpzAxjysLWrdDtxKV15Cs90MO3OHCyrGwmqNHzgdiFYd4Z
-----END PRIVATE KEY-----
`;

let server: Server;
let url: string;
const peers: string[] = [];

beforeAll(async () => {
  server = createServer(
    { key: SERVER_KEY, cert: SERVER_CERT, ca: CA_PEM, requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      const peer = (req.socket as TLSSocket).getPeerCertificate();
      peers.push(String(peer.subject?.CN));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ correlationId: 'tls-1', status: 'Pending', amount: 12.34 }));
    },
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  });
});

async function get(options: Partial<BankClientOptions>): Promise<unknown> {
  const client = new BankClient({ baseUrl: url, apiKey: 'tls-test-key', maxAttempts: 1, ...options });
  try {
    return await client.charges.get('tls-1');
  } catch (err) {
    return err;
  } finally {
    await client.close();
  }
}

describe('TLS', () => {
  it('mutual TLS with the bank CA as an extra CA: the request goes through with the client certificate', async () => {
    const charge = await get({ tlsCa: CA_PEM, tlsCert: CLIENT_CERT, tlsKey: CLIENT_KEY });
    expect(charge).toMatchObject({ correlationId: 'tls-1', amountCents: 1234 });
    expect(peers).toContain('remessa client');
  });

  it('PEM as buffers works too', async () => {
    const charge = await get({
      tlsCa: [Buffer.from(CA_PEM)],
      tlsCert: Buffer.from(CLIENT_CERT),
      tlsKey: Buffer.from(CLIENT_KEY),
    });
    expect(charge).toMatchObject({ correlationId: 'tls-1' });
  });

  it('without the extra CA the server is not trusted: a connection error, nothing sent', async () => {
    const err = await get({ tlsCert: CLIENT_CERT, tlsKey: CLIENT_KEY });
    expect(err).toBeInstanceOf(ServiceConnectionError);
    expect((err as ServiceConnectionError).mayHaveReachedServer).toBe(false);
  });

  it('without a client certificate the server refuses: a connection error', async () => {
    const before = peers.length;
    const err = await get({ tlsCa: CA_PEM });
    expect(err).toBeInstanceOf(ServiceConnectionError);
    expect(peers.length).toBe(before);
  });

  it('a certificate without its key is refused at construction', () => {
    expect(() => new BankClient({ baseUrl: url, apiKey: 'k', tlsCert: CLIENT_CERT })).toThrow(/tlsKey/);
  });
});
