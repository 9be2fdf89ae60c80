/** The bank gate (src/runner/bank-gate.ts): one probe per scheduled delay while the bank is down, all go when it is back. */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BankGate } from '../src/runner/bank-gate.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('BankGate', () => {
  it('a row waiting for the probe keeps the process alive until it goes (retry exited 13, silent)', () => {
    // A process whose only pending work is one wait at a gate: what the wait says, once the process ends by itself.
    // Killed (and the test failed) if it is still alive at 20 s.
    const gate = fileURLToPath(new URL('../src/runner/bank-gate.ts', import.meta.url));
    const waitAlone = (probeMs: number, signal: string) =>
      execFileSync(
        process.execPath,
        [
          '--import',
          'tsx',
          '--input-type=module',
          '-e',
          `const { BankGate } = await import(${JSON.stringify(gate)});
           const g = new BankGate([${probeMs}]);
           g.failed();
           console.log(await g.wait(${signal}));`,
        ],
        { encoding: 'utf8', timeout: 20_000 },
      ).trim();
    // It ends by the wait's 'go', not by an empty event loop.
    expect(waitAlone(50, 'undefined')).toBe('go');
    // Its row stopped, a gate with a long probe ahead (60 s) keeps the process no longer.
    expect(waitAlone(60_000, 'AbortSignal.timeout(50)')).toBe('stopped');
  });

  it('up: nobody waits', async () => {
    expect(await new BankGate([10]).wait(undefined)).toBe('go');
  });

  it('down: one row per probe time, the delays escalate, and all go once an attempt gets through', async () => {
    const gate = new BankGate([30, 80]);
    expect(gate.failed()).toBe(30);
    const released: number[] = [];
    const waits = [0, 1, 2].map((i) => gate.wait(undefined).then((r) => released.push(i) && r));
    await sleep(10);
    expect(released).toEqual([]);
    await sleep(35);
    // The first probe went, alone.
    expect(released).toEqual([0]);
    // Its attempt failed again: the next probe after the longer delay.
    expect(gate.failed()).toBe(80);
    await sleep(40);
    expect(released).toEqual([0]);
    // The bank answers: every waiting row goes.
    gate.reached();
    expect(await Promise.all(waits)).toEqual(['go', 'go', 'go']);
    expect(gate.isDown).toBe(false);
  });

  it('the stop signal and the wait limit end a wait', async () => {
    const gate = new BankGate([1000]);
    gate.failed();
    const stop = new AbortController();
    const stopped = gate.wait(stop.signal);
    stop.abort();
    expect(await stopped).toBe('stopped');
    expect(await gate.wait(undefined, 30)).toBe('timeout');
    gate.close();
  });

  it('credentials refused: one row per retryEveryMs, the same delay each time; another answer lets all go', async () => {
    const gate = new BankGate([10], { retryEveryMs: 60 });
    expect(gate.refused()).toBe(60);
    expect(gate.credentialsRefused).toBe(true);
    expect(gate.reason).toBe('credentials');
    const released: number[] = [];
    const waits = [0, 1, 2].map((i) => gate.wait(undefined).then((r) => released.push(i) && r));
    await sleep(30);
    expect(released).toEqual([]);
    await sleep(50);
    expect(released).toEqual([0]);
    // The probe refused again: the same delay, not a longer one.
    expect(gate.refused()).toBe(60);
    // A reload with a new key lets the next one go at once.
    gate.probeNow();
    await sleep(5);
    expect(released).toEqual([0, 1]);
    gate.reached();
    expect(await Promise.all(waits)).toEqual(['go', 'go', 'go']);
    expect(gate.credentialsRefused).toBe(false);
  });

  it('credentials refused, not waited for (`run`): every wait, and every row already waiting, is refused at once', async () => {
    const gate = new BankGate([1000], { retryEveryMs: 60_000, waitForCredentials: false });
    gate.failed();
    const waiting = gate.wait(undefined);
    gate.refused();
    expect(await waiting).toBe('refused');
    expect(await gate.wait(undefined, 5_000)).toBe('refused');
    gate.close();
  });
});
