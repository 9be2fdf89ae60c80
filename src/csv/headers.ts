/**
 * The header line of a batch file -> the kind's columns.
 *
 * A header names a column when, after `normalizeHeader` (no case, accents, spaces or punctuation; `%` and `R$` kept
 * as `pct` and `rs`), it equals, in this order of precedence:
 * 1. a key of the configured mapping (`mappings.<kind>`; a header mapped to `""` is ignored on purpose);
 * 2. a column's own name (`payer.document`, `PAYER_DOCUMENT`) or one of its built-in aliases (src/batches/aliases.ts).
 *
 * What must hold:
 * - Every problem of the header is reported at once, in one error (`HeaderError`): each unknown header with the
 *   nearest known name (edit distance over normalized names), each column named by two headers (both named), each
 *   required column missing, and the `mappings` entries that would fix it, as JSON the user can paste.
 * - A column is never filled from two headers: two headers naming one column is an error, never a choice.
 * - A column the kind can fill itself (`supply`: a default constant, an id derived from the row) is not missing when
 *   the header lacks it; it is filled per record and shown as an extra column at the end of the result, so the
 *   answer says what was assumed.
 * - remessa reads its own answers: a header that ends with the columns an answer adds (status, errorCode,
 *   errorMessage and the kind's result columns, as the answer names them) is a result file dropped again, edited or
 *   not; those columns are ignored (the bank's `ourNumber` there is no express charge's), the input's are read.
 *
 * Problems are values (a stable code plus the values to show): `describeHeaderProblem` is the one place that turns
 * them into words.
 */

import { CELL_ERROR_CODES, shown } from '../batches/fields.js';
import type { CellError, Dialect } from '../batches/kind.js';
import { clip, excerptIn, formatLocationIn, InputError } from '../errors.js';
import { type Locale, msg, t } from '../i18n/index.js';

/** A header name for a column; `sets` are values it implies for other columns of the same row. */
export type HeaderAliasSpec = string | { readonly header: string; readonly sets: Readonly<Record<string, string>> };

/** What header resolution needs to know of a kind's column. */
export interface HeaderColumnSpec {
  name: string;
  required: boolean;
  /** Built-in header names (src/batches/aliases.ts). @defaultValue none */
  aliases?: readonly HeaderAliasSpec[];
}

export interface HeaderColumn {
  /** The header text as in the file (trimmed); for a supplied column, the column's name. */
  source: string;
  /** The kind's column name it maps to, or `null` when ignored. */
  column: string | null;
  /** Values this header implies for other columns of a row where its cell is filled (`Multa (%)`). */
  sets?: Readonly<Record<string, string>>;
  /** Not in the file: a column the kind filled (default or derived), appended after the file's own. */
  supplied?: true;
}

/** Columns a kind fills when the header lacks them (defaults and derived ids). */
export interface ColumnSupply {
  /** The columns it can fill. */
  columns: readonly string[];
  /** Columns it can fill only when the header has one of these (a correlationId derived from a Seu número column). */
  needs?: Readonly<Record<string, readonly string[]>>;
  /** Sets `record[c]` for each column of `absent` (all absent from the header), once per record. */
  fill(record: Record<string, string>, absent: readonly string[], dialect: Dialect): void;
}

export const HEADER_PROBLEM_CODES = {
  unknown: 'HEADER_UNKNOWN_COLUMN',
  duplicate: 'HEADER_DUPLICATE_COLUMN',
  missing: 'HEADER_MISSING_COLUMN',
  badMapping: 'HEADER_BAD_MAPPING',
} as const;

/** One problem of a header line, as values; words come from `describeHeaderProblem`. */
export type HeaderProblem =
  | {
      code: typeof HEADER_PROBLEM_CODES.unknown;
      column: number;
      header: string;
      /** The nearest known name and the column it names, when there is any. */
      nearest?: { name: string; column: string };
    }
  | {
      code: typeof HEADER_PROBLEM_CODES.duplicate;
      column: number;
      header: string;
      target: string;
      first: { column: number; header: string };
    }
  | { code: typeof HEADER_PROBLEM_CODES.missing; target: string; example?: string }
  | { code: typeof HEADER_PROBLEM_CODES.badMapping; column: number; header: string; mapped: string };

/** The header line cannot be used; `problems` lists every problem, `suggestion` the mappings that would fix some. */
export class HeaderError extends InputError {
  readonly problems: readonly HeaderProblem[];
  /** Header -> column ("" = ignore) to add to `mappings.<kind>`; empty when no mapping helps. */
  readonly suggestion: Readonly<Record<string, string>>;

  constructor(
    problems: readonly HeaderProblem[],
    suggestion: Readonly<Record<string, string>>,
    where: { file: string; line: number; kind?: string | undefined; otherKinds?: readonly string[] | undefined },
  ) {
    const first = problems[0]!;
    const location =
      problems.length === 1 && 'column' in first
        ? { file: where.file, line: where.line, column: first.column, columnName: clip(first.header) }
        : problems.length === 1 && first.code === HEADER_PROBLEM_CODES.missing
          ? { file: where.file, line: where.line, columnName: first.target }
          : { file: where.file, line: where.line };
    super(first.code, headerAnswer('en', problems, suggestion, where.kind, where.otherKinds), location);
    this.problems = problems;
    this.suggestion = suggestion;
    this.kind = where.kind;
    this.otherKinds = where.otherKinds ?? [];
    this.#where = where;
  }

  readonly kind: string | undefined;
  /** Other kinds whose columns this header fits as it is: the file is in the wrong folder. */
  readonly otherKinds: readonly string[];
  readonly #where: { file: string; line: number; kind?: string | undefined };

  /** The same error, saying that the header fits these other kinds (an empty list: this error). */
  inWrongFolder(otherKinds: readonly string[]): HeaderError {
    if (otherKinds.length === 0) return this;
    return new HeaderError(this.problems, this.suggestion, { ...this.#where, otherKinds });
  }

  /** The same answer in `locale` (a rejection note, `validate`): every problem, then the mappings to add. */
  override describe(locale: Locale): string {
    if (locale === 'en') return this.message;
    const answer = headerAnswer(locale, this.problems, this.suggestion, this.kind, this.otherKinds);
    return `${formatLocationIn(locale, this.location)}: ${answer}`;
  }
}

/** Every problem of a header (one, located; or a list), then the mappings to add, in the words of `locale`. */
function headerAnswer(
  locale: Locale,
  problems: readonly HeaderProblem[],
  suggestion: Readonly<Record<string, string>>,
  kind: string | undefined,
  otherKinds: readonly string[] = [],
): string {
  // A file of another kind dropped in this kind's folder: where it belongs, not mappings that would read it wrongly.
  if (otherKinds.length > 0) {
    const folders = otherKinds.map((k) => `inbox/${k}/`).join(t(locale, 'LIST.or'));
    return t(locale, 'HEADER.otherKind', { kinds: otherKinds.join(t(locale, 'LIST.or')), kind: kind ?? '?', folders });
  }
  const shownProblems = problems.slice(0, MAX_PROBLEMS_SHOWN);
  const more = problems.length - shownProblems.length;
  const body =
    problems.length === 1
      ? describeHeaderProblem(problems[0]!, { located: true, locale })
      : `${t(locale, 'HEADER.problems', { count: problems.length })}\n${shownProblems
          .map((p) => `- ${describeHeaderProblem(p, { locale })}`)
          .join('\n')}${more > 0 ? `\n- ${t(locale, 'HEADER.more', { count: more })}` : ''}`;
  return `${body}${describeSuggestion(suggestion, kind, locale)}`;
}

/** Problems listed in one message (a header of thousands of cells must not make a note of megabytes). */
const MAX_PROBLEMS_SHOWN = 50;
/** Longest header proposed as a mapping key (a longer one is not a header anybody maps). */
const MAX_SUGGESTED_HEADER = 100;

/** How a header is quoted: an excerpt (src/errors.ts), so a runaway header cannot flood a note. */
function quote(text: string, locale: Locale = 'en'): string {
  if (text === '') return t(locale, 'HEADER.empty');
  return excerptIn(locale, text);
}

/** The words for one problem, from the catalogue (src/i18n) in `locale` (English unless told). */
export function describeHeaderProblem(p: HeaderProblem, options: { located?: boolean; locale?: Locale } = {}): string {
  const locale = options.locale ?? 'en';
  const where =
    'column' in p && !options.located
      ? `${t(locale, 'HEADER.at', { column: p.column, header: quote(p.header, locale) })}: `
      : '';
  const q = (text: string) => quote(text, locale);
  switch (p.code) {
    case HEADER_PROBLEM_CODES.unknown:
      return `${where}${t(locale, p.nearest ? 'HEADER_UNKNOWN_COLUMN.nearest' : 'HEADER_UNKNOWN_COLUMN', {
        header: q(p.header),
        nearest: p.nearest ? q(p.nearest.name) : undefined,
        column: p.nearest?.column,
      })}`;
    case HEADER_PROBLEM_CODES.duplicate:
      return `${where}${t(locale, 'HEADER_DUPLICATE_COLUMN', {
        target: p.target,
        firstColumn: p.first.column,
        firstHeader: q(p.first.header),
        column: p.column,
        header: q(p.header),
      })}`;
    case HEADER_PROBLEM_CODES.missing:
      return t(locale, p.example ? 'HEADER_MISSING_COLUMN.example' : 'HEADER_MISSING_COLUMN', {
        target: p.target,
        example: p.example ? q(p.example) : undefined,
      });
    case HEADER_PROBLEM_CODES.badMapping:
      return `${where}${t(locale, 'HEADER_BAD_MAPPING', { mapped: JSON.stringify(p.mapped), header: q(p.header) })}`;
  }
}

function describeSuggestion(
  suggestion: Readonly<Record<string, string>>,
  kind: string | undefined,
  locale: Locale = 'en',
): string {
  const entries = Object.entries(suggestion);
  if (entries.length === 0) return '';
  const block = JSON.stringify({ mappings: { [kind ?? '<kind>']: suggestion } }, null, 2);
  return `\n${t(locale, 'HEADER.suggestion')}\n${block}`;
}

/**
 * A header as compared: NFKD without combining marks, lower case, `%` -> `pct`, `R$` -> `rs`, `°` -> `o`, then only
 * letters and digits. `Data de Vencimento`, `DATA_DE_VENCIMENTO` and `datadevencimento` are equal.
 */
export function normalizeHeader(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/°/g, 'o')
    .replace(/%/g, 'pct')
    .replace(/r\$/g, 'rs')
    .replace(/[^a-z0-9]/g, '');
}

/** Levenshtein distance (error path only: a header that matched nothing). */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]!;
}

interface KnownName {
  /** As people write it (the alias, or the column's own name). */
  name: string;
  column: string;
  sets?: Readonly<Record<string, string>>;
}

/** The normalized names of a kind's columns: own names and aliases. */
export function knownHeaderNames(columns: readonly HeaderColumnSpec[]): Map<string, KnownName> {
  const known = new Map<string, KnownName>();
  for (const c of columns) known.set(normalizeHeader(c.name), { name: c.name, column: c.name });
  for (const c of columns) {
    for (const a of c.aliases ?? []) {
      const name = typeof a === 'string' ? a : a.header;
      const key = normalizeHeader(name);
      if (known.has(key)) continue; // the first wins; test/headers.test.ts checks built-ins never clash
      known.set(key, typeof a === 'string' ? { name, column: c.name } : { name, column: c.name, sets: a.sets });
    }
  }
  return known;
}

export interface ResolveHeaderOptions {
  columns: readonly HeaderColumnSpec[];
  /** Source header -> column name (`""` ignores the header). @defaultValue `{}` */
  mapping?: Readonly<Record<string, string>>;
  /** @defaultValue 'reject' */
  unknownColumns?: 'reject' | 'ignore';
  /** Columns the kind fills when the header lacks them: not missing. @defaultValue none */
  supplied?: readonly string[];
  /** Supplied columns that need one of these columns in the header (else they are missing). @defaultValue none */
  suppliedNeeds?: Readonly<Record<string, readonly string[]>>;
  /** The kind's name, for the suggested mappings. */
  kind?: string;
  /**
   * The columns remessa's answer adds after the input's (status, errorCode, errorMessage, the kind's result columns):
   * a header ending with them is an answer dropped again, and they are ignored (see the top of this file).
   * @defaultValue none
   */
  answerColumns?: readonly string[];
}

export interface ResolvedHeader {
  header: HeaderColumn[];
  warnings: string[];
  /** Supplied columns the header lacks (filled per record; appended to `header` as `supplied`). */
  absent: string[];
}

/**
 * Maps the header cells to columns, or throws `HeaderError` listing every problem. The returned `header` has one
 * entry per cell, then one per supplied column the file lacks.
 */
export function resolveHeader(
  rawCells: readonly string[],
  where: { file: string; line: number },
  options: ResolveHeaderOptions,
): ResolvedHeader {
  const mapping = options.mapping ?? {};
  const mapped = new Map<string, { key: string; target: string }>();
  for (const [key, target] of Object.entries(mapping)) mapped.set(normalizeHeader(key), { key, target });
  const known = knownHeaderNames(options.columns);
  const byName = new Map(options.columns.map((c) => [c.name, c.name]));
  const byNormalized = new Map(options.columns.map((c) => [normalizeHeader(c.name), c.name]));
  const policy = options.unknownColumns ?? 'reject';
  const problems: HeaderProblem[] = [];
  const warnings: string[] = [];
  const header: HeaderColumn[] = [];
  const seen = new Map<string, { column: number; header: string }>();
  const answerFrom = answerColumnsStart(rawCells, options.answerColumns ?? []);
  if (answerFrom < rawCells.length) {
    warnings.push(`columns ${answerFrom + 1}-${rawCells.length} are an earlier answer's: ignored`);
  }

  rawCells.forEach((raw, i) => {
    const source = raw.replace(/^\uFEFF/, '').trim();
    const column = i + 1;
    const key = normalizeHeader(source);
    const entry: HeaderColumn = { source, column: null };
    header.push(entry);
    if (i >= answerFrom) return;
    const m = key === '' ? undefined : mapped.get(key);
    if (m !== undefined) {
      if (m.target === '') return;
      const target = byName.get(m.target) ?? byNormalized.get(normalizeHeader(m.target));
      if (target === undefined) {
        problems.push({ code: HEADER_PROBLEM_CODES.badMapping, column, header: source, mapped: m.target });
        return;
      }
      entry.column = target;
    } else if (source === '') {
      // An unnamed column (often a trailing delimiter): nothing can be mapped from it.
      if (rawCells.length > 1 && i !== rawCells.length - 1) warnings.push(`column ${column} has no header: ignored`);
      return;
    } else {
      const hit = known.get(key);
      if (hit === undefined) {
        if (policy === 'reject') {
          // Only where it is shown, and for a header of a plausible length: edit distance is quadratic.
          const found =
            problems.length < MAX_PROBLEMS_SHOWN && key.length <= MAX_SUGGESTED_HEADER
              ? nearestName(key, known)
              : undefined;
          // Named only when it is a likely misspelling: "Observação" has no near name, and was told "barCode".
          const nearest = found && closeEnough(source, found.name) ? found : undefined;
          problems.push(
            nearest
              ? { code: HEADER_PROBLEM_CODES.unknown, column, header: source, nearest }
              : { code: HEADER_PROBLEM_CODES.unknown, column, header: source },
          );
        } else {
          warnings.push(`column ${column} ${quote(source)} is not a column of this kind: ignored`);
        }
        return;
      }
      entry.column = hit.column;
      if (hit.sets) entry.sets = hit.sets;
    }
    const target = entry.column!;
    const before = seen.get(target);
    if (before !== undefined) {
      problems.push({ code: HEADER_PROBLEM_CODES.duplicate, column, header: source, target, first: before });
    } else {
      seen.set(target, { column, header: source });
    }
  });

  const needs = options.suppliedNeeds ?? {};
  const supplied = new Set(
    (options.supplied ?? []).filter((c) => needs[c] === undefined || needs[c].some((n) => seen.has(n))),
  );
  const missing = options.columns.filter((c) => c.required && !seen.has(c.name) && !supplied.has(c.name));
  for (const c of missing) {
    const example = c.aliases?.[0];
    problems.push(
      example === undefined
        ? { code: HEADER_PROBLEM_CODES.missing, target: c.name }
        : {
            code: HEADER_PROBLEM_CODES.missing,
            target: c.name,
            example: typeof example === 'string' ? example : example.header,
          },
    );
  }
  if (problems.length > 0) {
    throw new HeaderError(problems, suggestMappings(problems, seen), { ...where, kind: options.kind });
  }
  const absent = [...supplied].filter((c) => !seen.has(c) && byName.has(c));
  for (const c of absent) header.push({ source: c, column: c, supplied: true });
  return { header, warnings, absent };
}

/**
 * Where the columns of remessa's answers start in a header (its length when it has none): the header ends with
 * `answerColumns`, each as remessa names it in an answer (`status`, or `status (result)`, `status (result 2)` when
 * the input had the name already: src/csv/writer.ts `uniqueHeader`), once or several times (an answer of an answer).
 */
export function answerColumnsStart(rawCells: readonly string[], answerColumns: readonly string[]): number {
  const n = answerColumns.length;
  let end = rawCells.length;
  if (n === 0) return end;
  const names = (raw: string) => raw.replace(/^\uFEFF/, '').trim();
  const isAnswerName = (cell: string, name: string) => {
    const c = names(cell);
    return c === name || (c.startsWith(`${name} (result`) && /^ \(result( \d+)?\)$/.test(c.slice(name.length)));
  };
  while (end >= n && answerColumns.every((name, j) => isAnswerName(rawCells[end - n + j]!, name))) end -= n;
  return end;
}

/** The known name nearest to `key` (edit distance); whether it is near enough is `closeEnough`'s to say. */
function nearestName(key: string, known: ReadonlyMap<string, KnownName>): { name: string; column: string } | undefined {
  let best: { name: string; column: string; d: number } | undefined;
  for (const [k, v] of known) {
    const d = editDistance(key, k);
    if (best === undefined || d < best.d) best = { name: v.name, column: v.column, d };
  }
  if (best === undefined) return undefined;
  return { name: best.name, column: best.column };
}

/** Whether the nearest name is close enough to propose mapping to it (else the header is proposed as ignored). */
function closeEnough(header: string, nearest: string): boolean {
  const a = normalizeHeader(header);
  const b = normalizeHeader(nearest);
  return editDistance(a, b) <= Math.max(1, Math.floor(Math.max(a.length, b.length) / 3));
}

/**
 * Mappings that would fix the header: an unknown header near a known name of a column not yet named -> that column;
 * any other unknown header -> "" (ignored: the user checks it is not needed); for two headers naming one column, the
 * second -> "".
 */
function suggestMappings(
  problems: readonly HeaderProblem[],
  seen: ReadonlyMap<string, unknown>,
): Record<string, string> {
  const out: Record<string, string> = {};
  const taken = new Set(seen.keys());
  for (const p of problems) {
    if (Object.keys(out).length >= MAX_PROBLEMS_SHOWN) break;
    if ('header' in p && p.header.length > MAX_SUGGESTED_HEADER) continue;
    if (p.code === HEADER_PROBLEM_CODES.unknown) {
      const near = p.nearest;
      if (near && !taken.has(near.column) && closeEnough(p.header, near.name)) {
        out[p.header] = near.column;
        taken.add(near.column);
      } else out[p.header] = '';
    } else if (p.code === HEADER_PROBLEM_CODES.duplicate) {
      out[p.header] = '';
    }
  }
  return out;
}

/**
 * The per-record completion a resolved header needs (implied values, supplied columns), or undefined when none: the
 * reader calls it on each record after mapping. It returns the cells to keep for the result: the file's cells cut or
 * padded to the header's width, then the supplied columns' values.
 */
export function recordCompleter(
  resolved: ResolvedHeader,
  supply: ColumnSupply | undefined,
  dialect: Dialect,
): ((record: Record<string, string>, cells: string[], problems: CellError[]) => string[]) | undefined {
  const implied: Array<{ column: string; source: string; sets: Readonly<Record<string, string>> }> = [];
  for (const h of resolved.header) {
    if (h.sets && h.column !== null) implied.push({ column: h.column, source: h.source, sets: h.sets });
  }
  const absent = supply ? resolved.absent : [];
  if (implied.length === 0 && absent.length === 0) return undefined;
  const width = resolved.header.length - resolved.absent.length;
  return (record, cells, problems) => {
    for (const imp of implied) {
      if (record[imp.column] === undefined) continue;
      for (const [k, v] of Object.entries(imp.sets)) {
        const own = record[k];
        if (own === undefined) record[k] = v;
        // The row's own cell says otherwise than its header (`Desconto (R$)` with `Tipo de desconto` Percentage):
        // neither is guessed. Compared as the kind reads an enumerated cell (src/batches/fields.ts `enumOf`).
        else if (own.toLowerCase() !== v.toLowerCase()) {
          problems.push({
            column: k,
            code: CELL_ERROR_CODES.conflict,
            message: msg('CONFLICT.header', { header: imp.source, implied: v, got: shown(own) }),
          });
        }
      }
    }
    if (absent.length === 0) return cells;
    supply!.fill(record, absent, dialect);
    const out = cells.length === width ? cells.slice() : Array.from({ length: width }, (_, i) => cells[i] ?? '');
    for (const c of absent) out.push(record[c] ?? '');
    return out;
  };
}
