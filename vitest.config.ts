import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // A failed test prints what the child processes it started printed (test/helpers/process-report.ts).
    setupFiles: ['test/setup/process-report.ts'],
    // Tests start real servers and child processes; two cores, so keep parallelism modest.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
