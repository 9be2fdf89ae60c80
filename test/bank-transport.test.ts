/**
 * The transport under real sockets: headers sent, retries (what is resent, with which key), and each way a
 * connection can fail coming out as the right error class. Local `http`/`net` servers on port 0 play the bank badly.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import {
  type AddressInfo,
  connect,
  createServer as createNetServer,
  type Server as NetServer,
  type Socket,
} from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BankClient, type BankClientOptions } from '../src/bank/client.js';
import {
  errorFromNetworkFailure,
  NotFoundError,
  RateLimitedError,
  ServerError,
  ServiceConnectionError,
  ServiceTimeoutError,
  UnexpectedResponseError,
} from '../src/bank/errors.js';
import { isLocalFileError } from '../src/bank/http.js';
import { closedPort } from './helpers/net.js';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  /** The header lines as they came, `[name, value, ...]`: a header sent twice shows twice here. */
  raw: string[];
  body: string;
}

type Handler = (req: IncomingMessage, res: ServerResponse, index: number) => void;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

async function httpServer(handler: Handler): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString('utf8');
    });
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, raw: req.rawHeaders, body });
      handler(req, res, seen.length - 1);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

/** A raw TCP server: `onRequest` gets the socket once a request's bytes arrived. Counts connections that sent data. */
async function netServer(onRequest: (socket: Socket) => void): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  const sockets = new Set<Socket>();
  const server: NetServer = createNetServer((socket) => {
    sockets.add(socket);
    socket.once('data', () => {
      requests++;
      onRequest(socket);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests: () => requests };
}

function makeClient(url: string, extra: Partial<BankClientOptions> = {}): { client: BankClient; sleeps: number[] } {
  const sleeps: number[] = [];
  const client = new BankClient({
    baseUrl: url,
    apiKey: 'transport-test-key',
    accountId: '7654321',
    maxAttempts: 3,
    random: () => 0.5,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    ...extra,
  });
  cleanups.push(() => client.close());
  return { client, sleeps };
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

const PIX_PAYMENT = {
  id: 'p1',
  endToEndId: 'E38224857202611220000abcdefghijk',
  status: 'PIX_PROCESSING',
  amount: 10.5,
};
const PIX_REQUEST = {
  amountCents: 1050,
  endToEndId: PIX_PAYMENT.endToEndId,
  transactionId: 'tx1',
  initiationType: 'QR_CODE_STATIC' as const,
};
const KEY = '3f1c1f5e-2b7a-4c1e-9a7e-1d2c3b4a5f60';

describe('headers', () => {
  it('sends the API key on every request, IdempotencyKey only when given, account id on webhooks', async () => {
    const { url, seen } = await httpServer((req, res) => {
      if (req.url?.startsWith('/baas/api/v1/webhooks')) json(res, 200, []);
      else if (req.url?.startsWith('/baas/api/v2/pix/qrcode/payment')) json(res, 200, PIX_PAYMENT);
      else json(res, 200, [{ correlationId: 'c', status: 'Pending', amount: 1 }]);
    });
    const { client } = makeClient(url);
    await client.charges.list({ startDate: '2026-01-01', endDate: '2026-01-31', page: 2, limit: 10 });
    await client.pixPayments.pay(PIX_REQUEST, KEY);
    await client.pixPayments.pay(PIX_REQUEST);
    await client.webhooks.list();
    expect(seen.map((s) => s.headers['x-service-api-key'])).toEqual(Array(4).fill('transport-test-key'));
    expect(seen[0]?.url).toBe('/v1/charges?startDate=2026-01-01&endDate=2026-01-31&page=2&limit=10');
    expect(seen[0]?.headers.idempotencykey).toBeUndefined();
    expect(seen[1]?.headers.idempotencykey).toBe(KEY);
    expect(seen[1]?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(seen[1]?.body ?? '')).toEqual({
      amount: 10.5,
      endToEndId: PIX_PAYMENT.endToEndId,
      transactionId: 'tx1',
      initiationType: 'QR_CODE_STATIC',
    });
    expect(seen[2]?.headers.idempotencykey).toBeUndefined();
    expect(seen[3]?.headers['x-service-account-id']).toBe('7654321');
    expect(seen[0]?.headers['x-service-account-id']).toBeUndefined();
  });

  it('honours custom header names, a base path prefix and a path override (bank.paths.pixPayment)', async () => {
    const { url, seen } = await httpServer((_req, res) => json(res, 200, PIX_PAYMENT));
    const { client } = makeClient(`${url}/bank/`, {
      apiKeyHeader: 'X-Api-Key',
      idempotencyKeyHeader: 'Idempotency-Key',
      paths: { pixPayment: '/custom/pix/pay' },
    });
    await client.pixPayments.pay(PIX_REQUEST, KEY);
    expect(seen[0]?.url).toBe('/bank/custom/pix/pay');
    expect(seen[0]?.headers['x-api-key']).toBe('transport-test-key');
    expect(seen[0]?.headers['x-service-api-key']).toBeUndefined();
    expect(seen[0]?.headers['idempotency-key']).toBe(KEY);
  });

  it('sends each header once, on both profiles; a key given by useApiKey from the next request on', async () => {
    const { url, seen } = await httpServer((req, res) => {
      if (req.url?.includes('webhook')) json(res, 200, []);
      else json(res, 200, PIX_PAYMENT);
    });
    const names = (s: Seen | undefined) => (s?.raw ?? []).filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
    for (const profile of ['interface', 'delbank'] as const) {
      const { client } = makeClient(url, { profile });
      const from = seen.length;
      await client.webhooks.list();
      await client.pixPayments.pay(PIX_REQUEST, KEY);
      client.useApiKey('rotated-key');
      await client.webhooks.list();
      const sent = seen.slice(from);
      const [apiKey, accountId] =
        profile === 'delbank'
          ? ['x-delbank-api-key', 'x-delfinance-account-id']
          : ['x-service-api-key', 'x-service-account-id'];
      for (const s of sent) {
        const list = names(s);
        expect(new Set(list).size, `${profile} ${s.method} ${s.url}: ${list.join(', ')}`).toBe(list.length);
        expect(list).toEqual(expect.arrayContaining([apiKey, 'accept', 'user-agent']));
      }
      // The account id: on webhooks always, on every request for delbank (its dialect), once each time.
      expect(sent[0]?.headers[accountId]).toBe('7654321');
      expect(sent[1]?.headers[accountId]).toBe(profile === 'delbank' ? '7654321' : undefined);
      expect(sent[1]?.headers['content-type']).toBe('application/json');
      expect(sent.map((s) => s.headers[apiKey])).toEqual(['transport-test-key', 'transport-test-key', 'rotated-key']);
    }
  });

  it("loads undici's Pool and connector without undici's index (start-up), and its requests still work", () => {
    // A process of its own: this test file's other imports may load the index. The requests are the tests above.
    const script = [
      "const { createRequire } = await import('node:module');",
      "await import('./src/bank/client.ts');",
      'const cache = Object.keys(createRequire(import.meta.url).cache);',
      "const undici = cache.filter((f) => f.includes('/node_modules/undici/'));",
      "console.log(JSON.stringify({ index: undici.some((f) => f.endsWith('/undici/index.js')), fetch: undici.some((f) => f.includes('/lib/web/fetch/')), pool: undici.some((f) => f.endsWith('/lib/dispatcher/pool.js')) }));",
    ].join('\n');
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: join(import.meta.dirname, '..'),
      encoding: 'utf8',
    });
    expect(JSON.parse(out.trim().split('\n').at(-1)!)).toEqual({ index: false, fetch: false, pool: true });
  });

  it('a webhook call without an account id configured fails before sending', async () => {
    const { url, seen } = await httpServer((_req, res) => json(res, 200, []));
    const client = new BankClient({ baseUrl: url, apiKey: 'transport-test-key' });
    cleanups.push(() => client.close());
    await expect(client.webhooks.list()).rejects.toThrow(/accountId/);
    expect(seen).toHaveLength(0);
  });
});

describe('retries over HTTP', () => {
  it('resends a keyed POST after 503s with the SAME IdempotencyKey every time', async () => {
    const { url, seen } = await httpServer((_req, res, i) => {
      if (i < 2) json(res, 503, { title: 'Service Unavailable' });
      else json(res, 200, PIX_PAYMENT);
    });
    const { client, sleeps } = makeClient(url);
    const paid = await client.pixPayments.pay(PIX_REQUEST, KEY);
    expect(paid.amountCents).toBe(1050);
    expect(seen).toHaveLength(3);
    expect(seen.map((s) => s.headers.idempotencykey)).toEqual([KEY, KEY, KEY]);
    expect(new Set(seen.map((s) => s.body)).size).toBe(1);
    expect(sleeps).toEqual([250, 500]); // full jitter with random 0.5: 0.5 * 500, 0.5 * 1000
  });

  it('never resends a POST without a key after a 5xx: one request, ServerError', async () => {
    const { url, seen } = await httpServer((_req, res) => json(res, 500, { title: 'boom' }));
    const { client, sleeps } = makeClient(url);
    const err = await client.pixPayments.pay(PIX_REQUEST).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServerError);
    expect(seen).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('retries a GET on 5xx until maxAttempts, then throws the last error', async () => {
    const { url, seen } = await httpServer((_req, res) => json(res, 502, { title: 'bad gateway' }));
    const { client } = makeClient(url);
    await expect(client.charges.get('x')).rejects.toBeInstanceOf(ServerError);
    expect(seen).toHaveLength(3);
  });

  it('429: waits Retry-After (even for a keyless POST), then succeeds', async () => {
    const { url, seen } = await httpServer((_req, res, i) => {
      if (i === 0) json(res, 429, { title: 'Too Many Requests' }, { 'retry-after': '2' });
      else json(res, 200, PIX_PAYMENT);
    });
    const { client, sleeps } = makeClient(url);
    await client.pixPayments.pay(PIX_REQUEST);
    expect(seen).toHaveLength(2);
    expect(sleeps).toEqual([2000]);
  });

  it('429 to the end: RateLimitedError carries the full Retry-After while the wait is capped', async () => {
    const { url } = await httpServer((_req, res) =>
      json(res, 429, { title: 'Too Many Requests' }, { 'retry-after': '600' }),
    );
    const { client, sleeps } = makeClient(url, { maxRetryAfterMs: 1000 });
    const err = await client.charges.get('x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitedError);
    expect((err as RateLimitedError).retryAfterMs).toBe(600_000);
    expect(sleeps).toEqual([1000, 1000]);
  });

  it('does not retry a 404', async () => {
    const { url, seen } = await httpServer((_req, res) => json(res, 404, { title: 'Not Found', status: 404 }));
    const { client } = makeClient(url);
    await expect(client.charges.get('x')).rejects.toBeInstanceOf(NotFoundError);
    expect(seen).toHaveLength(1);
  });

  it('an abort during the wait between attempts stops the retries', async () => {
    const { url, seen } = await httpServer((_req, res) => json(res, 503, {}));
    const controller = new AbortController();
    const { client } = makeClient(url, {
      sleep: async () => {
        controller.abort(new Error('stop now'));
        throw controller.signal.reason;
      },
    });
    await expect(client.charges.get('x', { signal: controller.signal })).rejects.toThrow('stop now');
    expect(seen).toHaveLength(1);
  });
});

describe('failures without a response come out as the right class', () => {
  it('connection refused: ServiceConnectionError, nothing sent, so even a keyless POST is retried', async () => {
    const port = await closedPort();
    const { client, sleeps } = makeClient(`http://127.0.0.1:${port}`);
    const err = await client.pixPayments.pay(PIX_REQUEST).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceConnectionError);
    expect((err as ServiceConnectionError).code).toBe('SERVICE_UNREACHABLE');
    expect((err as ServiceConnectionError).mayHaveReachedServer).toBe(false);
    expect(sleeps).toHaveLength(2);
  });

  it('reset after the request was sent: may have reached the server; a keyless POST is not resent', async () => {
    const server = await netServer((socket) => socket.resetAndDestroy());
    const { client } = makeClient(server.url);
    const err = await client.pixPayments.pay(PIX_REQUEST).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceConnectionError);
    expect((err as ServiceConnectionError).mayHaveReachedServer).toBe(true);
    expect(server.requests()).toBe(1);
  });

  it('reset: a GET and a keyed POST are resent', async () => {
    const server = await netServer((socket) => socket.resetAndDestroy());
    const { client } = makeClient(server.url);
    await expect(client.charges.get('x')).rejects.toBeInstanceOf(ServiceConnectionError);
    expect(server.requests()).toBe(3);
    await expect(client.pixPayments.pay(PIX_REQUEST, KEY)).rejects.toBeInstanceOf(ServiceConnectionError);
    expect(server.requests()).toBe(6);
  });

  it('closed without an answer (other side closed) after the request: may have reached the server', async () => {
    const server = await netServer((socket) => socket.end());
    const { client } = makeClient(server.url);
    const err = await client.pixPayments.pay(PIX_REQUEST).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceConnectionError);
    expect((err as ServiceConnectionError).mayHaveReachedServer).toBe(true);
    expect(server.requests()).toBe(1);
  });

  it('a server that never answers: ServiceTimeoutError (headers), may have reached the server', async () => {
    const server = await netServer(() => undefined);
    const { client } = makeClient(server.url, { headersTimeoutMs: 200 });
    const err = await client.pixPayments.pay(PIX_REQUEST).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceTimeoutError);
    expect((err as ServiceTimeoutError).code).toBe('SERVICE_TIMEOUT');
    expect((err as ServiceTimeoutError).phase).toBe('headers');
    expect((err as ServiceTimeoutError).mayHaveReachedServer).toBe(true);
    expect(server.requests()).toBe(1);
  });

  it('the caller aborts a request that hangs: rejected with the abort reason, not retried', async () => {
    const controller = new AbortController();
    // Abort once the request has reached the server, which never answers.
    const server = await netServer(() => controller.abort(new Error('shutting down')));
    const { client } = makeClient(server.url);
    const err = await client.charges.get('x', { signal: controller.signal }).catch((e: unknown) => e);
    expect((err as Error).message).toBe('shutting down');
    expect(server.requests()).toBe(1);
  });

  it('a body that stalls: ServiceTimeoutError (body)', async () => {
    const { url } = await httpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"correlationId":');
    });
    const { client } = makeClient(url, { bodyTimeoutMs: 200, maxAttempts: 1 });
    const err = await client.charges.get('x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceTimeoutError);
    expect((err as ServiceTimeoutError).phase).toBe('body');
  });
});

describe('responses the client cannot use', () => {
  it('a success body missing a used field: UnexpectedResponseError naming the field, not retried', async () => {
    const { url, seen } = await httpServer((_req, res) => json(res, 200, { status: 'Pending', amount: 1 }));
    const { client } = makeClient(url);
    const err = await client.charges.get('x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnexpectedResponseError);
    expect((err as UnexpectedResponseError).fieldPath).toBe('$.correlationId');
    expect((err as UnexpectedResponseError).message).toContain('$.correlationId');
    expect(seen).toHaveLength(1);
  });

  it('an amount with a fraction of a cent is refused, naming the field', async () => {
    const { url } = await httpServer((_req, res) => json(res, 200, { correlationId: 'x', status: 'P', amount: 1.005 }));
    const { client } = makeClient(url);
    const err = await client.charges.get('x').catch((e: unknown) => e);
    expect((err as UnexpectedResponseError).fieldPath).toBe('$.amount');
  });

  it('HTML with status 200: UnexpectedResponseError', async () => {
    const { url } = await httpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html><body>login</body></html>');
    });
    const { client } = makeClient(url);
    const err = await client.charges.get('x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnexpectedResponseError);
    expect((err as UnexpectedResponseError).fieldPath).toBe('$');
  });
});

describe('streaming to a file', () => {
  it('a download cut in the middle leaves neither the file nor a temp file', async () => {
    const { url } = await httpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/pdf', 'content-length': '100000' });
      res.write(Buffer.alloc(1000, 0x25));
      setTimeout(() => res.destroy(), 10);
    });
    const dir = await mkdtemp(join(tmpdir(), 'remessa-transport-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const { client } = makeClient(url);
    const err = await client.charges.streamPdf('x', join(dir, 'slip.pdf')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceConnectionError);
    expect(await readdir(dir)).toEqual([]);
  });

  it('a folder that does not exist: our side failed, not the bank; thrown as it is, never sent again', async () => {
    let requests = 0;
    const { url } = await httpServer((_req, res) => {
      requests++;
      res.writeHead(200, { 'content-type': 'application/pdf' });
      res.end(Buffer.alloc(1000, 0x25));
    });
    const dir = await mkdtemp(join(tmpdir(), 'remessa-transport-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const { client, sleeps } = makeClient(url);
    const err = await client.charges.streamPdf('x', join(dir, 'missing', 'slip.pdf')).catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(ServiceConnectionError);
    expect((err as NodeJS.ErrnoException).code).toBe('ENOENT');
    expect(isLocalFileError(err)).toBe(true);
    expect(requests).toBe(1);
    expect(sleeps).toEqual([]);
  });

  it("a socket's reset while writing the request (`write ECONNRESET`, `write EPIPE`) is the bank's connection, not our file", async () => {
    // A real socket error of the kind seen when the bank's process died as a request was being written: the client
    // is connected and not reading (so the reset is learned by the write), then the server resets the connection.
    const accepted: Socket[] = [];
    const server = createNetServer((socket) => accepted.push(socket));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
    const socket = await new Promise<Socket>((resolve) => {
      const s = connect((server.address() as AddressInfo).port, '127.0.0.1', () => resolve(s));
      s.pause();
    });
    while (accepted.length === 0) await new Promise((r) => setTimeout(r, 5));
    accepted[0]!.resetAndDestroy();
    await new Promise((r) => setTimeout(r, 50));
    const error = await new Promise<NodeJS.ErrnoException>((resolve) => {
      socket.once('error', resolve);
      const write = () => socket.write('GET / HTTP/1.1\r\n\r\n', (e) => (e ? resolve(e) : setTimeout(write, 10)));
      write();
    });
    socket.destroy();
    expect(error.syscall).toBe('write');
    expect(['ECONNRESET', 'EPIPE']).toContain(error.code);
    expect(isLocalFileError(error)).toBe(false);
    const failure = errorFromNetworkFailure(error, { method: 'GET', path: '/v1/charges/x' });
    expect(failure).toBeInstanceOf(ServiceConnectionError);
    expect(failure.mayHaveReachedServer).toBe(true);
  });

  it('a body that is not a PDF is refused without writing a file', async () => {
    const { url } = await httpServer((_req, res) => json(res, 200, { hello: 'world' }));
    const dir = await mkdtemp(join(tmpdir(), 'remessa-transport-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const { client } = makeClient(url);
    const err = await client.charges.streamPdf('x', join(dir, 'slip.pdf')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnexpectedResponseError);
    expect(await readdir(dir)).toEqual([]);
  });
});
