/** The bank gate (src/runner/bank-gate.ts): one probe per scheduled delay while the bank is down, all go when it is back. */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BankGate } from '../src/runner/bank-gate.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('BankGate', () => {
  it('a row waiting for the probe keeps the process alive until it goes (retry exited 13, silent)', () => {
    // A process whose only pending work is that wait: it must end by the wait's 'go', not by an empty event loop.
    const gate = fileURLToPath(new URL('../src/runner/bank-gate.ts', import.meta.url));
    const script = `
      const { BankGate } = await import(${JSON.stringify(gate)});
      const g = new BankGate([50]);
      g.failed();
      console.log(await g.wait(undefined));`;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(out.trim()).toBe('go');
    // Its row stopped, a gate with a long probe ahead keeps the process no longer.
    const stopped = `
      const { BankGate } = await import(${JSON.stringify(gate)});
      const g = new BankGate([60000]);
      g.failed();
      console.log(await g.wait(AbortSignal.timeout(50)));`;
    // Killed (and the test failed) if it is still alive at 20 s, long before the 60 s probe.
    const said = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', stopped], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(said.trim()).toBe('stopped');
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
});
