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

function summary(counts: Map<string, number>): string {
  return [...counts].map(([k, v]) => `${k} ${v}`).join(', ');
}

class BarProgress implements Progress {
  private bar: cliProgress.SingleBar;
  private done = 0;
  private total = 0;
  private readonly counts = new Map<string, number>();

  constructor(stream: NodeJS.WritableStream) {
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

  start(label: string, total?: number): void {
    this.total = Math.max(total ?? 0, 1);
    this.bar.start(this.total, 0, { label });
  }

  tick(status?: string): void {
    this.done++;
    if (status) this.counts.set(status, (this.counts.get(status) ?? 0) + 1);
    // An estimate that was too low grows with the work instead of overflowing the bar.
    if (this.done > this.total) {
      this.total = this.done;
      this.bar.setTotal(this.total);
    }
    this.bar.update(this.done);
  }

  update(done: number, total?: number): void {
    this.done = done;
    if (total !== undefined && total > 0 && total !== this.total) {
      this.total = total;
      this.bar.setTotal(total);
    }
    if (this.done > this.total) {
      this.total = this.done;
      this.bar.setTotal(this.total);
    }
    this.bar.update(this.done);
  }

  stop(): void {
    this.bar.setTotal(Math.max(this.done, 1));
    this.bar.update(this.done);
    this.bar.stop();
  }
}

class LineProgress implements Progress {
  private label = '';
  private total: number | undefined;
  private done = 0;
  private lastAt = 0;
  private readonly counts = new Map<string, number>();

  constructor(
    private readonly stream: NodeJS.WritableStream,
    private readonly intervalMs: number,
  ) {}

  start(label: string, total?: number): void {
    this.label = label;
    this.total = total;
    this.lastAt = Date.now();
  }

  tick(status?: string): void {
    if (status) this.counts.set(status, (this.counts.get(status) ?? 0) + 1);
    this.update(this.done + 1);
  }

  update(done: number, total?: number): void {
    this.done = done;
    if (total !== undefined && total > 0) this.total = total;
    const now = Date.now();
    if (now - this.lastAt >= this.intervalMs) {
      this.lastAt = now;
      const of = this.total ? `/${this.total}` : '';
      this.stream.write(`${this.label}: ${this.done}${of} rows\n`);
    }
  }

  stop(): void {
    const detail = this.counts.size > 0 ? ` (${summary(this.counts)})` : '';
    this.stream.write(`${this.label}: ${this.done} rows done${detail}\n`);
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
