/**
 * Progress of `remessa run` and `remessa validate`: a bar on a terminal, plain lines otherwise (logs, cron, CI).
 *
 * The bar's total is the file's line count (a cheap streamed count of line breaks, done only for a terminal); a row
 * spanning lines makes the estimate high, never wrong about what was done. Both refresh by time, never by a count of
 * rows: the bar at most every 100 ms, plain mode one line per `intervalMs` (rows done, by status, rate, ETA) and one at
 * the end, so a nightly log stays short whatever the file size and a slow bank still shows movement. The daemon logs
 * the same per batch (`LogProgress`).
 */
import { createReadStream } from 'node:fs';
import cliProgress from 'cli-progress';
import { DEFAULT_LOCALE, type Locale, t } from '../i18n/index.js';
import type { Logger } from '../log.js';

export interface ProgressOptions {
  /** Where the bar or the lines go. @defaultValue process.stderr */
  stream?: NodeJS.WritableStream & { isTTY?: boolean };
  /** Force the bar (true) or plain lines (false). @defaultValue whether `stream` is a terminal */
  tty?: boolean;
  /** Minimum time between two plain lines, in milliseconds. @defaultValue 5000 */
  intervalMs?: number;
  /** Language of the words of the bar and the lines (row statuses stay as they are). @defaultValue 'pt-BR' */
  locale?: Locale;
}

/** Progress of one file. */
export interface Progress {
  /** `total` is the expected number of rows, when known. */
  start(label: string, total?: number): void;
  /** One row handled; `status` is counted for the final line (succeeded, rejected, ...). */
  tick(status?: string): void;
  /**
   * Sets the rows done (and the total, when it became known), e.g. from the engine's progress reports; `batchId` names
   * the batch being run, for a display that reads its counts from the store.
   */
  update(done: number, total?: number, batchId?: string): void;
  /**
   * Sets the rows done to `all`, the answer's every row (those ended at ingestion or before a restart too), as the
   * total: the count of the last line, not a rate (the rate counts only the rows `update` and `tick` moved).
   */
  settle(all: number): void;
  /** Ends the bar or writes the final line. */
  stop(): void;
}

export function createProgress(options: ProgressOptions = {}): Progress {
  const stream = options.stream ?? process.stderr;
  const tty = options.tty ?? Boolean(stream.isTTY);
  const locale = options.locale ?? DEFAULT_LOCALE;
  return tty ? new BarProgress(stream, locale) : new LineProgress(stream, options.intervalMs ?? 5000, locale);
}

/** Whether progress on `stream` would be a bar (then counting lines for the total is worth it). */
export function isInteractive(stream: { isTTY?: boolean } = process.stderr): boolean {
  return Boolean(stream.isTTY);
}

/** A bar refreshes at most this often: drawing costs far more than a row does when validating a million rows. */
const BAR_REFRESH_MS = 100;

/** Counting shared by the displays; `render` is called when `refreshMs` has passed since the last one (and at the end). */
abstract class CountingProgress implements Progress {
  protected label = '';
  protected total: number | undefined;
  protected done = 0;
  /** The rows the rate counts: those moved since the start (`settle` adds none). */
  private moved = 0;
  protected startedAt = Date.now();
  private renderedAt = this.startedAt;
  protected readonly counts: Record<string, number> = {};
  protected locale: Locale = DEFAULT_LOCALE;

  constructor(private readonly refreshMs: number) {}

  start(label: string, total?: number): void {
    this.label = label;
    this.total = total;
    this.startedAt = Date.now();
    this.renderedAt = this.startedAt;
    this.begin();
  }

  tick(status?: string): void {
    this.done++;
    this.moved++;
    if (status !== undefined) this.counts[status] = (this.counts[status] ?? 0) + 1;
    this.maybeRender();
  }

  update(done: number, total?: number): void {
    this.done = done;
    this.moved = done;
    if (total !== undefined && total > 0 && total !== this.total) this.total = total;
    this.maybeRender();
  }

  settle(all: number): void {
    this.done = all;
    this.total = all;
    this.maybeRender();
  }

  stop(): void {
    this.end();
  }

  /** By time, not by rows: a slow bank still shows movement, a fast file does not pay a refresh per few rows. */
  private maybeRender(): void {
    const now = Date.now();
    if (now - this.renderedAt < this.refreshMs) return;
    this.renderedAt = now;
    this.render();
  }

  /** `succeeded 3, rejected 1` (statuses as ERPs read them); validate's valid/invalid in the locale's words. */
  protected summary(): string {
    return Object.entries(this.counts)
      .map(([k, v]) => `${k === 'valid' || k === 'invalid' ? t(this.locale, `STATUS.${k}`) : k} ${v}`)
      .join(', ');
  }

  /** Rows moved per second since the start, and the seconds left at that rate when the total is known. */
  protected pace(): { ratePerSecond: number; etaSeconds: number | undefined } {
    const seconds = Math.max((Date.now() - this.startedAt) / 1000, 0.001);
    const ratePerSecond = this.moved / seconds;
    const left = this.total !== undefined ? Math.max(this.total - this.done, 0) : undefined;
    const etaSeconds = left !== undefined && ratePerSecond > 0 ? Math.round(left / ratePerSecond) : undefined;
    return { ratePerSecond, etaSeconds };
  }

  protected abstract begin(): void;
  protected abstract render(): void;
  protected abstract end(): void;
}

class BarProgress extends CountingProgress {
  private readonly bar: cliProgress.SingleBar;
  private barTotal = 1;

  constructor(stream: NodeJS.WritableStream, locale: Locale) {
    super(BAR_REFRESH_MS);
    this.locale = locale;
    this.bar = new cliProgress.SingleBar(
      {
        stream,
        format: t(locale, 'PROGRESS.bar'),
        hideCursor: true,
        clearOnComplete: false,
        fps: 10,
      },
      cliProgress.Presets.shades_classic,
    );
  }

  protected begin(): void {
    this.barTotal = Math.max(this.total ?? 0, 1);
    this.bar.start(this.barTotal, 0, { label: this.label });
  }

  protected render(): void {
    // An estimate that was too low grows with the work instead of overflowing the bar.
    const total = Math.max(this.total ?? 0, this.done, 1);
    if (total !== this.barTotal) {
      this.barTotal = total;
      this.bar.setTotal(total);
    }
    this.bar.update(this.done);
  }

  protected end(): void {
    this.bar.setTotal(Math.max(this.done, 1));
    this.bar.update(this.done);
    this.bar.stop();
  }
}

class LineProgress extends CountingProgress {
  constructor(
    private readonly stream: NodeJS.WritableStream,
    intervalMs: number,
    locale: Locale,
  ) {
    super(intervalMs);
    this.locale = locale;
  }

  protected begin(): void {}

  protected render(): void {
    const { ratePerSecond, etaSeconds } = this.pace();
    const line = t(this.locale, 'PROGRESS.rows', {
      label: this.label,
      done: this.done,
      total: this.total || undefined,
      counts: this.summary() || undefined,
      rate: ratePerSecond.toFixed(1),
      eta: etaSeconds !== undefined ? formatDuration(etaSeconds) : undefined,
    });
    this.stream.write(`${line}\n`);
  }

  protected end(): void {
    const line = t(this.locale, 'PROGRESS.done', {
      label: this.label,
      done: this.done,
      counts: this.summary() || undefined,
    });
    this.stream.write(`${line}\n`);
  }
}

export interface LogProgressOptions {
  logger: Logger;
  /** Time between two progress lines of one batch, in milliseconds. */
  intervalMs: number;
  /** The batch's rows by state, read from the store when a line is written (the line waits for the read). */
  countsOf?: (batchId: string) => Record<string, number> | Promise<Record<string, number>>;
  /** Fields on every line (file, kind). */
  fields?: Record<string, unknown>;
}

/**
 * Progress of one batch in the daemon's log: a `batch progress` line every `intervalMs` (rows done of total, rows by
 * state, rate, ETA), so a 20,000-row payment file that runs for an hour is never silent.
 */
export class LogProgress extends CountingProgress {
  private batchId: string | undefined;

  constructor(private readonly o: LogProgressOptions) {
    super(o.intervalMs);
  }

  override update(done: number, total?: number, batchId?: string): void {
    if (batchId !== undefined) this.batchId = batchId;
    super.update(done, total);
  }

  protected begin(): void {}

  protected render(): void {
    const { ratePerSecond, etaSeconds } = this.pace();
    const { done, total } = this;
    const write = (counts: Record<string, number> | undefined) =>
      this.o.logger.info(
        {
          ...this.o.fields,
          done,
          total,
          ...(counts ? { counts: nonZero(counts) } : {}),
          ratePerSecond: Number(ratePerSecond.toFixed(2)),
          ...(etaSeconds !== undefined ? { etaSeconds } : {}),
        },
        'batch progress',
      );
    const counts = this.batchId !== undefined ? this.o.countsOf?.(this.batchId) : undefined;
    if (counts instanceof Promise) {
      // Read from the store: the line is written once the counts are read, without them if the read fails.
      counts.then(write, () => write(undefined));
    } else write(counts);
  }

  protected end(): void {}
}

function nonZero(counts: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(counts)) if (v > 0) out[k] = v;
  return out;
}

/** `1h02m`, `3m05s`, `42s`. */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const r = s % 60;
  if (h > 0) return `${h}h${String(m).padStart(2, '0')}m`;
  if (m > 0) return `${m}m${String(r).padStart(2, '0')}s`;
  return `${r}s`;
}

/** Number of data rows a file probably has: line breaks, minus the header, plus an unterminated last line. */
export async function estimateRows(file: string): Promise<number> {
  let breaks = 0;
  let last = 10;
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) {
    const buf = chunk as Buffer;
    let i = buf.indexOf(10);
    while (i !== -1) {
      breaks++;
      i = buf.indexOf(10, i + 1);
    }
    if (buf.length > 0) last = buf[buf.length - 1]!;
  }
  const lines = breaks + (last === 10 ? 0 : 1);
  return Math.max(lines - 1, 0);
}
