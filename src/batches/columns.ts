/**
 * Building blocks for the kinds' column lists (docs/batches.md is generated from them, see docs.ts).
 */
import type { ColumnSpec } from './kind.js';

export const FORMATS = {
  amount:
    'amount > 0 with 2 decimals at most, in the file decimal mark (1234,56 or 1.234,56 with ";"; 1234.56 otherwise); a leading R$ is allowed (R$ 1.234,56)',
  date: 'date yyyy-mm-dd or dd/mm/yyyy (15/3/2027 too)',
  document: 'CPF (11 digits) or CNPJ (14), punctuation allowed, valid check digits',
  guid: 'GUID (8-4-4-4-12 hex digits)',
  state: 'two-letter state code (UF)',
  zipCode: 'zip code (CEP), 8 digits, hyphen allowed',
  percent: 'percentage, up to 2 decimals, in the file decimal mark',
} as const;

export function column(
  name: string,
  format: string,
  example: string,
  options: { required?: boolean; requiredWhen?: string } = {},
): ColumnSpec {
  const spec: ColumnSpec = { name, required: options.required ?? false, format, example };
  if (options.requiredWhen !== undefined) spec.requiredWhen = options.requiredWhen;
  return spec;
}

/** The optional `idempotencyKey` column every kind accepts. */
export const IDEMPOTENCY_KEY_COLUMN = column(
  'idempotencyKey',
  `${FORMATS.guid}; overrides the key derived from the natural key`,
  '9b2f8a3e-1c4d-4e5f-8a6b-7c8d9e0f1a2b',
);

/** Address columns under `prefix` (payer.address, finalBeneficiary.address). */
export function addressColumns(prefix: string, requiredWhen?: string): ColumnSpec[] {
  const req = requiredWhen === undefined ? {} : { requiredWhen };
  return [
    column(`${prefix}.zipCode`, FORMATS.zipCode, '01310-100', req),
    column(`${prefix}.publicPlace`, 'text, at most 100 characters (street)', 'Avenida Paulista', req),
    column(`${prefix}.number`, 'text, at most 20 characters', '1000'),
    column(`${prefix}.complement`, 'text, at most 60 characters', 'Sala 12'),
    column(`${prefix}.neighborhood`, 'text, at most 60 characters', 'Bela Vista'),
    column(`${prefix}.city`, 'text, at most 60 characters', 'São Paulo', req),
    column(`${prefix}.state`, FORMATS.state, 'SP', req),
  ];
}
