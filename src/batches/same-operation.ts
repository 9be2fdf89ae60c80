/**
 * A natural key reused for another operation (rule 4 of src/store/rows.ts): a row whose natural key another row owns
 * is that row's `duplicate` (it repeats its outcome, nothing is sent) only when it is the same operation, that is
 * when the fields the kind says define it (`BatchKind.mustMatch`) are equal. A Seu número put on another payer's
 * charge for another amount is not the owner's charge: answering it with the owner's slip would tell the person
 * something false (a slip of the wrong amount for the wrong payer). Such a row is refused (NATURAL_KEY_REUSED),
 * saying which column holds the key as the file names it, the owner's line and file, and what differs.
 *
 * Compared: the parsed values in canonical form (cents, yyyy-mm-dd, bare documents), so an honest copy of a row
 * written otherwise (`1.234,56` or `1234.56`, a CPF with or without dots) is still a duplicate.
 */
import { clip, excerptValue } from '../errors.js';
import { formatMoney } from '../formats/money.js';
import { type Locale, type Message, msg, render, t } from '../i18n/index.js';
import type { ColumnLabel } from './fields.js';
import type { BatchKind, MustMatch, MustMatchValue } from './kind.js';

/** A `MustMatch` amount read from a parsed row (stored ones included): `{ cents }`, or undefined when it has none. */
export function centsField(value: unknown): MustMatchValue {
  return typeof value === 'number' ? { cents: value } : undefined;
}

/** A `MustMatch` text read from a parsed row (stored ones included): undefined when it has none. */
export function textField(value: unknown): MustMatchValue {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** Code of a row refused because its natural key is owned by a row of another operation. */
export const NATURAL_KEY_REUSED = 'NATURAL_KEY_REUSED';

/** A defining field whose value differs between the owner of a key and a row bringing it again. */
export interface Difference {
  column: string;
  theirs: MustMatchValue;
  ours: MustMatchValue;
}

function sameValue(a: MustMatchValue, b: MustMatchValue): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (typeof a === 'string' || typeof b === 'string') return a === b;
  return a.cents === b.cents;
}

/**
 * The defining fields (`mustMatch.fields`) whose values differ between `owner` and `row`, in the kind's order (then
 * the owner's fields the row lacks). None: the same operation. A stored owner that the hook cannot read (written by
 * a version of the kind with another shape, which it throws on) counts as the same: a duplicate, as before the check.
 */
export function differences<Row>(mustMatch: MustMatch<Row>, owner: Row, row: Row): Difference[] {
  let theirs: Readonly<Record<string, MustMatchValue>>;
  let ours: Readonly<Record<string, MustMatchValue>>;
  try {
    theirs = mustMatch.fields(owner);
    ours = mustMatch.fields(row);
  } catch {
    return [];
  }
  const out: Difference[] = [];
  const columns = new Set([...Object.keys(ours), ...Object.keys(theirs)]);
  for (const column of columns) {
    if (!sameValue(theirs[column], ours[column])) out.push({ column, theirs: theirs[column], ours: ours[column] });
  }
  return out;
}

/** A defining value as a person reads it: money as `R$ 1.234,56`, text quoted (an excerpt when long). */
function shownValue(locale: Locale, value: MustMatchValue): string {
  if (value === undefined) return t(locale, 'NATURAL_KEY_REUSED.empty');
  if (typeof value !== 'string') return formatMoney(locale, value.cents);
  const shown = excerptValue(value, 60);
  return typeof shown === 'string' ? shown : render(locale, shown);
}

/** A row as the check reads it (the store's valid `IngestRow`). */
interface CheckedRow {
  record: Readonly<Record<string, string>>;
  parsed: unknown;
  naturalKey: string;
}

/** The owner of the row's key as the check reads it (the store's `KeyOwner`). */
interface CheckedOwner {
  line: number;
  sameBatch: boolean;
  fileName: string | null;
  answerName: string | null;
  parsed: unknown;
}

/**
 * The store's `SameOperation` check for the rows of one file of `kind` (src/store/store.ts `ingest`): undefined for a
 * kind without `mustMatch` (its natural key holds every defining field: any row with an owned key is a duplicate).
 * `header`: the file's header (what its columns map to, which the kind supplied), `label` names a column as the file
 * does, `locale` the words of the message.
 */
export function sameOperationCheck<Row>(
  kind: Pick<BatchKind<Row>, 'name' | 'mustMatch'>,
  header: ReadonlyArray<{ column?: string | null; supplied?: true }>,
  label: ColumnLabel,
  locale: Locale,
): ((row: CheckedRow, owner: CheckedOwner) => { code: string; message: string } | undefined) | undefined {
  const mustMatch = kind.mustMatch;
  if (mustMatch === undefined) return undefined;
  const inFile = new Set(header.filter((h) => h.column != null && !h.supplied).map((h) => h.column!));
  return (row, owner) => {
    const diff = differences(mustMatch, owner.parsed as Row, row.parsed as Row);
    if (diff.length === 0) return undefined;
    // The key as the person wrote it: the first key column the file has and the row fills, else the key itself.
    const keyColumn = mustMatch.keyColumns.find((c) => inFile.has(c) && (row.record[c] ?? '') !== '');
    const column: Message = keyColumn ? label(keyColumn) : label(mustMatch.keyColumns[0] ?? 'naturalKey');
    const key = keyColumn ? row.record[keyColumn]! : row.naturalKey;
    const where = owner.sameBatch
      ? msg('NATURAL_KEY_REUSED.thisFile')
      : msg('NATURAL_KEY_REUSED.otherFile', { file: clip(owner.fileName ?? '?') });
    const answered =
      !owner.sameBatch && owner.answerName
        ? msg('DUPLICATE_NATURAL_KEY.answeredIn', { answer: `${owner.answerName}.result.csv` })
        : '';
    const differing = diff
      .map((d) =>
        t(locale, 'NATURAL_KEY_REUSED.difference', {
          column: label(d.column),
          theirs: shownValue(locale, d.theirs),
          ours: shownValue(locale, d.ours),
          line: owner.line,
        }),
      )
      .join('; ');
    return {
      code: NATURAL_KEY_REUSED,
      message: t(locale, 'NATURAL_KEY_REUSED', {
        column,
        key: shownValue(locale, key),
        line: owner.line,
        where,
        answered,
        kind: kind.name,
        differences: differing,
      }),
    };
  };
}
