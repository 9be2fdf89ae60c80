/**
 * The nouns of remessa, named once.
 *
 * - **batch**: one input file dropped in the inbox, identified by the SHA-256 of its content. It belongs to one
 *   **kind** (charges, bill-payments, ...), given by its inbox folder or its name prefix.
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
 *   digits + amount + payAt; ...). Two rows with the same natural key are the same intent.
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
