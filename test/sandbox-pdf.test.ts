/**
 * GET /v1/charges/{id}/stream, checked as a person would check the paper: the page rendered to an image (poppler's
 * pdftoppm), its text read back (pdftotext), the ITF bar code decoded from the rendered image (zbar's zbarimg) and
 * measured there, the Pix QR code decoded from the rendered image (jsqr). Every slip variant the interface names:
 * normal (wallet 112), express (ourNumber sent, wallet 121) and BANKSLIP_PIX, each bare and with finalBeneficiary,
 * discounts, fine and interest.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bankCodeCheckDigit,
  copyPasteLines,
  formatDigitableLine,
  ITF_NARROW_PT,
  itfElements,
} from '../src/sandbox/pdf.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY, startSandbox } from '../src/sandbox/server.js';
import { decodeItf, decodeQr, measureBarCode, pageCount, pdfText, renderPage, saveTo } from './helpers/rendered-pdf.js';

const NOW = new Date('2026-11-22T12:00:00.000Z');
const PERSON = {
  name: 'João da Silva Pagador',
  document: '52998224725',
  address: {
    zipCode: '01310100',
    publicPlace: 'Avenida Paulista',
    number: '1000',
    complement: 'Apto 52',
    neighborhood: 'Bela Vista',
    city: 'São Paulo',
    state: 'SP',
  },
};
const COMPANY = {
  name: 'Padaria Pão Quente Ltda',
  document: '04252011000110',
  address: { zipCode: '30130-010', publicPlace: 'Rua da Bahia', number: '77', city: 'Belo Horizonte', state: 'MG' },
};
const GUARANTOR = {
  name: 'Empresa Garantidora Ltda',
  document: '11222333000181',
  address: { zipCode: '20040020', publicPlace: 'Rua do Ouvidor', number: '50', city: 'Rio de Janeiro', state: 'RJ' },
};

let sandbox: RunningSandbox;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'remessa-slip-'));
  sandbox = await startSandbox({ now: () => NOW });
});
afterAll(async () => {
  await sandbox.close();
  await rm(dir, { recursive: true, force: true });
});

const headers = { 'x-service-api-key': SANDBOX_PUBLIC_API_KEY, 'content-type': 'application/json' };

// biome-ignore lint/suspicious/noExplicitAny: JSON of the service
async function create(body: Record<string, unknown>): Promise<any> {
  const res = await fetch(`${sandbox.url}/v1/charges`, { method: 'POST', headers, body: JSON.stringify(body) });
  expect(res.status, await res.clone().text()).toBe(200);
  return res.json();
}

/** Fetches the charge's PDF and saves it to a file; returns its path. */
async function pdf(correlationId: string): Promise<string> {
  const res = await fetch(`${sandbox.url}/v1/charges/${correlationId}/stream`, {
    headers: { 'x-service-api-key': SANDBOX_PUBLIC_API_KEY },
  });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/pdf');
  const bytes = Buffer.from(await res.arrayBuffer());
  expect(bytes.subarray(0, 5).toString('latin1')).toBe('%PDF-');
  return saveTo(dir, `${correlationId}.pdf`, bytes);
}

function occurrences(text: string, part: string): number {
  return text.split(part).length - 1;
}

/** Every label of the FEBRABAN grid (Ficha de Compensação; the receipt repeats most). */
const LABELS = [
  'Recibo do Pagador',
  'Ficha de Compensação',
  'Local de pagamento',
  'Vencimento',
  'Beneficiário',
  'Agência/Código do beneficiário',
  'Data do documento',
  'Nº do documento',
  'Espécie doc.',
  'Aceite',
  'Data do processamento',
  'Nosso número',
  'Uso do banco',
  'Carteira',
  'Espécie',
  'Quantidade',
  'Valor',
  '(=) Valor do documento',
  '(-) Desconto / Abatimento',
  '(-) Outras deduções',
  '(+) Mora / Multa',
  '(+) Outros acréscimos',
  '(=) Valor cobrado',
  'Pagador',
  'Instruções',
  'Autenticação mecânica',
];

/** English a slip must not carry (statuses, field names of the API). */
const ENGLISH =
  /\b(Pending|Created|Paid|Voided|Expired|Status|Payer|Beneficiary|Amount|Due date|Our number|Your number|Wallet|Bar ?code|Digitable|Instructions|Discount|Fine|Interest)\b/i;

interface Expected {
  wallet: '112' | '121';
  amount: string;
  dueDate: string;
  payer: string[];
  yourNumber?: string;
  guarantor?: string;
  instructions: string[];
}

/** Reads the slip as a person and a teller would, and checks what they need is there, in Portuguese. */
// biome-ignore lint/suspicious/noExplicitAny: JSON of the service
async function checkSlip(file: string, charge: any, expected: Expected): Promise<void> {
  expect(await pageCount(file)).toBe(1);
  const text = await pdfText(file);
  for (const label of LABELS) expect(text, label).toContain(label);
  // Bank code with its check digit and the digitable line, on the receipt and on the Ficha de Compensação.
  expect(occurrences(text, '435-9')).toBeGreaterThanOrEqual(2);
  expect(occurrences(text, formatDigitableLine(charge.digitableLine))).toBeGreaterThanOrEqual(2);
  expect(text).toContain('Pagável em qualquer banco');
  expect(text).toContain('REMESSA SANDBOX LTDA - CNPJ 11.222.333/0001-81');
  expect(text).toContain('AV PAULISTA 1000 - CEP 01310-100 - SAO PAULO/SP');
  expect(text).toContain('0001 / 1234567');
  expect(occurrences(text, expected.dueDate)).toBeGreaterThanOrEqual(2);
  expect(occurrences(text, expected.amount)).toBeGreaterThanOrEqual(2);
  expect(text).toContain('22/11/2026'); // Data do documento and Data do processamento
  expect(text).toMatch(/Espécie doc\.\s+DM\s+Aceite\s+N\s/);
  expect(text).toMatch(new RegExp(`Carteira\\s+${expected.wallet}\\s`));
  expect(text).toMatch(/Espécie\s+R\$\s/);
  expect(occurrences(text, charge.ourNumber)).toBeGreaterThanOrEqual(2);
  if (expected.yourNumber) expect(occurrences(text, expected.yourNumber)).toBeGreaterThanOrEqual(2);
  for (const part of expected.payer) expect(text).toContain(part);
  if (expected.guarantor) {
    expect(text).toContain('Sacador/Avalista');
    expect(occurrences(text, expected.guarantor)).toBeGreaterThanOrEqual(2);
  } else {
    expect(text).not.toContain('Sacador/Avalista');
  }
  for (const line of expected.instructions) expect(text).toContain(line);
  expect(text).not.toMatch(ENGLISH);
  expect(text).not.toContain('Situação');

  const page = await renderPage(file);
  expect(await decodeItf(page)).toEqual([charge.barCode]);
  const bars = measureBarCode(page);
  // FEBRABAN: 103 mm x 13 mm (405 narrow modules of 0.254 mm = 102.87 mm), wide = 3 narrow, 5 mm quiet zone.
  expect(bars.widthMm).toBeCloseTo(102.87, 0);
  expect(bars.heightMm).toBeCloseTo(13, 0);
  expect(bars.wideToNarrow).toBeCloseTo(3, 0);
  expect(bars.leftMm).toBeGreaterThanOrEqual(5);
  expect(bars.bottomMm).toBeCloseTo(12, 0);

  if (charge.type === 'BANKSLIP_PIX') {
    expect(text).toContain('Pague com Pix');
    expect(text).toContain('Pix Copia e Cola');
    // The copy-and-paste text wraps, never at a space: without the line breaks it is the exact BR Code.
    expect(text.replace(/\n/g, '')).toContain(charge.qrCode);
    // It belongs to the payer's part (the receipt, upper half of the page): decoded there.
    expect(decodeQr(page, { x: 0, y: 0, width: page.width, height: Math.floor(page.height / 2) })).toBe(charge.qrCode);
  } else {
    expect(text).not.toContain('Pix');
  }
}

const FULL_EXTRAS = {
  discount: {
    type: 'Fixed',
    items: [
      { date: '2026-12-01', amount: 30 },
      { date: '2026-12-05', amount: 12.5 },
    ],
  },
  lateFine: { type: 'Percentage', date: '2026-12-11', amount: 2 },
  latePayment: { type: 'Fixed', amount: 0.5 },
};
const FULL_INSTRUCTIONS = [
  'Após o vencimento, cobrar multa de 2% sobre o valor do documento a partir de 11/12/2026.',
  'Cobrar juros de mora de R$ 0,50 por dia de atraso a partir de 11/12/2026.',
  'Conceder desconto de R$ 30,00 para pagamento até 01/12/2026.',
  'Conceder desconto de R$ 12,50 para pagamento até 05/12/2026.',
];
const GUARANTOR_TEXT = 'Empresa Garantidora Ltda - CNPJ 11.222.333/0001-81';
const PERSON_TEXT = [
  'João da Silva Pagador - CPF 529.982.247-25',
  'Avenida Paulista, 1000, Apto 52 - Bela Vista',
  'CEP 01310-100 - São Paulo/SP',
];
const COMPANY_TEXT = [
  'Padaria Pão Quente Ltda - CNPJ 04.252.011/0001-10',
  'Rua da Bahia, 77',
  'CEP 30130-010 - Belo Horizonte/MG',
];

describe('bank slip PDF: FEBRABAN layout, read back from the rendered page', () => {
  it('normal charge (wallet 112), bare', async () => {
    const charge = await create({
      type: 'BANKSLIP',
      correlationId: 'slip-normal',
      yourNumber: 'NF-777',
      dueDate: '2026-12-10',
      Amount: 1234.56,
      payer: PERSON,
    });
    expect(charge.walletNumber ?? '112').toBe('112');
    await checkSlip(await pdf('slip-normal'), charge, {
      wallet: '112',
      amount: 'R$ 1.234,56',
      dueDate: '10/12/2026',
      yourNumber: 'NF-777',
      payer: PERSON_TEXT,
      instructions: [],
    });
  });

  it('normal charge with finalBeneficiary, discounts, fine and interest; a company payer', async () => {
    const charge = await create({
      type: 'BANKSLIP',
      correlationId: 'slip-normal-full',
      yourNumber: 'NF-778',
      dueDate: '2026-12-10',
      Amount: 1500,
      payer: COMPANY,
      finalBeneficiary: GUARANTOR,
      ...FULL_EXTRAS,
    });
    await checkSlip(await pdf('slip-normal-full'), charge, {
      wallet: '112',
      amount: 'R$ 1.500,00',
      dueDate: '10/12/2026',
      yourNumber: 'NF-778',
      payer: COMPANY_TEXT,
      guarantor: GUARANTOR_TEXT,
      instructions: FULL_INSTRUCTIONS,
    });
  });

  it('express charge (ourNumber sent: wallet 121), bare', async () => {
    const charge = await create({
      type: 'BANKSLIP',
      correlationId: 'slip-express',
      ourNumber: '520637',
      dueDate: '2027-01-15',
      Amount: 0.5,
      payer: PERSON,
    });
    expect(charge.ourNumber).toBe('00000520637');
    await checkSlip(await pdf('slip-express'), charge, {
      wallet: '121',
      amount: 'R$ 0,50',
      dueDate: '15/01/2027',
      payer: PERSON_TEXT,
      instructions: [],
    });
  });

  it('express charge with finalBeneficiary, discounts, fine and interest', async () => {
    const charge = await create({
      type: 'BANKSLIP',
      correlationId: 'slip-express-full',
      ourNumber: '99887766554',
      yourNumber: 'CT-2027/01',
      dueDate: '2026-12-10',
      Amount: 150.25,
      payer: PERSON,
      finalBeneficiary: GUARANTOR,
      ...FULL_EXTRAS,
    });
    await checkSlip(await pdf('slip-express-full'), charge, {
      wallet: '121',
      amount: 'R$ 150,25',
      dueDate: '10/12/2026',
      yourNumber: 'CT-2027/01',
      payer: PERSON_TEXT,
      guarantor: GUARANTOR_TEXT,
      instructions: FULL_INSTRUCTIONS,
    });
  });

  it('BANKSLIP_PIX, bare: the QR code of its BR Code and the copy-and-paste text', async () => {
    const charge = await create({
      type: 'BANKSLIP_PIX',
      correlationId: 'slip-pix',
      dueDate: '2026-12-10',
      Amount: 99.9,
      payer: PERSON,
    });
    await checkSlip(await pdf('slip-pix'), charge, {
      wallet: '112',
      amount: 'R$ 99,90',
      dueDate: '10/12/2026',
      payer: PERSON_TEXT,
      instructions: ['Este boleto também pode ser pago com Pix: QR Code no recibo do pagador.'],
    });
  });

  it('BANKSLIP_PIX with finalBeneficiary, percentage discounts, fixed fine and monthly interest', async () => {
    const charge = await create({
      type: 'BANKSLIP_PIX',
      correlationId: 'slip-pix-full',
      yourNumber: 'PED-42',
      dueDate: '2026-12-10',
      Amount: 2000,
      payer: COMPANY,
      finalBeneficiary: { name: GUARANTOR.name, document: GUARANTOR.document },
      discount: {
        type: 'Percentage',
        items: [
          { date: '2026-12-01', amount: 5 },
          { date: '2026-12-05', amount: 2.5 },
          { date: '2026-12-08', amount: 1 },
        ],
      },
      lateFine: { type: 'Fixed', amount: 10 },
      latePayment: { type: 'Percentage', date: '2026-12-12', amount: 1 },
    });
    await checkSlip(await pdf('slip-pix-full'), charge, {
      wallet: '112',
      amount: 'R$ 2.000,00',
      dueDate: '10/12/2026',
      yourNumber: 'PED-42',
      payer: COMPANY_TEXT,
      guarantor: GUARANTOR_TEXT,
      instructions: [
        'Após o vencimento, cobrar multa de R$ 10,00 a partir de 11/12/2026.',
        'Cobrar juros de mora de 1% ao mês, pro rata die a partir de 12/12/2026.',
        'Conceder desconto de 5% sobre o valor do documento para pagamento até 01/12/2026.',
        'Conceder desconto de 2,5% sobre o valor do documento para pagamento até 05/12/2026.',
        'Conceder desconto de 1% sobre o valor do documento para pagamento até 08/12/2026.',
      ],
    });
  });

  it('values at their longest stay in their boxes: names shrink with an ellipsis, documents and CEPs stay whole', async () => {
    const name = 'Maria Aparecida dos Santos Oliveira Pereira da Conceição e Albuquerque Cavalcanti de Souza Ltda ME';
    const address = {
      zipCode: '12245000',
      publicPlace: 'Avenida Brigadeiro Faria Lima Complexo Empresarial Torre Norte Bloco B Conjunto 1234 Andar 12',
      number: '12345678901234567890',
      complement: 'Sala 1234 Bloco C Torre Sul Edifício Comercial Paulista',
      neighborhood: 'Jardim Paulistano Itaim Bibi Vila Olímpia Região Sul',
      city: 'São José dos Campos do Norte da Serra da Mantiqueira',
      state: 'SP',
    };
    const charge = await create({
      type: 'BANKSLIP_PIX',
      correlationId: 'slip-long',
      yourNumber: 'NF-2027-000000000123',
      dueDate: '2026-12-10',
      Amount: 99999999.99,
      payer: { name, document: '04252011000110', address },
      finalBeneficiary: { name, document: '52998224725', address },
      ...FULL_EXTRAS,
    });
    const file = await pdf('slip-long');
    expect(await pageCount(file)).toBe(1);
    const text = await pdfText(file);
    // In the receipt's narrower payer box the name gives way; the CNPJ after it is whole.
    expect(text).toMatch(/Maria Aparecida dos Santos[^\n]*… - CNPJ 04\.252\.011\/0001-10/);
    expect(text).toContain(`${name} - CNPJ 04.252.011/0001-10`);
    expect(occurrences(text, `${name} - CPF 529.982.247-25`)).toBe(2);
    expect(occurrences(text, 'CEP 12245-000 - São José dos Campos do Norte da Serra da Mantiqueira/SP')).toBe(3);
    expect(occurrences(text, 'R$ 99.999.999,99')).toBeGreaterThanOrEqual(2);
    expect(occurrences(text, 'NF-2027-000000000123')).toBe(2);
    const page = await renderPage(file);
    expect(await decodeItf(page)).toEqual([charge.barCode]);
    expect(decodeQr(page, { x: 0, y: 0, width: page.width, height: Math.floor(page.height / 2) })).toBe(charge.qrCode);
  });

  it('a PATCHed slip prints its new due date and bar code; a paid or voided slip says so in Portuguese', async () => {
    await create({ type: 'BANKSLIP', correlationId: 'slip-3', dueDate: '2026-12-10', Amount: 10, payer: PERSON });
    const res = await fetch(`${sandbox.url}/v1/charges/slip-3`, {
      method: 'PATCH',
      headers,
      body: JSON.stringify({ dueDate: '2027-01-15' }),
    });
    const updated = JSON.parse(await res.text());
    const file = await pdf('slip-3');
    expect(await pdfText(file)).toContain('15/01/2027');
    expect(await decodeItf(await renderPage(file))).toEqual([updated.barCode]);

    await fetch(`${sandbox.url}/v1/charges/slip-3/void`, { method: 'POST', headers, body: '{}' });
    const voided = await pdfText(await pdf('slip-3'));
    expect(voided).toContain('Boleto baixado (cancelado) em 22/11/2026: não pague.');
    expect(voided).not.toMatch(ENGLISH);

    await create({ type: 'BANKSLIP', correlationId: 'slip-4', dueDate: '2026-12-10', Amount: 10, payer: PERSON });
    await fetch(`${sandbox.url}/v1/charges/slip-4/pay`, { method: 'POST', headers, body: '{}' });
    const paid = await pdfText(await pdf('slip-4'));
    expect(paid).toContain('Pagamento recebido em 22/11/2026: R$ 10,00 (boleto).');
    expect(paid).not.toMatch(ENGLISH);
  });
});

describe('Pix charge PDF', () => {
  it('carries the QR code (decoded from the rendered page), the copy-and-paste payload and the amount, in Portuguese', async () => {
    const charge = await create({ type: 'PIX_STATIC', correlationId: 'pix-4', amount: 66.66, description: 'Pedido 9' });
    const file = await pdf('pix-4');
    const text = await pdfText(file);
    expect(text).toContain('R$ 66,66');
    expect(text).toContain('Pedido 9');
    expect(text).toContain('Situação: Em aberto');
    expect(text).toContain('Tipo: Pix estático');
    expect(text).not.toMatch(ENGLISH);
    expect(text.replace(/\n/g, '')).toContain(charge.qrCode);
    expect(decodeQr(await renderPage(file, 150))).toBe(charge.qrCode);
  });
});

describe('slip pieces', () => {
  it('bank code check digits as banks print them', () => {
    expect(bankCodeCheckDigit('001')).toBe('9');
    expect(bankCodeCheckDigit('237')).toBe('2');
    expect(bankCodeCheckDigit('341')).toBe('7');
    expect(bankCodeCheckDigit('033')).toBe('7');
    expect(bankCodeCheckDigit('756')).toBe('0');
    expect(bankCodeCheckDigit('748')).toBe('X');
    expect(bankCodeCheckDigit('435')).toBe('9');
  });

  it('copy-and-paste lines are never cut at a space, and join back to the payload', () => {
    const payload = '5920REMESSA SANDBOX LTDA6009SAO PAULO62070503***6304ABCD';
    for (let perLine = 4; perLine <= payload.length + 1; perLine++) {
      const lines = copyPasteLines(payload, perLine);
      expect(lines.join('')).toBe(payload);
      for (const line of lines) {
        expect(line.length).toBeLessThanOrEqual(perLine);
        expect(line).not.toMatch(/^ | $/);
      }
    }
  });

  it('an ITF of 44 digits is 405 narrow modules, 102.87 mm at 0.254 mm', () => {
    const elements = itfElements('43590001161200000060900005206370510380000000010'.slice(0, 44));
    expect(elements).toHaveLength(4 + 44 * 5 + 3);
    const modules = elements.reduce((a, b) => a + b, 0);
    expect(modules).toBe(405);
    expect((modules * ITF_NARROW_PT * 25.4) / 72).toBeCloseTo(102.87, 2);
    expect(() => itfElements('123')).toThrow(/even number of digits/);
  });
});
