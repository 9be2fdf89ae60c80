/**
 * The sandbox's edge: it serves either provider profile (src/formats/profiles.ts) with ONE implementation of the rules,
 * the ledger, the faults and the webhooks. The route modules speak the `interface` dialect; for `delbank` this
 * module translates at the edge, before routing and after the handler:
 *
 *   request URL      /baas/v1/charges...                 -> /v1/charges...
 *                    /baas/api/v2/pix/qrcode/dynamic...  -> /baas/api/v1/pix/qrcode/dynamic...
 *                    /baas/api/v2/transfers[/{id}]       -> {pixPaymentPath}[/{id}]
 *                    a path only the other dialect has   -> 404 (as a bank answers an unknown path)
 *   request headers  x-delbank-api-key                   checked by auth.ts (the profile's `apiKeyHeader`)
 *                    x-delfinance-account-id             -> x-service-account-id (the spec's name is dropped)
 *   request body     dynamic QR `expiresIn` "86400"      -> 86400 (the provider's clients send a string)
 *                    dynamic QR `address.cityName/zipCode` -> `city.name/zipCode` (the spec's `city` is dropped)
 *                    static QR `additionalInformation`   dropped: the provider reads the payer's text as
 *                                                        `additionalInfo` (its clients' name), not the spec's
 *   response body    dynamic QR `qrCodePayload`          -> `payloadPix`, plus `transactionId` (the txid)
 *                    initialization `expiresAt`          -> `expirationTime`
 *                    static QR `payments[].receivedAt`   -> `createdAt` (the provider's QrCodePaymentDTO: endToEndId,
 *                    (GET .../static/{id}[/payments])    correlationId, amount, createdAt)
 *
 * The `delbank` dialect also sends no IdempotencyKey on the payment initialization and the static QR creation: those
 * routes ask `idempotencyKeyRequired` (the key is still honoured when sent). Faults and idempotency records are keyed
 * by the interface route the request was rewritten to, so a fault rule names the same route in both profiles.
 *
 * What must hold: a client of the wrong dialect is refused as a bank would refuse it (401 for an API key under
 * another header name, 404 for a path of the other dialect), and nothing a handler decides depends on the dialect.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parseBrCode } from '../formats/brcode.js';
import { BANK_PROFILE_DEFINITIONS, type BankProfileName, type KeyedOperation } from '../formats/profiles.js';

export type { BankProfileName } from '../formats/profiles.js';

/** Prefix a rewritten URL gets when its path belongs to the other dialect: no route matches it (404). */
const UNKNOWN_PATH_PREFIX = '/.not-in-this-profile';

const INTERFACE = BANK_PROFILE_DEFINITIONS.interface;
const DELBANK = BANK_PROFILE_DEFINITIONS.delbank;

/** `template` without its `{...}` tail: the fixed prefix of a family of paths. */
function prefixOf(template: string): string {
  const i = template.indexOf('/{');
  return i < 0 ? template : template.slice(0, i);
}

/** Whether `path` is `prefix` or below it (`prefix/...`). */
function under(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(`${prefix}/`);
}

interface Alias {
  /** The delbank prefix. */
  from: string;
  /** The interface prefix it maps to. */
  to: string;
}

function delbankAliases(pixPaymentPath: string): Alias[] {
  return [
    { from: prefixOf(DELBANK.paths.charges), to: prefixOf(INTERFACE.paths.charges) },
    { from: prefixOf(DELBANK.paths.dynamicQr), to: prefixOf(INTERFACE.paths.dynamicQr) },
    { from: prefixOf(DELBANK.paths.pixPayment), to: pixPaymentPath },
  ];
}

/** Interface-only prefixes: unknown paths to a delbank client. */
function interfaceOnly(pixPaymentPath: string): string[] {
  return [
    prefixOf(INTERFACE.paths.charges),
    prefixOf(INTERFACE.paths.dynamicQr),
    // The spec also shows the dynamic QR creation sent here (src/sandbox/routes/qr-codes.ts).
    '/baas/api/v1/charges',
    pixPaymentPath,
  ];
}

/**
 * The URL the router sees for `url` under `profile` (fastify's `rewriteUrl`). `interface` needs no rewriting: a
 * delbank-only path simply has no route.
 */
export function rewriteUrlFor(profile: BankProfileName, pixPaymentPath: string): (url: string) => string {
  if (profile === 'interface') return (url) => url;
  const aliases = delbankAliases(pixPaymentPath);
  const blocked = interfaceOnly(pixPaymentPath);
  return (url) => {
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const query = q < 0 ? '' : url.slice(q);
    for (const a of aliases) {
      if (under(path, a.from)) return `${a.to}${path.slice(a.from.length)}${query}`;
    }
    if (blocked.some((p) => under(path, p))) return `${UNKNOWN_PATH_PREFIX}${url}`;
    return url;
  };
}

/** The `rewriteUrl` option of the fastify constructor. */
export function fastifyRewriteUrl(
  profile: BankProfileName,
  pixPaymentPath: string,
): ((req: IncomingMessage) => string) | undefined {
  if (profile === 'interface') return undefined;
  const rewrite = rewriteUrlFor(profile, pixPaymentPath);
  return (req) => rewrite(req.url ?? '/');
}

/** Whether a keyed route of the sandbox refuses a request without IdempotencyKey under `profile`. */
export function idempotencyKeyRequired(profile: BankProfileName, operation: KeyedOperation): boolean {
  return !BANK_PROFILE_DEFINITIONS[profile].keyless.has(operation);
}

function originalPath(request: FastifyRequest): string {
  const url = request.originalUrl ?? request.url;
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/** The txid a dynamic BR Code carries at the end of its location URL, if any. */
function txidOfPayload(payload: string): string | undefined {
  try {
    const code = parseBrCode(payload);
    if (code.txid && code.txid !== '***') return code.txid;
    return code.url?.split('/').filter(Boolean).pop();
  } catch {
    return undefined;
  }
}

/** A static code's payment as the provider writes it: `createdAt` for the sandbox's `receivedAt`. */
function asProviderPayment(p: unknown, correlationId?: unknown): unknown {
  if (p === null || typeof p !== 'object' || !('receivedAt' in p)) return p;
  const { receivedAt, ...rest } = p as Record<string, unknown>;
  return { ...(correlationId === undefined ? {} : { correlationId }), ...rest, createdAt: receivedAt };
}

/**
 * Adds the hooks that translate headers and bodies at the edge (see the top of this file). Call once, before the
 * route modules. `interface` adds nothing.
 */
export function installProfileEdge(app: FastifyInstance, profile: BankProfileName): void {
  if (profile === 'interface') return;
  const accountHeader = DELBANK.headers.accountId.toLowerCase();
  const interfaceAccountHeader = INTERFACE.headers.accountId.toLowerCase();
  const dynamicPrefix = prefixOf(DELBANK.paths.dynamicQr);
  const initializationPath = DELBANK.paths.pixPaymentInitialization;
  const staticPath = DELBANK.paths.staticQr;

  app.addHook('onRequest', async (request) => {
    // Only the profile's own header names count: the spec's account header from a wrong-dialect client is dropped.
    delete request.headers[interfaceAccountHeader];
    const account = request.headers[accountHeader];
    if (account !== undefined) request.headers[interfaceAccountHeader] = account;
  });

  app.addHook('preValidation', async (request) => {
    if (request.method !== 'POST') return;
    const path = originalPath(request);
    const body = request.body as Record<string, unknown> | undefined;
    if (path === staticPath) {
      if (body && typeof body === 'object') delete body.additionalInformation;
      return;
    }
    if (path !== dynamicPrefix || !body || typeof body !== 'object') return;
    if (typeof body.expiresIn === 'string' && /^\d+$/.test(body.expiresIn)) body.expiresIn = Number(body.expiresIn);
    // The city as the provider's clients send it (`address: {cityName, zipCode}`); the spec's `city` is not read.
    delete body.city;
    const address = body.address as Record<string, unknown> | undefined;
    if (address && typeof address === 'object' && !Array.isArray(address)) {
      body.city = { name: address.cityName, zipCode: address.zipCode };
      delete body.address;
    }
  });

  app.addHook('onSend', async (request, reply, payload) => {
    if (reply.statusCode < 200 || reply.statusCode >= 300 || typeof payload !== 'string') return payload;
    const path = originalPath(request);
    const isDynamic = under(path, dynamicPrefix);
    const isInitialization = path === initializationPath;
    const isStaticRead = request.method === 'GET' && under(path, staticPath) && path !== staticPath;
    if (!isDynamic && !isInitialization && !isStaticRead) return payload;
    let data: unknown;
    try {
      data = JSON.parse(payload);
    } catch {
      return payload;
    }
    if (isStaticRead && Array.isArray(data)) return JSON.stringify(data.map((p) => asProviderPayment(p)));
    if (data === null || typeof data !== 'object' || Array.isArray(data)) return payload;
    const record = data as Record<string, unknown>;
    if (isDynamic && typeof record.qrCodePayload === 'string') {
      const { qrCodePayload, ...rest } = record;
      const txid = txidOfPayload(qrCodePayload);
      return JSON.stringify({ ...rest, ...(txid ? { transactionId: txid } : {}), payloadPix: qrCodePayload });
    }
    if (isStaticRead && Array.isArray(record.payments)) {
      const payments = record.payments.map((p: unknown) => asProviderPayment(p, record.correlationId));
      return JSON.stringify({ ...record, payments });
    }
    if (isInitialization && 'expiresAt' in record) {
      const { expiresAt, ...rest } = record;
      return JSON.stringify({ ...rest, expirationTime: expiresAt });
    }
    return payload;
  });
}
