/**
 * Settings of the sandbox (the local simulator of the bank).
 *
 * Parsed once by `parseSandboxOptions` (zod, unknown keys rejected, result frozen). Every field is optional on input;
 * the defaults below describe a sandbox that needs no configuration: in-memory state, a random free port on the
 * loopback interface, and the documented public test key.
 *
 * Area owners add their settings in the marked sections (H4: idempotency, faults, Pix payments; H5: webhooks).
 */
import type { Logger } from 'pino';
import { z } from 'zod';
import { BANK_PROFILE_DEFINITIONS, BANK_PROFILES } from '../formats/profiles.js';
import { faultRuleSchema } from './faults.js';

/**
 * The documented public test API key. Any user may send it, as the spec says of the test environment's public keys;
 * like them, it may not be used to configure webhooks. Accepted unless `allowPublicKey` is false.
 */
export const SANDBOX_PUBLIC_API_KEY = 'sandbox-public-test-key';

/** Prefix of the sandbox-only admin routes; no route of the real service starts with it. Admin routes need a key too. */
export const SANDBOX_ADMIN_PREFIX = '/__sandbox';

const beneficiarySchema = z.strictObject({
  /** Name printed on slips and sent in BR Codes (field 59 keeps the first 25 characters). */
  name: z.string().min(1).default('REMESSA SANDBOX LTDA'),
  /** CNPJ of the beneficiary, digits only. */
  document: z.string().min(1).default('11222333000181'),
  /** City printed on slips and sent in BR Codes (field 60 keeps the first 15 characters). */
  city: z.string().min(1).default('SAO PAULO'),
  /** Two-letter state code. */
  state: z.string().length(2).default('SP'),
  /** Zip code (CEP), 8 digits. */
  zipCode: z.string().default('01310100'),
  /** Street address printed on slips. */
  address: z.string().default('AV PAULISTA 1000'),
  /** Pix key of the beneficiary, put in static BR Codes (random EVP key by default). */
  pixKey: z.string().min(1).default('6f0b8e9e-5d1c-4a3b-9a43-5b1f2f7c1a2e'),
  /** Branch (agency) number, printed on slips and in QR beneficiaries. */
  branch: z.string().default('0001'),
  /** Account number of the beneficiary. */
  accountNumber: z.string().default('1234567'),
});

export const sandboxOptionsSchema = z.strictObject({
  /** Interface to listen on. @defaultValue '127.0.0.1' */
  host: z.string().min(1).default('127.0.0.1'),
  /** TCP port; 0 picks a free port (read it back from `RunningSandbox.port`). @defaultValue 0 */
  port: z.number().int().min(0).max(65535).default(0),
  /**
   * HTTPS: the server's certificate and key (PEM text), and `clientCa`, the CA whose client certificates are
   * accepted: with it, a client without a certificate from that CA is refused during the TLS handshake (mutual TLS,
   * as a bank's production gateway does). It is a property of the listener only: every route, profile and admin
   * route is served the same way over it. @defaultValue undefined (plain HTTP)
   */
  tls: z
    .strictObject({
      cert: z.string().min(1),
      key: z.string().min(1),
      clientCa: z.string().min(1).optional(),
    })
    .optional(),
  /**
   * SQLite file that holds the sandbox's state, so it survives a restart. Absent: an in-memory database, lost on close.
   * @defaultValue undefined (in memory)
   */
  dataFile: z.string().min(1).optional(),
  /** API keys accepted besides the public test key (e.g. from config or `--api-key`). @defaultValue [] */
  apiKeys: z.array(z.string().min(1)).default([]),
  /** Whether `SANDBOX_PUBLIC_API_KEY` is accepted (it can never register webhooks). @defaultValue true */
  allowPublicKey: z.boolean().default(true),
  /**
   * The dialect served (src/sandbox/profiles.ts): 'interface' (the spec) or 'delbank' (the provider's official
   * clients). Same rules, ledger, faults and webhooks in both. @defaultValue 'interface'
   */
  profile: z.enum(BANK_PROFILES).default('interface'),
  /** Header that carries the API key. @defaultValue the profile's ('x-service-api-key'; 'x-delbank-api-key') */
  apiKeyHeader: z.string().min(1).optional(),
  /** Bank code at the start of every bar code the sandbox makes (the service's samples use 435). @defaultValue '435' */
  bankCode: z
    .string()
    .regex(/^\d{3}$/, 'Expected 3 digits')
    .default('435'),
  /** ISPB of the simulated participant (used in endToEndIds and participant objects). @defaultValue '38224857' */
  ispb: z
    .string()
    .regex(/^\d{8}$/, 'Expected 8 digits')
    .default('38224857'),
  /** Participant name shown next to the ISPB. @defaultValue 'REMESSA SANDBOX BANK' */
  participantName: z.string().min(1).default('REMESSA SANDBOX BANK'),
  /** The beneficiary of the charges the sandbox issues (slips and Pix charges). */
  beneficiary: beneficiarySchema.prefault({}),
  /**
   * Host and path (no scheme) of the Pix location URLs put in dynamic BR Codes; the txid is appended.
   * @defaultValue 'pix.sandbox.remessa.dev/qr/v2/cobv/'
   */
  pixLocationBase: z.string().min(1).default('pix.sandbox.remessa.dev/qr/v2/cobv/'),
  /**
   * Clock override for tests: returns the sandbox's "now". Every timestamp, due-date check and expiry reads it.
   * @defaultValue () => new Date()
   */
  now: z.custom<() => Date>((v) => typeof v === 'function', 'Expected a function returning a Date').optional(),
  /** pino logger for requests and sandbox events. Absent: no logging. @defaultValue undefined */
  logger: z.custom<Logger>((v) => typeof v === 'object' && v !== null, 'Expected a pino logger').optional(),

  // --- H4 settings (idempotency model, faults, Pix payment TTL) go here ---
  /**
   * Which responses an IdempotencyKey replays: 'all-outcomes' stores every response produced once the request began
   * executing (errors too); 'successes-only' stores 2xx only and frees the key otherwise. See src/sandbox/idempotency.ts.
   * @defaultValue 'all-outcomes'
   */
  idempotencyModel: z.enum(['all-outcomes', 'successes-only']).default('all-outcomes'),
  /** Fault rules active from start (src/sandbox/faults.ts); `PUT /__sandbox/faults` replaces them. @defaultValue [] */
  faults: z.array(faultRuleSchema).default([]),
  /** Seed of the fault PRNG: the same seed and request sequence give the same faults. @defaultValue 1 */
  faultSeed: z.number().int().default(1),
  /**
   * Crash tests only: the first request matching this route (a fault rule's `route`: '*', a pattern, or 'METHOD
   * pattern') that produced its answer kills the whole process (SIGKILL) before the answer is sent: its effect and
   * stored answer are committed, the client hears nothing, and the bank restarts from its data file. The `sandbox`
   * command sets it from the environment variable REMESSA_SANDBOX_CRASH_AFTER_COMMIT; never set it on a sandbox
   * embedded in another process. @defaultValue undefined (never)
   */
  crashAfterCommit: z.string().min(1).optional(),
  /** How long the endToEndId of a QR payment initialization stays usable, in seconds. @defaultValue 900 */
  pixEndToEndIdTtlSeconds: z.number().int().min(1).default(900),
  /**
   * Path of the Pix QR code payment operation (not shown in the spec; the client's `pixPaymentPath` must match).
   * @defaultValue '/baas/api/v2/pix/qrcode/payment'
   */
  pixPaymentPath: z.string().startsWith('/').default('/baas/api/v2/pix/qrcode/payment'),

  // --- H5 settings (webhook delivery retries, backoff) go here ---
  /**
   * How the open claim status is spelled in responses: the spec's enum says PENDIG, its samples PENDING. Both are
   * accepted on input whatever this says. See src/sandbox/claims-rules.ts. @defaultValue 'PENDIG'
   */
  claimPendingSpelling: z.enum(['PENDIG', 'PENDING']).default('PENDIG'),
  /** Whether the fixture claims of src/sandbox/claim-fixtures.ts are seeded at start (docs/sandbox.md). @defaultValue true */
  claimFixtures: z.boolean().default(true),
  /** Whether a claim still PENDIG may be cancelled (the DICT flow allows it from AWAITING_RESOLUTION). @defaultValue false */
  claimCancellableFromPending: z.boolean().default(false),
  /** Whether starting a claim for a key that already has an open claim is refused (409 CLAIM_ALREADY_OPEN). @defaultValue true */
  claimRejectDuplicateOpen: z.boolean().default(true),
  /** How often webhook delivery looks for due deliveries, in ms (it also wakes on each new event). @defaultValue 1000 */
  webhookPollIntervalMs: z.number().int().min(1).default(1000),
  /** Attempts per webhook delivery before it is marked failed. @defaultValue 8 */
  webhookMaxAttempts: z.number().int().min(1).default(8),
  /** Delay after the first failed delivery attempt, in ms; doubles after each further failure. @defaultValue 1000 */
  webhookBackoffBaseMs: z.number().int().min(0).default(1000),
  /** Upper bound of the delay between delivery attempts, in ms. @defaultValue 300000 */
  webhookBackoffMaxMs: z.number().int().min(0).default(300_000),
  /** Time allowed for one delivery attempt, in ms. @defaultValue 10000 */
  webhookTimeoutMs: z.number().int().min(1).default(10_000),
  /** Webhook deliveries attempted at the same time. @defaultValue 4 */
  webhookConcurrency: z.number().int().min(1).default(4),
  /**
   * Host name -> IP address used instead of DNS when delivering webhooks (like `curl --resolve`), so a url with a
   * real domain name can reach a local receiver. @defaultValue {}
   */
  webhookHostAddresses: z.record(z.string(), z.string()).default({}),
  /**
   * Whether webhook urls may name localhost, 127.0.0.1 or [::1] (spec section 8 asks for a domain name with a
   * top-level domain, so the real service refuses them). @defaultValue false
   */
  webhookAllowLoopbackUrls: z.boolean().default(false),
});

/** Settings as given by a caller: every field optional. */
export type SandboxOptionsInput = z.input<typeof sandboxOptionsSchema>;
/** Settings after parsing: defaults filled in (the API key header from the profile), frozen. */
export type SandboxOptions = Readonly<z.output<typeof sandboxOptionsSchema> & { apiKeyHeader: string }>;

/** Parses and freezes the options; an invalid value throws the zod error naming the field. */
export function parseSandboxOptions(input: SandboxOptionsInput = {}): SandboxOptions {
  const parsed = sandboxOptionsSchema.parse(input);
  return Object.freeze({
    ...parsed,
    apiKeyHeader: parsed.apiKeyHeader ?? BANK_PROFILE_DEFINITIONS[parsed.profile].headers.apiKey,
  });
}
