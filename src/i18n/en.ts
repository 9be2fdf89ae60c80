/**
 * English sentences, keyed by stable code (`CODE`) or `CODE.variant`; the keys of this file are the catalogue's keys
 * (./pt-BR.ts must have every one: the type checks it, test/i18n.test.ts too). `{name}` is a value to put in; a
 * function entry builds a sentence with optional parts. Values quoted from the input come already quoted.
 */
type P = Readonly<Record<string, string | undefined>>;
const paren = (v: string | undefined) => (v ? ` (${v})` : '');

export const EN = {
  // Cells (src/batches/fields.ts and the kinds)
  REQUIRED: (p: P) => `Expected a value${paren(p.when)}, got an empty cell`,
  NOT_ALLOWED: 'Expected an empty cell ({why}), got {got}',
  INVALID_TEXT: 'Expected text without control characters (tabs, line breaks), got {got}',
  'INVALID_TEXT.min': 'Expected at least {min} characters, got {got}',
  PATTERN: 'Expected {expected}, got {got}',
  TOO_LONG: 'Expected at most {max} characters, got {got}',
  INVALID_ENUM: 'Expected one of {values}, got {got}',
  INVALID_GUID: 'Expected a GUID like 3f2504e0-4f89-41d3-9a0c-0305e82c3301, got {got}',
  AMOUNT_NOT_POSITIVE: 'Expected an amount greater than 0, got {got}',
  'AMOUNT_NOT_POSITIVE.discount': 'Expected a discount greater than 0, got {got}',
  AMOUNT_TOO_LARGE: (p: P) => `Expected an amount of at most ${p.max}${paren(p.why)}, got ${p.got}`,
  DATE_OUT_OF_RANGE: 'Expected {what} from {from} to {to}, got {got}',
  INVALID_NUMBER: 'Expected a whole number from {min} to {max}, got {got}',
  INVALID_BOOLEAN: 'Expected true or false, got {got}',
  INVALID_STATE: 'Expected a two-letter state code (UF) such as SP or RJ, got {got}',
  INVALID_ZIP_CODE: 'Expected a zip code (CEP) of 8 digits like 01310-100, got {got}',
  'INVALID_ZIP_CODE.leadingZeros':
    'Expected a zip code (CEP) of 8 digits, got {got} ({length} digits): Excel drops leading zeros; format the column as Text and type {padded}',
  INVALID_EMAIL: 'Expected an e-mail address like ana@example.com, got {got}',
  INVALID_PHONE: 'Expected a phone with its area code like (11) 98765-4321 or (11) 3333-4444, got {got}',
  CONFLICT: 'Expected one of two columns to be filled, got both',
  'CONFLICT.phone': 'Expected the phone in payer.phone or in payer.phone.number, got both',
  'CONFLICT.phonePrefix': 'Expected the area code of the phone {phone}, got {got}',
  'CONFLICT.header': 'Expected {implied}, as the header "{header}" says, got {got}',
  NOTHING_TO_CHANGE: 'Expected at least one value to change besides correlationId, got none',
  COLUMN_COUNT: 'Expected {expected} cells as in the header, got {got}',
  UNNAMED_COLUMN: 'Expected column {column}, which has no header, to be empty (its value would be lost), got {got}',
  INVALID_ROW: 'Expected a valid row, got one that could not be read',
  ROW_INVALID: 'The row could not be read: {reason}',
  INVALID_DOCUMENT: 'Expected a CPF (11 digits) or a CNPJ (14 characters), got {length} characters',
  'INVALID_DOCUMENT.empty': 'Expected a CPF (11 digits) or a CNPJ (14 characters), got an empty value',
  'INVALID_DOCUMENT.characters': 'Expected only digits (and letters in a CNPJ), got {char}',
  'INVALID_DOCUMENT.cpfLetters': 'Expected a CPF of 11 digits, got letters',
  'INVALID_DOCUMENT.cnpjLastDigits': 'Expected the last 2 characters of a CNPJ to be digits',
  'INVALID_DOCUMENT.onlyCpf': 'Expected a CPF (11 digits), got {length} characters',
  'INVALID_DOCUMENT.onlyCnpj': 'Expected a CNPJ (14 characters), got {length} characters',
  'INVALID_DOCUMENT.leadingZeros':
    'Expected a {what} of {expected} digits, got {length} digits: Excel drops leading zeros; format the column as Text and type the document with its zeros ({padded})',
  INVALID_CPF: 'Expected a CPF with valid check digits, got wrong check digits',
  INVALID_CNPJ: 'Expected a CNPJ with valid check digits, got wrong check digits',

  // Format errors (src/formats): each parser raises its code and one of these keys with its values.
  INVALID_DATE: 'Expected a date as yyyy-mm-dd or dd/mm/yyyy, got {got}',
  'INVALID_DATE.serial':
    'Expected a date as dd/mm/yyyy, got {got}: Excel wrote the date as a number (in a Windows sheet, {date}); format the column as Date and save the sheet again',
  'INVALID_DATE.shortYear':
    'Expected a year of four digits (dd/mm/yyyy), got {got}: if it is {date}, write it so (in Excel, format the column as a Date with a four-digit year)',
  'INVALID_DATE.withTime':
    'Expected a date alone (dd/mm/yyyy), got {got}, with a time of day: write {date} (in Excel, format the column as a Date, without the time)',
  'INVALID_DATE.calendar': 'Expected a calendar date, got {got}',
  'INVALID_DATE.iso': 'Expected a date as yyyy-mm-dd, got {got}',
  'INVALID_DATE.time': 'Expected a time HH:mm between 00:00 and 23:59, got {got}',
  'INVALID_AMOUNT.empty': 'Expected an amount like 1234,56, got an empty value',
  'INVALID_AMOUNT.sign': 'Expected an amount without a sign, got {got}',
  'INVALID_AMOUNT.characters': 'Expected only digits and the marks "." and ",", got {char} in {got}',
  'INVALID_AMOUNT.edges': 'Expected an amount to start and end with a digit, got {got}',
  'INVALID_AMOUNT.marks': 'Expected one decimal mark "{mark}", got more in {got}',
  'INVALID_AMOUNT.markCount': 'Expected one decimal mark "{mark}", got {count} in {got}',
  'INVALID_AMOUNT.decimals': 'Expected at most 2 decimals, got {count} in {got}',
  'INVALID_AMOUNT.grouping': 'Expected thousands grouped in threes with "{group}", got {got}',
  'INVALID_AMOUNT.tooLarge': 'Expected an amount below 10,000,000,000, got {got}',
  AMBIGUOUS_AMOUNT:
    'Expected "{mark}" followed by 1 or 2 decimals or a whole number without grouping, got {got}: "{mark}" and 3 digits may mean thousands or decimals (write {whole} or {decimal})',
  WITH_HINT: '{message} ({hint})',
  EXCEL_ERROR:
    'Expected a value, got {got}, the error of an Excel formula; fix the formula (or paste the values) and save the sheet again',
  'EXCEL_ERROR.scientific':
    'Expected the whole number, got {got}: Excel wrote it in scientific notation and lost digits; format the column as Text and type the number again',
  'HINT.decimalComma': 'this file writes decimals after a comma: 1.234,56',
  'HINT.decimalDot': 'this file writes decimals after a point: 1234.56',
  'INVALID_DATE.instant': 'Expected a valid instant, got Invalid Date',
  'MONEY.cents': 'Expected an amount as whole cents from 0 to {max}, got {got}',
  'MONEY.finite': 'Expected a finite amount, got {got}',
  'MONEY.negative': 'Expected a non-negative amount, got {got}',
  'MONEY.decimals': 'Expected an amount with at most 2 decimals, got {got}',
  'MONEY.max': 'Expected an amount up to {max}, got {got}',
  'MONEY.percent': 'Expected a percentage of 0 or more, got {got}',
  'IDS.namespace': 'Expected a GUID namespace, got {got}',
  'IDS.ispb': 'Expected an ISPB of 8 digits, got {got}',
  'IDS.seed': 'Expected a seed >= 0, got {got}',
  // Bar codes and digitable lines (src/formats/digits.ts, boleto.ts, arrecadacao.ts); {what} is a WHAT.* phrase.
  'DIGITS.only': 'Expected only digits in {what}, got {char} at position {position}',
  'DIGITS.count': 'Expected {length} digits in {what}, got {count}',
  'DIGITS.checkDigit': 'Expected check digit {expected} for {what}, got {found}',
  'WHAT.bankCode': 'a bank code',
  'WHAT.slipFreeField': 'a bank slip free field',
  'WHAT.slipBarCode': 'a bank slip bar code',
  'WHAT.slipGeneralDv': 'the bar code (position 5)',
  'WHAT.slipLineGeneralDv': 'the digitable line (position 33, the lone digit before the 14 of due date and amount)',
  'WHAT.slipLine': 'a bank slip digitable line',
  'WHAT.lineField': 'field {field} of the digitable line (position {position})',
  'WHAT.agency': 'an agency',
  'WHAT.wallet': 'a wallet',
  'WHAT.freeFieldMiddle': 'the free field middle part',
  'WHAT.ourNumber': 'an our number',
  'WHAT.companyId': 'a company id',
  'WHAT.taxFreeField': 'an arrecadação free field',
  'WHAT.taxBarCode': 'a utility/tax bill bar code',
  'WHAT.taxGeneralDv': 'the utility/tax bill bar code (position 4)',
  'WHAT.taxLine': 'a utility/tax bill digitable line',
  'WHAT.lineBlock': 'block {block} of the digitable line (position {position})',
  'BOLETO.dueDateTooEarly': 'Expected a due date on or after 2000-07-03, got {got}',
  'BOLETO.factor': 'Expected a due-date factor 0000 or 1000..9999, got {got}',
  'BOLETO.factorWindow': 'Expected a due-date factor meaning a date between {from} and {to}, got {got}',
  'BOLETO.amount': 'Expected a bank slip amount of 0..{max} whole cents, got {got}',
  'BOLETO.currency': 'Expected currency code 9 at position 4 of the bar code, got {got}',
  'ARRECADACAO.segment': 'Expected a segment 1..9, got {got}',
  'ARRECADACAO.segmentAt': 'Expected a segment 1..9 at position 2, got {got}',
  'ARRECADACAO.valueIdentifier': 'Expected a value identifier 6, 7, 8 or 9, got {got}',
  'ARRECADACAO.valueIdentifierAt': 'Expected a value identifier 6, 7, 8 or 9 at position 3, got {got}',
  'ARRECADACAO.value': 'Expected a value of 0..{max} (11 digits), got {got}',
  'ARRECADACAO.product': 'Expected a utility/tax bill to start with 8, got {got}',
  // Pix BR Code (src/formats/brcode.ts): it may carry a Pix key, so a message names the field, never the whole code.
  'BRCODE.whole': 'the BR Code',
  'BRCODE.field': (p: P) => `field ${p.id}${paren(p.name)}`,
  'BRCODE.merchantName': 'merchant name',
  'BRCODE.merchantCity': 'merchant city',
  'BRCODE.currency': 'currency',
  'BRCODE.country': 'country code',
  'BRCODE.category': 'merchant category code',
  'BRCODE.additional': 'additional data',
  'BRCODE.key': 'the Pix key (26-01)',
  'BRCODE.url': 'the location URL (26-25)',
  'BRCODE.description': 'the description (26-02)',
  'BRCODE.tlvId': 'Expected a 2-digit TLV id, got {got}',
  'BRCODE.tlvTooLong': 'Expected at most 99 characters in field {id}, got {count}',
  'BRCODE.tlvHead': 'Expected a 2-digit id and a 2-digit length at position {position} of {where}, got {got}',
  'BRCODE.tlvShort': 'Expected {length} characters for field {id} of {where}, got {count}',
  'BRCODE.text': 'Expected a {what} with letters or digits, got {got}',
  'BRCODE.buildAmount': 'Expected a BR Code amount of 1..{max} whole cents, got {got}',
  'BRCODE.buildKey': 'Expected a Pix key of 1..{max} characters, got {count}',
  'BRCODE.buildUrl': 'Expected a location URL of 1..{max} printable characters without scheme, got {count} characters',
  'BRCODE.buildTxid': 'Expected a dynamic txid of 26..35 letters and digits, got {count}',
  'BRCODE.length': 'Expected {min}..{max} characters in {what}, got {count}',
  'BRCODE.amount': 'Expected field 54 (amount) like "66.66", at most {max} characters, got {got}',
  'BRCODE.amountZero': 'Expected field 54 (amount) greater than zero, got {got}',
  'BRCODE.start': 'Expected a BR Code to start with field 00 = "01" (000201), got {got}',
  'BRCODE.crcField': 'Expected a BR Code to end with field 63 = 4 upper-case hex digits (6304XXXX), got {got}',
  'BRCODE.crc': 'Expected CRC {expected}, got {got}',
  'BRCODE.twice': 'Expected field {id} once, got it twice',
  'BRCODE.crcLast': 'Expected field 63 (CRC) to be the last field, got field {id} last',
  'BRCODE.missing': 'Expected {field}, got none',
  'BRCODE.fixed': 'Expected {field} = {expected}, got {got}',
  'BRCODE.categoryDigits': 'Expected field 52 (merchant category code) of 4 digits, got {got}',
  'BRCODE.initiation': 'Expected field 01 (point of initiation) "11" or "12", got {got}',
  'BRCODE.keyOrUrl': (p: P) =>
    `Expected the Pix template to carry exactly one of 01 (key) or 25 (location URL), got ${p.both ? 'both' : 'neither'}`,
  'BRCODE.txidMissing': 'Expected field 62-05 (txid), got none',
  'BRCODE.txidStatic':
    'Expected field 62-05 (txid) of {min}..{max} letters and digits or "***" in a static code, got {count} characters',
  'BRCODE.txidDynamic':
    'Expected field 62-05 (txid) of {min}..{max} letters and digits or "***" in a dynamic code, got {count} characters',
  'BRCODE.template': 'Expected a merchant account template (26..51) with GUI {gui}, got none',
  'INVALID_CHARACTERS.bill':
    'Expected a bar code or digitable line of digits (spaces, dots and dashes allowed), got {char} at position {position}',
  'INVALID_LENGTH.bill':
    'Expected a 44-digit bar code, a 47-digit bank slip line or a 48-digit utility/tax bill line, got {count} digits',
  'INVALID_LENGTH.barCodeGotLine':
    'Expected a bar code of 44 digits, got a digitable line of {count} digits (put it in digitableLine)',
  'INVALID_LENGTH.lineGotBarCode':
    'Expected a digitable line of 47 or 48 digits, got a bar code of 44 digits (put it in barCode)',
  'INVALID_FIELD.taxLength': 'Expected a utility/tax bill line (starting with 8) to have 48 digits, got {count}',
  'INVALID_FIELD.taxStart': 'Expected a 48-digit line to be a utility/tax bill starting with 8, got {first}',

  // Phrases the kinds put in sentences (when a value is required, why a cell must be empty, what a value is)
  'WHEN.slip': 'when type is BANKSLIP or BANKSLIP_PIX',
  'WHEN.with': 'with {column}',
  'WHEN.typeIs': 'when type is {type}',
  'WHEN.anyFilled': 'when any {prefix} column is filled',
  'WHEN.anyDiscountItem': 'when any discount item is filled',
  'WHEN.filled': 'when {column} is filled',
  'WHY.pixOnly': 'Pix charges only',
  'WHY.slipOnly': 'bank slips only',
  'WHY.notPixStatic': 'not for PIX_STATIC',
  'WHY.bankslipPixOurNumber': 'a BANKSLIP_PIX charge is issued in wallet 112: the bank assigns ourNumber',
  'WHY.slipMax': 'the most a bank slip can carry',
  'WHAT.dueDate': 'a due date from today to 10 years ahead (the bank refuses others)',
  'EXPECT.correlationId': '1 to 100 letters, digits or . _ ~ : - (it is used in URL paths)',
  'EXPECT.ourNumber': '1 to 11 digits (express charge)',
  'EXPECT.areaCode': 'a 2-digit area code (11 to 99, not ending in 0)',
  'EXPECT.phoneNumber': 'a phone number of 8 digits (landline, starting 2 to 5) or 9 digits (mobile, starting with 9)',
  'EXPECT.email': 'an e-mail address like ana@example.com',

  'REQUIRED.billOneOf': 'Expected a bar code (barCode) or a digitable line (digitableLine), got both empty',
  'CONFLICT.otherBill':
    'Expected the digitable line of the bar code in barCode, got the line of another bill (bar code {barCode})',
  'DATE_OUT_OF_RANGE.payAt': 'Expected payAt today ({today}) or later (the bank refuses a past date), got {got}',
  'EXPECT.accountNumber': 'an account number of up to 20 digits (check digit after a hyphen allowed)',
  'EXPECT.branch': 'a branch number of up to 5 digits',
  'EXPECT.phoneKey': 'a mobile phone key +55 + area code + 9 digits, like +5511987654321',
  'CONFLICT.claimDocument': "Expected empty or the holder's document {document}, got {got}",
  AMOUNT_MISMATCH:
    "Expected the QR code's own amount {amount} (a static code with an amount does not allow another), got {got}",
  // remessa's own checks before a payment leaves (src/bank/bill-payments.ts, src/bank/pix-payments.ts): nothing sent
  BANK_BILL_NOT_PAYABLE:
    "Expected an open bill, to be paid (PENDING_PAYMENT); the bank's lookup says {status}: nothing was sent",
  'BANK_AMOUNT_OUT_OF_RANGE.charged':
    'Expected the charged amount of the bill, {charged} (this bill does not allow partial payment), got {got}',
  'BANK_AMOUNT_OUT_OF_RANGE.range':
    'Expected an amount from {min} to {max} (the partial payment range of this bill), got {got}',
  BANK_AMOUNT_NOT_WHOLE_CENTS: 'Expected a whole number of cents greater than 0, got {got}',
  BANK_PIX_AMOUNT_FIXED: "Expected the QR code's own amount, {amount} (it does not accept another), got {got}",
  BANK_PIX_AMOUNT_REQUIRED: 'Expected an amount in the row: the QR code carries none',
  'INVALID_PIX_KEY.leadingZeros':
    'Expected a Pix key, got {got}: a {what} without its leading zeros ({expected} digits); Excel drops them: format the column as Text and type the key with the zeros ({padded})',
  INVALID_PIX_KEY: 'Expected a Pix key: CPF, CNPJ, +55 phone, e-mail or random key (EVP), got {got}',
  'WHY.dynamicOnly': 'PIX_DYNAMIC only',
  'WHY.staticOnly': 'PIX_STATIC only',
  'WHEN.guidForDynamic': 'a GUID for PIX_DYNAMIC',
  // Where: a cell error in a result file or in `validate`
  'WHERE.column': 'column {index} ({source} -> {column})',
  'WHERE.columnSame': 'column {index} ({column})',
  'WHERE.columnAbsent': 'column {column}',
  'WHERE.line': '{file} line {line}',
  EXCERPT: '{text} ({length} characters)',

  // Rows the store or engine decides about
  LIMIT_PER_ROW: 'Expected at most {max} ({setting}, {brl}), got {got}',
  DUPLICATE_NATURAL_KEY: 'Same {kind} natural key as line {line} of this file: not sent again',
  'DUPLICATE_NATURAL_KEY.answeredIn': ' (answered in {answer})',
  'DUPLICATE_NATURAL_KEY.otherFile': 'Same {kind} natural key as line {line} of {file}{answered}: not sent again',
  IDEMPOTENCY_KEY_REUSED:
    "Not sent: the idempotency key {key} is already the one of line {line} {where}, another operation: the bank would refuse it, or answer it with that one's outcome. Give this row a key of its own",
  NATURAL_KEY_REUSED:
    'Not sent: {key} in {column} already identifies line {line} {where}{answered}, another {kind} operation: {differences}. One key is one operation at the bank: give this row a value of its own',
  'NATURAL_KEY_REUSED.difference': '{column}: {theirs} on line {line}, {ours} here',
  'NATURAL_KEY_REUSED.thisFile': 'of this file',
  'NATURAL_KEY_REUSED.otherFile': 'of {file}',
  'NATURAL_KEY_REUSED.empty': '(empty)',
  'ROW_INVALID.invalid': 'The row is invalid',
  BATCH_HAS_INVALID_ROWS:
    'Not sent: this {kind} file has {count} invalid row(s), and a file that moves money is sent whole or not at all',
  'BANK_NETWORK.connectTimeout': '{where}: could not connect in time ({reason})',
  'BANK_NETWORK.headersTimeout': '{where}: no response headers in time; the request may have been processed',
  'BANK_NETWORK.bodyTimeout': '{where}: the response body stalled; the request may have been processed',
  'BANK_NETWORK.unreachable': '{where}: could not connect ({reason}); nothing was sent',
  'BANK_NETWORK.tls': '{where}: TLS handshake failed ({reason}); nothing was sent',
  'BANK_NETWORK.dropped': '{where}: connection failed ({reason}); the request may have been processed',
  'BANK_NETWORK.droppedNotSent': '{where}: connection failed ({reason}); nothing was sent',
  'BANK_ANSWER.refused': 'The bank refused (HTTP {status}): {said}',
  'BANK_ANSWER.error': 'The bank answered with an error (HTTP {status}): {said}',
  'BANK_ANSWER.noText': 'no error text',
  CHARGE_ID_TAKEN:
    "The bank already holds another charge under correlationId {id} (the bank's / this row's: {differences}): this one was not created; use another correlationId or Seu número",
  'STEP_ERROR.internal': 'Internal error while driving the row: {reason}',
  ROW_UNPARSABLE: 'The stored row no longer parses: {errors}',
  STOPPED_BEFORE_SEND: 'Stopped before step {step} was sent: nothing was sent; sent by the next run',
  STOPPED_OUTCOME_UNKNOWN: (p: P) =>
    `Stopped while the outcome of step ${p.step} was unknown${paren(p.reason)}; resolved by the next run`,
  'UNKNOWN_OUTCOME.earlierRun': 'an earlier run stopped mid-request',
  'UNKNOWN_OUTCOME.unknown': 'unknown outcome',
  UNKNOWN_OUTCOME_NOT_RESENT:
    'Step {step} may have been carried out at the bank ({reason}); it is never resent blind: check at the bank',
  'UNKNOWN_OUTCOME.lookupFailed':
    'Step {step} may have been carried out at the bank, and looking it up failed: {reason}',
  'RATE_LIMITED.waiting':
    'The bank answered 429 (too many requests) {attempts} times; nothing of this row was sent: it waits, and the next run or the daemon sends it',
  'RATE_LIMITED.stillLimited': 'Still rate limited after {attempts} attempts: {reason}',
  UNKNOWN_OUTCOME: 'Step {step}: outcome unknown after {attempts} attempt(s): {reason}; retried by the next run',
  'UNKNOWN_OUTCOME.notCompleted':
    'Step {step} could not be completed after {attempts} attempt(s): {reason}; retried by the next run',
  'BANK_UNREACHABLE.waiting':
    'The bank could not be reached ({reason}); nothing of this row was sent. Waiting: it is sent when the bank is back (next try within {seconds} s)',
  'BANK_UNREACHABLE.otherRequest': 'another request found it unreachable just before',
  'BANK_CREDENTIALS_REFUSED.waiting':
    "The bank refused remessa's credentials ({reason}); nothing of this row was done. Check the API key remessa sends (REMESSA_API_KEY, bank.apiKeyFile or the systemd credential remessa-api-key): rotated, expired, or without access to this. Waiting: it is sent once the bank accepts the credentials again (asked again every {seconds} s, and at once after a reload with new credentials)",
  'BANK_CREDENTIALS_REFUSED.run':
    "The bank refused remessa's credentials ({reason}); nothing of this row was done. Check the API key remessa sends (REMESSA_API_KEY, bank.apiKeyFile or the systemd credential remessa-api-key): rotated, expired, or without access to this. Waiting: the next run (or the daemon) sends it once the bank accepts the credentials again",
  'BANK_CREDENTIALS_REFUSED.otherRequest': 'another request was refused so just before',
  'UNKNOWN_OUTCOME.credentials':
    "Step {step}: outcome unknown ({reason}), and the bank refuses remessa's credentials now, so it can be neither resent with the same key nor looked up; retried by the next run once the credentials are accepted",
  'UNKNOWN_OUTCOME.unreachable':
    'Step {step}: outcome unknown ({reason}), and the bank cannot be reached now to resend it with the same key; retried by the next run',
  'UNKNOWN_OUTCOME.earlierAttempt': 'an earlier attempt',
  'UNKNOWN_OUTCOME.itsOutcome': 'its outcome is unknown',
  'REFUSED.replayed':
    "{message} (the bank's replay of its first answer to this IdempotencyKey: the first attempt was refused too, nothing was done)",
  'REFUSED.evidence': '{message} ({evidence})',
  REFUSED_AFTER_UNKNOWN: (p: P) =>
    `Step ${p.step}: the bank refused the resend (${p.code}: ${p.message}), but an earlier attempt of this row may have been carried out (${p.cause}) and would explain that refusal, so the row is not marked failed.${p.evidence ? ` Evidence: ${p.evidence}.` : ''} Check at the bank (IdempotencyKey ${p.key}) before doing it by hand; retried by the next run.`,
  'EVIDENCE.lookedUpNotDone': 'looked up at the bank: it was not done',
  'EVIDENCE.lookedUpDone': 'looked up at the bank: it was done',
  'EVIDENCE.lookupFailed': 'looking for evidence failed: {reason}',
  'EVIDENCE.billReads': 'the bill {barCode} now reads {status}',
  'EVIDENCE.billNotPaid': '{bill}: no payment of it went through',
  'EVIDENCE.billMaybePaid':
    '{bill}; the earlier attempt of this row may be the payment (the bank offers no lookup of a payment by IdempotencyKey): do not pay it again before checking the account statement',
  'EVIDENCE.claimOpen': 'the open claim {id} ({status}) of key {key} for this account',
  'EVIDENCE.claimNone': 'no open claim of key {key} for this account was found',
  'EVIDENCE.noInitialization': 'no stored initialization to look up',
  'EVIDENCE.pixPaid': "the payment {id} was made with this row's endToEndId {e2e}",
  'EVIDENCE.pixNotPaid': "no payment was made with this row's endToEndId {e2e}",
  PIX_PAYMENT_NOT_LOOKED_UP:
    'This Pix payment may have gone through (its answer was lost), and the bank could not say whether a payment with endToEndId {e2e} exists ({reason}). It was not sent again: the bank is not known to answer a repeat under the same IdempotencyKey ({key}) with the first payment (setting bank.pixPaymentKeyReplayed). Check the account statement for endToEndId {e2e} before paying it by hand; the next run looks it up again',
  'APPROVAL.perFile': 'the file pays {amount}, over {setting} {limit}',
  'APPROVAL.perDay':
    "{used} of {kind} was let go on {day} (America/Sao_Paulo) already: with this file's {amount} it passes {setting} {limit}",
  'APPROVAL.required': "approval.kinds includes {kind}: every such file waits for a person's approval",
  'APPROVAL.notSent': 'Not sent: {reasons} (approval is off for {kind}, so the file is rejected whole)',
  'DUPLICATE.original': '{message} (original: {state})',
  'DUPLICATE.originalPaidNothing': '{message}, nothing paid by this line (original: {state})',
  'DUPLICATE.notFinished': 'not finished yet',
  // What a person decided, written by the store in the decider's locale (src/store/store.ts, approvals.ts)
  RESOLVED_AS_FAILED: 'Settled as failed by {by} at {at}: {note}',
  APPROVAL_REJECTED: (p: P) => `Rejected by ${p.by} at ${p.at}${p.note ? `: ${p.note}` : ''}; nothing was sent`,
  'APPROVAL.notHeld': 'Batch {batch} ({file}) does not wait for approval',
  // English names a status by its code (pt-BR says it in words with the code beside).
  'APPROVAL.notAwaiting': (p: P) => `Batch ${p.batch} (${p.file}) does not wait for approval: it is ${p.status}`,
  'APPROVAL.decidedAlready': (p: P) => `Batch ${p.batch} (${p.file}) was ${p.state} already by ${p.by} at ${p.at}`,
  'APPROVAL.noName': 'Expected the name of the person who decides, got nothing',
  'APPROVAL.beforePreview':
    'Batch {batch} ({file}): expected a decision made after its preview ({preview}), got one made at {made}: write the marker again once you have read the preview',
  'APPROVAL.noPreview':
    'Batch {batch} ({file}) has no preview yet (its bills are still being looked up): decide once the preview is in the outbox',
  'APPROVAL.owner':
    '{by} owns the file (its maker) and approval.forbidSameAsOwner is on: another person must approve it',
  'APPROVAL.maker': '{by} is listed in approval.makers (prepares files): another person must approve it',
  'APPROVAL.markerEmpty':
    "Expected {marker} to hold the approver's name on its first line (e.g. Maria Silva), got {got}. Write it again with the name",
  'APPROVAL.markerEmpty.nothing': 'an empty file',
  'APPROVAL.markerEmpty.blanks': 'only spaces and blank lines',
  'APPROVAL.previewStale':
    'Approved by {by} at {at} on a preview that did not show {codes} (passed only since): the approval was voided and nothing was sent; decide again on this preview',
  'APPROVAL.markerAmbiguous':
    '{marker} fits {count} files of that name that wait for approval, and which preview it answers cannot be told: none was approved. Approve the one whose preview you read with remessa approve BATCH --by NAME (batches: {batches})',
  'APPROVAL.markerRefused': '{marker} did not approve {file}: nothing was sent, the file still waits.',
  'APPROVAL.ownerUnknown':
    "Who sent the file is not known (owner: {owner}) and approval.forbidSameAsOwner is on: without it nobody can confirm the approver is another person, so nobody may approve it. The owner tells who sent the file only when it comes through the account of whoever prepared it: it reads nobody when the service runs with PrivateUsers=true, and unknown when the file belongs to remessa's own account or is a link. Reject it (remessa reject) and have it sent again through the account of whoever prepared it, or turn approval.forbidSameAsOwner off and rely on approval.makers and approval.markersFrom",
  'APPROVAL.approverUnknown.marker':
    'Who wrote {marker} is not known (owner: {user}) and approval.forbidSameAsOwner is on: the approver is the OS user owning the marker, not the name written in it. Approve with remessa approve BATCH --by NAME run as your own OS user',
  'APPROVAL.approverUnknown.command':
    'The OS user running this command is not known ({user}) and approval.forbidSameAsOwner is on: the approver is that user, not --by. Run remessa approve as your own OS user',
  'APPROVAL.sameUser.marker':
    '{marker} was written by the OS user {user}, the one who sent the file, and approval.forbidSameAsOwner is on: the approver is who writes the marker, not the name written in it ({by}). Another person must approve it, as their own user',
  'APPROVAL.sameUser.command':
    'remessa approve ran as the OS user {user}, the one who sent the file, and approval.forbidSameAsOwner is on: the approver is who runs the command, not --by ({by}). Another person must approve it, as their own user',
  'APPROVAL.markerFolder.owner':
    "{marker} was not used: the folder {dir} belongs to the OS user {owner}, who can rename any file in it and so give another file's marker this name (its writer stays its owner). A marker counts only in a folder of remessa's account (or root's) with chmod +t: change the folder's owner, or set approval.markersFrom to a folder of the approvers alone; or approve with remessa approve BATCH --by NAME",
  'APPROVAL.markerFolder.writable':
    "{marker} was not used: in the folder {dir} (mode {mode}) other users can rename a file that is not theirs, and so give another file's marker this name (its writer stays its owner). Protect the folder with chmod +t {dir}, or set approval.markersFrom to a folder of the approvers alone; or approve with remessa approve BATCH --by NAME",
  'APPROVAL.markerFolder.unreadable':
    "{marker} was not used: the permissions of the folder {dir} could not be read, and without them nobody can tell whether another person gave another file's marker this name. Approve with remessa approve BATCH --by NAME",
  'APPROVAL.markerLate':
    '{marker} came after the decision on {file} and was not used: nothing changed. It was moved to {archived}.',
  'APPROVAL.viaSudo': '{user}, through sudo as {as}',
  'APPROVAL.markerLink':
    '{marker} is a link (symbolic, or a file with more than one name): its owner does not tell who wrote it, and it was not read. Write a plain file holding your name',

  // Answers: rejection notes, summaries, validate
  FILE_IS_LINK:
    '{file} is a symbolic link. remessa never follows links in the inbox, so what it points to was not read and nothing was sent. Copy the file itself into the inbox instead of linking to it.',
  FILE_IS_FOLDER:
    '{file} is a folder, not a file: nothing inside it was read and nothing was sent. Put CSV files directly in inbox/<kind>/.',
  FILE_NOT_REGULAR:
    '{file} is {what}, not a regular file: it was not opened and nothing was sent. Drop a regular CSV file.',
  'ENTRY.fifo': 'a named pipe (FIFO)',
  'ENTRY.socket': 'a socket',
  'ENTRY.device': 'a device',
  'ENTRY.other': 'not a regular file',
  FILE_UNREADABLE:
    'Could not read {file}: {why} ({code}). Nothing was sent. Give the user remessa runs as permission to read the file, then drop it again.',
  'FILE_UNREADABLE.denied': 'permission denied',
  'FILE_UNREADABLE.system': 'the system said',
  FILE_CUT_OFF:
    '{file} looks cut off: {what}, and the file has not changed for {seconds} s. Nothing was sent. If its upload was interrupted, upload the whole file again: under a temporary name (name.csv.tmp or name.csv.filepart) renamed to name.csv when complete, or followed by a name.csv.done marker.',
  FILE_CHANGED_WHILE_READ:
    'the file changed while it was being read (its writer was still at work); nothing was sent. Drop it again once it is complete',
  'UNFINISHED.empty': 'the file is empty',
  'UNFINISHED.openQuote': 'line {line} opens a quoted value that never closes',
  'UNFINISHED.shortLine': "line {line} has {columns} of the header's {headerColumns} columns and no line end",
  'UNFINISHED.noLineEnd': 'line {line} has no line end',
  'HEADER.problems': '{count} problems with the header:',
  'HEADER.more': '... and {count} more',
  'HEADER.at': 'column {column} ({header})',
  'HEADER.empty': 'an empty header',
  'LIST.or': ' or ',
  'HEADER.otherKind':
    'These headers are those of a {kinds} batch, not of {kind}: the file is in the wrong folder. Put it in {folders} (no mapping fixes this).',
  'HEADER.suggestion':
    'To read these headers, add these mappings to the configuration file (merged with any already there; a header mapped to "" is ignored), check each one, then reload (SIGHUP) or restart:',
  HEADER_UNKNOWN_COLUMN: 'Expected a column name of this kind (see docs/batches.md) or a mapped header, got {header}',
  'HEADER_UNKNOWN_COLUMN.nearest':
    'Expected a column name of this kind (see docs/batches.md) or a mapped header, got {header}; nearest known name: {nearest} ({column})',
  HEADER_DUPLICATE_COLUMN:
    'Expected each column once, got {target} from both column {firstColumn} ({firstHeader}) and column {column} ({header}); map one of them to "" to ignore it',
  HEADER_MISSING_COLUMN: 'Expected the required column {target}, got a header without it',
  'HEADER_MISSING_COLUMN.example':
    'Expected the required column {target} (e.g. a header {example}), got a header without it',
  HEADER_BAD_MAPPING:
    "Expected the column mapping to name one of this kind's columns, got {mapped} for header {header}",
  FILE_EMPTY: 'Expected a header line and data rows, got an empty file',
  'FILE_EMPTY.blank': 'Expected a header line and data rows, got only blank lines',
  'FILE_EMPTY.noHeader': 'Expected a header line, got none',
  FILE_NOT_TEXT: 'Expected a CSV text file, got {reason}',
  FILE_NO_ROWS: 'Expected at least one data row after the header, got none',
  FILE_ENCODING:
    'Expected UTF-8 text throughout (the file is UTF-8), got a byte that is not UTF-8 ({bytes}) at column {column} (byte offset {offset}); reading the file another way would change its other accented characters: correct that byte and save the file as UTF-8, or configure its encoding',
  FILE_MIXED_ENCODING:
    'Expected one encoding throughout (most accented characters are Windows-1252), got bytes that read as UTF-8 ({bytes}) at column {column} (byte offset {offset}); the file mixes encodings, so no reading gives every row as written: save it in one encoding, or configure its encoding',
  'FILE_MIXED_ENCODING.start':
    'Expected one encoding throughout (the start of the file is Windows-1252), got bytes that read as UTF-8 ({bytes}) at column {column} (byte offset {offset}); the file mixes encodings, so no reading gives every row as written: save it in one encoding, or configure its encoding',
  CSV_SYNTAX:
    'Expected well-formed CSV (delimiter {delimiter}, fields quoted with "), got a record that could not be read ({code})',
  'CSV_SYNTAX.quoteNotClosed':
    'Expected the quoted value that opens in column {column} to close with a quote ("), got the end of the file: a quote opened and never closed takes in the lines after it',
  'CSV_SYNTAX.recordSize':
    'Expected a record of at most {max} characters, got a longer one: most likely a quote (") that never closes, which takes in the lines after it',
  'NOT_TEXT.utf16le': 'a UTF-16/UTF-32 byte order mark (save the sheet as CSV UTF-8 or CSV, not as Unicode text)',
  'NOT_TEXT.utf16be': 'a UTF-16 byte order mark (save the sheet as CSV UTF-8 or CSV, not as Unicode text)',
  'NOT_TEXT.workbook': 'a spreadsheet workbook (.xlsx or .xls): save it from Excel as CSV',
  'NOT_TEXT.binary': 'binary content (NUL bytes)',
  UNKNOWN_KIND: 'Expected a known batch kind, got {got}',
  'UNKNOWN_KIND.folder': 'Expected the inbox folder to be a batch kind ({kinds}), got {got}',
  'UNKNOWN_KIND.name':
    'Expected a file in a kind folder (inbox/<kind>/) or named <kind>-*.csv or <kind>_*.csv with kind one of {kinds}, got {got}',
  'UNKNOWN_KIND.headerOf':
    '{said}. The header reads as that of a {kinds} batch: if it is one, put the file in {folders}, or give it a name that begins with the kind ({names})',
  'UNKNOWN_KIND.given': 'Expected the file to be in a kind folder or named <kind>-*.csv (or --kind given), got {got}',
  'REJECTED.header': '{file} was not processed: nothing was sent to the bank.',
  'VALIDATE.summary': (p: P) =>
    `${p.file}: ${plural(p.rows, 'row')}, ${p.valid} valid, ${p.invalid} invalid, ${plural(p.errors, 'error')}${p.policy ? `; ${p.policy}` : ''}`,
  'VALIDATE.amounts': 'amounts: {valid} valid, {invalid} invalid',
  'VALIDATE.allOrNothing': 'policy all-or-nothing: nothing would be sent',
  'VALIDATE.sendValid': (p: P) => `policy send-valid: ${plural(p.valid, 'valid row')} would be sent`,
  'VALIDATE.duplicate':
    'Same {kind} natural key as line {line} of this file: would not be sent again (the run answers it duplicate, with the outcome of line {line})',
  'VALIDATE.idempotencyKeyReused':
    "The idempotency key {key} is already the one of line {line} of this file, for another operation: the run would refuse it (the bank would refuse it, or answer it with that one's outcome). Give each row a key of its own",
  'VALIDATE.moreErrors': '... more errors not shown (first {max} listed)',
  'VALIDATE.cannotProcess': '{file}: the file cannot be processed',
  'VALIDATE.noKind':
    '{file}: Expected the file to be in a kind folder or named <kind>-*.csv (or --kind given), got {name}',
  'VALIDATE.notFound': '{file}: not found',
  'SUMMARY.amounts': 'amounts: {parts}',
  'PROGRESS.rows': (p: P) =>
    `${p.label}: ${p.done}${p.total ? `/${p.total}` : ''} rows${p.counts ? ` (${p.counts})` : ''}, ${p.rate} rows/s${p.eta ? `, ETA ${p.eta}` : ''}`,
  'PROGRESS.done': (p: P) =>
    `${p.label}: ${p.done} ${p.done === '1' ? 'row' : 'rows'} done${p.counts ? ` (${p.counts})` : ''}`,
  'PROGRESS.bar': '{label} [{bar}] {value}/{total} rows | {duration_formatted} | ETA {eta_formatted}',
  'STATUS.store': 'Store: {store}',
  'STATUS.timeZone': 'Times in Brasília time ({zone})',
  'STATUS.driver': 'Driven now by pid {pid} on {host} since {since}',
  'STATUS.driverNobody': 'Driven now by: nobody (no daemon or run holds the data folder)',
  'STATUS.daemons': 'Daemons sharing the store: {count} ({alive} alive)',
  'STATUS.daemon':
    'on {host} pid {pid}, last seen {seen}; holds {rows} unfinished rows, {files} files, {answers} answers being written',
  'STATUS.rejectedWhole': 'rejected as a whole: {code}',
  'STATUS.toGo': '{count} to go',
  'STATUS.rateUnknown': 'rate not known yet',
  'STATUS.rate': '{rate} rows/s, ETA {eta}',
  'STATUS.waitingRows':
    'Waiting rows: {count} (the bank could not be reached; nothing of them was sent; sent when it is back)',
  'STATUS.waitingCredentials':
    "Waiting rows: {count} (the bank refused remessa's credentials, HTTP 401/403: check REMESSA_API_KEY, bank.apiKeyFile or the systemd credential remessa-api-key; nothing of them was done; sent once the bank accepts them again)",
  'STATUS.settleHint':
    'Settle them: `remessa retry [BATCH]` asks the bank again; `remessa resolve BATCH LINE --as ...` records what a person checked.',
  'STATUS.noStore': 'No store yet at {file}: nothing has been processed.',
  'STATUS.batches': 'Batches: {count}',
  'STATUS.noRows': 'no rows',
  'STATUS.older': '... {count} older',
  'STATUS.rows': 'Rows: {counts}',
  'STATUS.none': 'none',
  'STATUS.uncertain': 'Uncertain rows: {count}',
  'STATUS.uncertainRow': (p: P) =>
    `${p.kind} ${p.file} line ${p.line}${p.step ? ` step ${p.step}` : ''}: ${p.code} ${p.message} (idempotency key ${p.key})`,
  'RUN.parked': 'stopped early: not answered yet, resumes on the next run',
  'RUN.notFound': 'not found',
  'RUN.notRegular': 'not a regular file (links in the inbox are never followed)',
  'RUN.takenMeanwhile': 'taken by another process meanwhile',
  'RUN.waitsApproval': 'waits for approval (remessa approve / reject) -> preview {preview}',
  'PREVIEW.rows': (p: P) => plural(p.count, 'row'),
  'PREVIEW.notLookedUp': 'not looked up yet ({reason}); looked up again before paying',
  'PREVIEW.noAnswer': 'the bank did not answer',
  'PREVIEW.file': '{file} (batch {batch}), owner {owner}',
  'PREVIEW.ownerUnknown': 'unknown',
  'PREVIEW.decide':
    'remessa approve {batch} --by NAME | remessa reject {batch} --by NAME --note TEXT | or drop {marker} holding your name beside the file in the inbox',
  'PREVIEW.decideNoMarker':
    'remessa approve {batch} --by NAME | remessa reject {batch} --by NAME --note TEXT | a {marker} beside the file in the inbox would be refused: in the folder {dir} other users can rename it (protect it with chmod +t, or set approval.markersFrom)',
  'PREVIEW.decideIn':
    "remessa approve {batch} --by NAME | remessa reject {batch} --by NAME --note TEXT | or drop {marker} holding your name in the approvers' folder {dir} (approval.markersFrom)",
  'RUN.nothingWaiting': 'nothing waiting in the inbox',
  'RUN.credentialsRefused': (p: P) =>
    `${plural(p.count, 'row')} waiting: the bank refused remessa's credentials (check REMESSA_API_KEY, bank.apiKeyFile or the systemd credential remessa-api-key) and nothing of them was done; the answer shows them waiting: run again once the key is fixed`,
  'RUN.waitingRows': (p: P) =>
    `${plural(p.count, 'row')} waiting: the bank cannot be reached and nothing of them was sent; not answered yet: the next run or the daemon sends them`,
  // Commands that act on what status shows (src/runner/approval.ts, settle.ts, commands.ts)
  'DECIDE.approved':
    '{file} ({batch}): approved by {by} (OS user {user}) at {at}; the daemon pays it within moments (or the next `remessa run`)',
  'DECIDE.rejected':
    '{file} ({batch}): rejected by {by} (OS user {user}) at {at}; every row is answered `rejected`, nothing was sent',
  'DECIDE.notDecided': 'not decided: {reason}',
  'RESOLVE.done': '{file} line {line} (batch {batch}): {from} -> {to}, settled by {by} at {at}; {then}',
  'RESOLVE.reanswered': 'answer written again: {answer}',
  'RESOLVE.noLine': '{file} (batch {batch}) has no data line {line}',
  'RESOLVE.notUncertain': (p: P) =>
    `Expected an uncertain row, got line ${p.line} of ${p.file} ${p.state}${p.by ? ` (settled by ${p.by} at ${p.at})` : ''}: only a row whose outcome is unknown is settled by a person; nothing was changed`,
  'RESOLVE.nothingSent': (p: P) =>
    `Expected a row with a request to the bank of unknown outcome, got line ${p.line} of ${p.file}, uncertain${p.step ? ` at step ${p.step}` : ''} before any request with an effect: the bank cannot have done it (nothing was paid or created), so it is not settled as succeeded. \`remessa retry\` tries again; nothing was changed`,
  'RESOLVE.notFinished': 'the batch is not finished yet: its answer is written when it is',
  'BATCH.notFound':
    'Expected a batch id, a unique prefix of one or its 8-character tag (4+ characters), or a file name, got {ref}: no batch matches. `remessa status` lists them',
  'BATCH.ambiguous': '{ref} names {count} batches; give more of the id: {batches}',
  'RETRY.batch': '{file} (batch {batch})',
  'RETRY.batchRejected': '{file} was rejected as a whole: nothing of it was sent, nothing is retried',
  'RETRY.settled': '{batch}: nothing to retry, every row is settled',
  'RETRY.nothing': 'nothing to retry: no batch has uncertain, waiting or parked rows',
  'RETRY.needsFile': '{batch}: its rows were not all stored; drop the file again to go on',
  'RETRY.failed': '{batch}: could not be retried: {reason}',
  'RETRY.awaitsApproval':
    '{batch}: waits for approval (remessa approve / reject); nothing of it is sent before the decision',
  'RETRY.approvedWaits':
    '{batch}: approved, not paid yet: the daemon pays it (within approval.pollMs) or the next `remessa run`, not retry',
  'RECONCILE.summary': (p: P) =>
    `reconciled: ${p.changes} change(s), ${p.listed} charge(s) listed, ${p.lookedUp} looked up${p.failed ? ` (${p.failed} failed)` : ''}, ${p.events} event(s) applied`,
  'STATUS.foreign': 'Bank events about things remessa did not create: {count}',
  'STATUS.foreignEvent': '{type} {subject} (event {id})',
  'STATUS.waitingFinal': 'Waiting for a final status from the bank: {count}',
  'STATUS.waitingThing': '{kind} {key}: {status} since {since} ({file} line {line})',
  'STATUS.waitingThingDue': '{kind} {key}: {status} since {since}, due {due} ({file} line {line})',
  'STATUS.filterSince': 'since {at}',
  'STATUS.filterUntil': 'until {at}',
  'STATUS.filterKind': 'kind {kinds}',
  'STATUS.filterState': 'state {states}',
  'STATUS.valid': 'valid',
  'STATUS.invalid': 'invalid',
  // The lock of a data folder (src/runner/lock.ts): the refusal of a second process, in the command's locale.
  DATA_FOLDER_LOCKED:
    'Expected to be the only process driving the data folder {dir}, got another one holding it: {holder}{waited}. {advice}',
  'DATA_FOLDER_LOCKED.waited': ' (waited {seconds} s)',
  'DATA_FOLDER_LOCKED.wait':
    'Stop it first, or give `remessa {command}` the flag --wait-lock[=SECONDS] to wait for it.',
  INBOX_SERVED_BY_OTHER_STORE:
    'Expected an inbox of this SQLite store, got {inbox}, served by the daemons of the store {store}: set store.url as they do (a SQLite store beside them would not see the files and rows they took). If no daemon serves it from that store any more, delete {file}, then run `remessa {command}` again.',
  'DATA_FOLDER_LOCKED.stop': 'Stop it first, then run `remessa {command}` again.',
  'DATA_FOLDER_LOCKED.daemonName':
    'Expected to be the only process of daemon name {name} on this machine, got another one holding it: {holder}. Stop it first, or give this daemon another store.daemonName in its config file.',
  LOCK_HOLDER: 'pid {pid} on host {host}, command {command}, since {since}',
  'LOCK_HOLDER.unknown': 'a process that has not written its details yet',
  // The command line (src/cli.ts): its help, and its refusals of what was typed.
  'CLI.program': 'Batch daemon for a Brazilian banking-as-a-service API',
  'CLI.opt.config': 'config file (default: REMESSA_CONFIG or config/remessa.jsonc)',
  'CLI.opt.locale': "language of the messages: pt-BR (default) or en (over the config's locale)",
  'CLI.opt.help': 'display help for command',
  'CLI.cmd.help': 'display help for command',
  'CLI.daemon': 'watch the inbox and process batches until SIGTERM/SIGINT',
  'CLI.run':
    'process the given files, or everything waiting in the inbox, then exit (non-zero if any row did not succeed)',
  'CLI.run.files': 'CSV files to process',
  'CLI.run.kind': 'batch kind of the given files (default: from their folder or name prefix)',
  'CLI.opt.waitLock':
    'when another process (a daemon) drives the data folder, wait for it (up to SECONDS; without, until it is free) instead of exiting 2',
  'CLI.validate': 'dry run: print every error and the totals; no request is sent',
  'CLI.validate.file': 'CSV file to check',
  'CLI.validate.kind': 'batch kind of the file (default: from its folder or name prefix)',
  'CLI.reconcile':
    'learn what the bank did with the charges, QR codes and payments remessa created (events and look-ups); write the retorno',
  'CLI.reconcile.since': 'first creation date (yyyy-mm-dd) of the charges to list (default: the oldest open one)',
  'CLI.reconcile.until': 'last creation date (yyyy-mm-dd) of the charges to list (default: today)',
  'CLI.arg.batch': 'batch id, a unique prefix of it, or the file name',
  'CLI.approve': 'let a file that waits for approval be paid (money controls: README "Money controls")',
  'CLI.approve.by':
    "the approver's name, recorded with the time beside the OS user running the command (the one that counts)",
  'CLI.reject': 'answer a file that waits for approval with every row rejected; nothing is sent',
  'CLI.reject.by': 'the name of who rejects, recorded with the time beside the OS user running the command',
  'CLI.reject.note': 'why: written in every row of the answer',
  'CLI.status': 'batches (parked, running with rate and ETA, rejected files too), rows by status, what is uncertain',
  'CLI.status.json': 'print one JSON document (its shape: docs/operations.md, "remessa status --json")',
  'CLI.status.since':
    "only batches taken at or after DATE (YYYY-MM-DD or DD/MM/YYYY, Brasília's whole day, or ISO 8601 time)",
  'CLI.status.until': "only batches taken at or before DATE (a day includes Brasília's whole day)",
  'CLI.status.kind': 'only this kind (repeatable)',
  'CLI.status.state': 'only batches in this state: {states} (repeatable, or comma-separated)',
  'CLI.status.backwards': '--since ({since}) is after --until ({until}): no file is taken between them',
  'CLI.resolve': 'settle an uncertain row a person checked with the bank: who, when and why are kept in the store',
  'CLI.resolve.line': "the row's line in the file (as `status` and the result file show it)",
  'CLI.resolve.as': 'what the bank says happened',
  'CLI.resolve.note': 'what was checked, and where (kept with the row)',
  'CLI.resolve.by': 'who checked (default: the OS user)',
  'CLI.retry':
    'ask the bank again now about the uncertain, waiting and parked rows of one batch (or all); answer again',
  'CLI.retry.batch': 'batch id, a unique prefix of it, or the file name (default: every batch with such rows)',
  'CLI.webhooks': "the bank's webhook registrations for remessa's receiver (webhooks.receiver.publicUrl)",
  'CLI.webhooks.register': 'register the public url for the event types (default: those that matter to remessa)',
  'CLI.webhooks.events': 'comma-separated event types, e.g. CHARGE_PAID,PIX_RECEIVED',
  'CLI.webhooks.list': 'show what is registered with the bank',
  'CLI.webhooks.update': 'send the current url, scheme and authorization again (e.g. after rotating the credential)',
  'CLI.webhooks.id': 'a registration id (repeatable); default: those of the public url',
  'CLI.webhooks.delete': 'remove registrations',
  'CLI.doctor':
    'check the provider profile against the bank with read-only GET requests; report what answered (docs/providers.md)',
  'CLI.sandbox': 'start the bank sandbox on its own',
  'CLI.sandbox.port': 'TCP port; 0 picks a free one',
  'CLI.sandbox.host': 'interface to listen on (default 127.0.0.1)',
  'CLI.sandbox.data': 'SQLite file for its state (default: in memory)',
  'CLI.sandbox.apiKey': 'accept this API key too (repeatable)',
  'CLI.sandbox.faultSeed': 'seed of the fault injector',
  'CLI.sandbox.loopback': 'let webhook urls name localhost (for local receivers)',
  'CLI.sandbox.profile': 'dialect to serve: {profiles} (default: sandbox.profile, else bank.profile)',
  'CLI.sandbox.tlsCert': 'serve HTTPS with this certificate (PEM; default: sandbox.tls.certFile)',
  'CLI.sandbox.tlsKey': 'private key of --tls-cert (PEM, unencrypted; default: sandbox.tls.keyFile)',
  'CLI.sandbox.tlsClientCa':
    'require client certificates issued by this CA (mutual TLS; default: sandbox.tls.clientCaFile)',
  // The help's headings (commander's), and commander's refusals, by their code.
  'CLI.title.Usage:': 'Usage:',
  'CLI.title.Arguments:': 'Arguments:',
  'CLI.title.Options:': 'Options:',
  'CLI.title.Commands:': 'Commands:',
  'CLI.title.Global Options:': 'Global Options:',
  'CLI.choices': 'choices: {choices}',
  'CLI.error': 'error: {message}',
  'CLI.suggest': '(Did you mean {what}?)',
  'CLI.unknownOption': 'unknown option {option}',
  'CLI.unknownCommand': 'unknown command {command}',
  'CLI.missingArgument': 'missing required argument {argument}',
  'CLI.optionMissingArgument': 'option {option} needs a value',
  'CLI.missingMandatoryOptionValue': 'required option {option} not given',
  'CLI.excessArguments': 'too many arguments: expected at most {expected}, got {got}',
  'CLI.invalidOption': 'option {option}: {why}',
  'CLI.invalidArgument': 'argument {argument}: {why}',
  'CLI.invalidChoice': 'Expected one of {choices}, got {got}',
  // The values the command line reads.
  'CLI.expect.locale': 'Expected a locale ({locales}), got {got}',
  'CLI.expect.port': 'Expected a port from 0 to 65535, got {got}',
  'CLI.expect.integer': 'Expected a whole number, got {got}',
  'CLI.expect.waitLock': 'Expected --wait-lock=SECONDS with a number of seconds, got {got}',
  'CLI.expect.day': 'Expected a date yyyy-mm-dd, got {got}',
  'CLI.expect.kind': 'Expected a batch kind ({kinds}), got {got}',
  'CLI.expect.profile': 'Expected a provider profile ({profiles}), got {got}',
  'CLI.expect.state': 'Expected a batch state ({states}), got {got}',
  'CLI.expect.date':
    'Expected a date YYYY-MM-DD or DD/MM/YYYY, or an ISO 8601 time with its offset (2026-11-23T14:00:00Z), got {got}',
  'CLI.expect.line': 'Expected a line number (1 or more), got {got}',
  'CLI.noStore': 'No store at {where}: nothing waits for approval',
} as const;

function plural(count: string | undefined, noun: string): string {
  return `${count} ${noun}${count === '1' ? '' : 's'}`;
}
