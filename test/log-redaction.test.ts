/**
 * The API key never reaches a log line: not in headers, URLs (raw or URL-encoded), error messages, error fields or
 * causes. The client registers its key as a secret itself; the test never tells the logger about it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BankClient } from '../src/bank/client.js';
import { AuthenticationError, ServiceConnectionError } from '../src/bank/errors.js';
import { type RunningSandbox, startSandbox } from '../src/sandbox/server.js';
import { memoryLogger } from './helpers/memory-logger.js';
import { closedPort } from './helpers/net.js';

// Characters that URL encoding changes, so the encoded form is a different string to find.
const API_KEY = `rk_live_${Date.now().toString(36)}/+ab=c&d?e:f`;
const ENCODED = encodeURIComponent(API_KEY);

let sandbox: RunningSandbox;

beforeAll(async () => {
  // The sandbox does not know this key: every request gets a 401.
  sandbox = await startSandbox({ port: 0 });
});

afterAll(async () => {
  await sandbox?.close();
});

describe('log redaction', () => {
  it('a 401 from the sandbox, logged every way, never shows the key', async () => {
    expect(ENCODED).not.toBe(API_KEY);
    const { logger, text: output } = memoryLogger();
    const client = new BankClient({ baseUrl: sandbox.url, apiKey: API_KEY, logger, maxAttempts: 1 });
    try {
      // The key also travels in the path (as a correlation id), so it appears URL-encoded in the request line.
      const err = await client.charges.get(API_KEY).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AuthenticationError);
      const auth = err as AuthenticationError;
      for (const text of [auth.message, auth.path, auth.raw, JSON.stringify(auth), String(auth.stack)]) {
        expect(text).not.toContain(API_KEY);
        expect(text).not.toContain(ENCODED);
      }
      logger.error({ err }, 'charge lookup failed');
      logger.warn({ error: err, message: auth.message, path: auth.path }, 'again, as fields');
      // The request as a caller might log it: headers, URL, body.
      logger.info(
        {
          req: {
            method: 'GET',
            url: `${sandbox.url}/v1/charges/${ENCODED}`,
            headers: { 'x-service-api-key': API_KEY, authorization: `Bearer ${API_KEY}` },
          },
          body: { correlationId: API_KEY },
        },
        'request',
      );
      logger.info(`free text with the key ${API_KEY} and encoded ${ENCODED}`);
    } finally {
      await client.close();
    }
    const out = output();
    expect(out).toContain('SERVICE_AUTHENTICATION');
    expect(out).toContain('[REDACTED]');
    expect(out).not.toContain(API_KEY);
    expect(out).not.toContain(ENCODED);
    // Nor the distinctive part of the key alone.
    expect(out).not.toContain(API_KEY.slice(0, 16));
  });

  it('a connection refused, logged with its cause, never shows the key', async () => {
    const { logger, text: output } = memoryLogger();
    const port = await closedPort();
    const client = new BankClient({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: API_KEY,
      logger,
      maxAttempts: 2,
      baseDelayMs: 1,
    });
    try {
      const err = await client.charges.get(API_KEY).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ServiceConnectionError);
      expect((err as ServiceConnectionError).mayHaveReachedServer).toBe(false);
      logger.error({ err, cause: (err as Error).cause }, 'bank unreachable');
    } finally {
      await client.close();
    }
    const out = output();
    expect(out).toContain('SERVICE_UNREACHABLE');
    // The client logged its retry too.
    expect(out).toContain('retrying');
    expect(out).not.toContain(API_KEY);
    expect(out).not.toContain(ENCODED);
    expect(out).not.toContain(API_KEY.slice(0, 16));
  });
});

describe('log redaction of the delbank profile header', () => {
  it('a value under x-delbank-api-key is redacted by its header name, even when never registered', () => {
    const { logger, text: output } = memoryLogger();
    const unregistered = `unregistered-${Date.now().toString(36)}`;
    logger.info({ req: { headers: { 'x-delbank-api-key': unregistered, 'X-Delbank-Api-Key': unregistered } } }, 'req');
    expect(output()).toContain('req');
    expect(output()).not.toContain(unregistered);
  });
});
