/**
 * The nouns of remessa, named once.
 *
 * - **batch**: one input file dropped in the inbox: one **intake** (taking) of it, identified by the intake id
 *   `<UTC stamp of the take>-<8 hex>` (src/store/intakes.ts), never by its content: the same name or the same bytes
 *   dropped again is another batch with its own answer (its rows then `duplicate`). The SHA-256 of the content is
 *   kept, to say that a file repeats an earlier one. It belongs to one **kind** (charges, bill-payments, ...), given by
 *   its inbox folder or its name prefix.
 * - **answer**: what a batch gets in the outbox: a result file with its summary (new versions `.vN` when rows change
 *   afterwards) or a rejection note, all named `<name>.<intake id>...` (src/outbox/names.ts); never overwritten.
 * - **row**: one data line of a batch, addressed by its 1-based line number in the file (the header is line 1).
 *   A row is validated into a typed value of its kind, or rejected with cell errors.
 * - **step**: one call to the bank that a row needs (create, fetch PDF, look up, pay, ...). A kind lists its steps in
 *   order; each step's output is stored, so a row resumes at the first step without a stored output.
 * - **attempt**: one HTTP request of a step. A step may take several attempts (retries), always with the same
 *   idempotency key.
 * - **outcome**: how a row ended: succeeded, rejected (invalid input, nothing sent), failed (the bank said no),
 *   duplicate (the same natural key already succeeded earlier: nothing sent), uncertain (we cannot tell whether the
 *   bank acted; retried on the next run), waiting (not an end: the bank could not be reached, certainly nothing of the
 *   row was sent; it is sent when the bank is back).
 * - **natural key**: the business identity of a row within its kind (a charge's correlationId; a bill's 44 bar code
 *   digits + amount + payAt; ...). Two rows with the same natural key are the same intent. A sheet without a
 *   correlationId column gets one derived from the row (its Seu número, else its content: src/batches/supply.ts), so
 *   the natural key stays a fact of the row, never of the file or the run.
 * - **idempotency key**: the GUID sent as `IdempotencyKey`: UUIDv5 of (kind, natural key) in a namespace derived from
 *   the account id, so it is the same whichever file or database the row comes from.
 */

/** The batch kinds; each is also the name of its inbox and outbox folder. */
export const KIND_NAMES = [
  'charges',
  'bill-payments',
  'pix-payments',
  'qr-codes',
  'claim-cancellations',
  'claims',
  'charge-updates',
  'charge-voids',
] as const;
export type KindName = (typeof KIND_NAMES)[number];

export function isKindName(name: string): name is KindName {
  return (KIND_NAMES as readonly string[]).includes(name);
}

/** Endpoint groups share a rate limit; a 429 pauses its group only. */
export const ENDPOINT_GROUPS = ['charges', 'bill-payments', 'pix', 'claims'] as const;
export type EndpointGroup = (typeof ENDPOINT_GROUPS)[number];

/** The final status of a row, as written in the result file's `status` column. */
export const ROW_OUTCOMES = ['succeeded', 'rejected', 'failed', 'duplicate', 'uncertain', 'waiting'] as const;
export type RowOutcome = (typeof ROW_OUTCOMES)[number];

/** Money inside the program: an integer number of centavos. Convert only at the edges (CSV, wire). */
export type Cents = number;
