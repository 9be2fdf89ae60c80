/** Intake: the inbox, the work area and the archive. The runner gives it a handler that answers each batch. */
export {
  classifyInboxPath,
  DONE_MARKER_SUFFIX,
  type InboxEntry,
  isIgnoredName,
  kindFromRootName,
  stemOf,
  TEMP_NAME_SUFFIXES,
} from './classify.js';
export { type Completeness, CompletenessScanner, checkCompleteness, describeUnfinished } from './completeness.js';
export { type BatchHandler, Intake, type IntakeOptions, type TakenBatch } from './intake.js';
export {
  archiveWorkItem,
  FileChangedError,
  type FileFingerprint,
  IntakeError,
  listWorkItems,
  moveFile,
  sha256File,
  takeIntoWorkArea,
  type WorkItem,
  type WorkMeta,
} from './work-area.js';
