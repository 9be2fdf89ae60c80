/**
 * Catching the error a test expects, typed, so the test can assert on its `code` and message. Anything else thrown
 * propagates unchanged; no error at all fails the test.
 */
import type { ServiceError } from '../../src/bank/errors.js';
import { FormatError } from '../../src/formats/index.js';

/** The FormatError `fn` throws; another error is rethrown as it is. */
export function formatError(fn: () => unknown): FormatError {
  try {
    fn();
  } catch (error) {
    if (error instanceof FormatError) return error;
    throw error;
  }
  throw new Error('expected a FormatError');
}

/** The error `p` rejects with, taken as the bank client's ServiceError (the test checks which subclass). */
export async function failure(p: Promise<unknown>): Promise<ServiceError> {
  try {
    await p;
  } catch (err) {
    return err as ServiceError;
  }
  throw new Error('expected the call to fail');
}
