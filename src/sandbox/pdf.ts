/**
 * PDF of a charge, for GET /v1/charges/{correlation_id}/stream. Everything on the paper is in Portuguese.
 *
 * Bank slips (BANKSLIP, BANKSLIP_PIX): one A4 page in the FEBRABAN layout a payer and a teller expect.
 * - Top: the "Recibo do Pagador" (the payer keeps it): bank name, bank code with its check digit (`435-9`), the
 *   digitable line, beneficiary with CNPJ and address, Agência/Código do beneficiário, payer, Nosso número,
 *   Nº do documento, dates, Carteira, Espécie, Quantidade, (=) Valor do documento and the boxes the teller fills
 *   ((-) Desconto / Abatimento, (-) Outras deduções, (+) Mora / Multa, (+) Outros acréscimos, (=) Valor cobrado),
 *   Sacador/Avalista when the charge has a finalBeneficiary.
 * - BANKSLIP_PIX: a "Pague com Pix" block under the receipt with the QR code of the charge's BR Code and its
 *   copy-and-paste text.
 * - Bottom (anchored to the foot of the page, as banks cut it): the "Ficha de Compensação" with every field of the
 *   FEBRABAN grid (Local de pagamento, Vencimento, Beneficiário, Agência/Código do beneficiário, Data do documento,
 *   Nº do documento, Espécie doc., Aceite, Data do processamento, Nosso número, Uso do banco, Carteira, Espécie,
 *   Quantidade, Valor, the value column, Instruções, Pagador with CPF/CNPJ and address, Sacador/Avalista), then
 *   "Autenticação mecânica - Ficha de Compensação" and the bar code.
 *   It is 98 mm high from its bank line to the foot of the bar code (107 mm with a Sacador/Avalista), inside the
 *   95-108 mm banks ask for, and 190 mm wide (A4 less 10 mm margins).
 *
 * The bar code is interleaved 2 of 5 (ITF) of the 44 digits, drawn as vector bars at the FEBRABAN size: narrow
 * element 0.254 mm (0.72 pt, 1/100 inch), wide element 3 x narrow (0.762 mm), bar height 13 mm. 44 digits take
 * 4 (start) + 22 x 18 (pairs) + 5 (stop) = 405 narrow modules = 102.87 mm, the standard's "103 mm". It starts 10 mm
 * from the page's left edge (the standard asks a quiet zone of at least 5 mm) and ends at least 5 mm from anything
 * else; its foot is 12 mm above the bottom edge of the page.
 * The QR code is drawn as vector modules too (error correction M, quiet zone of 4 modules).
 *
 * What must hold: the digitable line and the bar code are made from the stored 44 digits / 47 digits only, and the QR
 * code from the stored BR Code only, so the paper and the API never disagree. Amounts are integer cents, formatted by
 * src/formats (`R$ 1.234,56`); dates are dd/mm/aaaa, in Brasília time for timestamps.
 *
 * Pix charges (PIX_STATIC, PIX_DYNAMIC): a one-page sheet with the QR code, the copy-and-paste payload, amount and
 * payer (a sandbox decision; docs/service-gaps.md).
 */
import PDFDocument from 'pdfkit';
import QRCode from 'qrcode';
import {
  formatBillLine,
  formatBrl,
  formatCep,
  formatDocument,
  formatPercentBr,
  wireToCents,
} from '../formats/index.js';
import { type ChargePayment, type ChargeStatus, isBankSlip, type StoredCharge } from './charges-store.js';
import type { SandboxOptions } from './options.js';

/** `43590.00116 12000.000609 00005.206370 5 10380000000010`: the line as printed on slips. */
export function formatDigitableLine(line: string): string {
  return /^\d{47}$/.test(line) ? formatBillLine(line) : line;
}

/**
 * The check digit printed after the bank code (`341-7`, `001-9`, `237-2`, `435-9`): mod 11 of the 3 digits with
 * weights 2, 3, 4 from the right, 11 - remainder; 11 gives 0 and 10 gives X (as 748-X is printed).
 */
export function bankCodeCheckDigit(code: string): string {
  let sum = 0;
  let weight = 2;
  for (let i = code.length - 1; i >= 0; i--) {
    sum += Number(code[i]) * weight;
    weight = weight === 9 ? 2 : weight + 1;
  }
  const dv = 11 - (sum % 11);
  return dv === 10 ? 'X' : dv === 11 ? '0' : String(dv);
}

// --- Units and sizes -------------------------------------------------------------------------------------------

const MM = 72 / 25.4;
const PAGE_WIDTH = 595.28; // A4
const PAGE_HEIGHT = 841.89;
const MARGIN = 10 * MM;
const CONTENT_WIDTH = PAGE_WIDTH - 2 * MARGIN;

/** ITF narrow element: 0.254 mm (FEBRABAN), exactly 0.72 pt. */
export const ITF_NARROW_PT = 0.254 * MM;
/** ITF wide element: 3 narrow elements. */
export const ITF_WIDE_PT = 3 * ITF_NARROW_PT;
/** ITF bar height: 13 mm. */
export const ITF_HEIGHT_PT = 13 * MM;
/** Distance from the foot of the bar code to the bottom edge of the page: 12 mm. */
const BAR_CODE_BOTTOM_PT = 12 * MM;

/** Interleaved 2 of 5 digit patterns, narrow (0) and wide (1) elements, from the standard's table. */
const ITF_DIGITS = ['00110', '10001', '01001', '11000', '00101', '10100', '01100', '00011', '10010', '01010'];

/**
 * The element widths (in narrow modules, 1 or 3) of the ITF symbol of `digits`, starting with a bar and alternating
 * bar / space: start (4 narrow), for each pair the 5 bars of the first digit interleaved with the 5 spaces of the
 * second, stop (wide bar, narrow space, narrow bar).
 */
export function itfElements(digits: string): number[] {
  if (!/^(\d\d)+$/.test(digits)) throw new Error(`Expected an even number of digits, got "${digits}"`);
  const out = [1, 1, 1, 1];
  for (let i = 0; i < digits.length; i += 2) {
    const bars = ITF_DIGITS[Number(digits[i])]!;
    const spaces = ITF_DIGITS[Number(digits[i + 1])]!;
    for (let k = 0; k < 5; k++) out.push(bars[k] === '1' ? 3 : 1, spaces[k] === '1' ? 3 : 1);
  }
  out.push(3, 1, 1);
  return out;
}

/** Draws the ITF bar code of `digits` with its top-left corner at (x, y); returns its width in points. */
function drawItf(doc: PDFKit.PDFDocument, x: number, y: number, digits: string): number {
  let at = x;
  itfElements(digits).forEach((modules, i) => {
    const w = modules * ITF_NARROW_PT;
    if (i % 2 === 0) doc.rect(at, y, w, ITF_HEIGHT_PT);
    at += w;
  });
  doc.fillColor('#000').fill();
  return at - x;
}

/** Draws the QR code of `payload` (quiet zone included) in a square of `size` points at (x, y). */
function drawQr(doc: PDFKit.PDFDocument, x: number, y: number, size: number, payload: string): void {
  const { modules } = QRCode.create(payload, { errorCorrectionLevel: 'M' });
  const quiet = 4;
  const n = modules.size;
  const cell = size / (n + 2 * quiet);
  for (let r = 0; r < n; r++) {
    let c = 0;
    while (c < n) {
      if (!modules.get(r, c)) {
        c++;
        continue;
      }
      const start = c;
      while (c < n && modules.get(r, c)) c++;
      doc.rect(x + (quiet + start) * cell, y + (quiet + r) * cell, (c - start) * cell, cell);
    }
  }
  doc.fillColor('#000').fill();
}

/**
 * The copy-and-paste text cut into lines of at most `perLine` characters, never at a space: a viewer that copies the
 * lines and drops the line breaks gives back the exact BR Code (its merchant name and city keep their spaces, and the
 * CRC holds).
 */
export function copyPasteLines(payload: string, perLine: number): string[] {
  const lines: string[] = [];
  let rest = payload;
  while (rest.length > perLine) {
    let cut = perLine;
    while (cut > 1 && (rest[cut] === ' ' || rest[cut - 1] === ' ')) cut--;
    lines.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  if (rest !== '') lines.push(rest);
  return lines;
}

/** Draws the copy-and-paste text in Courier at `size`, in lines cut by {@link copyPasteLines}; returns the y under it. */
function drawCopyPaste(doc: PDFKit.PDFDocument, x: number, y: number, width: number, size: number, payload: string) {
  const perLine = Math.floor(width / (0.6 * size)); // Courier: every glyph is 0.6 em wide
  doc.font('Courier').fontSize(size).fillColor('#000');
  let at = y;
  for (const line of copyPasteLines(payload, perLine)) {
    doc.text(line, x, at, { lineBreak: false });
    at += size + 1.5;
  }
  return at;
}

/** Collects the document's bytes; resolves once `doc.end()` has been called and everything is flushed. */
function collect(doc: PDFKit.PDFDocument): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    doc.on('data', (c: Buffer) => chunks.push(c));
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });
}

// --- Values as printed -----------------------------------------------------------------------------------------

/** dd/mm/aaaa of a yyyy-mm-dd date. */
function brDate(date: string | null | undefined): string {
  if (!date || !/^\d{4}-\d{2}-\d{2}/.test(date)) return '';
  return `${date.slice(8, 10)}/${date.slice(5, 7)}/${date.slice(0, 4)}`;
}

const BRASILIA = new Intl.DateTimeFormat('en-CA', {
  timeZone: 'America/Sao_Paulo',
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
});

/** dd/mm/aaaa of an ISO timestamp, in Brasília time (a charge made at 23:30 there is dated that day). */
function brDateOf(timestamp: string | null | undefined): string {
  if (!timestamp) return '';
  const at = new Date(timestamp);
  if (Number.isNaN(at.getTime())) return '';
  return brDate(BRASILIA.format(at));
}

/** The day after a yyyy-mm-dd date. */
function nextDay(date: string): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + 1);
  return d.toISOString().slice(0, 10);
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
}

/** A wire amount (reais as a JSON number) as `R$ 0,50`; empty when it is not an amount. */
function wireBrl(value: unknown): string {
  if (typeof value !== 'number') return '';
  try {
    return formatBrl(wireToCents(value));
  } catch {
    return '';
  }
}

function percentText(value: unknown): string {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? formatPercentBr(value) : '';
}

/**
 * A line of the slip that may be too long for its box: `shrink` is shortened (with an ellipsis) before `keep` is
 * touched, so a long name never hides the CPF/CNPJ after it.
 */
export interface FittedLine {
  shrink: string;
  keep: string;
}
type Line = string | FittedLine;

/** `Nome - CPF 529.982.247-25` (`CNPJ` for 14 characters): the name shrinks first. */
function personLine(person: Record<string, unknown>): FittedLine {
  const name = str(person.name) ?? '';
  const doc = str(person.document);
  if (!doc) return { shrink: name, keep: '' };
  const compact = doc.replace(/[\s./-]/g, '');
  const kind = compact.length === 11 ? 'CPF' : compact.length === 14 ? 'CNPJ' : 'CPF/CNPJ';
  return { shrink: name, keep: ` - ${kind} ${formatDocument(doc)}` };
}

function lineText(line: Line): string {
  return typeof line === 'string' ? line : line.shrink + line.keep;
}

/** `Avenida Paulista, 1000, Apto 5 - Bela Vista` and `CEP 01310-100 - São Paulo/SP`, as two lines. */
function addressLines(address: unknown): [string, string] {
  if (typeof address !== 'object' || address === null) return ['', ''];
  const a = address as Record<string, unknown>;
  const street = [str(a.publicPlace), str(a.number), str(a.complement)].filter(Boolean).join(', ');
  const first = [street, str(a.neighborhood)].filter(Boolean).join(' - ');
  const zip = str(a.zipCode);
  const place = [str(a.city), str(a.state)].filter(Boolean).join('/');
  const second = [zip ? `CEP ${formatCep(zip)}` : undefined, place || undefined].filter(Boolean).join(' - ');
  return [first, second];
}

interface AmountRule {
  type?: unknown;
  date?: unknown;
  amount?: unknown;
}

/**
 * The instructions to the teller and the payer, in Portuguese, from the charge's lateFine, latePayment and discount
 * (read as the sandbox's bill calculation reads them, docs/service-gaps.md: a fine once, Percentage of the amount or
 * Fixed money; interest Percentage a month pro rata or Fixed money a day; both from their date, by default the day
 * after the due date; each discount until its date), then the state of the charge when it is no longer open.
 */
export function slipInstructions(c: StoredCharge): string[] {
  const out: string[] = [];
  const afterDue = c.dueDate ? nextDay(c.dueDate) : undefined;
  const from = (rule: AmountRule) => {
    const date = typeof rule.date === 'string' ? rule.date : afterDue;
    return date ? ` a partir de ${brDate(date)}` : '';
  };
  const fine = c.extras.lateFine as AmountRule | undefined;
  if (fine?.amount !== undefined) {
    const what =
      fine.type === 'Percentage' ? `${percentText(fine.amount)} sobre o valor do documento` : wireBrl(fine.amount);
    out.push(`Após o vencimento, cobrar multa de ${what}${from(fine)}.`);
  }
  const interest = c.extras.latePayment as AmountRule | undefined;
  if (interest?.amount !== undefined) {
    const what =
      interest.type === 'Percentage'
        ? `${percentText(interest.amount)} ao mês, pro rata die`
        : `${wireBrl(interest.amount)} por dia de atraso`;
    out.push(`Cobrar juros de mora de ${what}${from(interest)}.`);
  }
  const discount = c.extras.discount as { type?: unknown; items?: AmountRule[] } | undefined;
  for (const item of discount?.items ?? []) {
    const what =
      discount?.type === 'Percentage' ? `${percentText(item.amount)} sobre o valor do documento` : wireBrl(item.amount);
    out.push(`Conceder desconto de ${what} para pagamento até ${brDate(item.date as string)}.`);
  }
  if (c.type === 'BANKSLIP_PIX') out.push('Este boleto também pode ser pago com Pix: QR Code no recibo do pagador.');
  if (c.originalDueDate) out.push(`Vencimento original: ${brDate(c.originalDueDate)}.`);
  for (const p of c.payments) out.push(paymentLine(p));
  if (c.status === 'Voided') out.push(`Boleto baixado (cancelado) em ${brDateOf(c.voidedAt)}: não pague.`);
  return out;
}

function paymentLine(p: ChargePayment): string {
  return `Pagamento recebido em ${brDateOf(p.paidAt)}: ${formatBrl(p.amountCents)} (${p.method === 'PIX' ? 'Pix' : 'boleto'}).`;
}

/** A charge's status as a person reads it. */
export const STATUS_PT: Readonly<Record<ChargeStatus, string>> = {
  Pending: 'Em aberto',
  Created: 'Em aberto',
  Paid: 'Paga',
  Expired: 'Vencida',
  Voided: 'Cancelada',
};

// --- Drawing ---------------------------------------------------------------------------------------------------

const LABEL_SIZE = 5.5;
const VALUE_SIZE = 8;

/**
 * The text of `line` as it fits in `width` at the current font and size: whole when it fits, else `shrink` cut with
 * an ellipsis (then `keep` too, if even that is not enough). pdfkit would wrap a long value into the next box instead.
 */
function fitText(doc: PDFKit.PDFDocument, line: Line, width: number): string {
  const { shrink, keep } = typeof line === 'string' ? { shrink: line, keep: '' } : line;
  if (doc.widthOfString(shrink + keep) <= width) return shrink + keep;
  const cut = (text: string, room: number): string => {
    let n = text.length;
    while (n > 0 && doc.widthOfString(`${text.slice(0, n).trimEnd()}…`) > room) n--;
    return n > 0 ? `${text.slice(0, n).trimEnd()}…` : '';
  };
  const room = width - doc.widthOfString(keep);
  if (room > doc.widthOfString('…') * 4) return cut(shrink, room) + keep;
  return cut(shrink + keep, width);
}

/** One labelled box of the grid: a thin frame, the label small at the top, the value under it (one line each). */
function box(
  doc: PDFKit.PDFDocument,
  x: number,
  y: number,
  w: number,
  h: number,
  label: string,
  value: Line | Line[] = '',
  options: { align?: 'left' | 'right' } = {},
): void {
  doc.rect(x, y, w, h).lineWidth(0.5).strokeColor('#000').stroke();
  doc.font('Helvetica').fontSize(LABEL_SIZE).fillColor('#333');
  doc.text(fitText(doc, label, w - 4), x + 2, y + 1.5, { width: w - 4, lineBreak: false });
  const lines = Array.isArray(value) ? value : [value];
  doc.font('Helvetica-Bold').fontSize(VALUE_SIZE).fillColor('#000');
  lines.forEach((line, i) => {
    if (lineText(line) === '') return;
    doc.text(fitText(doc, line, w - 4), x + 2, y + 8 + i * (VALUE_SIZE + 1.5), {
      width: w - 4,
      align: options.align ?? 'left',
      lineBreak: false,
    });
  });
}

/** The bank line that heads each part: name | code-DV | digitable line, over a thick rule. */
function bankHeader(doc: PDFKit.PDFDocument, y: number, bank: string, code: string, line: string): number {
  const h = 20;
  doc
    .font('Helvetica-Bold')
    .fontSize(10)
    .fillColor('#000')
    .text(bank.length > 0 ? fitText(doc.font('Helvetica-Bold').fontSize(10), bank, 148) : '', MARGIN, y + 7, {
      width: 150,
      lineBreak: false,
    });
  doc
    .moveTo(MARGIN + 152, y + 3)
    .lineTo(MARGIN + 152, y + h)
    .moveTo(MARGIN + 206, y + 3)
    .lineTo(MARGIN + 206, y + h)
    .lineWidth(1.5)
    .stroke();
  doc.fontSize(14).text(code, MARGIN + 152, y + 5, { width: 54, align: 'center', lineBreak: false });
  doc.fontSize(10.5).text(formatDigitableLine(line), MARGIN + 210, y + 7, {
    width: CONTENT_WIDTH - 210,
    align: 'right',
    lineBreak: false,
  });
  doc
    .moveTo(MARGIN, y + h)
    .lineTo(MARGIN + CONTENT_WIDTH, y + h)
    .lineWidth(1.5)
    .stroke();
  return y + h;
}

/** Boxes side by side across the content width; widths are fractions of the part left of `rightWidth`. */
function boxRow(
  doc: PDFKit.PDFDocument,
  y: number,
  h: number,
  cells: Array<{ label: string; value?: Line | Line[]; w: number; align?: 'left' | 'right' }>,
): number {
  let x = MARGIN;
  for (const cell of cells) {
    box(doc, x, y, cell.w, h, cell.label, cell.value ?? '', cell.align ? { align: cell.align } : {});
    x += cell.w;
  }
  return y + h;
}

interface SlipData {
  charge: StoredCharge;
  bank: string;
  bankCode: string;
  line: string;
  beneficiary: FittedLine;
  beneficiaryAddress: FittedLine;
  branchCode: string;
  payer: FittedLine;
  payerAddress: [string, string];
  /** Name and document, then the address (street shrinks first, CEP and city kept); absent without one. */
  finalBeneficiary: [FittedLine, FittedLine] | undefined;
  dueDate: string;
  amount: string;
  documentDate: string;
  processingDate: string;
}

function slipData(c: StoredCharge, options: SandboxOptions): SlipData {
  const b = options.beneficiary;
  const payer = (c.extras.payer ?? {}) as Record<string, unknown>;
  const fb = c.extras.finalBeneficiary as Record<string, unknown> | undefined;
  let finalBeneficiary: SlipData['finalBeneficiary'];
  if (fb) {
    const [first, second] = addressLines(fb.address);
    finalBeneficiary = [personLine(fb), { shrink: first, keep: first && second ? ` - ${second}` : second }];
  }
  return {
    charge: c,
    bank: options.participantName,
    bankCode: `${options.bankCode}-${bankCodeCheckDigit(options.bankCode)}`,
    line: c.digitableLine ?? '',
    beneficiary: { shrink: b.name, keep: ` - CNPJ ${formatDocument(b.document)}` },
    beneficiaryAddress: { shrink: b.address, keep: ` - CEP ${formatCep(b.zipCode)} - ${b.city}/${b.state}` },
    branchCode: `${b.branch} / ${b.accountNumber}`,
    payer: personLine(payer),
    payerAddress: addressLines(payer.address),
    finalBeneficiary,
    dueDate: brDate(c.dueDate),
    amount: formatBrl(c.amountCents),
    documentDate: brDateOf(c.createdAt),
    processingDate: brDateOf(c.updatedAt),
  };
}

const RIGHT = 140; // the value column of both parts

/** The "Recibo do Pagador"; returns the y under it. */
function drawReceipt(doc: PDFKit.PDFDocument, d: SlipData, top: number): number {
  const c = d.charge;
  doc
    .font('Helvetica-Bold')
    .fontSize(9)
    .fillColor('#000')
    .text('Recibo do Pagador', MARGIN, top, { width: CONTENT_WIDTH, lineBreak: false });
  let y = bankHeader(doc, top + 8, d.bank, d.bankCode, d.line);
  const row = 19;
  const left = CONTENT_WIDTH - RIGHT;
  y = boxRow(doc, y, row + 8, [
    { label: 'Beneficiário', value: [d.beneficiary, d.beneficiaryAddress], w: left },
    { label: 'Agência/Código do beneficiário', value: d.branchCode, w: RIGHT, align: 'right' },
  ]);
  y = boxRow(doc, y, row, [
    { label: 'Pagador', value: d.payer, w: left },
    { label: 'Vencimento', value: d.dueDate, w: RIGHT, align: 'right' },
  ]);
  const q = left / 6;
  y = boxRow(doc, y, row, [
    { label: 'Nº do documento', value: c.yourNumber ?? '', w: q * 1.4 },
    { label: 'Data do documento', value: d.documentDate, w: q },
    { label: 'Carteira', value: c.wallet ?? '', w: q * 0.7 },
    { label: 'Espécie', value: 'R$', w: q * 0.6 },
    { label: 'Quantidade', value: '', w: q * 0.9 },
    { label: 'Nosso número', value: c.ourNumber ?? '', w: q * 1.4 },
    { label: '(=) Valor do documento', value: d.amount, w: RIGHT, align: 'right' },
  ]);
  const f = CONTENT_WIDTH / 5;
  y = boxRow(doc, y, row, [
    { label: '(-) Desconto / Abatimento', w: f },
    { label: '(-) Outras deduções', w: f },
    { label: '(+) Mora / Multa', w: f },
    { label: '(+) Outros acréscimos', w: f },
    { label: '(=) Valor cobrado', w: f },
  ]);
  if (d.finalBeneficiary) {
    y = boxRow(doc, y, row + 8, [{ label: 'Sacador/Avalista', value: d.finalBeneficiary, w: CONTENT_WIDTH }]);
  }
  doc
    .font('Helvetica')
    .fontSize(6.5)
    .fillColor('#000')
    .text('Autenticação mecânica', MARGIN, y + 2, { width: CONTENT_WIDTH, align: 'right', lineBreak: false });
  return y + 12;
}

/** The "Pague com Pix" block of a BANKSLIP_PIX; returns the y under it. */
function drawPixBlock(doc: PDFKit.PDFDocument, d: SlipData, top: number, qrCode: string): number {
  const size = 34 * MM;
  const h = size + 8;
  doc.rect(MARGIN, top, CONTENT_WIDTH, h).lineWidth(0.5).stroke();
  drawQr(doc, MARGIN + 4, top + 4, size, qrCode);
  const x = MARGIN + size + 14;
  const w = CONTENT_WIDTH - size - 20;
  doc
    .font('Helvetica-Bold')
    .fontSize(11)
    .fillColor('#000')
    .text('Pague com Pix', x, top + 8, { width: w, lineBreak: false });
  doc
    .font('Helvetica')
    .fontSize(7.5)
    .text(
      `Abra o app do seu banco, escolha pagar com Pix e leia o QR Code ou use o Pix Copia e Cola abaixo. ` +
        `Valor: ${d.amount}. Vencimento: ${d.dueDate}.`,
      x,
      top + 23,
      { width: w },
    );
  doc
    .font('Helvetica-Bold')
    .fontSize(7)
    .text('Pix Copia e Cola', x, top + 46, { width: w, lineBreak: false });
  drawCopyPaste(doc, x, top + 55, w, 7, qrCode);
  return top + h;
}

/** The cut line between the receipt and the Ficha de Compensação. */
function drawCutLine(doc: PDFKit.PDFDocument, y: number): void {
  doc
    .moveTo(MARGIN, y)
    .lineTo(MARGIN + CONTENT_WIDTH, y)
    .lineWidth(0.5)
    .dash(3, { space: 3 })
    .stroke()
    .undash();
  doc
    .font('Helvetica')
    .fontSize(5.5)
    .fillColor('#333')
    .text('Corte na linha pontilhada', MARGIN, y + 2, { width: CONTENT_WIDTH, align: 'right', lineBreak: false });
}

const FICHA_ROW = 18;
const INSTRUCTION_ROWS = 5;
const PAYER_BOX = 38;
const SACADOR_BOX = FICHA_ROW + 8;

/** Height of the Ficha de Compensação from its header to the foot of its bar code. */
function fichaHeight(hasFinalBeneficiary: boolean): number {
  return (
    20 + // header
    FICHA_ROW + // Local de pagamento
    FICHA_ROW +
    8 + // Beneficiário (two lines)
    2 * FICHA_ROW + // dates row, wallet row
    INSTRUCTION_ROWS * FICHA_ROW +
    PAYER_BOX +
    (hasFinalBeneficiary ? SACADOR_BOX : 0) +
    12 + // Autenticação mecânica
    ITF_HEIGHT_PT
  );
}

/** The "Ficha de Compensação", anchored so its bar code's foot is 12 mm above the page's bottom edge. */
function drawFicha(doc: PDFKit.PDFDocument, d: SlipData): void {
  const c = d.charge;
  const top = PAGE_HEIGHT - BAR_CODE_BOTTOM_PT - fichaHeight(d.finalBeneficiary !== undefined);
  drawCutLine(doc, top - 10);
  let y = bankHeader(doc, top, d.bank, d.bankCode, d.line);
  const left = CONTENT_WIDTH - RIGHT;
  const localDePagamento =
    c.type === 'BANKSLIP_PIX'
      ? 'Pagável em qualquer banco, mesmo após o vencimento, ou com Pix pelo QR Code do recibo'
      : 'Pagável em qualquer banco, mesmo após o vencimento';
  y = boxRow(doc, y, FICHA_ROW, [
    { label: 'Local de pagamento', value: localDePagamento, w: left },
    { label: 'Vencimento', value: d.dueDate, w: RIGHT, align: 'right' },
  ]);
  y = boxRow(doc, y, FICHA_ROW + 8, [
    { label: 'Beneficiário', value: [d.beneficiary, d.beneficiaryAddress], w: left },
    { label: 'Agência/Código do beneficiário', value: d.branchCode, w: RIGHT, align: 'right' },
  ]);
  const q = left / 6;
  y = boxRow(doc, y, FICHA_ROW, [
    { label: 'Data do documento', value: d.documentDate, w: q },
    { label: 'Nº do documento', value: c.yourNumber ?? '', w: q * 1.5 },
    { label: 'Espécie doc.', value: 'DM', w: q * 0.8 },
    { label: 'Aceite', value: 'N', w: q * 0.6 },
    { label: 'Data do processamento', value: d.processingDate, w: q * 2.1 },
    { label: 'Nosso número', value: c.ourNumber ?? '', w: RIGHT, align: 'right' },
  ]);
  y = boxRow(doc, y, FICHA_ROW, [
    { label: 'Uso do banco', value: '', w: q },
    { label: 'Carteira', value: c.wallet ?? '', w: q * 0.8 },
    { label: 'Espécie', value: 'R$', w: q * 0.7 },
    { label: 'Quantidade', value: '', w: q * 1.5 },
    { label: 'Valor', value: '', w: q * 2 },
    { label: '(=) Valor do documento', value: d.amount, w: RIGHT, align: 'right' },
  ]);

  const instrHeight = INSTRUCTION_ROWS * FICHA_ROW;
  doc.rect(MARGIN, y, left, instrHeight).lineWidth(0.5).stroke();
  doc
    .font('Helvetica')
    .fontSize(LABEL_SIZE)
    .fillColor('#333')
    .text('Instruções (texto de responsabilidade do beneficiário)', MARGIN + 2, y + 1.5, {
      width: left - 4,
      lineBreak: false,
    });
  const instructions = slipInstructions(c);
  doc
    .font('Helvetica')
    .fontSize(7)
    .fillColor('#000')
    .text(instructions.join('\n'), MARGIN + 2, y + 9, { width: left - 4, height: instrHeight - 10, lineGap: 0.8 });
  const column = [
    '(-) Desconto / Abatimento',
    '(-) Outras deduções',
    '(+) Mora / Multa',
    '(+) Outros acréscimos',
    '(=) Valor cobrado',
  ];
  column.forEach((label, i) => {
    box(doc, MARGIN + left, y + i * FICHA_ROW, RIGHT, FICHA_ROW, label);
  });
  y += instrHeight;

  box(doc, MARGIN, y, CONTENT_WIDTH, PAYER_BOX, 'Pagador', [d.payer, ...d.payerAddress]);
  y += PAYER_BOX;
  if (d.finalBeneficiary) {
    box(doc, MARGIN, y, CONTENT_WIDTH, SACADOR_BOX, 'Sacador/Avalista', d.finalBeneficiary);
    y += SACADOR_BOX;
  }
  doc
    .font('Helvetica')
    .fontSize(6.5)
    .fillColor('#000')
    .text('Autenticação mecânica - Ficha de Compensação', MARGIN + 300, y + 2, {
      width: CONTENT_WIDTH - 300,
      align: 'right',
      lineBreak: false,
    });
  // The bar code starts at the page margin (10 mm of white to its left, more than the 5 mm quiet zone) and the text
  // beside it starts 5 mm after its end (102.87 mm + 5 mm < 300 pt).
  drawItf(doc, MARGIN, y + 12, c.barCode ?? '');
}

async function renderSlip(doc: PDFKit.PDFDocument, c: StoredCharge, options: SandboxOptions): Promise<void> {
  const d = slipData(c, options);
  let y = drawReceipt(doc, d, MARGIN);
  if (c.type === 'BANKSLIP_PIX' && c.qrCode) y = drawPixBlock(doc, d, y + 6, c.qrCode);
  drawFicha(doc, d);
}

async function renderPix(doc: PDFKit.PDFDocument, c: StoredCharge, options: SandboxOptions): Promise<void> {
  const b = options.beneficiary;
  const payer = c.extras.payer as Record<string, unknown> | undefined;
  let y = MARGIN;
  doc
    .font('Helvetica-Bold')
    .fontSize(16)
    .fillColor('#000')
    .text(`Cobrança Pix - ${options.participantName}`, MARGIN, y);
  y += 28;
  const expires = c.expiresAt ? new Date(c.expiresAt) : undefined;
  const lines = [
    `Tipo: ${c.type === 'PIX_STATIC' ? 'Pix estático' : 'Pix dinâmico (cobrança imediata)'}`,
    `Identificador: ${c.correlationId}`,
    `Situação: ${STATUS_PT[c.status]}`,
    `Valor: ${formatBrl(c.amountCents)}`,
    `Recebedor: ${b.name} - CNPJ ${formatDocument(b.document)}`,
    ...(payer ? [`Pagador: ${lineText(personLine(payer))}`] : []),
    ...(c.extras.description ? [`Descrição: ${c.extras.description}`] : []),
    ...(expires
      ? [
          `Válido até: ${brDateOf(c.expiresAt)} ${expires.toLocaleTimeString('pt-BR', { timeZone: 'America/Sao_Paulo', hour: '2-digit', minute: '2-digit' })} (horário de Brasília)`,
        ]
      : []),
    ...c.payments.map(paymentLine),
  ];
  doc.font('Helvetica').fontSize(10);
  for (const l of lines) {
    doc.text(l, MARGIN, y, { width: CONTENT_WIDTH });
    y = doc.y + 4;
  }
  y += 8;
  if (c.qrCode) {
    drawQr(doc, MARGIN, y, 200, c.qrCode);
    y += 210;
    doc.font('Helvetica-Bold').fontSize(9).text('Pix Copia e Cola:', MARGIN, y);
    drawCopyPaste(doc, MARGIN, y + 12, CONTENT_WIDTH, 8, c.qrCode);
  }
}

/** Renders the charge's PDF (see the file comment for what it carries). */
export async function renderChargePdf(charge: StoredCharge, options: SandboxOptions): Promise<Buffer> {
  const doc = new PDFDocument({
    size: 'A4',
    // A small bottom margin: the Ficha de Compensação sits at the foot of the page, and text drawn below the bottom
    // margin would make pdfkit start a new page.
    margins: { top: MARGIN, left: MARGIN, right: MARGIN, bottom: 12 },
    info: {
      Title: `${isBankSlip(charge.type) ? 'Boleto' : 'Cobrança Pix'} ${charge.correlationId}`,
      Author: options.participantName,
      Creator: 'remessa sandbox',
    },
  });
  const done = collect(doc);
  if (isBankSlip(charge.type)) await renderSlip(doc, charge, options);
  else await renderPix(doc, charge, options);
  doc.end();
  return done;
}
