/** The money controls' settings (`approval`, `limits`): defaults by bank, amounts in reais, unknown keys refused. */
import { describe, expect, it } from 'vitest';
import { buildConfig } from '../src/config.js';
import { silentLogger } from '../src/log.js';
import { moneyControlsFromConfig, runnerOptionsFromConfig } from '../src/runner/options.js';

const REAL = { url: 'https://bank.example/api', apiKey: 'k-123456789', accountId: '42' };

function errorOf(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected an error');
}

describe('approval and limits settings', () => {
  it('approval is on for the money-out kinds against a real bank, off with the embedded sandbox, unless set', () => {
    expect(buildConfig({}, { env: {} }).approval.kinds).toEqual([]);
    expect(buildConfig({ bank: REAL }, { env: {} }).approval.kinds).toEqual(['bill-payments', 'pix-payments']);
    expect(buildConfig({ bank: REAL, approval: { kinds: [] } }, { env: {} }).approval.kinds).toEqual([]);
    expect(buildConfig({ approval: { kinds: ['charges'] } }, { env: {} }).approval.kinds).toEqual(['charges']);
    const c = buildConfig({ bank: REAL }, { env: {} });
    expect(c.approval).toMatchObject({ forbidSameAsOwner: true, makers: [], pollMs: 2000 });
    expect(runnerOptionsFromConfig(c, silentLogger()).controls?.approvalKinds).toEqual([
      'bill-payments',
      'pix-payments',
    ]);
  });

  it('approval.markersFrom is made absolute like the folders, and refused inside the inbox', () => {
    const c = buildConfig({ folders: { base: '/srv/remessa' }, approval: { markersFrom: 'aprovacoes' } }, { env: {} });
    expect(c.approval.markersFrom).toBe('/srv/remessa/aprovacoes');
    expect(moneyControlsFromConfig(c).markersDir).toBe('/srv/remessa/aprovacoes');
    expect(moneyControlsFromConfig(buildConfig({}, { env: {} })).markersDir).toBeUndefined();
    for (const inside of ['inbox', 'inbox/aprovacoes']) {
      expect(
        errorOf(() =>
          buildConfig({ folders: { base: '/srv/remessa' }, approval: { markersFrom: inside } }, { env: {} }),
        ).message,
      ).toMatch(/approval\.markersFrom: expected a folder outside the inbox \(\/srv\/remessa\/inbox\), got \/srv/);
    }
  });

  it('limits are reais as decimal strings, cents inside; anything else is refused naming the setting', () => {
    const c = buildConfig(
      { limits: { 'bill-payments': { perRow: '1500.5', perFile: '20000.00', perDay: '100000' } } },
      { env: {} },
    );
    expect(moneyControlsFromConfig(c).limits).toEqual({
      'bill-payments': { perRow: 150_050, perFile: 2_000_000, perDay: 10_000_000 },
    });
    expect(errorOf(() => buildConfig({ limits: { 'bill-payments': { perRow: 1500 } } }, { env: {} })).message).toMatch(
      /limits\.bill-payments\.perRow/,
    );
    expect(
      errorOf(() => buildConfig({ limits: { 'bill-payments': { perRow: '1.500,00' } } }, { env: {} })).message,
    ).toMatch(/limits\.bill-payments\.perRow: .*decimal string/);
    expect(errorOf(() => buildConfig({ limits: { 'bill-payments': { perWeek: '1' } } }, { env: {} })).message).toMatch(
      /unknown setting "limits\.bill-payments\.perWeek"/,
    );
    expect(errorOf(() => buildConfig({ approval: { maker: ['x'] } }, { env: {} })).message).toMatch(
      /unknown setting "approval\.maker"/,
    );
  });
});
