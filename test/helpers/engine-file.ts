/**
 * One file through the engine (`processBatch`) against a sandbox in process, per test: the setup the engine's rule
 * tests share (test/engine-refusal.test.ts, test/failed-row-again.test.ts). Registers its own beforeEach/afterEach: a
 * temp folder, a queue, a sandbox and a client without retries of its own (the engine owns them); the test opens the
 * store (`engine.open()`, test/helpers/stores.ts) and gives it with `useStore`, and it is closed after the test.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import { afterEach, beforeEach } from 'vitest';
import type { BankClient } from '../../src/bank/client.js';
import type { BankClientOptions } from '../../src/bank/options.js';
import type { BatchKind } from '../../src/batches/kind.js';
import { readBatch } from '../../src/csv/reader.js';
import type { Locale } from '../../src/i18n/index.js';
import { RequestQueue } from '../../src/queue/index.js';
import type { CredentialsRefusedSettings } from '../../src/runner/bank-gate.js';
import { processBatch } from '../../src/runner/engine.js';
import type { SandboxOptionsInput } from '../../src/sandbox/options.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY } from '../../src/sandbox/server.js';
import type { BatchPolicy, Store } from '../../src/store/index.js';
import { sandboxPerTest } from './sandbox.js';

export interface EngineFileOptions {
  /** Runs in each wait between two attempts (the engine's `sleep`). */
  between?: () => Promise<void>;
  /** @defaultValue 'en' */
  locale?: Locale;
  /** @defaultValue 4 */
  maxAttempts?: number;
  /** @defaultValue the kind's (all-or-nothing for kinds that move money out) */
  policy?: BatchPolicy;
  /** While the bank refuses the key (src/runner/bank-gate.ts). @defaultValue the engine's: every 60 s, waiting */
  credentialsRefused?: CredentialsRefusedSettings;
}

/** The bank of every test of the file: the sandbox's options and the client's (a dialect: both `profile`). */
export interface EngineFileBank {
  sandbox?: SandboxOptionsInput;
  client?: Partial<Omit<BankClientOptions, 'baseUrl'>>;
}

export function engineFilePerTest(prefix: string, bankOptions: EngineFileBank = {}) {
  const bank = sandboxPerTest({
    sandbox: { port: 0, ...bankOptions.sandbox },
    client: { apiKey: SANDBOX_PUBLIC_API_KEY, ...bankOptions.client },
  });
  let dir: string;
  let sandbox: RunningSandbox;
  let client: BankClient;
  let store: Store | undefined;
  let queue: RequestQueue;

  beforeEach(async () => {
    dir = mkdtempSync(path.join(tmpdir(), `remessa-${prefix}-`));
    queue = new RequestQueue({ concurrency: 2 });
    store = undefined;
    ({ sandbox, client } = await bank.setup());
  });
  afterEach(async () => {
    await store?.close();
    queue.close();
    rmSync(dir, { recursive: true, force: true });
  });

  return {
    get sandbox(): RunningSandbox {
      return sandbox;
    },
    get client(): BankClient {
      return client;
    },
    /** The test's request queue (the bank gate is its: src/runner/engine.ts `bankGateOf`). */
    get queue(): RequestQueue {
      return queue;
    },
    get store(): Store {
      if (store === undefined) throw new Error('engineFilePerTest: no store given (useStore) in this test');
      return store;
    },
    /** Moves a key claim to `status` through the sandbox's admin route (a claim's life at the bank, as a test needs). */
    async moveClaim(claimId: string, status: string): Promise<void> {
      const res = await request(`${sandbox.url}/__sandbox/claims/${claimId}`, {
        method: 'PATCH',
        headers: { 'x-service-api-key': SANDBOX_PUBLIC_API_KEY, 'content-type': 'application/json' },
        body: JSON.stringify({ status }),
      });
      await res.body.dump();
      if (res.statusCode !== 200) throw new Error(`moveClaim ${claimId} ${status}: HTTP ${res.statusCode}`);
    },
    /** The store of this test (closed after it). */
    useStore(s: Store): void {
      store = s;
    },
    /** One file of `kind` (its content `csv`, a batch of its own) through the engine; the result and line 2's row. */
    async runFile(kind: BatchKind<never>, csv: string, options: EngineFileOptions = {}) {
      const s = this.store;
      const file = path.join(dir, `${kind.name}.csv`);
      writeFileSync(file, csv);
      const batchId = createHash('sha256').update(readFileSync(file)).digest('hex');
      const reader = await readBatch(file, { columns: kind.columns });
      try {
        const result = await processBatch({
          store: s,
          kind,
          batchId,
          fileName: path.basename(file),
          input: reader,
          client,
          queue,
          filesDir: path.join(dir, 'files'),
          accountId: 'acc-1',
          retry: { maxAttempts: options.maxAttempts ?? 4, baseDelayMs: 10, maxDelayMs: 20, maxRetryAfterMs: 10 },
          random: () => 0.5,
          sleep: async () => (options.between ?? (async () => undefined))(),
          locale: options.locale ?? 'en',
          ...(options.credentialsRefused ? { credentialsRefused: options.credentialsRefused } : {}),
          ...(options.policy ? { policy: options.policy } : {}),
        });
        return { result, batchId, row: (await s.getRow(batchId, 2))! };
      } finally {
        reader.close();
      }
    },
  };
}
