import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BillPaymentRow } from '../src/batches/bill-payments.js';
import type { ChargeUpdateRow } from '../src/batches/charge-updates.js';
import type { ChargeRow } from '../src/batches/charges.js';
import type { ClaimRow } from '../src/batches/claims.js';
import type { BatchKind, CellError, Dialect, ParseResult } from '../src/batches/kind.js';
import { pixPayKey } from '../src/batches/pix-payments.js';
import type { QrCodeRow } from '../src/batches/qr-codes.js';
import { KINDS } from '../src/batches/registry.js';
import { differences } from '../src/batches/same-operation.js';
import { arrecadacaoBarCodeToLine, buildArrecadacaoBarCode } from '../src/formats/arrecadacao.js';
import { buildStaticBrCode } from '../src/formats/brcode.js';
import { render } from '../src/i18n/index.js';
import { KIND_NAMES } from '../src/types.js';

const BR: Dialect = { encoding: 'windows-1252', bom: false, delimiter: ';', decimalMark: ',' };
const US: Dialect = { encoding: 'utf8', bom: false, delimiter: ',', decimalMark: '.' };

const CPF = '123.456.789-09';
const CNPJ = '11.222.333/0001-81';
const BAR = '43594939800000003250001112000000200000311672';
const LINE = '43590001161200000020300003116720493980000000325';
const GUID = '5f0c2a9e-8d41-4c7b-9a3e-2b6d1f8e4c10';
const PAYLOAD = buildStaticBrCode({
  key: '+5561999999999',
  amountCents: 10000,
  merchantName: 'Fulano de Tal',
  merchantCity: 'BRASILIA',
});

/** A static code without an amount: the payer chooses it (any amount is a valid row). */
const OPEN_PAYLOAD = buildStaticBrCode({
  key: '+5561999999999',
  merchantName: 'Fulano de Tal',
  merchantCity: 'BRASILIA',
});

function parse<Row>(kind: BatchKind<Row>, record: Record<string, string>, dialect: Dialect = BR): ParseResult<Row> {
  return kind.parse(record, dialect);
}

function ok<Row>(kind: BatchKind<Row>, record: Record<string, string>, dialect: Dialect = BR): Row {
  const result = parse(kind, record, dialect);
  if (!result.ok) throw new Error(`expected a valid row, got ${JSON.stringify(result.errors)}`);
  return result.row;
}

function errors<Row>(kind: BatchKind<Row>, record: Record<string, string>, dialect: Dialect = BR): CellError[] {
  const result = parse(kind, record, dialect);
  if (result.ok) throw new Error(`expected errors, got a valid row ${JSON.stringify(result.row)}`);
  for (const e of result.errors) expect(render('en', e.message)).toMatch(/^Expected .+, got /);
  return result.errors;
}

/** Asserts that exactly one error names `column` with `code`. */
function expectError<Row>(
  kind: BatchKind<Row>,
  record: Record<string, string>,
  column: string | undefined,
  code: string,
) {
  const errs = errors(kind, record);
  expect(errs.map((e) => [e.column, e.code])).toContainEqual([column, code]);
}

const charges = KINDS.charges as unknown as BatchKind<ChargeRow>;
const billPayments = KINDS['bill-payments'] as unknown as BatchKind<BillPaymentRow>;
const pixPayments = KINDS['pix-payments'] as unknown as BatchKind<{ payload: string; amountCents: number }>;
const qrCodes = KINDS['qr-codes'] as unknown as BatchKind<QrCodeRow>;
const claims = KINDS.claims as unknown as BatchKind<ClaimRow>;
const cancellations = KINDS['claim-cancellations'] as unknown as BatchKind<{ claimId: string }>;
const updates = KINDS['charge-updates'] as unknown as BatchKind<ChargeUpdateRow>;
const voids = KINDS['charge-voids'] as unknown as BatchKind<{ correlationId: string }>;

const SLIP: Record<string, string> = {
  type: 'BANKSLIP',
  correlationId: 'INV-1',
  amount: '1.234,56',
  dueDate: '15/12/2026',
  'payer.name': 'Maria da Silva',
  'payer.document': CPF,
  'payer.address.zipCode': '01310-100',
  'payer.address.publicPlace': 'Avenida Paulista',
  'payer.address.city': 'São Paulo',
  'payer.address.state': 'sp',
};

describe('registry', () => {
  it('registers every kind under its name, each with a consistent contract', () => {
    expect(Object.keys(KINDS).sort()).toEqual([...KIND_NAMES].sort());
    for (const name of KIND_NAMES) {
      const kind = KINDS[name];
      expect(kind.name).toBe(name);
      expect(kind.steps.length).toBeGreaterThan(0);
      expect(kind.columns.map((c) => c.name)).toContain('idempotencyKey');
      expect(new Set(kind.columns.map((c) => c.name)).size).toBe(kind.columns.length);
      for (const m of kind.resultMoneyColumns ?? []) expect(kind.resultColumns).toContain(m);
      // Outputs never reuse a status column's name (an input header that matches an output is renamed by the writer).
      for (const c of ['status', 'errorCode', 'errorMessage']) expect(kind.resultColumns).not.toContain(c);
      for (const step of kind.steps) {
        // A create step without a key must be recoverable; a money step must carry a key (rule 2 of src/store/rows.ts).
        if (step.effect === 'create' && !step.usesIdempotencyKey)
          expect(step.recover, `${name}/${step.name}`).toBeDefined();
        if (step.effect === 'money') expect(step.usesIdempotencyKey, `${name}/${step.name}`).toBe(true);
      }
    }
    expect(KINDS['bill-payments'].movesMoneyOut).toBe(true);
    expect(KINDS['pix-payments'].movesMoneyOut).toBe(true);
    expect(KINDS.charges.movesMoneyOut).toBe(false);
  });
});

describe('charges', () => {
  it('parses a bank slip with every nested group', () => {
    const row = ok(charges, {
      ...SLIP,
      yourNumber: 'NF-1',
      ourNumber: '123',
      'payer.email': 'maria@example.com',
      'payer.phone.prefix': '11',
      'payer.phone.number': '987654321',
      'finalBeneficiary.name': 'Garante Ltda',
      'finalBeneficiary.document': CNPJ,
      'discount.type': 'Fixed',
      'discount.items.1.date': '2026-12-10',
      'discount.items.1.amount': '3,00',
      'discount.items.2.date': '11/12/2026',
      'discount.items.2.amount': '2,00',
      'lateFine.type': 'Percentage',
      'lateFine.date': '16/12/2026',
      'lateFine.amount': '2,5',
      'latePayment.type': 'Fixed',
      'latePayment.amount': '0,33',
      idempotencyKey: GUID.toUpperCase(),
    });
    expect(row.input).toEqual({
      type: 'BANKSLIP',
      correlationId: 'INV-1',
      amountCents: 123456,
      dueDate: '2026-12-15',
      yourNumber: 'NF-1',
      ourNumber: '123',
      payer: {
        name: 'Maria da Silva',
        document: '12345678909',
        email: 'maria@example.com',
        phone: { prefix: '11', number: '987654321' },
        address: { zipCode: '01310100', publicPlace: 'Avenida Paulista', city: 'São Paulo', state: 'SP' },
      },
      finalBeneficiary: { name: 'Garante Ltda', document: '11222333000181' },
      discount: {
        type: 'Fixed',
        items: [
          { date: '2026-12-10', amountCents: 300 },
          { date: '2026-12-11', amountCents: 200 },
        ],
      },
      lateFine: { type: 'Percentage', date: '2026-12-16', percent: 2.5 },
      latePayment: { type: 'Fixed', amountCents: 33 },
    });
    expect(row.idempotencyKey).toBe(GUID);
    expect(charges.naturalKey(row)).toBe('INV-1');
    expect(charges.explicitIdempotencyKey?.(row)).toBe(GUID);
    expect(charges.amountCents?.(row)).toBe(123456);
  });

  it('parses Pix charges', () => {
    const pixStatic = ok(charges, {
      type: 'PIX_STATIC',
      correlationId: 'p1',
      amount: '10,00',
      'additionalInfo.1.key': 'Pedido',
      'additionalInfo.1.value': 'A'.repeat(37),
    });
    expect(pixStatic.input).toEqual({
      type: 'PIX_STATIC',
      correlationId: 'p1',
      amountCents: 1000,
      additionalInfo: [{ key: 'Pedido', value: 'A'.repeat(37) }],
    });
    const dynamic = ok(
      charges,
      {
        type: 'pix_dynamic',
        correlationId: 'p2',
        amount: '10.5',
        expiresIn: '3600',
        'payer.name': 'Ana',
        'payer.document': CNPJ,
      },
      US,
    );
    expect(dynamic.input).toEqual({
      type: 'PIX_DYNAMIC',
      correlationId: 'p2',
      amountCents: 1050,
      expiresInSeconds: 3600,
      payer: { name: 'Ana', document: '11222333000181' },
    });
  });

  it('reports each invalid cell with its column and code', () => {
    expectError(charges, { ...SLIP, type: 'BOLETAO' }, 'type', 'INVALID_ENUM');
    expectError(charges, { ...SLIP, correlationId: 'a/b' }, 'correlationId', 'INVALID_TEXT');
    expectError(charges, { ...SLIP, amount: '1.234' }, 'amount', 'AMBIGUOUS_AMOUNT');
    expectError(charges, { ...SLIP, amount: '0,00' }, 'amount', 'AMOUNT_NOT_POSITIVE');
    expectError(charges, { ...SLIP, amount: '12,345' }, 'amount', 'AMBIGUOUS_AMOUNT');
    expectError(charges, { ...SLIP, amount: '-5' }, 'amount', 'INVALID_AMOUNT');
    expectError(charges, { ...SLIP, dueDate: '31/02/2026' }, 'dueDate', 'INVALID_DATE');
    expectError(charges, { ...SLIP, dueDate: '' }, 'dueDate', 'REQUIRED');
    expectError(charges, { ...SLIP, 'payer.document': '123.456.789-00' }, 'payer.document', 'INVALID_CPF');
    expectError(charges, { ...SLIP, 'payer.document': '11.222.333/0001-80' }, 'payer.document', 'INVALID_CNPJ');
    expectError(charges, { ...SLIP, 'payer.document': '1234' }, 'payer.document', 'INVALID_DOCUMENT');
    expectError(charges, { ...SLIP, 'payer.address.state': 'XX' }, 'payer.address.state', 'INVALID_STATE');
    expectError(charges, { ...SLIP, 'payer.address.zipCode': '0131-100' }, 'payer.address.zipCode', 'INVALID_ZIP_CODE');
    expectError(charges, { ...SLIP, 'payer.email': 'maria@' }, 'payer.email', 'INVALID_EMAIL');
    expectError(charges, { ...SLIP, 'payer.phone.number': '9876' }, 'payer.phone.number', 'INVALID_TEXT');
    expectError(charges, { ...SLIP, 'payer.phone.number': '987654321' }, 'payer.phone.prefix', 'REQUIRED');
    expectError(charges, { ...SLIP, ourNumber: '12A' }, 'ourNumber', 'INVALID_TEXT');
    expectError(charges, { ...SLIP, type: 'BANKSLIP_PIX', ourNumber: '1' }, 'ourNumber', 'NOT_ALLOWED');
    expectError(charges, { ...SLIP, yourNumber: 'x'.repeat(21) }, 'yourNumber', 'TOO_LONG');
    expectError(charges, { ...SLIP, description: 'x' }, 'description', 'NOT_ALLOWED');
    expectError(charges, { ...SLIP, 'discount.items.1.amount': '1,00' }, 'discount.type', 'REQUIRED');
    expectError(
      charges,
      { ...SLIP, 'discount.type': 'Fixed', 'discount.items.1.amount': '1,00' },
      'discount.items.1.date',
      'REQUIRED',
    );
    expectError(
      charges,
      { ...SLIP, 'lateFine.type': 'Daily', 'lateFine.amount': '1' },
      'lateFine.type',
      'INVALID_ENUM',
    );
    expectError(charges, { ...SLIP, 'finalBeneficiary.name': 'X' }, 'finalBeneficiary.document', 'REQUIRED');
    expectError(charges, { ...SLIP, idempotencyKey: 'not-a-guid' }, 'idempotencyKey', 'INVALID_GUID');
    const pix = { type: 'PIX_STATIC', correlationId: 'p', amount: '1,00' };
    expectError(
      charges,
      { ...pix, 'additionalInfo.1.key': 'k', 'additionalInfo.1.value': 'A'.repeat(38) },
      'additionalInfo.1.value',
      'TOO_LONG',
    );
    expectError(charges, { ...pix, dueDate: '2026-12-01' }, 'dueDate', 'NOT_ALLOWED');
    expectError(charges, { ...pix, 'payer.name': 'Ana' }, 'payer.name', 'NOT_ALLOWED');
    expectError(charges, { ...pix, type: 'PIX_DYNAMIC', expiresIn: '0' }, 'expiresIn', 'INVALID_NUMBER');
    expectError(charges, { ...pix, description: 'a\u0007b' }, 'description', 'INVALID_TEXT');
  });

  it('lists columns that must stay empty in the order of the rules, whatever the record order', () => {
    const pix = { type: 'PIX_STATIC', correlationId: 'p', amount: '1,00' };
    const errs = errors(charges, {
      'payer.address.city': 'Recife',
      'lateFine.type': 'Fixed',
      expiresIn: '10',
      ...pix,
      dueDate: '2026-12-01',
      'payer.name': 'Ana',
    });
    expect(errs.map((e) => [e.column, e.code])).toEqual([
      ['dueDate', 'NOT_ALLOWED'],
      ['payer.address.city', 'NOT_ALLOWED'],
      ['lateFine.type', 'NOT_ALLOWED'],
      ['expiresIn', 'NOT_ALLOWED'],
      ['payer.address.city', 'NOT_ALLOWED'],
      ['payer.name', 'NOT_ALLOWED'],
    ]);
    expect(render('en', errs[0]!.message)).toBe('Expected an empty cell (bank slips only), got "2026-12-01"');
    expect(render('en', errs[3]!.message)).toBe('Expected an empty cell (not for PIX_STATIC), got "10"');
  });

  it('collects every error of a row at once', () => {
    const errs = errors(charges, { type: 'BANKSLIP', correlationId: 'x', amount: 'abc', dueDate: 'amanhã' });
    const columns = errs.map((e) => e.column);
    for (const c of ['amount', 'dueDate', 'payer.name', 'payer.document', 'payer.address.zipCode'])
      expect(columns).toContain(c);
  });
});

describe('bill-payments', () => {
  const base = { amount: '3,25' };

  it('a digitable line and its bar code give the same natural key', () => {
    const byBar = ok(billPayments, { ...base, barCode: BAR });
    const byLine = ok(billPayments, {
      ...base,
      digitableLine: '43590.00116 12000.000203 00003.116720 4 93980000000325',
    });
    expect(byLine.barCode).toBe(BAR);
    expect(billPayments.naturalKey(byLine)).toBe(billPayments.naturalKey(byBar));
    expect(byLine.identifier).toBe(LINE);
    const both = ok(billPayments, { ...base, barCode: BAR, digitableLine: LINE });
    expect(billPayments.naturalKey(both)).toBe(billPayments.naturalKey(byBar));
  });

  it('amount and payAt are part of the key; payAt accepts a date or a date and time', () => {
    const a = ok(billPayments, { ...base, barCode: BAR });
    const b = ok(billPayments, { amount: '3,24', barCode: BAR });
    const c = ok(billPayments, { ...base, barCode: BAR, payAt: '15/12/2026' });
    const d = ok(billPayments, { ...base, barCode: BAR, payAt: '2026-12-15T00:00' });
    const e = ok(billPayments, { ...base, barCode: BAR, payAt: '15/12/2026 14:30' });
    expect(new Set([a, b, c].map((r) => billPayments.naturalKey(r))).size).toBe(3);
    expect(billPayments.naturalKey(c)).toBe(billPayments.naturalKey(d));
    expect(c.payAt).toBe('2026-12-15T00:00:00');
    expect(e.payAt).toBe('2026-12-15T14:30:00');
  });

  it('reads utility/tax bills (48-digit line, starting with 8)', () => {
    const bar = buildArrecadacaoBarCode({
      segment: 3,
      valueIdentifier: '6',
      value: 12345,
      companyId: '0123',
      freeField: '1'.repeat(25),
    });
    const line = arrecadacaoBarCodeToLine(bar);
    const byLine = ok(billPayments, { amount: '123,45', digitableLine: line });
    expect(byLine).toMatchObject({ barCode: bar, billType: 'TAXES' });
    expect(billPayments.naturalKey(byLine)).toBe(
      billPayments.naturalKey(ok(billPayments, { amount: '123,45', barCode: bar })),
    );
  });

  it('reports invalid identifiers, amounts and conflicts', () => {
    expectError(billPayments, base, 'barCode', 'REQUIRED');
    expectError(
      billPayments,
      { ...base, barCode: `${BAR.slice(0, 4)}0${BAR.slice(5)}` },
      'barCode',
      'INVALID_CHECK_DIGIT',
    );
    expectError(billPayments, { ...base, barCode: BAR.slice(1) }, 'barCode', 'INVALID_LENGTH');
    expectError(billPayments, { ...base, barCode: LINE }, 'barCode', 'INVALID_LENGTH');
    expectError(
      billPayments,
      { ...base, digitableLine: `${LINE.slice(0, 9)}0${LINE.slice(10)}` },
      'digitableLine',
      'INVALID_CHECK_DIGIT',
    );
    expectError(
      billPayments,
      { ...base, digitableLine: `${LINE.slice(0, 46)}x` },
      'digitableLine',
      'INVALID_CHARACTERS',
    );
    const other = '43590001161200000060900005206370510380000000010';
    expectError(billPayments, { ...base, barCode: BAR, digitableLine: other }, 'digitableLine', 'CONFLICT');
    expectError(billPayments, { barCode: BAR }, 'amount', 'REQUIRED');
    expectError(billPayments, { barCode: BAR, amount: '0' }, 'amount', 'AMOUNT_NOT_POSITIVE');
    expectError(billPayments, { ...base, barCode: BAR, payAt: '2026-13-01' }, 'payAt', 'INVALID_DATE');
    expectError(billPayments, { ...base, barCode: BAR, payAt: '2026-12-01 25:00' }, 'payAt', 'INVALID_DATE');
  });
});

describe('pix-payments', () => {
  it('parses a payload with a valid CRC; key is payload + amount', () => {
    const row = ok(pixPayments, { payload: PAYLOAD, amount: '100,00' });
    expect(row).toEqual({ payload: PAYLOAD, amountCents: 10000 });
    expect(pixPayments.naturalKey(row)).toBe(`${PAYLOAD}|10000`);
  });

  it('refuses another amount than a static code fixes (the bank would), before sending', () => {
    expectError(pixPayments, { payload: PAYLOAD, amount: '99,99' }, 'amount', 'AMOUNT_MISMATCH');
    expect(ok(pixPayments, { payload: OPEN_PAYLOAD, amount: '99,99' }).amountCents).toBe(9999);
  });

  it('reads a payload copied with line breaks (a wrapped code, a cell with Alt+Enter) as the code without them', () => {
    const wrapped = `${PAYLOAD.slice(0, 50)}\r\n${PAYLOAD.slice(50, 100)}\n${PAYLOAD.slice(100)}\t`;
    const row = ok(pixPayments, { payload: wrapped, amount: '100,00' });
    expect(row.payload).toBe(PAYLOAD);
    // The same code however wrapped is the same payment: one natural key.
    expect(pixPayments.naturalKey(row)).toBe(`${PAYLOAD}|10000`);
    // A break that replaced a character of the code still fails its CRC: nothing is guessed.
    const damaged = `${PAYLOAD.slice(0, 50)}\n${PAYLOAD.slice(51)}`;
    expectError(pixPayments, { payload: damaged, amount: '100,00' }, 'payload', 'INVALID_CRC');
  });

  it('rejects a payload whose CRC does not match', () => {
    const broken = `${PAYLOAD.slice(0, -4)}0000`;
    expectError(pixPayments, { payload: broken, amount: '1,00' }, 'payload', 'INVALID_CRC');
    expectError(pixPayments, { payload: 'hello', amount: '1,00' }, 'payload', 'INVALID_FIELD');
  });

  it('a row with its own idempotencyKey is its own intent (a static QR code paid again)', () => {
    const a = ok(pixPayments, { payload: PAYLOAD, amount: '100,00' });
    const b = ok(pixPayments, { payload: PAYLOAD, amount: '100,00', idempotencyKey: GUID });
    const c = ok(pixPayments, { payload: PAYLOAD, amount: '100,00', idempotencyKey: GUID.toUpperCase() });
    expect(pixPayments.naturalKey(b)).not.toBe(pixPayments.naturalKey(a));
    expect(pixPayments.naturalKey(c)).toBe(pixPayments.naturalKey(b));
    const bill = ok(billPayments, { barCode: BAR, amount: '3,25', idempotencyKey: GUID });
    expect(billPayments.naturalKey(bill)).toBe(`${BAR}|325||key=${GUID}`);
  });

  it('derives the payment key from the row key, stable and distinct', () => {
    expect(pixPayKey(GUID)).toBe(pixPayKey(GUID));
    expect(pixPayKey(GUID)).not.toBe(GUID);
    expect(pixPayKey(GUID)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});

describe('qr-codes', () => {
  it('parses dynamic and static codes', () => {
    const dynamic = ok(qrCodes, {
      type: 'PIX_DYNAMIC',
      correlationId: GUID,
      amount: '150,00',
      formatResponse: 'PAYLOAD_AND_QRCODE',
      'payer.name': 'Ana',
      'payer.document': CPF,
      'city.name': 'São Paulo',
      'city.zipCode': '01310100',
      'additionalInfos.1.name': 'Pedido',
      'additionalInfos.1.value': '998',
    });
    expect(dynamic).toEqual({
      type: 'PIX_DYNAMIC',
      input: {
        correlationId: GUID,
        amountCents: 15000,
        formatResponse: 'PAYLOAD_AND_QRCODE',
        payer: { name: 'Ana', document: '12345678909' },
        city: { name: 'São Paulo', zipCode: '01310100' },
        additionalInfos: [{ name: 'Pedido', value: '998' }],
      },
    });
    const stat = ok(qrCodes, { type: 'PIX_STATIC', correlationId: 'loja-1', additionalInformation: 'x'.repeat(64) });
    expect(stat).toEqual({
      type: 'PIX_STATIC',
      input: { correlationId: 'loja-1', additionalInformation: 'x'.repeat(64) },
    });
    expect(qrCodes.naturalKey(stat)).toBe('loja-1');
  });

  it("sends a static code's pixKey in its DICT form, however the sheet writes it (the code must be payable)", () => {
    // The bank writes the key into the BR Code as sent: "(11) 98765-4321" there is a key no DICT lookup finds.
    const key = (pixKey: string) => {
      const row = ok(qrCodes, { type: 'PIX_STATIC', correlationId: 'loja-1', pixKey });
      return row.type === 'PIX_STATIC' ? row.input.pixKey : undefined;
    };
    expect(key('(11) 98765-4321')).toBe('+5511987654321');
    expect(key('+55 11 98765-4321')).toBe('+5511987654321');
    expect(key('Fulano@Example.COM')).toBe('fulano@example.com');
    expect(key(CPF)).toBe('12345678909');
    expect(key(CNPJ)).toBe('11222333000181');
    expect(key('71C7D9BE-4B85-4E43-9F1C-1F3B8B4E9A2D')).toBe('71c7d9be-4b85-4e43-9f1c-1f3b8b4e9a2d');
    expect(key('+5511987654321')).toBe('+5511987654321');
    expectError(qrCodes, { type: 'PIX_STATIC', correlationId: 'a', pixKey: 'not a key' }, 'pixKey', 'INVALID_PIX_KEY');
    // A CPF key Excel stripped of its leading zero: said so, with the key to type, never guessed.
    const [lost] = errors(qrCodes, { type: 'PIX_STATIC', correlationId: 'a', pixKey: '1234567890' });
    expect(lost).toMatchObject({ column: 'pixKey', code: 'INVALID_PIX_KEY' });
    expect(render('pt-BR', lost!.message)).toBe(
      'Esperava uma chave Pix, veio "1234567890": um CPF sem os zeros à esquerda (11 dígitos); o Excel os apaga: ' +
        'formate a coluna como Texto e digite a chave com os zeros (012.345.678-90)',
    );
    // The same key however written is the same code: a duplicate, not another operation.
    const owner = ok(qrCodes, { type: 'PIX_STATIC', correlationId: 'loja-1', pixKey: '+5511987654321' });
    const again = ok(qrCodes, { type: 'PIX_STATIC', correlationId: 'loja-1', pixKey: '(11) 98765-4321' });
    expect(differences(qrCodes.mustMatch!, owner, again)).toEqual([]);
  });

  it('reports invalid cells', () => {
    expectError(
      qrCodes,
      { type: 'PIX_DYNAMIC', correlationId: 'not-guid', amount: '1,00' },
      'correlationId',
      'INVALID_GUID',
    );
    expectError(qrCodes, { type: 'PIX_DYNAMIC', correlationId: GUID }, 'amount', 'REQUIRED');
    expectError(
      qrCodes,
      { type: 'PIX_STATIC', correlationId: 'a', additionalInformation: 'x'.repeat(65) },
      'additionalInformation',
      'TOO_LONG',
    );
    expectError(qrCodes, { type: 'PIX_STATIC', correlationId: 'a', expiresIn: '10' }, 'expiresIn', 'NOT_ALLOWED');
    expectError(
      qrCodes,
      { type: 'PIX_DYNAMIC', correlationId: GUID, amount: '1', pixKey: 'k' },
      'pixKey',
      'NOT_ALLOWED',
    );
    expectError(
      qrCodes,
      { type: 'PIX_DYNAMIC', correlationId: GUID, amount: '1', formatResponse: 'PNG' },
      'formatResponse',
      'INVALID_ENUM',
    );
    expectError(
      qrCodes,
      { type: 'PIX_DYNAMIC', correlationId: GUID, amount: '1', 'city.name': 'X' },
      'city.zipCode',
      'REQUIRED',
    );
  });
});

/** A claim's account columns, filled in. */
const CLAIM_ACCOUNT = {
  'account.number': '123456-7',
  'account.branch': '0001',
  'account.type': 'CURRENT',
  'account.holder.document': CPF,
  'account.holder.name': 'Maria da Silva',
  'account.holder.type': 'NATURAL',
};

describe('claims and claim-cancellations', () => {
  const account = CLAIM_ACCOUNT;

  it('parses claims; the key is canonical', () => {
    const email = ok(claims, { type: 'EMAIL', key: 'Maria@Example.com', ...account });
    expect(email.input.key).toBe('maria@example.com');
    expect(claims.naturalKey(email)).toBe('EMAIL|maria@example.com');
    const doc = ok(claims, { type: 'DOCUMENT', ...account });
    expect(claims.naturalKey(doc)).toBe('DOCUMENT|12345678909');
    expect(ok(claims, { type: 'PHONE', key: '+5511987654321', ...account }).input.key).toBe('+5511987654321');
    // A phone as a sheet writes it is read into its DICT form (before: refused, only +55... was read).
    for (const written of ['(11) 98765-4321', '+55 (11) 98765-4321', '11987654321', '5511987654321', '11 98765 4321']) {
      const phone = ok(claims, { type: 'PHONE', key: written, ...account });
      expect(phone.input.key, written).toBe('+5511987654321');
      expect(claims.naturalKey(phone)).toBe('PHONE|+5511987654321');
    }
  });

  it('reports invalid claim cells', () => {
    expectError(claims, { type: 'EMAIL', ...account }, 'key', 'REQUIRED');
    // Not a mobile phone: a landline, too few digits, another country.
    for (const key of ['(11) 3333-4444', '98765-4321', '+1 415 555 0100', '+55 11 98765-4321 ramal 2']) {
      expectError(claims, { type: 'PHONE', key, ...account }, 'key', 'INVALID_TEXT');
    }
    expectError(claims, { type: 'DOCUMENT', key: CNPJ, ...account }, 'key', 'CONFLICT');
    expectError(
      claims,
      { type: 'EMAIL', key: 'a@b.co', ...account, 'account.holder.type': 'LEGAL' },
      'account.holder.document',
      'INVALID_DOCUMENT',
    );
    expectError(
      claims,
      { type: 'EMAIL', key: 'a@b.co', ...account, 'account.type': 'CHECKING' },
      'account.type',
      'INVALID_ENUM',
    );
    expectError(
      claims,
      { type: 'EMAIL', key: 'a@b.co', ...account, 'account.branch': '123456' },
      'account.branch',
      'INVALID_TEXT',
    );
    expectError(claims, { type: 'EMAIL', key: `${'a'.repeat(70)}@b.co.br`, ...account }, 'key', 'TOO_LONG');
  });

  it('parses cancellations; the key is the claim id', () => {
    const row = ok(cancellations, { claimId: GUID, participationFlowType: 'claimant', reason: 'FRAUD' });
    expect(row).toEqual({ claimId: GUID, participationFlowType: 'CLAIMANT', reason: 'FRAUD' });
    expect(cancellations.naturalKey(row)).toBe(GUID);
    expectError(
      cancellations,
      { claimId: '123', participationFlowType: 'DONOR', reason: 'FRAUD' },
      'claimId',
      'INVALID_GUID',
    );
    expectError(
      cancellations,
      { claimId: GUID, participationFlowType: 'DONOR', reason: 'BORED' },
      'reason',
      'INVALID_ENUM',
    );
    expectError(cancellations, { claimId: GUID, reason: 'FRAUD' }, 'participationFlowType', 'REQUIRED');
  });
});

describe('charge-updates and charge-voids', () => {
  it('the key is correlationId + the changed values, whatever their spelling', () => {
    const a = ok(updates, { correlationId: 'INV-1', dueDate: '20/12/2026', amount: '1.300,00' });
    const b = ok(updates, { correlationId: 'INV-1', amount: '1300', dueDate: '2026-12-20' });
    const c = ok(updates, { correlationId: 'INV-1', dueDate: '21/12/2026' });
    expect(a.patch).toEqual({ dueDate: '2026-12-20', amountCents: 130000 });
    expect(updates.naturalKey(a)).toBe(updates.naturalKey(b));
    expect(updates.naturalKey(a)).not.toBe(updates.naturalKey(c));
    const payer = ok(updates, { correlationId: 'INV-1', 'payer.state': 'rj', allowPartialPayment: 'sim' });
    expect(payer.patch).toEqual({ payer: { state: 'RJ' }, allowPartialPayment: true });
  });

  it('reports invalid update cells and a row with nothing to change', () => {
    expectError(updates, { correlationId: 'INV-1' }, undefined, 'NOTHING_TO_CHANGE');
    expectError(
      updates,
      { correlationId: 'INV-1', allowPartialPayment: 'maybe' },
      'allowPartialPayment',
      'INVALID_BOOLEAN',
    );
    expectError(updates, { correlationId: 'INV-1', walletNumber: '11' }, 'walletNumber', 'INVALID_ENUM');
    expectError(updates, { correlationId: 'INV-1', walletNumber: '999' }, 'walletNumber', 'INVALID_ENUM');
    expectError(updates, { dueDate: '2026-12-20' }, 'correlationId', 'REQUIRED');
  });

  it('voids by correlationId', () => {
    expect(voids.naturalKey(ok(voids, { correlationId: 'INV-1' }))).toBe('INV-1');
    expectError(voids, { correlationId: 'INV 1' }, 'correlationId', 'INVALID_TEXT');
  });
});

describe('amounts and dates through the kinds (properties)', () => {
  const cents = fc.integer({ min: 1, max: 99_999_999_99 });

  function brText(value: number, group: boolean): string {
    const whole = String(Math.floor(value / 100));
    const grouped = group ? whole.replace(/\B(?=(\d{3})+(?!\d))/g, '.') : whole;
    return `${grouped},${String(value % 100).padStart(2, '0')}`;
  }

  it('any amount written with a decimal comma (grouped or not) reads back exactly', () => {
    fc.assert(
      fc.property(cents, fc.boolean(), (value, group) => {
        const row = ok(pixPayments, { payload: OPEN_PAYLOAD, amount: brText(value, group) }, BR);
        expect(row.amountCents).toBe(value);
      }),
    );
  });

  it('any amount written with a decimal point reads back exactly', () => {
    fc.assert(
      fc.property(cents, (value) => {
        const text = `${Math.floor(value / 100)}.${String(value % 100).padStart(2, '0')}`;
        expect(ok(pixPayments, { payload: OPEN_PAYLOAD, amount: text }, US).amountCents).toBe(value);
      }),
    );
  });

  it('garbage amounts give typed cell errors, never a row or a throw', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 12 }), (text) => {
        fc.pre(text.trim() !== '');
        const result = parse(pixPayments, { payload: OPEN_PAYLOAD, amount: text });
        if (!result.ok) {
          for (const e of result.errors) expect(e.column).toBe('amount');
        } else {
          expect(Number.isSafeInteger(result.row.amountCents)).toBe(true);
          expect(result.row.amountCents).toBeGreaterThan(0);
        }
      }),
    );
  });

  it('a date reads the same as yyyy-mm-dd or dd/mm/yyyy', () => {
    // Due dates the bank accepts: today to 10 years ahead.
    const from = Date.now() + 86_400_000;
    const to = Date.now() + 3600 * 86_400_000;
    fc.assert(
      fc.property(fc.date({ min: new Date(from), max: new Date(to), noInvalidDate: true }), (d) => {
        const iso = d.toISOString().slice(0, 10);
        const br = `${iso.slice(8, 10)}/${iso.slice(5, 7)}/${iso.slice(0, 4)}`;
        const a = ok(updates, { correlationId: 'x', dueDate: iso });
        const b = ok(updates, { correlationId: 'x', dueDate: br });
        expect(a.patch.dueDate).toBe(iso);
        expect(updates.naturalKey(a)).toBe(updates.naturalKey(b));
      }),
    );
  });
});

describe('any record (properties)', () => {
  it('every kind answers a row or typed cell errors naming its columns, never throws', () => {
    for (const name of KIND_NAMES) {
      const kind = KINDS[name] as unknown as BatchKind<unknown>;
      const names = kind.columns.map((c) => c.name);
      const examples = Object.fromEntries(kind.columns.map((c) => [c.name, c.example]));
      const cellValue = fc.oneof(
        fc.string({ maxLength: 20 }),
        fc.constantFrom(...kind.columns.map((c) => c.example), '0', '-1', '1.234', '31/02/2026', '=1+1', ' '),
      );
      fc.assert(
        fc.property(
          fc.dictionary(fc.constantFrom(...names), cellValue, { maxKeys: names.length }),
          fc.boolean(),
          (cells, startFromExamples) => {
            const record = startFromExamples ? { ...examples, ...cells } : cells;
            const result = kind.parse(record, BR);
            if (!result.ok) {
              expect(result.errors.length).toBeGreaterThan(0);
              for (const e of result.errors) {
                expect(typeof e.code).toBe('string');
                if (e.column !== undefined) expect(names).toContain(e.column);
              }
            } else {
              expect(typeof kind.naturalKey(result.row)).toBe('string');
            }
          },
        ),
        { numRuns: 150 },
      );
    }
  });
});

describe('a natural key brought again: what must match for a duplicate (mustMatch, src/batches/same-operation.ts)', () => {
  /** What differs between two rows of `kind`, the owner read back as the store reads it (JSON). */
  function differing<Row>(kind: BatchKind<Row>, owner: Row, row: Row): string[] {
    return differences(kind.mustMatch!, JSON.parse(JSON.stringify(owner)) as Row, row).map((d) => d.column);
  }

  it('charges: type, amount, due date and payer document; formatting aside', () => {
    const owner = ok(charges, SLIP);
    const copy = ok(
      charges,
      { ...SLIP, amount: '1234,56', dueDate: '2026-12-15', 'payer.document': '12345678909', 'payer.name': 'MARIA' },
      BR,
    );
    expect(charges.naturalKey(copy)).toBe(charges.naturalKey(owner));
    expect(differing(charges, owner, copy)).toEqual([]);
    expect(differing(charges, owner, ok(charges, { ...SLIP, amount: '999,00' }))).toEqual(['amount']);
    expect(differing(charges, owner, ok(charges, { ...SLIP, dueDate: '16/12/2026', 'payer.document': CNPJ }))).toEqual([
      'dueDate',
      'payer.document',
    ]);
    expect(differing(charges, owner, ok(charges, { ...SLIP, type: 'BANKSLIP_PIX' }))).toEqual(['type']);
    const pix = ok(charges, { type: 'PIX_STATIC', correlationId: 'INV-1', amount: '1.234,56' });
    expect(differing(charges, owner, pix)).toEqual(['type', 'dueDate', 'payer.document']);
    // A stored owner the hook cannot read (another shape) is taken as the same operation: a duplicate, as before.
    expect(differences(charges.mustMatch!, {} as ChargeRow, owner)).toEqual([]);
  });

  it('qr-codes: type, amount, the key a static code pays into, the payer of a dynamic one', () => {
    const stat = { type: 'PIX_STATIC', correlationId: 'loja-1', amount: '10,00', pixKey: 'a@b.co' };
    const owner = ok(qrCodes, stat);
    expect(differing(qrCodes, owner, ok(qrCodes, { ...stat, amount: '10' }))).toEqual([]);
    expect(differing(qrCodes, owner, ok(qrCodes, { ...stat, pixKey: 'c@d.co', description: 'x' }))).toEqual(['pixKey']);
    const dyn = {
      type: 'PIX_DYNAMIC',
      correlationId: GUID,
      amount: '150,00',
      'payer.name': 'Ana',
      'payer.document': CPF,
    };
    expect(differing(qrCodes, ok(qrCodes, dyn), ok(qrCodes, { ...dyn, amount: '15,00' }))).toEqual(['amount']);
  });

  it('claims: the account the key is claimed for', () => {
    const account = CLAIM_ACCOUNT;
    const owner = ok(claims, { type: 'EMAIL', key: 'maria@example.com', ...account });
    const again = ok(claims, { type: 'EMAIL', key: 'Maria@Example.com', ...account, 'account.holder.name': 'MARIA' });
    expect(claims.naturalKey(again)).toBe(claims.naturalKey(owner));
    expect(differing(claims, owner, again)).toEqual([]);
    const other = ok(claims, { type: 'EMAIL', key: 'maria@example.com', ...account, 'account.number': '999-1' });
    expect(differing(claims, owner, other)).toEqual(['account.number']);
  });

  it('the kinds whose natural key holds every defining field have none', () => {
    for (const kind of [billPayments, pixPayments, updates, voids, cancellations]) {
      expect(kind.mustMatch, kind.name).toBeUndefined();
    }
  });
});
