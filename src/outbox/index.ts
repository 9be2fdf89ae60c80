export {
  filesDirFor,
  RESULT_STATUS_COLUMNS,
  type ResultSummary,
  type WriteRejectedOptions,
  type WriteResultOptions,
  type WriteResultOutput,
  writeFileAtomic,
  writeRejected,
  writeResult,
} from './result.js';
