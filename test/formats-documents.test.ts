import { isValidCnpj as libIsValidCnpj, isValidCpf as libIsValidCpf } from '@brazilian-utils/brazilian-utils';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  cnpjFromSeed,
  cpfFromSeed,
  documentType,
  FormatError,
  formatCep,
  formatDocument,
  isValidCep,
  isValidCnpj,
  isValidCpf,
  isValidPhone,
  isValidUf,
  normalizeDocument,
  onlyDigits,
  UF_CODES,
  validateDocument,
} from '../src/formats/index.js';

describe('CPF and CNPJ', () => {
  it('accepts known valid documents, masked or not', () => {
    expect(isValidCpf('529.982.247-25')).toBe(true);
    expect(isValidCpf('52998224725')).toBe(true);
    expect(isValidCnpj('11.222.333/0001-81')).toBe(true);
    // the Receita Federal's alphanumeric example, and @brazilian-utils' one (lower case too)
    expect(isValidCnpj('12.ABC.345/01DE-35')).toBe(true);
    expect(isValidCnpj('q0slfmbd7vx439')).toBe(true);
  });

  it('refuses wrong check digits, repeated digits, wrong lengths and letters in a CPF', () => {
    expect(isValidCpf('529.982.247-24')).toBe(false);
    expect(isValidCpf('111.111.111-11')).toBe(false);
    expect(isValidCpf('5299822472')).toBe(false);
    expect(isValidCnpj('11.222.333/0001-82')).toBe(false);
    expect(isValidCnpj('00000000000000')).toBe(false);
    expect(isValidCnpj('12ABC34501DEAB')).toBe(false);
  });

  it('seeded generators are deterministic, distinct and valid for the independent validator (property)', () => {
    expect(cpfFromSeed(42)).toBe(cpfFromSeed(42));
    fc.assert(
      fc.property(fc.nat(), fc.nat(), (a, b) => {
        const [cpfA, cnpjA] = [cpfFromSeed(a), cnpjFromSeed(a)];
        expect(isValidCpf(cpfA)).toBe(true);
        expect(libIsValidCpf(cpfA)).toBe(true);
        expect(isValidCnpj(cnpjA)).toBe(true);
        expect(libIsValidCnpj(cnpjA)).toBe(true);
        expect(documentType(cpfA)).toBe('NATURAL');
        expect(documentType(cnpjA)).toBe('LEGAL');
        if (a !== b && a < 10 ** 8 && b < 10 ** 8) {
          expect(cpfFromSeed(b)).not.toBe(cpfA);
          expect(cnpjFromSeed(b)).not.toBe(cnpjA);
        }
      }),
    );
  });

  it('agrees with the independent validator on arbitrary 11- and 14-character texts (property)', () => {
    const digits = (n: number) => fc.stringMatching(new RegExp(`^\\d{${n}}$`));
    const alnumCnpj = fc.stringMatching(/^[0-9A-Z]{12}\d{2}$/);
    fc.assert(
      fc.property(digits(11), digits(14), alnumCnpj, (cpf, cnpj, alnum) => {
        expect(isValidCpf(cpf)).toBe(libIsValidCpf(cpf));
        expect(isValidCnpj(cnpj)).toBe(libIsValidCnpj(cnpj));
        expect(isValidCnpj(alnum)).toBe(libIsValidCnpj(alnum, { version: 2 }));
      }),
    );
  });

  it('validateDocument gives a reason, never the document', () => {
    expect(validateDocument('529.982.247-25')).toBeNull();
    expect(validateDocument('12.ABC.345/01DE-35')).toBeNull();
    expect(validateDocument('529.982.247-24')).toBe('Expected a CPF with valid check digits, got wrong check digits');
    expect(validateDocument('123')).toBe('Expected a CPF (11 digits) or a CNPJ (14 characters), got 3 characters');
    expect(validateDocument('')).toContain('empty');
    expect(validateDocument('529*982')).toBe('Expected only digits (and letters in a CNPJ), got "*"');
    expect(normalizeDocument('12.abc.345/01de-35')).toBe('12ABC34501DE35');
    expect(() => documentType('52998224724')).toThrow(FormatError);
    expect(onlyDigits('529.982.247-25')).toBe('52998224725');
  });
});

describe('UF and CEP', () => {
  it('knows the 27 UF codes', () => {
    expect(UF_CODES).toHaveLength(27);
    expect(new Set(UF_CODES).size).toBe(27);
    expect(isValidUf('SP')).toBe(true);
    expect(isValidUf('DF')).toBe(true);
    expect(isValidUf('sp')).toBe(false);
    expect(isValidUf('XX')).toBe(false);
  });

  it('accepts 8-digit CEPs with or without the dash', () => {
    expect(isValidCep('01310-100')).toBe(true);
    expect(isValidCep('01310100')).toBe(true);
    expect(isValidCep('0131010')).toBe(false);
    expect(isValidCep('01310--100')).toBe(false);
    expect(isValidCep('0131A100')).toBe(false);
  });
});

describe('phones', () => {
  it('accepts area code + 8-digit landline or 9-digit mobile', () => {
    expect(isValidPhone('11', '98765-4321')).toBe(true);
    expect(isValidPhone('(21)', '3456 7890')).toBe(true);
    expect(isValidPhone('10', '987654321')).toBe(false);
    expect(isValidPhone('11', '87654321')).toBe(false);
    expect(isValidPhone('11', '9876543')).toBe(false);
  });
});

describe('formatDocument and formatCep (as printed on a slip)', () => {
  it('masks CPFs, CNPJs (alphanumeric too) and CEPs; leaves anything else as given', () => {
    expect(formatDocument('52998224725')).toBe('529.982.247-25');
    expect(formatDocument('529.982.247-25')).toBe('529.982.247-25');
    expect(formatDocument('11222333000181')).toBe('11.222.333/0001-81');
    expect(formatDocument('12abc34501de35')).toBe('12.ABC.345/01DE-35');
    expect(formatDocument('123')).toBe('123');
    expect(formatCep('01310100')).toBe('01310-100');
    expect(formatCep('01310-100')).toBe('01310-100');
    expect(formatCep('1310100')).toBe('1310100');
  });

  it('a masked valid document is still the same valid document', () => {
    fc.assert(
      fc.property(fc.nat(), (seed) => {
        for (const doc of [cpfFromSeed(seed), cnpjFromSeed(seed)]) {
          expect(normalizeDocument(formatDocument(doc))).toBe(doc);
        }
      }),
    );
  });
});
