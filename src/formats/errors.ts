import { RemessaError } from '../errors.js';
import { type Message, type MessageKey, type Params, t } from '../i18n/index.js';

/**
 * Stable codes of {@link FormatError}. Match on these, never on the message.
 *
 * - `INVALID_LENGTH`: wrong number of digits/characters for the format.
 * - `INVALID_CHARACTERS`: characters the format does not allow (letters in a bar code, ...).
 * - `INVALID_CHECK_DIGIT`: a check digit (field DV, general DV, CPF/CNPJ DV) does not match.
 * - `INVALID_CRC`: the CRC16 of a BR Code does not match or is not 4 upper-case hex digits.
 * - `INVALID_FIELD`: a field is present but its value breaks the format's rule (currency, GUI, txid, ...).
 * - `MISSING_FIELD`: a mandatory field is absent.
 * - `INVALID_DATE`: not a calendar date, or a due-date factor that cannot be read.
 * - `DUE_DATE_OUT_OF_RANGE`: a date or factor outside what the format can express or read.
 * - `INVALID_AMOUNT`: money text or number that cannot be read exactly.
 * - `AMBIGUOUS_AMOUNT`: money text that could mean two amounts (`1.234`): we never guess.
 * - `UNKNOWN_FORMAT`: the text is none of the formats accepted here.
 */
export type FormatErrorCode =
  | 'INVALID_LENGTH'
  | 'INVALID_CHARACTERS'
  | 'INVALID_CHECK_DIGIT'
  | 'INVALID_CRC'
  | 'INVALID_FIELD'
  | 'MISSING_FIELD'
  | 'INVALID_DATE'
  | 'DUE_DATE_OUT_OF_RANGE'
  | 'INVALID_AMOUNT'
  | 'AMBIGUOUS_AMOUNT'
  | 'UNKNOWN_FORMAT';

/**
 * A bar code, digitable line, BR Code, document, amount, date or id is not well formed.
 * Raised by catalogue key and values (src/i18n), never by a sentence: `detail` is what a person reads, in their
 * locale; `message` is its English, for logs and for code that is not a person. A message says what was expected and
 * what was found ("Expected 47 digits, got 45"), never more of the input than needed (a BR Code may carry a Pix key,
 * so messages quote fields, not whole payloads).
 */
export class FormatError extends RemessaError {
  declare readonly code: FormatErrorCode;
  /** The sentence as catalogue key and values (src/i18n), for a person in their locale; `message` is its English. */
  declare readonly detail: Message;

  constructor(code: FormatErrorCode, detail: Message, options?: { cause?: unknown }) {
    super(code, t('en', detail.key, detail.params), { ...options, detail });
  }
}

/** A {@link FormatError} raised by catalogue key and values: its `message` is the English sentence of the key. */
export function formatError(code: FormatErrorCode, key: MessageKey, params: Params = {}): FormatError {
  return new FormatError(code, { key, params });
}
