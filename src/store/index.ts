/** The store's face: open it, derive keys, and the row/step state machines. */

export * from './approvals.js';
export { migrate, openDatabase, readMigrations, StoreError } from './db.js';
export * from './intakes.js';
export { accountNamespace, deriveIdempotencyKey, IdempotencyKeys, REMESSA_NAMESPACE } from './keys.js';
export * from './rows.js';
export * from './store.js';
