import {
  ARRECADACAO_PRODUCT,
  arrecadacaoBarCodeToLine,
  arrecadacaoLineToBarCode,
  parseArrecadacaoBarCode,
  type ValueIdentifier,
} from './arrecadacao.js';
import { bankSlipBarCodeToLine, bankSlipLineToBarCode, parseBankSlipBarCode } from './boleto.js';
import { type FormatError, formatError } from './errors.js';

/**
 * One entry point for "the bill the user typed": a 44-digit bar code, a 47-digit bank slip line or a 48-digit
 * utility/tax bill line, with the spaces, dots and dashes people copy from a slip. What must hold: the same bill
 * given by line or by bar code yields the same `barCode` (the natural key of a bill payment is built on it).
 */

/** A bill read from its bar code or digitable line. */
export interface BillIdentifier {
  /** BANKSLIP for a bank slip; TAXES for a bill whose bar code starts with 8 (utility/tax, arrecadação). */
  type: 'BANKSLIP' | 'TAXES';
  /** Which form the text was in. */
  givenAs: 'BAR_CODE' | 'DIGITABLE_LINE';
  /** 44 digits. */
  barCode: string;
  /** 47 digits (BANKSLIP) or 48 (TAXES), no separators. */
  digitableLine: string;
  /** Fixed amount in cents; null when the bill carries none (zeros, or a reference value of a tax bill). */
  amountCents: number | null;
  /** yyyy-mm-dd from the bank slip's factor; null for "no due date" and for every tax bill. */
  dueDate: string | null;
  /** BANKSLIP: the 3-digit bank code. */
  bankCode?: string;
  /** TAXES: segment 1..9. */
  segment?: number;
  /** TAXES: 6/7 (mod 10) or 8/9 (mod 11). */
  valueIdentifier?: ValueIdentifier;
}

/** Options of {@link parseBillIdentifier}. */
export interface ParseBillIdentifierOptions {
  /** yyyy-mm-dd anchoring the due-date factor window. @defaultValue today in Brasília (`brasiliaDay`) */
  today?: string;
}

/**
 * Reads and fully validates a bill identifier. Throws {@link FormatError} saying what is wrong: a character other
 * than digits, spaces, dots and dashes; a digit count other than 44/47/48; a check digit; a field value.
 */
export function parseBillIdentifier(text: string, options: ParseBillIdentifierOptions = {}): BillIdentifier {
  const bad = /[^0-9 .\-\t]/.exec(text);
  if (bad) {
    throw formatError('INVALID_CHARACTERS', 'INVALID_CHARACTERS.bill', {
      char: JSON.stringify(bad[0]),
      position: bad.index + 1,
    });
  }
  const digits = text.replace(/[ .\-\t]/g, '');
  const isTax = digits.startsWith(ARRECADACAO_PRODUCT);
  if (digits.length === 44) return isTax ? taxes(digits, 'BAR_CODE') : bankSlip(digits, 'BAR_CODE', options.today);
  if (digits.length === 47 && !isTax) {
    return bankSlip(bankSlipLineToBarCode(digits), 'DIGITABLE_LINE', options.today);
  }
  if (digits.length === 48 && isTax) return taxes(arrecadacaoLineToBarCode(digits), 'DIGITABLE_LINE');
  if (digits.length === 48 || digits.length === 47) {
    throw formatError(
      'INVALID_FIELD',
      isTax ? 'INVALID_FIELD.taxLength' : 'INVALID_FIELD.taxStart',
      isTax ? { count: digits.length } : { first: digits[0] },
    );
  }
  throw formatError('INVALID_LENGTH', 'INVALID_LENGTH.bill', { count: digits.length });
}

function bankSlip(barCode: string, givenAs: BillIdentifier['givenAs'], today: string | undefined): BillIdentifier {
  const parsed = parseBankSlipBarCode(barCode, today);
  return {
    type: 'BANKSLIP',
    givenAs,
    barCode,
    digitableLine: bankSlipBarCodeToLine(barCode),
    amountCents: parsed.amountCents,
    dueDate: parsed.dueDate,
    bankCode: parsed.bankCode,
  };
}

function taxes(barCode: string, givenAs: BillIdentifier['givenAs']): BillIdentifier {
  const parsed = parseArrecadacaoBarCode(barCode);
  return {
    type: 'TAXES',
    givenAs,
    barCode,
    digitableLine: arrecadacaoBarCodeToLine(barCode),
    amountCents: parsed.amountCents,
    dueDate: null,
    segment: parsed.segment,
    valueIdentifier: parsed.valueIdentifier,
  };
}

/**
 * A digitable line as it is printed on the slip, the form a person reads and copies, kept as text by a spreadsheet
 * (it has spaces): a bank slip's 47 digits as `43590.00116 12000.000609 00005.206370 5 10380000000010` (fields 1
 * to 3 split after their fifth digit, the general DV, factor and amount); a utility or tax bill's 48 digits as four
 * blocks of 11 digits each followed by its DV, `82880000000-6 89900123202-9 61100000000-4 00000000002-7`. Any other
 * text is returned as given. {@link parseBillIdentifier} reads both forms back.
 */
export function formatBillLine(line: string): string {
  if (/^\d{47}$/.test(line)) {
    return (
      `${line.slice(0, 5)}.${line.slice(5, 10)} ${line.slice(10, 15)}.${line.slice(15, 21)} ` +
      `${line.slice(21, 26)}.${line.slice(26, 32)} ${line[32]} ${line.slice(33)}`
    );
  }
  if (/^\d{48}$/.test(line) && line.startsWith(ARRECADACAO_PRODUCT)) {
    const blocks: string[] = [];
    for (let i = 0; i < 48; i += 12) blocks.push(`${line.slice(i, i + 11)}-${line[i + 11]}`);
    return blocks.join(' ');
  }
  return line;
}
