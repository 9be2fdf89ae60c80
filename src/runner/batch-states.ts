/**
 * What `remessa status` says a batch is doing (the table at the top of ./status.ts): one list, read by status and by
 * the CLI's `--state` (which loads no pipeline, so the list lives in a module of its own). Values are only ever added
 * (`approved` came after the first ones): programs read them (`status --json`, docs/operations.md).
 */
export const BATCH_STATES = [
  'ingesting',
  'running',
  'parked',
  'done',
  'rejected',
  'awaiting_approval',
  'approved',
] as const;
export type BatchState = (typeof BATCH_STATES)[number];
