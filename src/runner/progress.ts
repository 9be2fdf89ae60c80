/**
 * Progress of `remessa run` and `remessa validate`: a bar on a terminal, plain lines otherwise (logs, cron, CI).
 *
 * The bar's total is the file's line count (a cheap streamed count of line breaks, done only for a terminal); a row
 * spanning lines makes the estimate high, never wrong about what was done. Plain mode writes one line per
 * `intervalMs` and one at the end, so a nightly log stays short whatever the file size.
 */
import { createReadStream } from 'node:fs';
import cliProgress from 'cli-progress';

export interface ProgressOptions {
  /** Where the bar or the lines go. @defaultValue process.stderr */
  stream?: NodeJS.WritableStream & { isTTY?: boolean };
  /** Force the bar (true) or plain lines (false). @defaultValue whether `stream` is a terminal */
  tty?: boolean;
  /** Minimum time between two plain lines, in milliseconds. @defaultValue 5000 */
  intervalMs?: number;
}

/** Progress of one file. */
export interface Progress {
  /** `total` is the expected number of rows, when known. */
  start(label: string, total?: number): void;
  /** One row handled; `status` is counted for the final line (succeeded, rejected, ...). */
  tick(status?: string): void;
  /** Sets the rows done (and the total, when it became known), e.g. from the engine's progress reports. */
  update(done: number, total?: number): void;
  /** Ends the bar or writes the final line. */
  stop(): void;
}

export function createProgress(options: ProgressOptions = {}): Progress {
  const stream = options.stream ?? process.stderr;
  const tty = options.tty ?? Boolean(stream.isTTY);
  return tty ? new BarProgress(stream) : new LineProgress(stream, options.intervalMs ?? 5000);
}

/** Whether progress on `stream` would be a bar (then counting lines for the total is worth it). */
export function isInteractive(stream: { isTTY?: boolean } = process.stderr): boolean {
  return Boolean(stream.isTTY);
}

/** Rows between two refreshes: a refresh costs far more than a row does when validating a million rows. */
const REFRESH_EVERY_ROWS = 256;

/** Counting shared by both displays; `render` is called at most once per REFRESH_EVERY_ROWS rows (and at the end). */
abstract class CountingProgress implements Progress {
  protected label = '';
  protected total: number | undefined;
  protected done = 0;
  private shown = 0;
  protected readonly counts: Record<string, number> = {};

  start(label: string, total?: number): void {
    this.label = label;
    this.total = total;
    this.begin();
  }

  tick(status?: string): void {
    this.done++;
    if (status !== undefined) this.counts[status] = (this.counts[status] ?? 0) + 1;
    if (this.done - this.shown >= REFRESH_EVERY_ROWS) this.refresh();
  }

  update(done: number, total?: number): void {
    this.done = done;
    const totalChanged = total !== undefined && total > 0 && total !== this.total;
    if (totalChanged) this.total = total;
    if (totalChanged || Math.abs(this.done - this.shown) >= REFRESH_EVERY_ROWS) this.refresh();
  }

  stop(): void {
    this.shown = this.done;
    this.end();
  }

  protected summary(): string {
    const parts = Object.entries(this.counts).map(([k, v]) => `${k} ${v}`);
    return parts.length > 0 ? ` (${parts.join(', ')})` : '';
  }

  private refresh(): void {
    this.shown = this.done;
    this.render();
  }

  protected abstract begin(): void;
  protected abstract render(): void;
  protected abstract end(): void;
}

class BarProgress extends CountingProgress {
  private readonly bar: cliProgress.SingleBar;
  private barTotal = 1;

  constructor(stream: NodeJS.WritableStream) {
    super();
    this.bar = new cliProgress.SingleBar(
      {
        stream,
        format: '{label} [{bar}] {value}/{total} rows | {duration_formatted} | ETA {eta_formatted}',
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
  private lastAt = 0;

  constructor(
    private readonly stream: NodeJS.WritableStream,
    private readonly intervalMs: number,
  ) {
    super();
  }

  protected begin(): void {
    this.lastAt = Date.now();
  }

  protected render(): void {
    const now = Date.now();
    if (now - this.lastAt < this.intervalMs) return;
    this.lastAt = now;
    const of = this.total ? `/${this.total}` : '';
    this.stream.write(`${this.label}: ${this.done}${of} rows\n`);
  }

  protected end(): void {
    this.stream.write(`${this.label}: ${this.done} rows done${this.summary()}\n`);
  }
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
