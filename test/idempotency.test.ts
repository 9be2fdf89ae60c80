import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { request } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { canonicalJson, idempotencyFor, requestFingerprint } from '../src/sandbox/idempotency.js';
import type { SandboxOptionsInput } from '../src/sandbox/options.js';
import { SandboxHttpError, validationProblem } from '../src/sandbox/problems.js';
import { buildSandboxApp, SANDBOX_PUBLIC_API_KEY, type SandboxContext } from '../src/sandbox/server.js';

const OTHER_KEY = 'second-test-api-key';

interface Harness {
  url: string;
  app: FastifyInstance;
  ctx: SandboxContext;
  executions: () => number;
}

let dir: string;
const open: FastifyInstance[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'remessa-idem-'));
});
afterEach(async () => {
  for (const app of open.splice(0)) await app.close();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * A sandbox with one extra test route using the shared idempotency hooks: it counts executions, can be slowed
 * (`?delayMs=`), and answers 400 when the body has `fail: true`.
 */
async function start(options: SandboxOptionsInput = {}): Promise<Harness> {
  const { app, ctx } = await buildSandboxApp({ dataFile: join(dir, 'sandbox.db'), apiKeys: [OTHER_KEY], ...options });
  let count = 0;
  app.post('/test/idempotent', { ...idempotencyFor(ctx).hooks() }, async (req) => {
    count++;
    const q = req.query as { delayMs?: string };
    if (q.delayMs) await new Promise((r) => setTimeout(r, Number(q.delayMs)));
    const body = (req.body ?? {}) as { fail?: boolean };
    if (body.fail) throw new SandboxHttpError(400, validationProblem({ '$.fail': ['Told to fail.'] }));
    return { n: count, id: randomUUID(), at: new Date().toISOString() };
  });
  app.post('/test/optional', { ...idempotencyFor(ctx).hooks({ required: false }) }, async () => {
    count++;
    return { n: count };
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  open.push(app);
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { url: `http://127.0.0.1:${port}`, app, ctx, executions: () => count };
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-service-api-key': SANDBOX_PUBLIC_API_KEY, ...headers },
    body: JSON.stringify(body),
  });
  const raw = Buffer.from(await res.body.arrayBuffer());
  return { status: res.statusCode, headers: res.headers, raw, json: raw.length ? JSON.parse(raw.toString()) : null };
}

describe('canonical fingerprint', () => {
  it('ignores key order and whitespace but not values', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[1,{"y":2,"z":1}]},"b":1}',
    );
    expect(requestFingerprint('POST', '/x', { a: 1, b: 2 })).toBe(requestFingerprint('post', '/x', { b: 2, a: 1 }));
    expect(requestFingerprint('POST', '/x', { a: 1 })).not.toBe(requestFingerprint('POST', '/x', { a: 2 }));
    expect(requestFingerprint('POST', '/x', { a: 1 })).not.toBe(requestFingerprint('POST', '/y', { a: 1 }));
  });
});

/** The same value with every object's keys in reverse order. */
function reorder(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reorder);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .reverse()
        .map((k) => [k, reorder((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

describe('canonical JSON (property)', () => {
  it('keeps a key named __proto__ (fast-check counterexample): a body with it is not the empty body', () => {
    const withProto = JSON.parse('{"__proto__":""}') as unknown;
    expect(canonicalJson(withProto)).toBe('{"__proto__":""}');
    expect(canonicalJson(withProto)).not.toBe(canonicalJson({}));
  });

  it('is independent of key order and round-trips to an equal value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const canonical = canonicalJson(value);
        expect(canonicalJson(reorder(value))).toBe(canonical);
        expect(canonicalJson(JSON.parse(JSON.stringify(value)))).toBe(canonical);
        expect(JSON.parse(canonical)).toEqual(JSON.parse(JSON.stringify(value)));
      }),
    );
  });
});

describe('sandbox idempotency over HTTP', () => {
  it('refuses a missing key and a key that is not a GUID with 400, without running the handler', async () => {
    const h = await start();
    const missing = await post(`${h.url}/test/idempotent`, { a: 1 });
    expect(missing.status).toBe(400);
    expect(missing.json.code).toBe('IDEMPOTENCY_KEY_MISSING');
    expect(missing.json.errors.IdempotencyKey[0]).toMatch(/GUID/);
    const bad = await post(`${h.url}/test/idempotent`, { a: 1 }, { IdempotencyKey: 'not-a-guid' });
    expect(bad.status).toBe(400);
    expect(bad.json.code).toBe('IDEMPOTENCY_KEY_INVALID');
    expect(bad.json.errors.IdempotencyKey[0]).toContain('"not-a-guid"');
    expect(h.executions()).toBe(0);
  });

  it('replays the first response byte for byte with Idempotent-Replayed, running the handler once', async () => {
    const h = await start();
    const key = randomUUID();
    const first = await post(`${h.url}/test/idempotent`, { a: 1, b: [1, 2] }, { IdempotencyKey: key });
    expect(first.status).toBe(200);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    // Same body with keys in another order, and the key in upper case: still the same request.
    const second = await post(`${h.url}/test/idempotent`, { b: [1, 2], a: 1 }, { idempotencykey: key.toUpperCase() });
    expect(second.status).toBe(200);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.headers['content-type']).toBe(first.headers['content-type']);
    expect(second.raw.equals(first.raw)).toBe(true);
    expect(h.executions()).toBe(1);
  });

  it('answers 422 to the same key with a different body', async () => {
    const h = await start();
    const key = randomUUID();
    expect((await post(`${h.url}/test/idempotent`, { a: 1 }, { IdempotencyKey: key })).status).toBe(200);
    const other = await post(`${h.url}/test/idempotent`, { a: 2 }, { IdempotencyKey: key });
    expect(other.status).toBe(422);
    expect(other.json.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(h.executions()).toBe(1);
  });

  it('answers 409 to the same key while the first request is still processing', async () => {
    const h = await start();
    const key = randomUUID();
    const slow = post(`${h.url}/test/idempotent?delayMs=400`, { a: 1 }, { IdempotencyKey: key });
    await new Promise((r) => setTimeout(r, 100));
    const concurrent = await post(`${h.url}/test/idempotent?delayMs=400`, { a: 1 }, { IdempotencyKey: key });
    expect(concurrent.status).toBe(409);
    expect(concurrent.json.code).toBe('IDEMPOTENCY_KEY_IN_USE');
    const first = await slow;
    expect(first.status).toBe(200);
    const after = await post(`${h.url}/test/idempotent?delayMs=400`, { a: 1 }, { IdempotencyKey: key });
    expect(after.raw.equals(first.raw)).toBe(true);
    expect(h.executions()).toBe(1);
  });

  it('scopes keys per API key', async () => {
    const h = await start();
    const key = randomUUID();
    const a = await post(`${h.url}/test/idempotent`, { a: 1 }, { IdempotencyKey: key });
    const b = await post(`${h.url}/test/idempotent`, { a: 1 }, { IdempotencyKey: key, 'x-service-api-key': OTHER_KEY });
    expect(b.headers['idempotent-replayed']).toBeUndefined();
    expect(b.json.n).not.toBe(a.json.n);
    expect(h.executions()).toBe(2);
  });

  it('keeps stored responses across a restart (SQLite)', async () => {
    const h1 = await start();
    const key = randomUUID();
    const first = await post(`${h1.url}/test/idempotent`, { a: 1 }, { IdempotencyKey: key });
    await h1.app.close();
    open.splice(open.indexOf(h1.app), 1);
    const h2 = await start();
    const again = await post(`${h2.url}/test/idempotent`, { a: 1 }, { IdempotencyKey: key });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.raw.equals(first.raw)).toBe(true);
    expect(h2.executions()).toBe(0);
  });

  it('all-outcomes (default) replays an error; successes-only runs a retry again', async () => {
    const all = await start();
    const key = randomUUID();
    const failed = await post(`${all.url}/test/idempotent`, { fail: true }, { IdempotencyKey: key });
    expect(failed.status).toBe(400);
    const replay = await post(`${all.url}/test/idempotent`, { fail: true }, { IdempotencyKey: key });
    expect(replay.status).toBe(400);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.raw.equals(failed.raw)).toBe(true);
    expect(all.executions()).toBe(1);
    await all.app.close();
    open.splice(open.indexOf(all.app), 1);
    rmSync(join(dir, 'sandbox.db'), { force: true });

    const only = await start({ idempotencyModel: 'successes-only' });
    const key2 = randomUUID();
    expect((await post(`${only.url}/test/idempotent`, { fail: true }, { IdempotencyKey: key2 })).status).toBe(400);
    const rerun = await post(`${only.url}/test/idempotent`, { fail: true }, { IdempotencyKey: key2 });
    expect(rerun.headers['idempotent-replayed']).toBeUndefined();
    expect(only.executions()).toBe(2);
  });

  it('with required: false runs without a key but still checks one that is present', async () => {
    const h = await start();
    expect((await post(`${h.url}/test/optional`, {})).status).toBe(200);
    expect((await post(`${h.url}/test/optional`, {})).status).toBe(200);
    expect((await post(`${h.url}/test/optional`, {}, { IdempotencyKey: 'nope' })).status).toBe(400);
    const key = randomUUID();
    const a = await post(`${h.url}/test/optional`, {}, { IdempotencyKey: key });
    const b = await post(`${h.url}/test/optional`, {}, { IdempotencyKey: key });
    expect(b.raw.equals(a.raw)).toBe(true);
    expect(h.executions()).toBe(3);
  });
});
