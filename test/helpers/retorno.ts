/**
 * The world of a retorno test, per test: a temp folder, a store, and a sandbox on port 0 with a bank client on it,
 * all on ONE clock of the test's (the bank's `now` and remessa's `now` read the same `Date`, which the test moves by
 * `world.clock = ...`). Rows are stored as the engine stores a succeeded row (`storeSucceeded`), and a pass of the
 * retorno runs on the world's store, client, outbox and clock (`world.pass`). Used by the retorno tests
 * (test/retorno-*.test.ts). Call it at the top of a file or inside a `describe.each(engines)` body: it registers its
 * own beforeEach/afterEach there.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect } from 'vitest';
import type { BankClient } from '../../src/bank/client.js';
import type { BankClientOptions } from '../../src/bank/options.js';
import type { Dialect, StepOutput } from '../../src/batches/kind.js';
import { createLogger } from '../../src/log.js';
import { type RetornoPassOptions, type RetornoPassResult, retornoPass } from '../../src/runner/retorno.js';
import type { SandboxOptionsInput } from '../../src/sandbox/options.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY } from '../../src/sandbox/server.js';
import { openStore, type Store } from '../../src/store/index.js';
import { Things } from '../../src/store/things.js';
import type { KindName } from '../../src/types.js';
import { type RawMethod, type RawResponse, rawRequest, sandboxPerTest } from './sandbox.js';
import type { StoreEngine } from './stores.js';

const silent = createLogger({ level: 'silent' });

/** The dialect of a UTF-8 file with a comma and a decimal point, the batches' default here. */
export const UTF8_COMMA: Dialect = { delimiter: ',', decimalMark: '.', encoding: 'utf8', bom: false, lineEnding: '\n' };

export interface RetornoWorldOptions {
  /** The temp folder's name begins `remessa-${prefix}-`. */
  prefix: string;
  /** Where the clock stands when each test begins (an ISO instant). */
  start: string;
  /** The store's engine (test/helpers/stores.ts). @defaultValue a SQLite file in the test's folder (`openStore`) */
  engine?: StoreEngine;
  /** Start a sandbox and a client on the clock for each test. @defaultValue true */
  bank?: boolean;
}

/** One row stored as succeeded: what its step read (`parsed`) and what its step answered (`outputs`). */
export interface SucceededRow {
  parsed: unknown;
  outputs: StepOutput;
  /** @defaultValue 1000 */
  amountCents?: number;
  /** @defaultValue a fresh UUID */
  naturalKey?: string;
  /** The row's cells as the file had them. @defaultValue `{ x: '1' }` */
  record?: Record<string, string>;
}

/** The batch the rows of `storeSucceeded` belong to. */
export interface SucceededBatch {
  /** @defaultValue `b-<uuid>` */
  batchId?: string;
  /** @defaultValue `${kind}.csv` */
  fileName?: string;
  /** @defaultValue UTF8_COMMA */
  dialect?: Dialect;
  /** @defaultValue the first row's record's names */
  header?: string[];
  /** The name of the step that succeeded. @defaultValue 'step' */
  step?: string;
}

/**
 * A batch of `kind` whose rows (lines 2, 3, ...) succeeded, stored as the engine stores them: ingested valid, the
 * intent of their one step recorded, then its outputs. Returns the batch's id.
 */
export async function storeSucceeded(
  store: Store,
  kind: KindName,
  rows: readonly SucceededRow[],
  batch: SucceededBatch = {},
): Promise<string> {
  const batchId = batch.batchId ?? `b-${randomUUID()}`;
  const step = batch.step ?? 'step';
  const record = (r: SucceededRow) => r.record ?? { x: '1' };
  await store.createBatch({
    id: batchId,
    kind,
    fileName: batch.fileName ?? `${kind}.csv`,
    dialect: batch.dialect ?? UTF8_COMMA,
    header: batch.header ?? Object.keys(rows[0] ? record(rows[0]) : { x: '1' }),
  });
  await store.ingest(
    batchId,
    rows.map((r, i) => ({
      line: i + 2,
      record: record(r),
      valid: true as const,
      parsed: r.parsed,
      naturalKey: r.naturalKey ?? randomUUID(),
      idempotencyKey: randomUUID(),
      amountCents: r.amountCents ?? 1000,
    })),
  );
  await store.finishIngest(batchId, 'send-valid');
  for (let i = 0; i < rows.length; i++) {
    await store.recordIntent(batchId, i + 2, step);
    await store.recordStepDone(batchId, i + 2, step, rows[i]!.outputs, true);
  }
  return batchId;
}

export function retornoPerTest(options: RetornoWorldOptions) {
  let clock = new Date(options.start);
  const now = () => clock;
  const bank = sandboxPerTest({
    sandbox: { port: 0, now, claimFixtures: false },
    client: { apiKey: SANDBOX_PUBLIC_API_KEY },
  });
  let dir: string;
  let store: Store;
  let sandbox: RunningSandbox | undefined;
  let client: BankClient | undefined;

  beforeEach(async () => {
    clock = new Date(options.start);
    dir = mkdtempSync(path.join(tmpdir(), `remessa-${options.prefix}-`));
    ({ sandbox, client } = options.bank === false ? { sandbox: undefined, client: undefined } : await bank.setup());
    store = options.engine
      ? await options.engine.open({ now })
      : await openStore(path.join(dir, 'store.sqlite'), { now });
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const started = <T>(what: T | undefined): T => {
    if (what === undefined) throw new Error('retornoPerTest: no bank in this world (bank: false)');
    return what;
  };

  return {
    /** The one clock of the bank and of remessa. */
    get clock(): Date {
      return clock;
    },
    set clock(at: Date) {
      clock = at;
    },
    /** Reads the clock; what the sandbox, the store and the retorno were given. */
    now,
    get dir(): string {
      return dir;
    },
    get outboxDir(): string {
      return path.join(dir, 'outbox');
    },
    get store(): Store {
      return store;
    },
    get sandbox(): RunningSandbox {
      return started(sandbox);
    },
    get client(): BankClient {
      return started(client);
    },
    /**
     * A further sandbox on the same clock, with a client on it, closed after the test (another provider's dialect:
     * `profile` goes to both).
     */
    startBank(
      sandboxOptions: SandboxOptionsInput,
      clientOptions: Partial<Omit<BankClientOptions, 'baseUrl'>> = {},
    ): Promise<{ sandbox: RunningSandbox; client: BankClient }> {
      return bank.setup(sandboxOptions, clientOptions);
    },
    /** One pass of the retorno: reconciling with the world's bank (when it has one) unless `overrides` say not. */
    pass(overrides: Partial<RetornoPassOptions> = {}): Promise<RetornoPassResult> {
      return retornoPass({
        store,
        client,
        outboxDir: path.join(dir, 'outbox'),
        logger: silent,
        reconcile: true,
        now,
        ...overrides,
      });
    },
    /** The things' view of the store on the clock. */
    things(): Things {
      return new Things(store, { now });
    },
    /** One succeeded row of `kind`, line 2 of a batch of its own (`storeSucceeded`); the batch's id. */
    succeeded(
      kind: KindName,
      parsed: unknown,
      outputs: StepOutput,
      row: Omit<SucceededRow, 'parsed' | 'outputs'> & SucceededBatch = {},
    ): Promise<string> {
      return storeSucceeded(store, kind, [{ parsed, outputs, ...row }], row);
    },
    /**
     * A request to the world's sandbox without the bank client (its staging and admin routes: pay, expire, move a
     * claim), with the public key; the test fails unless the sandbox answers 200.
     */
    async atBank(method: RawMethod, route: string, body?: unknown): Promise<RawResponse> {
      const res = await rawRequest(started(sandbox), method, route, body, {
        'x-service-api-key': SANDBOX_PUBLIC_API_KEY,
      });
      expect(res.status, res.text).toBe(200);
      return res;
    },
  };
}
