/** Process exit codes of every command (src/cli.ts, src/runner/commands.ts). */

/** Everything succeeded (every row `succeeded`, or `duplicate` of a row that did; `validate`: no error). */
export const EXIT_OK = 0;
/** The command ran, but some row did not succeed, a file was rejected, or (`validate`) the file is invalid. */
export const EXIT_NOT_ALL_SUCCEEDED = 1;
/**
 * The command could not run: bad configuration or arguments, store unusable, bank unreachable at start, or another
 * process drives the data folder (src/runner/lock.ts).
 */
export const EXIT_CANNOT_RUN = 2;
