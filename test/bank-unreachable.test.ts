/**
 * "Certainly not sent" against "may have been sent", as the client tells them apart (src/bank/errors.ts,
 * src/bank/http.ts): a failure while the connection is being made (refused, DNS, TLS handshake, even a reset in the
 * middle of the handshake) is a ServiceUnreachableError; a connection that broke after the request was written may
 * have reached the bank. Real sockets, no mocks.
 */
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { BankClient } from '../src/bank/client.js';
import { ServiceConnectionError, ServiceUnreachableError } from '../src/bank/errors.js';
import { closedPort } from './helpers/net.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function client(url: string): BankClient {
  const c = new BankClient({ baseUrl: url, apiKey: 'unreachable-test-key', maxAttempts: 1, connectTimeoutMs: 2000 });
  cleanups.push(() => c.close());
  return c;
}

/** A TCP server that does `onSocket` with every connection. */
async function rawServer(onSocket: (socket: Socket) => void): Promise<number> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
    onSocket(s);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  );
  return (server.address() as AddressInfo).port;
}

describe('a bank that cannot be reached', () => {
  it('connection refused: ServiceUnreachableError (refused), nothing sent', async () => {
    const err = await client(`http://127.0.0.1:${await closedPort()}`)
      .charges.get('x')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceUnreachableError);
    expect((err as ServiceUnreachableError).reason).toBe('refused');
    expect((err as ServiceUnreachableError).mayHaveReachedServer).toBe(false);
    expect((err as Error).message).toContain('nothing was sent');
  });

  it('an unknown host name: ServiceUnreachableError (dns), nothing sent', async () => {
    const err = await client('http://remessa-bank.invalid')
      .charges.get('x')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceUnreachableError);
    expect((err as ServiceUnreachableError).reason).toBe('dns');
  });

  it('the TLS handshake cut by the server (reset mid-handshake): nothing sent, though bytes of the handshake were', async () => {
    // The ClientHello went out, so the socket wrote bytes; the error is a plain ECONNRESET. Only the connector's
    // mark tells that the connection was never made, so no byte of the request was written.
    const port = await rawServer((s) => s.once('data', () => s.resetAndDestroy()));
    const err = await client(`https://127.0.0.1:${port}`)
      .charges.get('x')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceUnreachableError);
    expect((err as ServiceUnreachableError).mayHaveReachedServer).toBe(false);
  });

  it('a server that speaks no TLS on a TLS url: ServiceUnreachableError (tls)', async () => {
    const port = await rawServer((s) => s.once('data', () => s.end('HTTP/1.1 400 Bad Request\r\n\r\n')));
    const err = await client(`https://127.0.0.1:${port}`)
      .charges.get('x')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceUnreachableError);
    expect((err as ServiceUnreachableError).reason).toBe('tls');
  });

  it('a connection reset after the request was written: may have reached the bank', async () => {
    const port = await rawServer((s) => s.once('data', () => s.resetAndDestroy()));
    const err = await client(`http://127.0.0.1:${port}`)
      .charges.get('x')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceConnectionError);
    expect(err).not.toBeInstanceOf(ServiceUnreachableError);
    expect((err as ServiceConnectionError).mayHaveReachedServer).toBe(true);
  });
});
