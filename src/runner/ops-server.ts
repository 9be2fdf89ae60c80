/**
 * The operator's HTTP endpoint of the daemon (`metrics.host`:`metrics.port`; off when the port is 0):
 *
 * - `GET /metrics`: Prometheus text format (src/metrics.ts declares every metric).
 * - `GET /healthz`: 200 while the process is up and serving (liveness).
 * - `GET /readyz`: 200 when the daemon can do its work, 503 with the reason of each failed check otherwise:
 *   the store takes a write lock and releases it; the inbox is watched; the bank answers a read within
 *   `readyTimeoutMs` with anything but an authentication error or a 5xx (a 404 for an unknown charge is a healthy
 *   answer: the bank is there and knows our key). The bank's answer is cached for `bankCheckCacheMs`, so a
 *   probe every few seconds does not become traffic the bank counts against our rate limit.
 *
 * A plain node:http server: three GET routes need no framework, and it starts in a millisecond.
 * The body of /readyz is JSON: `{ "ready": false, "checks": { "store": "ok", "inbox": "not watched", ... } }`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Metrics } from '../metrics.js';

export interface ReadinessChecks {
  /** Throws (or rejects) when the store cannot take a write. */
  store: () => void | Promise<void>;
  /** Whether the inbox is being watched. */
  inbox: () => boolean;
  /** Resolves when the bank answered in time; rejects with a reason a person reads otherwise. */
  bank: (signal: AbortSignal) => Promise<void>;
}

export interface OpsServerOptions {
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  metrics: Metrics;
  checks: ReadinessChecks;
  /** Longest wait for the bank's answer in /readyz, in milliseconds. @defaultValue 3000 */
  readyTimeoutMs?: number;
  /** How long one bank answer is reused by /readyz, in milliseconds (0 = ask every time). @defaultValue 10000 */
  bankCheckCacheMs?: number;
}

export interface RunningOpsServer {
  url: string;
  close(): Promise<void>;
}

export async function startOpsServer(o: OpsServerOptions): Promise<RunningOpsServer> {
  const readyTimeoutMs = o.readyTimeoutMs ?? 3_000;
  const cacheMs = o.bankCheckCacheMs ?? 10_000;
  let bankCache: { at: number; result: string } | undefined;
  let bankInFlight: Promise<string> | undefined;

  const checkBank = (): Promise<string> => {
    if (bankCache && Date.now() - bankCache.at < cacheMs) return Promise.resolve(bankCache.result);
    bankInFlight ??= o.checks
      .bank(AbortSignal.timeout(readyTimeoutMs))
      .then(
        () => 'ok',
        (err: unknown) =>
          (err as { name?: string } | null)?.name === 'TimeoutError'
            ? `no answer within ${readyTimeoutMs} ms`
            : err instanceof Error
              ? err.message
              : String(err),
      )
      .then((result) => {
        bankCache = { at: Date.now(), result };
        bankInFlight = undefined;
        return result;
      });
    return bankInFlight;
  };

  const readiness = async (): Promise<{ ready: boolean; checks: Record<string, string> }> => {
    const checks: Record<string, string> = {};
    try {
      await o.checks.store();
      checks.store = 'ok';
    } catch (err) {
      checks.store = `not writable: ${err instanceof Error ? err.message : String(err)}`;
    }
    checks.inbox = o.checks.inbox() ? 'ok' : 'not watched';
    checks.bank = await checkBank();
    return { ready: Object.values(checks).every((v) => v === 'ok'), checks };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      send(res, 405, 'text/plain; charset=utf-8', 'Method Not Allowed\n', { allow: 'GET, HEAD' });
      return;
    }
    if (path === '/metrics') {
      send(res, 200, o.metrics.contentType, await o.metrics.render());
    } else if (path === '/healthz') {
      send(res, 200, 'text/plain; charset=utf-8', 'ok\n');
    } else if (path === '/readyz') {
      const r = await readiness();
      send(res, r.ready ? 200 : 503, 'application/json', `${JSON.stringify(r)}\n`);
    } else {
      send(res, 404, 'text/plain; charset=utf-8', 'Not Found: try /metrics, /healthz or /readyz\n');
    }
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) send(res, 500, 'text/plain; charset=utf-8', `${String(err)}\n`);
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = o.host.includes(':') ? `[${o.host}]` : o.host;
  return {
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function send(
  res: ServerResponse,
  status: number,
  contentType: string,
  body: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store', ...headers });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}
