/**
 * Deterministic data of the benchmark: a charges file (every row valid: CPF/CNPJ with right check digits, amounts,
 * both date spellings, payer fields, the four charge types) and a bill-payments file (distinct synthetic bank slips
 * the sandbox reads as PENDING_PAYMENT, see src/sandbox/bills.ts). Row `i` is always the same row.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { bankSlipBarCodeToLine, buildBankSlipBarCode } from '../src/formats/boleto.js';
import { addDays } from '../src/formats/dates.js';
import { cnpjFromSeed, cpfFromSeed, UF_CODES } from '../src/formats/documents.js';

/** Header of the generated charges file (the kind's own column names, ',' delimiter, '.' decimal mark). */
export const CHARGE_HEADER = [
  'type',
  'correlationId',
  'amount',
  'dueDate',
  'yourNumber',
  'description',
  'expiresIn',
  'payer.name',
  'payer.document',
  'payer.email',
  'payer.phone.prefix',
  'payer.phone.number',
  'payer.address.zipCode',
  'payer.address.publicPlace',
  'payer.address.number',
  'payer.address.neighborhood',
  'payer.address.city',
  'payer.address.state',
] as const;

const FIRST_NAMES = ['Maria', 'João', 'Ana', 'José', 'Luíza', 'Carlos', 'Fernanda', 'Antônio'];
const LAST_NAMES = ['da Silva', 'Santos', 'Oliveira', 'Souza', 'Pereira', 'Conceição', 'Gonçalves', 'Araújo'];
const STREETS = ['Avenida Paulista', 'Rua da Consolação', 'Rua XV de Novembro', 'Avenida Brasil', 'Rua Augusta'];
const CITIES = ['São Paulo', 'Rio de Janeiro', 'Belo Horizonte', 'Curitiba', 'Porto Alegre', 'Recife'];
const NEIGHBORHOODS = ['Bela Vista', 'Centro', 'Jardim América', 'Boa Viagem', 'Savassi'];
const BASE_DUE_DATE = '2027-01-04';

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

/** Cents as the file's text with '.' as decimal mark: 123456 -> "1234.56". */
export function centsText(cents: number): string {
  return `${Math.floor(cents / 100)}.${pad(cents % 100, 2)}`;
}

function maskCpf(cpf: string): string {
  return `${cpf.slice(0, 3)}.${cpf.slice(3, 6)}.${cpf.slice(6, 9)}-${cpf.slice(9)}`;
}

function maskCnpj(cnpj: string): string {
  return `${cnpj.slice(0, 2)}.${cnpj.slice(2, 5)}.${cnpj.slice(5, 8)}/${cnpj.slice(8, 12)}-${cnpj.slice(12)}`;
}

/** The cells of charges row `i` (0-based), in CHARGE_HEADER order. Every row is valid. */
export function chargeCells(i: number): string[] {
  const variant = i % 10;
  const type = variant < 7 ? 'BANKSLIP' : variant === 7 ? 'BANKSLIP_PIX' : variant === 8 ? 'PIX_DYNAMIC' : 'PIX_STATIC';
  const cents = 100 + ((i * 7919) % 9_999_900);
  const name = `${FIRST_NAMES[i % FIRST_NAMES.length]} ${LAST_NAMES[(i >> 3) % LAST_NAMES.length]} ${i}`;
  const docKind = i % 4;
  const document =
    docKind === 0
      ? maskCpf(cpfFromSeed(i))
      : docKind === 1
        ? cpfFromSeed(i)
        : docKind === 2
          ? maskCnpj(cnpjFromSeed(i))
          : cnpjFromSeed(i);
  const cells: string[] = new Array(CHARGE_HEADER.length).fill('');
  cells[0] = type;
  cells[1] = `BENCH-${pad(i, 8)}`;
  cells[2] = centsText(cents);
  if (type === 'BANKSLIP' || type === 'BANKSLIP_PIX') {
    const due = addDays(BASE_DUE_DATE, i % 700);
    cells[3] = i % 2 === 0 ? due : `${due.slice(8, 10)}/${due.slice(5, 7)}/${due.slice(0, 4)}`;
    cells[4] = `NF-${i}`;
    cells[7] = name;
    cells[8] = document;
    cells[9] = `cliente${i}@example.com`;
    cells[10] = String(11 + (i % 88)).replace(/0$/, '1');
    cells[11] = `9${pad(i % 100_000_000, 8)}`;
    cells[12] = `${pad(1000 + (i % 98_000), 5)}-${pad(i % 1000, 3)}`;
    cells[13] = STREETS[i % STREETS.length]!;
    cells[14] = String(1 + (i % 3000));
    cells[15] = NEIGHBORHOODS[i % NEIGHBORHOODS.length]!;
    cells[16] = CITIES[i % CITIES.length]!;
    cells[17] = UF_CODES[i % UF_CODES.length]!;
  } else if (type === 'PIX_DYNAMIC') {
    cells[5] = `Pedido ${i}`;
    cells[6] = '86400';
    cells[7] = name;
    cells[8] = document;
  } else {
    cells[5] = `Doação ${i}`;
  }
  return cells;
}

/** Writes `rows` lines of charges CSV to `file` (header first), in chunks: generation is not what is measured. */
export function writeChargesFile(file: string, rows: number): void {
  const fd = openSync(file, 'w');
  try {
    writeSync(fd, `${CHARGE_HEADER.join(',')}\n`);
    const chunk: string[] = [];
    for (let i = 0; i < rows; i++) {
      chunk.push(chargeCells(i).join(','));
      if (chunk.length === 10_000) {
        writeSync(fd, `${chunk.join('\n')}\n`);
        chunk.length = 0;
      }
    }
    if (chunk.length > 0) writeSync(fd, `${chunk.join('\n')}\n`);
  } finally {
    closeSync(fd);
  }
}

/** Due date of the synthetic slips: in the future, so no interest, fine or discount (charged = face amount). */
export const BILL_DUE_DATE = '2030-12-31';

/** One payable synthetic bank slip: bar code, digitable line and amount in cents. */
export interface BenchBill {
  barCode: string;
  digitableLine: string;
  amountCents: number;
}

/**
 * Bill `i`: a bank slip of bank 341 whose free field carries `i` (distinct bills, distinct natural keys) and ends in
 * 0000 (not one of the sandbox's 9001..9005 fixture suffixes, so it reads PENDING_PAYMENT).
 */
export function benchBill(i: number): BenchBill {
  const amountCents = 1_000 + (i % 50_000);
  const barCode = buildBankSlipBarCode({
    bankCode: '341',
    dueDate: BILL_DUE_DATE,
    amountCents,
    freeField: `77${pad(i, 19)}0000`,
  });
  return { barCode, digitableLine: bankSlipBarCodeToLine(barCode), amountCents };
}

/** Header of the generated bill-payments file. */
export const BILL_HEADER = ['barCode', 'digitableLine', 'amount'] as const;

/** Writes `rows` bill payments (every third one by digitable line, the others by bar code) to `file`. */
export function writeBillsFile(file: string, rows: number, first = 0): void {
  const lines = [BILL_HEADER.join(',')];
  for (let i = first; i < first + rows; i++) {
    const bill = benchBill(i);
    lines.push(
      i % 3 === 2
        ? `,${bill.digitableLine},${centsText(bill.amountCents)}`
        : `${bill.barCode},,${centsText(bill.amountCents)}`,
    );
  }
  const fd = openSync(file, 'w');
  try {
    writeSync(fd, `${lines.join('\n')}\n`);
  } finally {
    closeSync(fd);
  }
}
