/**
 * A sandbox (and a bank client on it) per test, closed after the test, and raw HTTP requests to it for the routes and
 * bodies the bank client does not offer. Used by the sandbox route tests (bill and Pix payments, QR codes, claims,
 * webhooks).
 */
import { type Dispatcher, request } from 'undici';
import { afterEach } from 'vitest';
import { BankClient } from '../../src/bank/client.js';
import type { BankClientOptions } from '../../src/bank/options.js';
import type { SandboxOptionsInput } from '../../src/sandbox/options.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY, startSandbox } from '../../src/sandbox/server.js';

export interface SandboxPerTestDefaults {
  /** Options every sandbox of the file starts with; `setup(options)` overrides them key by key. */
  sandbox?: SandboxOptionsInput;
  /** The client's options but its `baseUrl`; `maxAttempts` is 1 unless given, so a test sees the first answer. */
  client: Omit<BankClientOptions, 'baseUrl'>;
}

/**
 * Registers an `afterEach` that closes every client, then every sandbox, the test started. `setup` starts a sandbox
 * with a client on it (each with the defaults, overridden key by key); `closeAfterTest` hands a further client to the
 * same clean-up.
 */
export function sandboxPerTest(defaults: SandboxPerTestDefaults) {
  const running: RunningSandbox[] = [];
  const clients: BankClient[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.close();
    for (const s of running.splice(0)) await s.close();
  });
  return {
    async setup(
      options: SandboxOptionsInput = {},
      clientOptions: Partial<SandboxPerTestDefaults['client']> = {},
    ): Promise<{ sandbox: RunningSandbox; client: BankClient }> {
      const sandbox = await startSandbox({ ...defaults.sandbox, ...options });
      running.push(sandbox);
      const client = new BankClient({ baseUrl: sandbox.url, maxAttempts: 1, ...defaults.client, ...clientOptions });
      clients.push(client);
      return { sandbox, client };
    },
    closeAfterTest(client: BankClient): BankClient {
      clients.push(client);
      return client;
    },
  };
}

/** A payer address the sandbox accepts, for charges the payment tests create. */
export const PAYER_ADDRESS = {
  zipCode: '01310100',
  publicPlace: 'Avenida Paulista',
  neighborhood: 'Bela Vista',
  number: '1000',
  city: 'Sao Paulo',
  state: 'SP',
};

export type RawMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** A response read whole: its body as text and, when it is not empty, parsed as JSON. */
export interface RawResponse {
  status: number;
  headers: Dispatcher.ResponseData['headers'];
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read response bodies field by field
  json: any;
}

/** The public test key with a JSON content type on every request, body or not (the payment and QR code tests). */
export const PUBLIC_KEY_JSON_HEADERS: Readonly<Record<string, string>> = {
  'x-service-api-key': SANDBOX_PUBLIC_API_KEY,
  'content-type': 'application/json',
};

/**
 * One request to `sandbox` without the bank client. A `body` is sent as JSON with `content-type: application/json`
 * (which `headers` may override); `headers` carry the API key and whatever else the test sends (e.g. IdempotencyKey).
 */
export async function rawRequest(
  sandbox: Pick<RunningSandbox, 'url'>,
  method: RawMethod,
  path: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<RawResponse> {
  const res = await request(`${sandbox.url}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
}
