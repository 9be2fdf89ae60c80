/**
 * `validate` and the run agree with the bank (issue 8 section 4): a due date 9999-12-31 passed `validate` and failed
 * at the bank. Property: for generated rows of every kind (a valid row, then up to three cells replaced by values at
 * and beyond each limit the bank applies), whenever the kind's parse (what `validate` and the run's ingestion both
 * call) accepts a row, the sandbox, over real HTTP with the real client, accepts every request of that row: no 400,
 * no refusal that the row alone could have told. Rows are built so that the bank's state allows them (fresh ids,
 * existing charges, payable bills), so any failure is a rule remessa should have checked before sending.
 *
 * Kinds left out: charge-voids and claim-cancellations, whose only cells (an id, enums) the bank checks against its
 * state (an existing charge or claim in a cancellable status), nothing a row alone can tell.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BankClient } from '../src/bank/client.js';
import type { BatchKind, Dialect, StepOutput } from '../src/batches/kind.js';
import { KINDS } from '../src/batches/registry.js';
import { buildBankSlipBarCode } from '../src/formats/boleto.js';
import { brasiliaDay } from '../src/formats/brasilia-time.js';
import { buildStaticBrCode } from '../src/formats/brcode.js';
import { addDays } from '../src/formats/dates.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY, startSandbox } from '../src/sandbox/server.js';
import type { KindName } from '../src/types.js';

const BR: Dialect = { encoding: 'utf8', bom: false, delimiter: ';', decimalMark: ',' };
/** Rows per kind; `AGREE_RUNS=500 npx vitest run test/validate-vs-bank.test.ts` for a longer search. */
const RUNS = Number(process.env.AGREE_RUNS ?? 30);

let sandbox: RunningSandbox;
let client: BankClient;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'remessa-agree-'));
  sandbox = await startSandbox({ port: 0, dataFile: join(dir, 'sandbox.db') });
  client = new BankClient({ baseUrl: sandbox.url, apiKey: SANDBOX_PUBLIC_API_KEY, maxAttempts: 1 });
});

afterAll(async () => {
  await client?.close();
  await sandbox?.close();
  await rm(dir, { recursive: true, force: true });
});

/** The bank's day, Brasília's (docs/service-gaps.md "Today"), which both sides' date limits count from. */
const today = brasiliaDay(new Date());
const br = (iso: string) => `${iso.slice(8, 10)}/${iso.slice(5, 7)}/${iso.slice(0, 4)}`;
let counter = 0;
const unique = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${counter++}`;
const EMOJI = '😀';

/** Texts around a limit of `max` UTF-16 units: accented, and with emoji (2 units each, 1 code point). */
function textsAround(max: number): string[] {
  return [
    'a'.repeat(max),
    'ç'.repeat(max),
    'a'.repeat(max + 1),
    EMOJI.repeat(Math.floor(max / 2)),
    EMOJI.repeat(Math.floor(max / 2) + 1),
    `${'a'.repeat(max - 1)}${EMOJI}`,
  ];
}

const DATES = [
  addDays(today, -1),
  today,
  addDays(today, 1),
  addDays(today, 3650),
  addDays(today, 3651),
  '9999-12-31',
  '2000-01-01',
];
const DUE_DATES = [...DATES, ...DATES.map(br)];
const SLIP_AMOUNTS = ['0,01', '1.234,56', '99.999.999,99', '100.000.000,00', '9.999.999.999,99', '0,00', '12,345'];

type Mutations = Record<string, readonly string[]>;

/** A base record, then up to three of its cells replaced (or filled) by values from `mutations`. */
function rows(base: fc.Arbitrary<Record<string, string>>, mutations: Mutations): fc.Arbitrary<Record<string, string>> {
  const entries = Object.entries(mutations).flatMap(([column, values]) => values.map((v) => [column, v] as const));
  return fc.tuple(base, fc.array(fc.constantFrom(...entries), { maxLength: 3 })).map(([record, changes]) => {
    const out = { ...record };
    for (const [column, value] of changes) {
      if (value === '') delete out[column];
      else out[column] = value;
    }
    return out;
  });
}

/** Every step of the row against the sandbox, in order; the first error, or undefined when all succeeded. */
async function send(kindName: KindName, row: unknown): Promise<unknown> {
  const kind = KINDS[kindName] as unknown as BatchKind<unknown>;
  const previous: Record<string, StepOutput> = {};
  const key = randomUUID();
  try {
    for (const step of kind.steps) {
      previous[step.name] = await step.run({
        row,
        idempotencyKey: key,
        client,
        previous,
        outputPath: (f: string) => join(dir, `${randomUUID()}-${f}`),
        request: {},
      });
    }
    return undefined;
  } catch (err) {
    return err;
  }
}

/**
 * `{u}` in a generated value becomes a fresh unique text, `{guid}` a fresh GUID, `{n8}` 8 fresh digits, at each run of the property (also
 * when fast-check runs a counterexample again while shrinking): ids the bank has seen are its state, not a rule.
 */
function fresh(record: Record<string, string>): Record<string, string> {
  const u = unique('AGREE');
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(record)) {
    out[k] = v
      .replaceAll('{u}', u)
      .replaceAll('{guid}', randomUUID())
      .replaceAll('{n8}', String(counter++).padStart(8, '0'));
  }
  return out;
}

/**
 * The property for one kind: a row the kind's parse accepts is accepted by the bank. `prepare` makes the bank's
 * state the row needs (the charge an update changes) once the fresh ids are known. Both verdicts must occur.
 */
async function agree(
  kindName: KindName,
  arbitrary: fc.Arbitrary<Record<string, string>>,
  prepare?: (record: Record<string, string>) => Promise<void>,
): Promise<void> {
  const kind = KINDS[kindName] as unknown as BatchKind<unknown>;
  let valid = 0;
  let invalid = 0;
  await fc.assert(
    fc.asyncProperty(arbitrary, async (generated) => {
      const record = fresh(generated);
      await prepare?.(record);
      const parsed = kind.parse(record, BR);
      if (!parsed.ok) {
        invalid++;
        return;
      }
      valid++;
      const error = await send(kindName, parsed.row);
      if (error !== undefined) {
        throw new Error(
          `validate accepted a row the bank refused: ${JSON.stringify(record)} -> ${(error as Error).message}`,
        );
      }
    }),
    { numRuns: RUNS },
  );
  expect(valid).toBeGreaterThan(0);
  expect(invalid).toBeGreaterThan(0);
}

const SLIP_PAYER = {
  'payer.name': 'Maria da Silva',
  'payer.document': '123.456.789-09',
  'payer.address.zipCode': '01310-100',
  'payer.address.publicPlace': 'Avenida Paulista',
  'payer.address.city': 'São Paulo',
  'payer.address.state': 'SP',
};

describe('validate agrees with the bank, kind by kind (generated rows, real sandbox over HTTP)', () => {
  it('charges: bank slips', async () => {
    const base = fc.constantFrom('BANKSLIP', 'BANKSLIP_PIX').map((type) => ({
      type,
      correlationId: '{u}',
      amount: '150,00',
      dueDate: addDays(today, 30),
      ...SLIP_PAYER,
    }));
    await agree(
      'charges',
      rows(base, {
        dueDate: DUE_DATES,
        amount: SLIP_AMOUNTS,
        'payer.name': textsAround(100),
        'payer.address.publicPlace': textsAround(100),
        'payer.address.city': textsAround(60),
        yourNumber: textsAround(20),
        'discount.type': ['Percentage', 'Fixed'],
        'discount.items.1.date': [addDays(today, 10)],
        'discount.items.1.amount': ['0,00', '1,50', '0,01'],
        'lateFine.type': ['Percentage'],
        'lateFine.amount': ['0,00', '2,00'],
        // An express ourNumber can be used once (state): fresh ones, of 11 digits and of 12.
        ourNumber: ['123{n8}', '1234{n8}', ''],
      }),
    );
  }, 120_000);

  it('charges: Pix charges', async () => {
    const base = fc.constantFrom('PIX_STATIC', 'PIX_DYNAMIC').map((type) => ({
      type,
      correlationId: '{u}',
      amount: '75,90',
    }));
    await agree(
      'charges',
      rows(base, {
        amount: ['0,01', '0,00', '9.999.999.999,99', '99.999.999,99'],
        description: textsAround(140),
        'additionalInfo.1.key': ['Pedido', ...textsAround(50)],
        'additionalInfo.1.value': textsAround(37),
        expiresIn: ['1', '0', '31536000', '31536001'],
      }),
    );
  }, 120_000);

  it('charge-updates', async () => {
    const base = fc.constant({ correlationId: '{u}', dueDate: addDays(today, 40) });
    // The charge an update changes is created first (an update of an unknown charge is the bank's state, not a rule).
    const createCharge = async (record: Record<string, string>) => {
      const parsed = (KINDS.charges as unknown as BatchKind<{ input: never }>).parse(
        {
          type: 'BANKSLIP',
          correlationId: record.correlationId!,
          amount: '10,00',
          dueDate: addDays(today, 20),
          ...SLIP_PAYER,
        },
        BR,
      );
      if (!parsed.ok) throw new Error('base charge invalid');
      await client.charges.create(parsed.row.input);
    };
    await agree(
      'charge-updates',
      rows(base, {
        dueDate: DUE_DATES,
        amount: SLIP_AMOUNTS,
        walletNumber: ['112', '999', '11'],
        'payer.name': textsAround(100),
        'payer.city': textsAround(60),
        'discount.type': ['Percentage'],
        'discount.items.1.date': [addDays(today, 10)],
        'discount.items.1.amount': ['0,00', '1,00'],
      }),
      createCharge,
    );
  }, 120_000);

  it('bill-payments', async () => {
    // A synthetic bill per row (the sandbox reads amount and due date from the line): payable, amount as charged.
    const base = fc.constant({ barCode: '{bill}', amount: '43,21' });
    const billOf = () =>
      buildBankSlipBarCode({
        bankCode: '341',
        dueDate: addDays(today, 20),
        amountCents: 4321,
        freeField: `${String(counter++).padStart(11, '0')}${String(Date.now()).slice(-10)}1234`,
      });
    await agree(
      'bill-payments',
      rows(base, {
        payAt: [...DATES.filter((d) => d < '9999'), `${today}T23:59`, `${addDays(today, -1)}T23:59`, br(today)],
      }),
      async (record) => {
        if (record.barCode === '{bill}') record.barCode = billOf();
      },
    );
  }, 120_000);

  it('pix-payments', async () => {
    const fixed = buildStaticBrCode({
      key: '+5561999999999',
      amountCents: 2500,
      merchantName: 'Fornecedor',
      merchantCity: 'BRASILIA',
    });
    const open = buildStaticBrCode({ key: 'maria@example.com', merchantName: 'Fornecedor', merchantCity: 'RECIFE' });
    const base = fc.constantFrom(fixed, open).map((payload) => ({ payload, amount: '25,00' }));
    await agree(
      'pix-payments',
      rows(base, {
        amount: ['25,00', '25,01', '0,01', '1.000,00'],
        description: textsAround(140),
      }),
    );
  }, 120_000);

  it('qr-codes', async () => {
    const base = fc
      .constantFrom('PIX_STATIC', 'PIX_DYNAMIC')
      .map((type) =>
        type === 'PIX_STATIC'
          ? { type, correlationId: '{u}', amount: '10,00' }
          : { type, correlationId: '{guid}', amount: '10,00' },
      );
    await agree(
      'qr-codes',
      rows(base, {
        pixKey: [
          '+5561999999999',
          'maria@example.com',
          '123.456.789-09',
          '12345678909',
          '11222333000181',
          '{guid}',
          'not a key',
          '61999999999',
          'abc@',
        ],
        additionalInformation: textsAround(64),
        description: textsAround(140),
        amount: ['0,01', '0,00', '9.999.999.999,99', ''],
        expiresIn: ['1', '0', '86400'],
        'payer.name': ['Maria'],
        'payer.document': ['123.456.789-09', '123.456.789-00'],
      }),
    );
  }, 120_000);

  it('claims', async () => {
    const base = fc.constant({
      type: 'EMAIL',
      key: '{u}@example.com',
      'account.number': '123456-7',
      'account.branch': '0001',
      'account.type': 'CURRENT',
      'account.holder.document': '123.456.789-09',
      'account.holder.name': 'Maria da Silva',
      'account.holder.type': 'NATURAL',
    });
    await agree(
      'claims',
      rows(base, {
        'account.holder.name': textsAround(140),
        'account.number': ['1', '12345678901234567890', '123456789012345678901', '123-X', '12a'],
        'account.branch': ['1', '12345', '123456', '0001-9'],
        'account.holder.type': ['NATURAL', 'LEGAL'],
        'account.holder.document': ['123.456.789-09', '11.222.333/0001-81'],
        // 77 characters (the most an e-mail key may have) and 78; unique, since an open claim of a key is state.
        key: [
          `${'a'.repeat(57)}{n8}@example.com`,
          `${'a'.repeat(58)}{n8}@example.com`,
          'x@y',
          '+55119{n8}',
          '+5511{n8}',
          '+55 11 9{n8}',
          '119{n8}',
        ],
        type: ['EMAIL', 'PHONE'],
      }),
    );
  }, 120_000);
});
