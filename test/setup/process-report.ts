/**
 * Every test file: when a test fails (a timeout included), what the child processes it started printed is written
 * to the test's stderr (test/helpers/process-report.ts), so that a failure seen only in CI can be read there.
 */
import { beforeEach } from 'vitest';
import { forgetEndedProcesses, processReport } from '../helpers/process-report.js';

beforeEach(({ onTestFailed }) => {
  forgetEndedProcesses();
  onTestFailed(() => {
    const report = processReport();
    if (report) console.error(`The processes this test started, at its failure:\n${report}`);
  });
});
