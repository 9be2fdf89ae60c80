/**
 * Runs one child process and measures it: wall time (spawn to exit), CPU time (user + system) and peak resident set
 * size of that process itself (not of the benchmark driving it).
 *
 * With GNU time (`/usr/bin/time`) the figures are the kernel's own (`ru_maxrss`, `ru_utime`, `ru_stime` of the
 * child); without it, /proc/<pid>/status (VmHWM, the high-water mark) and /proc/<pid>/stat (utime, stime) are polled
 * until the process exits, which can miss the last few milliseconds of growth.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import os from 'node:os';

export const GNU_TIME = '/usr/bin/time';

export interface MeasureOptions {
  /** Working directory of the child. */
  cwd?: string;
  /** Extra environment (merged over process.env). */
  env?: NodeJS.ProcessEnv;
  /** File receiving the child's stdout. */
  stdoutFile: string;
  /** File receiving the child's stderr. */
  stderrFile: string;
  /** Use /proc polling even when GNU time is there (tests of the fallback). @defaultValue false */
  forcePolling?: boolean;
}

export interface Measured {
  exitCode: number | null;
  /** Spawn to exit, in milliseconds. */
  wallMs: number;
  /** User + system CPU time of the child, in milliseconds. */
  cpuMs: number;
  /** Of `cpuMs`, the system (kernel) part: syscalls, and on loopback the network stack's work for both ends. */
  systemMs: number;
  /** Peak resident set size of the child, in bytes. */
  peakRssBytes: number;
  /** How the figures were taken. */
  method: 'gnu-time' | 'proc-polling';
  /** 1-minute load average at the start and at the end (the machine may be shared). */
  loadAverage: [number, number];
}

/** Runs `command args` to completion and measures it. */
export async function runMeasured(
  command: string,
  args: readonly string[],
  options: MeasureOptions,
): Promise<Measured> {
  const useTime = !options.forcePolling && existsSync(GNU_TIME);
  const timeFile = `${options.stderrFile}.time`;
  const out = openSync(options.stdoutFile, 'w');
  const err = openSync(options.stderrFile, 'w');
  const load0 = os.loadavg()[0]!;
  const started = performance.now();
  const child = useTime
    ? spawn(GNU_TIME, ['-f', 'BENCH_TIME %e %U %S %M', '-o', timeFile, command, ...args], {
        cwd: options.cwd,
        env: { ...process.env, ...options.env },
        stdio: ['ignore', out, err],
      })
    : spawn(command, args, { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: ['ignore', out, err] });
  let peakKb = 0;
  let cpuTicks = 0;
  let systemTicks = 0;
  const poll = (): void => {
    if (child.pid === undefined) return;
    try {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const m = /VmHWM:\s+(\d+) kB/.exec(status);
      if (m) peakKb = Math.max(peakKb, Number(m[1]));
      const stat = readFileSync(`/proc/${child.pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      cpuTicks = Number(fields[11]) + Number(fields[12]);
      systemTicks = Number(fields[12]);
    } catch {
      // The process has just exited: keep the last figures.
    }
  };
  const timer = useTime ? undefined : setInterval(poll, 25);
  const exitCode = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => resolve(code));
  });
  const wallMs = performance.now() - started;
  if (timer) clearInterval(timer);
  closeSync(out);
  closeSync(err);
  const loadAverage: [number, number] = [load0, os.loadavg()[0]!];
  if (useTime) {
    const text = readFileSync(timeFile, 'utf8');
    const m = /BENCH_TIME ([\d.]+) ([\d.]+) ([\d.]+) (\d+)/.exec(text);
    if (!m) throw new Error(`Expected GNU time figures in ${timeFile}, got ${JSON.stringify(text.slice(0, 200))}`);
    // GNU time exits with the child's code; its own wall figure is only to 10 ms, ours is finer.
    return {
      exitCode,
      wallMs,
      cpuMs: (Number(m[2]) + Number(m[3])) * 1000,
      systemMs: Number(m[3]) * 1000,
      peakRssBytes: Number(m[4]) * 1024,
      method: 'gnu-time',
      loadAverage,
    };
  }
  return {
    exitCode,
    wallMs,
    cpuMs: (cpuTicks * 1000) / 100,
    systemMs: (systemTicks * 1000) / 100,
    peakRssBytes: peakKb * 1024,
    method: 'proc-polling',
    loadAverage,
  };
}
