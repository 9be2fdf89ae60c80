/**
 * A logger that writes into memory, for tests that read what was logged: its whole text, or its lines parsed (with
 * `format: 'json'`).
 */
import { Writable } from 'node:stream';
import { createLogger, type LogFormat, type Logger } from '../../src/log.js';

export function memoryLogger(options: { level?: string; format?: LogFormat } = {}): {
  logger: Logger;
  /** Everything written so far. */
  text: () => string;
  /** Each line written so far, parsed as JSON (a logger made with `format: 'json'`). */
  lines: () => Array<Record<string, unknown>>;
} {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer | string, _enc, cb) {
      chunks.push(chunk.toString());
      cb();
    },
  });
  const logger = createLogger({
    level: options.level ?? 'debug',
    destination,
    ...(options.format === undefined ? {} : { format: options.format }),
  });
  const text = () => chunks.join('');
  const lines = () =>
    text()
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { logger, text, lines };
}
