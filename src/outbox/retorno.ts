/**
 * The retorno file: `outbox/retorno/<yyyy-mm-dd>.csv` and `<yyyy-mm-dd>.summary.json`, one line per change of a thing
 * that remessa learned that day (src/store/things.ts draws the rules; docs/retorno.md tells a person how to read it).
 *
 * A day's file GROWS BY REWRITE: every time the day gains a line (or a later source completes one), the whole day is
 * written again from the store, to a temporary name then renamed over the old file (src/csv/writer.ts), so a reader
 * sees the previous whole file or the new whole file, never a part. Lines keep the order remessa learned them in
 * (`thing_changes.seq`), so the new file is the old one with lines added at the end (a completed line changes in
 * place). Nothing in a line is ever removed or contradicted.
 *
 * Dialect: the one of the batch file that created the day's first line (its encoding, delimiter and decimal mark),
 * so a Brazilian sheet's things are reported with `;` and decimal comma. A day whose lines come from batches of
 * several dialects is written in that first one (amounts with its decimal mark), in UTF-8 with a BOM instead of
 * Windows-1252 when a cell holds a character Windows-1252 cannot carry (src/csv/writer.ts, as every result file).
 * Cells are formula-safe.
 *
 * When a change happened is said twice: `occurredAt`, the bank's instant (ISO 8601 UTC, for programs), and
 * `occurredAtBrasilia`, the same instant in Brasília time as the day's sheet writes a date (`27/11/2026 23:30:00` in a
 * sheet with a decimal comma, else `2026-11-27 23:30:00`; config `results.dates` forces either): a payment at 23:30 in
 * São Paulo is of that day, though UTC has already turned the date, and Excel pt-BR reads the cell as a date and time.
 * The payer's CPF or CNPJ is written with its mask (`maskDocument`) in every form, so a spreadsheet keeps it as text
 * instead of a number without its leading zeros. In the spreadsheet form (./cell-forms.ts; config
 * `results.identifiers`), the other identifiers that are digits (Nosso número, Seu número, ids) are written `="..."`.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../atomic-file.js';
import type { Dialect } from '../batches/kind.js';
import { createResultWriter, type ResultCell } from '../csv/writer.js';
import { brasiliaTime } from '../formats/brasilia-time.js';
import { maskDocument } from '../formats/documents.js';
import { formatMoney } from '../formats/money.js';
import { DEFAULT_LOCALE, type Locale } from '../i18n/index.js';
import type { ThingChangeLine, Things } from '../store/things.js';
import { identifierCell, type ResultFormSettings, type ResultForms, resultForms } from './cell-forms.js';

/** The retorno's folder under the outbox. */
export const RETORNO_FOLDER = 'retorno';

/** The columns of a retorno file, in order. */
export const RETORNO_COLUMNS = [
  'kind',
  'correlationId',
  'endToEndId',
  'claimId',
  'paymentId',
  'yourNumber',
  'ourNumber',
  'sourceFile',
  'sourceLine',
  'oldStatus',
  'newStatus',
  'amount',
  'paidAmount',
  'discountAmount',
  'interestAmount',
  'fineAmount',
  'occurredAt',
  'occurredAtBrasilia',
  'payerName',
  'payerDocument',
  'eventId',
  'reportedBy',
] as const;

const DEFAULT_DIALECT: Dialect = {
  encoding: 'utf8',
  bom: false,
  delimiter: ',',
  decimalMark: '.',
  lineEnding: '\n',
};

export interface RetornoSummary {
  day: string;
  file: string;
  lines: number;
  /** Lines by kind and new status. */
  changes: Record<string, Record<string, number>>;
  /** Sum of the paid amounts of the day's lines, by kind; `formatted` as a person reads it (`R$ 1.234,56`). */
  paid: Record<string, { cents: number; formatted: string }>;
  dialect: { encoding: string; delimiter: string; decimalMark: string };
  writtenAt: string;
}

/** Writes the day's retorno file and summary from the store; returns the CSV's path (undefined: no line that day). */
export async function writeRetornoDay(
  things: Things,
  outboxDir: string,
  day: string,
  now: () => Date = () => new Date(),
  locale: Locale = DEFAULT_LOCALE,
  results?: Partial<ResultFormSettings>,
): Promise<string | undefined> {
  const lines = await things.changesOfDay(day);
  if (lines.length === 0) return undefined;
  const dir = path.join(outboxDir, RETORNO_FOLDER);
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, `${day}.csv`);
  const first = parseDialect(lines[0]!.dialect);
  // A sheet with a decimal comma is a Brazilian one: its dates are day first, as Excel pt-BR reads them.
  const forms = resultForms(first, results);
  const writer = await createResultWriter(file, { dialect: first, header: [...RETORNO_COLUMNS] });
  const changes: RetornoSummary['changes'] = {};
  const paid: Record<string, number> = {};
  try {
    for (const l of lines) {
      await writer.write(lineCells(l, forms));
      const byStatus = changes[l.kind] ?? {};
      changes[l.kind] = byStatus;
      byStatus[l.newStatus] = (byStatus[l.newStatus] ?? 0) + 1;
      if (l.paidCents !== undefined) paid[l.kind] = (paid[l.kind] ?? 0) + l.paidCents;
    }
    await writer.close();
  } catch (error) {
    await writer.abort();
    throw error;
  }
  const summary: RetornoSummary = {
    day,
    file: path.basename(file),
    lines: lines.length,
    changes,
    paid: Object.fromEntries(
      Object.entries(paid).map(([k, cents]) => [k, { cents, formatted: formatMoney(locale, cents) }]),
    ),
    dialect: {
      encoding: writer.dialect.encoding,
      delimiter: writer.dialect.delimiter,
      decimalMark: writer.dialect.decimalMark,
    },
    writtenAt: now().toISOString(),
  };
  await writeFileAtomic(path.join(dir, `${day}.summary.json`), `${JSON.stringify(summary, null, 2)}\n`);
  return file;
}

function lineCells(l: ThingChangeLine, forms: ResultForms): ResultCell[] {
  const money = (cents: number | undefined): ResultCell => (cents === undefined ? null : { cents });
  const id = (value: string | null | undefined): ResultCell =>
    value === null || value === undefined ? value : identifierCell(value, forms);
  return [
    l.kind,
    id(l.correlationId),
    l.endToEndId,
    id(l.claimId),
    l.kind === 'bill-payment' ? id(l.key) : null,
    id(l.yourNumber),
    id(l.ourNumber),
    l.fileName,
    l.line,
    l.oldStatus,
    l.newStatus,
    money(l.amountCents),
    money(l.paidCents),
    money(l.discountCents),
    money(l.interestCents),
    money(l.fineCents),
    l.occurredAt,
    brasiliaTime(l.occurredAt, forms.dates === 'dayFirst'),
    l.payerName,
    l.payerDocument === null ? null : maskDocument(l.payerDocument),
    id(l.eventIds.join(' ')),
    l.source,
  ];
}

function parseDialect(text: string): Dialect {
  try {
    return { ...DEFAULT_DIALECT, ...(JSON.parse(text) as Dialect) };
  } catch {
    return DEFAULT_DIALECT;
  }
}
