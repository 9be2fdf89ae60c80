/**
 * `limits.<kind>.perRow` (README "Money controls"): applied where a row is parsed, so `validate`, the run and the
 * result all say the same, with the limit in the message. Kept apart from ./approval.ts so that `validate` loads no
 * store.
 */
import type { BatchKind, CellError, Dialect } from '../batches/kind.js';
import { formatAmount, formatBrl } from '../formats/money.js';
import { msg } from '../i18n/index.js';
import type { MoneyControlOptions } from './options.js';

/** Code of a row whose amount is over its kind's per-row limit. */
export const LIMIT_PER_ROW = 'LIMIT_PER_ROW';

/**
 * The kind, with `limits.<kind>.perRow` applied at parse: a row over it is invalid, with the limit in its message.
 * The same kind unchanged when there is no such limit (or the kind has no amount).
 */
// biome-ignore lint/suspicious/noExplicitAny: kinds of every row type
export function withRowLimit<K extends BatchKind<any>>(kind: K, controls: MoneyControlOptions | undefined): K {
  const perRow = controls?.limits[kind.name]?.perRow;
  const amountOf = kind.amountCents;
  if (perRow === undefined || !amountOf) return kind;
  return {
    ...kind,
    parse(record: Readonly<Record<string, string>>, dialect: Dialect) {
      const parsed = kind.parse(record, dialect);
      if (!parsed.ok) return parsed;
      const cents = amountOf(parsed.row);
      if (cents === undefined || cents <= perRow) return parsed;
      const error: CellError = {
        column: 'amount',
        code: LIMIT_PER_ROW,
        message: msg(LIMIT_PER_ROW, {
          max: formatAmount(perRow, dialect.decimalMark),
          setting: `limits.${kind.name}.perRow`,
          brl: formatBrl(perRow),
          got: formatAmount(cents, dialect.decimalMark),
        }),
      };
      return { ok: false, errors: [error] };
    },
  };
}
