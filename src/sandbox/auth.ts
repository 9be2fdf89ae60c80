/**
 * API key check (spec section 5): every route, admin routes included, needs a known key in `x-service-api-key`
 * (the header name is the `apiKeyHeader` setting, by default the profile's: `x-delbank-api-key` for `delbank`).
 * Missing or unknown key: 401 with a problem body; a key under another profile's header name counts as missing.
 *
 * Known keys are the configured `apiKeys` plus `SANDBOX_PUBLIC_API_KEY` (unless `allowPublicKey` is false). The
 * public key works everywhere except webhook configuration (the webhooks area checks `request.sandboxAuth.isPublic`).
 * Key comparison is constant-time so the sandbox does not teach bad habits; keys never appear in responses or logs.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { registerSecret } from '../log.js';
import { SANDBOX_PUBLIC_API_KEY, type SandboxOptions } from './options.js';
import { httpErrors, sendHttpError } from './problems.js';

export interface SandboxAuth {
  /** The key the request carried (never log it). */
  apiKey: string;
  /** True for the public test key: may not configure webhooks. */
  isPublic: boolean;
  /** A short non-secret id of the key (first 16 hex of its SHA-256), to scope per-key data such as webhooks. */
  keyId: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    sandboxAuth: SandboxAuth;
  }
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** Non-secret id of a key, stable across restarts. */
export function apiKeyId(apiKey: string): string {
  return digest(apiKey).toString('hex').slice(0, 16);
}

/** What the key check counts, for the admin route `GET /__sandbox/auth`. */
export interface ApiKeyCheck {
  /** Requests refused 401 (missing or unknown key) since the sandbox started. */
  refused(): number;
}

/** Adds the onRequest hook that authenticates every request. */
export function installApiKeyCheck(app: FastifyInstance, options: SandboxOptions): ApiKeyCheck {
  let refused = 0;
  const known: Array<{ key: string; hash: Buffer; isPublic: boolean }> = options.apiKeys.map((k) => ({
    key: k,
    hash: digest(k),
    isPublic: false,
  }));
  if (options.allowPublicKey) {
    known.push({ key: SANDBOX_PUBLIC_API_KEY, hash: digest(SANDBOX_PUBLIC_API_KEY), isPublic: true });
  }
  for (const k of options.apiKeys) registerSecret(k);
  const header = options.apiKeyHeader.toLowerCase();

  app.decorateRequest('sandboxAuth', null as unknown as SandboxAuth);
  app.addHook('onRequest', async (request: FastifyRequest, reply) => {
    const raw = request.headers[header];
    const value = Array.isArray(raw) ? raw[0] : raw;
    if (!value) {
      refused++;
      return sendHttpError(reply, httpErrors.problem(401, 'Unauthorized', `Missing API key header ${header}.`));
    }
    const hash = digest(value);
    // Compare against every key (no early exit) so timing does not reveal which prefix matched.
    let match: (typeof known)[number] | undefined;
    for (const k of known) if (timingSafeEqual(hash, k.hash) && !match) match = k;
    if (!match) {
      refused++;
      return sendHttpError(reply, httpErrors.problem(401, 'Unauthorized', `Unknown API key in header ${header}.`));
    }
    request.sandboxAuth = { apiKey: value, isPublic: match.isPublic, keyId: apiKeyId(value) };
  });
  return { refused: () => refused };
}
