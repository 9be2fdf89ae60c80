/**
 * The contract every batch kind implements (one module per kind in this folder, registered in `registry.ts`).
 *
 * A kind says what its rows look like (columns, parsing, validation), what identifies a row as a business intent
 * (natural key), which bank calls a row needs (steps, in order) and what the result file reports (result columns).
 * The runner (src/runner) owns the state machine that drives rows through the steps; a kind never touches the store.
 */
import type { BankClient } from '../bank/client.js';
import type { RequestOptions } from '../bank/types.js';
import { RemessaError } from '../errors.js';
import type { Message } from '../i18n/index.js';
import type { Cents, EndpointGroup, KindName } from '../types.js';

/** One column a kind accepts. Names are the API's field names in camelCase, nested fields dotted. */
export interface ColumnSpec {
  /** e.g. `payer.address.zipCode`, `discount.items.1.date` */
  name: string;
  required: boolean;
  /** For people (docs/batches.md, error messages): what a valid value looks like, e.g. "date yyyy-mm-dd or dd/mm/yyyy". */
  format: string;
  /** A valid example value. */
  example: string;
  /** Only required for some rows (e.g. "when type is BANKSLIP"): said in docs and in the error. */
  requiredWhen?: string;
}

/**
 * A problem with one cell (or with the row as a whole when `column` is absent): a stable code and the sentence as a
 * catalogue key with its values (src/i18n), never the sentence itself: it is worded at the edge, in the person's
 * locale, under the column's name as their file writes it.
 */
export interface CellError {
  /** Column name as the kind knows it (after header mapping). */
  column?: string;
  /**
   * An error about columns of which any one would do (a bill's `barCode` or `digitableLine`, both empty): told at the
   * first of them the file has (`shownColumn` in ./fields.ts), else at `column`, which is the first of them.
   */
  anyOf?: readonly string[];
  /** Stable code, e.g. `REQUIRED`, `INVALID_DATE`, `INVALID_CPF`, `AMBIGUOUS_AMOUNT`. */
  code: string;
  /** "Expected X, got Y": the catalogue key and the values (what was expected, what was found). */
  message: Message;
}

/** How values are written in this batch's file: given to parsers so `1.234,56` and `1234.56` both work. */
export interface Dialect {
  delimiter: ',' | ';' | '\t';
  /** Decimal mark for amounts. */
  decimalMark: '.' | ',';
  encoding: 'utf8' | 'windows-1252';
  /** Whether the input began with a UTF-8 byte order mark (kept on output). */
  bom: boolean;
  /** Line ending of the input's header line, reused for the result file. @defaultValue '\r\n' when absent */
  lineEnding?: '\n' | '\r\n';
}

/** What a result column holds, for the form it is written in (`BatchKind.resultColumnForms`). */
export type ResultValueForm = 'identifier' | 'digitableLine' | 'date' | 'instant';

export type ParseResult<Row> = { ok: true; row: Row } | { ok: false; errors: CellError[] };

/** What a step returns: flat values that go to the result file and are stored as JSON for later steps. */
export type StepOutput = Record<string, string | number | boolean | null>;

export interface StepContext<Row> {
  row: Row;
  /** The row's idempotency key (GUID). Send it on every request that takes one; the same on every attempt. */
  idempotencyKey: string;
  client: BankClient;
  /** Outputs of the steps already completed for this row, by step name. */
  previous: Readonly<Record<string, StepOutput>>;
  /** Absolute path where a file output (PDF, PNG) named `fileName` must be written (the folder exists). */
  outputPath(fileName: string): string;
  /**
   * The options of every request the step makes (`ctx.client.x.y(..., ctx.request)`): the queue's handle of the task
   * the step runs in, which the rate limiter's gate counts the request against (src/queue/request-queue.ts), and
   * the signal if any. One object so that no call can pass one without the other: a request without the handle is
   * not limited at all.
   */
  request: Readonly<RequestOptions>;
  /**
   * True when this step was attempted before with an unknown outcome (crash, timeout) and is now being run again with
   * the same key: the request may already have taken effect. A step whose pre-checks would refuse an already-done
   * effect (a bill already PAID: by us?) reports `uncertain` instead of `failed` then. @defaultValue false
   */
  resend?: boolean;
}

/**
 * Thrown by a step to end the row with a decided outcome, without retrying: `failed` when a check says the request
 * must not be sent (bill not payable, amount outside the allowed range), `uncertain` when the step cannot tell
 * whether an earlier attempt took effect and must not guess. `code` goes to the result's errorCode.
 */
export class StepOutcomeError extends RemessaError {
  readonly outcome: 'failed' | 'uncertain';

  constructor(
    outcome: 'failed' | 'uncertain',
    code: string,
    message: string,
    options?: { cause?: unknown; detail?: Message | undefined },
  ) {
    super(code, message, options?.detail === undefined ? { cause: options?.cause } : options);
    this.outcome = outcome;
  }
}

/**
 * What a step found out about an earlier attempt of unknown outcome, after the bank refused a later attempt
 * (`StepSpec.settleRefusal`). `evidence` says, for a person (a catalogue message, src/i18n), what was looked at and
 * what it showed.
 */
export type RefusalEvidence =
  /** The effect is there and it is this row's (it matches the row's key or natural key): the step is done. */
  | { kind: 'done'; output: StepOutput; evidence: Message }
  /** The earlier attempt certainly did nothing: the refusal stands and the row fails. */
  | { kind: 'not-done'; evidence: Message }
  /** Cannot tell: the row ends `uncertain`, with the evidence in its message. */
  | { kind: 'unclear'; evidence: Message };

/** A refusal as `settleRefusal` gets it. */
export interface StepRefusal {
  /** remessa's code (the result's errorCode). */
  code: string;
  message: string;
  /** The bank's own code when it gave one (BILL_NOT_PAYABLE, END_TO_END_ID_ALREADY_USED, CLAIM_ALREADY_OPEN, ...). */
  serviceCode?: string | undefined;
}

export interface StepSpec<Row> {
  name: string;
  /**
   * - `read`: no effect at the bank (lookups, PDF fetch): always safe to repeat.
   * - `create`: creates a resource (charge, QR code, claim) or changes one.
   * - `money`: moves money out (bill payment, Pix payment). Never repeated blind.
   */
  effect: 'read' | 'create' | 'money';
  /** Whether this step's request carries the row's IdempotencyKey (then a resend with the same key is safe). */
  usesIdempotencyKey: boolean;
  run(ctx: StepContext<Row>): Promise<StepOutput>;
  /**
   * For an effect step without an idempotency key, after an unknown outcome: find out whether the effect happened
   * (e.g. get the charge by correlationId). Returns the output if it did, `undefined` if it certainly did not.
   */
  recover?(ctx: StepContext<Row>): Promise<StepOutput | undefined>;
  /**
   * After an attempt of this step whose outcome is unknown, the bank refused a later attempt (bill already PAID, QR
   * code already used, claim already open, ...): a refusal that the earlier attempt itself may explain. Looks for
   * evidence (a lookup that would show this row's effect). Never called for a refusal the bank says is the replay of
   * the first answer (that attempt did nothing). Without it, `recover` (if any) is the evidence (found: done; certainly
   * absent: not done); without either, such a refusal leaves the row `uncertain`: it is never `failed` on a guess
   * (src/store/rows.ts, rule 5).
   */
  settleRefusal?(ctx: StepContext<Row>, refusal: StepRefusal): Promise<RefusalEvidence>;
}

/**
 * A value of a field `MustMatch.fields` gives: canonical, so that equal operations written otherwise compare equal
 * (`1.234,56` and `1234.56`, a CPF with or without dots); `{ cents }` an amount, shown as money; undefined: empty.
 */
export type MustMatchValue = string | { cents: Cents } | undefined;

/** See `BatchKind.undoneBy`. */
export interface UndoneBy {
  kind: KindName;
  /** The undoing row's natural key, from the undone row's outputs; undefined when they do not give it. */
  naturalKey(outputs: Readonly<Record<string, unknown>>): string | undefined;
}

/** See `BatchKind.mustMatch`. */
export interface MustMatch<Row> {
  /**
   * The columns that carry the natural key as the person wrote it, most direct first (charges: `correlationId`, else
   * the `yourNumber` it is derived from): a refusal names the first one the file itself has and the row fills.
   */
  keyColumns: readonly string[];
  /**
   * The row's defining fields by column name, in the order a refusal lists what differs. Only what the row's cells
   * say (parsed), never a value computed at parse time (today's date): an honest copy of a row must compare equal.
   * Called on the owner's stored parsed row too, which an older version may have written: absent fields are empty.
   */
  fields(row: Row): Readonly<Record<string, MustMatchValue>>;
}

export interface BatchKind<Row = unknown> {
  name: KindName;
  /** Rate-limit group of its requests. */
  group: EndpointGroup;
  /** Money-out kinds default to all-or-nothing: a single invalid row means nothing is sent. */
  movesMoneyOut: boolean;
  columns: readonly ColumnSpec[];
  /** Parses one record (column name -> raw cell text, already mapped and trimmed) into a valid row, or errors. */
  parse(record: Readonly<Record<string, string>>, dialect: Dialect): ParseResult<Row>;
  /** The business identity of the row (see the glossary in src/types.ts). */
  naturalKey(row: Row): string;
  /**
   * What else must match for a row bringing a natural key already owned by another row to be that row's `duplicate`
   * (rule 4 of src/store/rows.ts): the fields that define the operation at the bank beyond its key. A row with the
   * owner's key and other values here is another operation under a reused key (a charge's Seu número on another
   * payer's charge): it is refused (`rejected`, NATURAL_KEY_REUSED, ./same-operation.ts), never answered with the
   * owner's outcome. Absent when the natural key already holds every defining field (say so by the kind's key).
   */
  mustMatch?: MustMatch<Row>;
  /**
   * The thing a row changes, for kinds whose rows are successive settings of one thing at the bank (charge-updates:
   * the charge). A row bringing an owned natural key is its owner's `duplicate` only while the owner is the last row
   * that may have changed that thing: after another change of it (the due date set to 20/12, then 27/12), the same
   * change asked again (20/12) is sent again, under a key of its own (rule 4 of src/store/rows.ts). Absent: a repeat
   * is always a duplicate.
   */
  changes?(row: Row): string;
  /**
   * The kind whose row undoes a row of this kind, and that row's natural key as the undone row's outputs give it
   * (claims: a claim-cancellations row, by the claim's id the claim's answer holds). A row bringing an owned natural
   * key is not its owner's `duplicate` once such a row owns that key (pending, in flight, waiting, uncertain or done):
   * the owner's operation is undone, or being undone, and the row asks for it anew (rule 4 of src/store/rows.ts).
   */
  undoneBy?: UndoneBy;
  /** Explicit key from an `idempotencyKey` column, if the row has one. */
  explicitIdempotencyKey?(row: Row): string | undefined;
  steps: readonly StepSpec<Row>[];
  /** Output columns after status/errorCode/errorMessage, in order; values come from the step outputs. */
  resultColumns: readonly string[];
  /**
   * Result columns whose step output is an amount in cents: written with the file's decimal mark (`1234,56`).
   * Money that moved: a `duplicate` line leaves them empty (src/outbox/result.ts), since it moved none.
   * @defaultValue none
   */
  resultMoneyColumns?: readonly string[];
  /**
   * Result columns naming a file in the batch's files folder (`outbox/<kind>/<answer name>/`). A duplicate of a row
   * of another file shows the original's file, as a path from that folder (`../<its answer name>/X.pdf`).
   * @defaultValue none
   */
  resultFileColumns?: readonly string[];
  /**
   * What result columns hold, for the form a spreadsheet keeps (src/outbox/cell-forms.ts): an `identifier` of digits
   * (a bar code, Nosso número, an ISPB) reaches Excel as text, a `digitableLine` as printed on the slip, a `date`
   * (yyyy-mm-dd) and an `instant` (ISO 8601) as a pt-BR sheet writes them. @defaultValue none
   */
  resultColumnForms?: Readonly<Record<string, ResultValueForm>>;
  /** Amount of the row in cents, for the batch summary (absent when the row has none). */
  amountCents?(row: Row): Cents | undefined;
}
