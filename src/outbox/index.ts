export {
  answerFileNames,
  answerNameFor,
  archiveNameFor,
  cutToBytes,
  MAX_ANSWER_NAME_BYTES,
  splitFileName,
} from './names.js';
export {
  type AnswerIntakeOptions,
  type AnswerIntakeOutput,
  answerIntake,
  answerPaths,
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
