/**
 * Log lines a person and journald read: level names (never pino's numbers), one line per event in every format, the
 * journald priority prefix under systemd, and no secret in any format.
 */
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger, type LogFormat, registerSecret } from '../src/log.js';

const SECRET = `sk_test_${Date.now().toString(36)}_format`;

function capture(format: LogFormat, level = 'debug') {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer | string, _enc, cb) {
      chunks.push(chunk.toString());
      cb();
    },
  });
  const logger = createLogger({ level, destination, format, secrets: [SECRET] });
  return {
    logger,
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter((l) => l !== ''),
  };
}

function logThree(logger: ReturnType<typeof capture>['logger']): void {
  logger.info({ batch: 'abc', rows: 3 }, 'batch answered');
  logger.warn({ path: `/v1/charges/${SECRET}` }, 'bank request failed; retrying');
  const err = new Error(`boom with ${SECRET}`);
  logger.error({ err }, 'engine failed\nsecond line');
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('log formats', () => {
  it('json: level names, one JSON object per line, the secret scrubbed', () => {
    const { logger, lines } = capture('json');
    logThree(logger);
    const events = lines().map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(events.map((e) => e.level)).toEqual(['info', 'warn', 'error']);
    expect(lines().join('\n')).not.toContain(SECRET);
  });

  it('text: time, level name, message and fields on one line per event', () => {
    const { logger, lines } = capture('text');
    logThree(logger);
    const out = lines();
    expect(out).toHaveLength(3);
    expect(out[0]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO {2}batch answered batch=abc rows=3$/);
    expect(out[1]).toMatch(/ WARN {2}bank request failed; retrying path=\/v1\/charges\/\[REDACTED\]$/);
    expect(out[2]).toMatch(/ ERROR engine failed \| second line err=/);
    expect(out.join('\n')).not.toContain(SECRET);
  });

  it('journal: the syslog priority journald reads, no timestamp, a stack folded onto its line', () => {
    const { logger, lines } = capture('journal');
    logThree(logger);
    logger.debug('details');
    logger.fatal('gone');
    const out = lines();
    expect(out.map((l) => /^<(\d)>/.exec(l)?.[1])).toEqual(['6', '4', '3', '7', '2']);
    expect(out[0]).toBe('<6>batch answered batch=abc rows=3');
    expect(out[2]).toContain('at '); // the stack is there, on the same line
    expect(out.join('\n')).not.toContain(SECRET);
  });

  it('auto: journal under systemd (JOURNAL_STREAM), json to a pipe or file', () => {
    vi.stubEnv('JOURNAL_STREAM', '8:12345');
    const journal = capture('auto');
    journal.logger.info('hello');
    expect(journal.lines()).toEqual(['<6>hello']);
    vi.stubEnv('JOURNAL_STREAM', '');
    const piped = capture('auto');
    piped.logger.info('hello');
    expect(JSON.parse(piped.lines()[0] ?? '')).toMatchObject({ level: 'info', msg: 'hello' });
  });

  it('a secret registered later is scrubbed from every format', () => {
    const late = `late_${SECRET}`;
    registerSecret(late);
    for (const format of ['json', 'text', 'journal'] as const) {
      const { logger, lines } = capture(format);
      logger.info({ header: late }, `value ${late}`);
      expect(lines().join('\n')).not.toContain(late);
    }
  });
});
