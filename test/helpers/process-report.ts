/**
 * The child processes a test started (sandboxes, daemons, commands), remembered so that a failed test shows what they
 * printed (test/setup/process-report.ts): a test that times out in CI must say what the daemon was doing, not only
 * that the time ran out. Plain module, no vitest import: the benches load the harness outside vitest.
 */

export interface WatchedProcess {
  /** The command line's arguments (`daemon --config ...`). */
  args: readonly string[];
  pid: number | undefined;
  stdout(): string;
  stderr(): string;
  /** `running`, or how it ended (`exit 0`, `SIGKILL`). */
  state(): string;
}

const watched: WatchedProcess[] = [];

export function watchProcess(p: WatchedProcess): void {
  watched.push(p);
}

/** Forgets the processes that have ended: those still running belong to the next test too (a shared sandbox). */
export function forgetEndedProcesses(): void {
  for (let i = watched.length - 1; i >= 0; i--) if (watched[i]!.state() !== 'running') watched.splice(i, 1);
}

/** The last `lines` lines of each stream of each process started since the last `forgetEndedProcesses`. */
export function processReport(lines = 60): string {
  const tail = (text: string) => {
    const all = text.trimEnd().split('\n');
    return (all.length > lines ? [`... (${all.length - lines} lines before)`] : [])
      .concat(all.slice(-lines))
      .join('\n');
  };
  return watched
    .map(
      (p) =>
        `--- remessa ${p.args.join(' ')} (pid ${p.pid ?? '?'}, ${p.state()})\n` +
        `stdout:\n${tail(p.stdout())}\nstderr:\n${tail(p.stderr())}`,
    )
    .join('\n');
}
