/**
 * Process exit codes of every command (src/cli.ts, src/runner/commands.ts), chosen so that a scheduled run's alert
 * means something. The nightly unit (systemd/remessa-nightly.service) counts 0 and 1 as success
 * (`SuccessExitStatus=1`): remessa did its job and every file has its answer; 2, 3 and 4 fail the unit, so its
 * `OnFailure=` / the journal alert reaches an operator.
 *
 * | code | `run`                                                               | who acts              |
 * |------|---------------------------------------------------------------------|-----------------------|
 * | 0    | every file answered; every row succeeded (or is a duplicate of one) | nobody                |
 * | 1    | every file answered; some row rejected or failed, or a file rejected| finance, from answers |
 * | 2    | could not run: configuration, arguments, store, lock, bank at start | operator, now         |
 * | 3    | rows left unsettled: uncertain, waiting for the bank, or parked     | operator: `status`,   |
 * |      | by a stop; some file not answered yet (handled again next run)      | `retry`, `resolve`    |
 * | 4    | the bank refused remessa's credentials (HTTP 401/403): nothing more | operator: fix the API |
 * |      | was sent; rows left `waiting` (never failed), files answered so     | key, then run again   |
 *
 * When several apply, the most urgent wins: 2, then 4, then 3, then 1. `validate`: 0 valid, 1 invalid, 2 could not
 * run. `retry` exits as `run`.
 */

/** Everything succeeded (every row `succeeded`, or `duplicate` of a row that did; `validate`: no error). */
export const EXIT_OK = 0;
/** The command ran and answered every file, but some row was rejected or failed, or a file was rejected. */
export const EXIT_NOT_ALL_SUCCEEDED = 1;
/**
 * The command could not run: bad configuration or arguments, store unusable, bank unreachable at start, or another
 * process drives the data folder (src/runner/lock.ts).
 */
export const EXIT_CANNOT_RUN = 2;
/** Rows are left unsettled (uncertain, waiting, parked) or a file is not answered yet: a person or a later run acts. */
export const EXIT_UNSETTLED = 3;
/**
 * The bank refused remessa's credentials (401/403: the API key rotated, revoked or expired): the command stopped
 * sending, left the rows `waiting` (BANK_CREDENTIALS_REFUSED; never `failed`) and answered the files it took with
 * them so. Running it again once the key is fixed sends them, under the same idempotency keys.
 */
export const EXIT_CREDENTIALS_REFUSED = 4;
