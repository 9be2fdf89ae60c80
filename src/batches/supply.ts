/**
 * Columns a sheet does not carry, filled for it before its rows are parsed: built-in header names, default constants
 * and derived ids, per kind. The filled values are stored with the row (so a stored row always parses to the same
 * request, whatever the configuration says later) and shown at the end of the result file.
 *
 * Defaults: a constant per kind and column, used when the header has no such column: built in (`charges.type` =
 * BANKSLIP), overridden or extended by the configuration (`defaults.<kind>.<column>`).
 *
 * Derived ids (part of the idempotency contract: natural key -> idempotency key, src/store/keys.ts): a `charges` or
 * `qr-codes` sheet without a correlationId column gets one per row, deterministically, so the same row dropped again
 * is the same charge (a `duplicate`), and two identical rows of one file are one charge (the second one is reported
 * as a duplicate of the first):
 * - charges with a Seu número (yourNumber): the Seu número itself, each character outside `A-Z a-z 0-9 . _ : -`
 *   written as `~` and its UTF-8 bytes in hex (`NF 12/A` -> `NF~2012~2FA`); when that is longer than 100 characters,
 *   the UUIDv5 of `yourNumber\n<Seu número>`. Seu número then identifies the charge: another row with the same Seu
 *   número is the same charge (a duplicate) when its content agrees, else it is refused (`mustMatch` of charges.ts).
 * - otherwise: the UUIDv5 of `<kind>\n<the row's request to the bank without its correlationId, as canonical JSON>`
 *   (amounts in cents, dates yyyy-mm-dd, documents bare), so formatting (`1.234,56` or `1234,56`, `15/03/2027` or
 *   `2027-03-15`, a CPF with or without dots) does not change it; any change of content does (a row corrected and
 *   dropped again is a new charge: sheets whose rows get corrected need a Seu número or correlationId column). A row
 *   that does not parse gets the UUIDv5 of its cells instead (it is rejected; nothing is sent).
 * Both namespaces are fixed (DERIVED_ID_NAMESPACE): never change them, nor what goes into the name, or a sheet dropped
 * again after the change would issue its charges twice.
 */
import type { ColumnSupply, HeaderColumnSpec } from '../csv/headers.js';
import { normalizeHeader } from '../csv/headers.js';
import { ConfigError } from '../errors.js';
import type { KindName } from '../types.js';
import { HEADER_ALIASES } from './aliases.js';
import { chargesKind } from './charges.js';
import { correlationIdFromContent, correlationIdFromYourNumber } from './derived-ids.js';
import { canonicalJson } from './fields.js';
import type { BatchKind, Dialect } from './kind.js';
import { qrCodesKind } from './qr-codes.js';

export { correlationIdFromContent, correlationIdFromYourNumber, DERIVED_ID_NAMESPACE } from './derived-ids.js';

/** Constants used when a sheet has no such column, per kind; the configuration's `defaults` win. */
export const BUILT_IN_DEFAULTS: Readonly<Partial<Record<KindName, Readonly<Record<string, string>>>>> = {
  charges: { type: 'BANKSLIP' },
};

/** A valid id for any kind (a GUID), put in place of the missing one to parse a row before its id exists. */
const PROBE_ID = '00000000-0000-4000-8000-000000000000';

type Deriver = (record: Readonly<Record<string, string>>, dialect: Dialect) => string | undefined;

function fromContent(kind: KindName, parse: BatchKind<{ input: { correlationId: string } }>['parse']): Deriver {
  return (record, dialect) => {
    const probe = parse({ ...record, correlationId: PROBE_ID }, dialect);
    const { correlationId: _, ...cells } = record;
    const content = probe.ok ? { ...probe.row.input, correlationId: undefined } : { cells };
    return correlationIdFromContent(kind, canonicalJson(content));
  };
}

const chargeContent = fromContent('charges', chargesKind.parse);

/**
 * Columns derived from the row when the sheet has none, per kind; `needs`: the header must have one of these columns
 * (else the derived column is missing, as without a derivation).
 */
export const DERIVED_COLUMNS: Readonly<
  Partial<Record<KindName, { column: string; derive: Deriver; needs?: readonly string[] }>>
> = {
  charges: {
    column: 'correlationId',
    derive: (record, dialect) => {
      const yourNumber = record.yourNumber;
      return yourNumber !== undefined && yourNumber !== ''
        ? correlationIdFromYourNumber(yourNumber)
        : chargeContent(record, dialect);
    },
  },
  // A void names the charge by the Seu número it was issued with from a sheet without correlationIds.
  'charge-voids': {
    column: 'correlationId',
    needs: ['yourNumber'],
    derive: (record) => {
      const yourNumber = record.yourNumber;
      return yourNumber !== undefined && yourNumber !== '' ? correlationIdFromYourNumber(yourNumber) : undefined;
    },
  },
  'qr-codes': {
    column: 'correlationId',
    derive: fromContent('qr-codes', qrCodesKind.parse as BatchKind<{ input: { correlationId: string } }>['parse']),
  },
};

/** A kind's columns with their built-in header names, as header resolution takes them. */
export function headerColumns(kind: Pick<BatchKind<unknown>, 'name' | 'columns'>): HeaderColumnSpec[] {
  const aliases = HEADER_ALIASES[kind.name];
  return kind.columns.map((c) => {
    const a = aliases[c.name];
    return a === undefined
      ? { name: c.name, required: c.required }
      : { name: c.name, required: c.required, aliases: a };
  });
}

/** The defaults of a kind: built in, then configured (configured win). */
export function defaultsOf(
  kind: KindName,
  configured: Readonly<Record<string, string>> | undefined,
): Readonly<Record<string, string>> {
  return { ...BUILT_IN_DEFAULTS[kind], ...configured };
}

/** What a kind fills when a sheet lacks the column: the defaults, then the derived column (from the filled row). */
export function columnSupply(kind: KindName, configured?: Readonly<Record<string, string>>): ColumnSupply | undefined {
  const defaults = defaultsOf(kind, configured);
  const derived = DERIVED_COLUMNS[kind];
  const columns = Object.keys(defaults);
  if (derived !== undefined && !(derived.column in defaults)) columns.push(derived.column);
  if (columns.length === 0) return undefined;
  return {
    columns,
    ...(derived?.needs ? { needs: { [derived.column]: derived.needs } } : {}),
    fill(record, absent, dialect) {
      let derive = false;
      for (const c of absent) {
        const value = defaults[c];
        if (value !== undefined) {
          if (record[c] === undefined && groupFilled(record, c)) record[c] = value;
        } else if (derived !== undefined && c === derived.column) derive = true;
      }
      // Derived last: the id is made from the row as it will be parsed, defaults included.
      if (derive) {
        const value = derived!.derive(record, dialect);
        if (value !== undefined) record[derived!.column] = value;
      }
    },
  };
}

/**
 * Whether a default for `column` applies to the row: always for a top-level column (`type`); for a column inside a
 * group (`lateFine.type`, `payer.address.state`) only when another column of the group has a value, so a default fine
 * type does not make a row without a fine incomplete.
 */
function groupFilled(record: Readonly<Record<string, string>>, column: string): boolean {
  const dot = column.lastIndexOf('.');
  if (dot === -1) return true;
  const group = column.slice(0, column.indexOf('.') + 1);
  for (const k in record) if (k !== column && k.startsWith(group) && record[k] !== '') return true;
  return false;
}

/**
 * Checks the configuration's `mappings` and `defaults` against the kinds' columns: every mapped column and every
 * defaulted column exists, and no two mapping keys of a kind are the same header once normalized. Throws ConfigError
 * listing every problem.
 */
export function checkColumnSettings(
  kinds: Readonly<Record<KindName, Pick<BatchKind<unknown>, 'name' | 'columns'>>>,
  settings: {
    mappings: Readonly<Partial<Record<KindName, Readonly<Record<string, string>>>>>;
    defaults: Readonly<Partial<Record<KindName, Readonly<Record<string, string>>>>>;
  },
  where = 'config',
): void {
  const problems: string[] = [];
  for (const [name, mapping] of Object.entries(settings.mappings) as Array<[KindName, Record<string, string>]>) {
    const columns = new Set(kinds[name].columns.map((c) => normalizeHeader(c.name)));
    const keys = new Map<string, string>();
    for (const [header, target] of Object.entries(mapping ?? {})) {
      if (target !== '' && !columns.has(normalizeHeader(target))) {
        problems.push(
          `${where}: mappings.${name}: Expected a column of ${name} (see docs/batches.md) or "" for header ${JSON.stringify(header)}, got ${JSON.stringify(target)}`,
        );
      }
      const key = normalizeHeader(header);
      const other = keys.get(key);
      if (other !== undefined) {
        problems.push(
          `${where}: mappings.${name}: Expected each header once, got ${JSON.stringify(other)} and ${JSON.stringify(header)}, which are the same header (case, accents, spaces and punctuation do not count)`,
        );
      }
      keys.set(key, header);
    }
  }
  for (const [name, defaults] of Object.entries(settings.defaults) as Array<[KindName, Record<string, string>]>) {
    const columns = new Set(kinds[name].columns.map((c) => c.name));
    for (const [column, value] of Object.entries(defaults ?? {})) {
      if (!columns.has(column)) {
        problems.push(
          `${where}: defaults.${name}: Expected a column of ${name} (see docs/batches.md), got ${JSON.stringify(column)}`,
        );
      } else if (value === '') {
        problems.push(`${where}: defaults.${name}.${column}: Expected a value, got an empty text`);
      }
    }
  }
  if (problems.length > 0) throw new ConfigError(problems.join('\n'), { code: 'CONFIG_INVALID' });
}
