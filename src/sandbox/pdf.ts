/**
 * PDF of a charge, for GET /v1/charges/{correlation_id}/stream.
 *
 * Bank slips (BANKSLIP, BANKSLIP_PIX): a one-page slip with the bank code, the formatted digitable line, beneficiary,
 * payer, due date, amount, our number, document number (yourNumber), wallet, and the ITF-25 (interleaved 2 of 5)
 * bar code of the 44 digits (bwip-js `interleaved2of5`, PNG); a BANKSLIP_PIX also carries the QR code of its BR Code.
 * Pix charges (PIX_STATIC, PIX_DYNAMIC): a one-page sheet with the QR code, the copy-and-paste payload, amount and
 * payer (a sandbox decision; docs/service-gaps.md).
 *
 * What must hold: the text of the digitable line and the bar code image are made from the stored 44 digits only,
 * so the paper and the API never disagree.
 */
import bwipjs from 'bwip-js';
import PDFDocument from 'pdfkit';
import QRCode from 'qrcode';
import { type ChargePayment, isBankSlip, type StoredCharge } from './charges-store.js';
import type { SandboxOptions } from './options.js';

/** `43590.00116 12000.000060 90000.520637 0 51038000000010`: the line as printed on slips. */
export function formatDigitableLine(line: string): string {
  if (!/^\d{47}$/.test(line)) return line;
  return (
    `${line.slice(0, 5)}.${line.slice(5, 10)} ${line.slice(10, 15)}.${line.slice(15, 21)} ` +
    `${line.slice(21, 26)}.${line.slice(26, 32)} ${line[32]} ${line.slice(33)}`
  );
}

/** `R$ 1.234,56` */
export function formatBrl(cents: number): string {
  const whole = Math.floor(cents / 100)
    .toString()
    .replace(/\B(?=(\d{3})+(?!\d))/g, '.');
  return `R$ ${whole},${String(cents % 100).padStart(2, '0')}`;
}

/** dd/mm/yyyy of a yyyy-mm-dd date. */
function brDate(date: string | null): string {
  if (!date) return '-';
  return `${date.slice(8, 10)}/${date.slice(5, 7)}/${date.slice(0, 4)}`;
}

function formatDocument(doc: unknown): string {
  if (typeof doc !== 'string') return '';
  const d = doc.replace(/[.\-/\s]/g, '');
  if (/^\d{11}$/.test(d)) return `${d.slice(0, 3)}.${d.slice(3, 6)}.${d.slice(6, 9)}-${d.slice(9)}`;
  if (/^[0-9A-Za-z]{14}$/.test(d)) {
    return `${d.slice(0, 2)}.${d.slice(2, 5)}.${d.slice(5, 8)}/${d.slice(8, 12)}-${d.slice(12)}`;
  }
  return doc;
}

function addressLine(address: unknown): string {
  if (typeof address !== 'object' || address === null) return '';
  const a = address as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined);
  const street = [str(a.publicPlace), str(a.number), str(a.complement)].filter(Boolean).join(', ');
  const place = [str(a.neighborhood), [str(a.city), str(a.state)].filter(Boolean).join('/')].filter(Boolean);
  const zip = str(a.zipCode);
  return [street, ...place, zip ? `CEP ${zip}` : undefined].filter(Boolean).join(' - ');
}

/** ITF-25 bar code of the 44 digits as a PNG (narrow bar 1 module; height ~13 mm at the printed width). */
export async function barCodePng(barCode: string): Promise<Buffer> {
  return bwipjs.toBuffer({ bcid: 'interleaved2of5', text: barCode, scale: 2, height: 13, includetext: false });
}

/** QR code of a BR Code as a PNG. */
export async function qrCodePng(payload: string): Promise<Buffer> {
  return QRCode.toBuffer(payload, { type: 'png', errorCorrectionLevel: 'M', margin: 1, width: 300 });
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

const MARGIN = 36;
const PAGE_WIDTH = 595.28; // A4
const CONTENT_WIDTH = PAGE_WIDTH - 2 * MARGIN;

/** One labelled box of the slip grid. */
function box(doc: PDFKit.PDFDocument, x: number, y: number, w: number, h: number, label: string, value: string): void {
  doc.rect(x, y, w, h).lineWidth(0.5).stroke('#000');
  doc
    .font('Helvetica')
    .fontSize(6)
    .fillColor('#333')
    .text(label, x + 3, y + 2, { width: w - 6, lineBreak: false });
  doc
    .font('Helvetica-Bold')
    .fontSize(9)
    .fillColor('#000')
    .text(value, x + 3, y + 11, { width: w - 6, height: h - 12, ellipsis: true });
}

function paymentsText(payments: ChargePayment[]): string {
  return payments.map((p) => `${formatBrl(p.amountCents)} em ${p.paidAt} (${p.method})`).join('; ');
}

async function renderSlip(doc: PDFKit.PDFDocument, c: StoredCharge, options: SandboxOptions): Promise<void> {
  const b = options.beneficiary;
  const payer = (c.extras.payer ?? {}) as Record<string, unknown>;
  const line = c.digitableLine ?? '';
  const bankLabel = `${options.bankCode}-${bankCodeDv(options.bankCode)}`;

  let y = MARGIN;
  doc
    .font('Helvetica-Bold')
    .fontSize(12)
    .text(options.participantName, MARGIN, y + 2, { width: 180, lineBreak: false });
  doc.fontSize(15).text(bankLabel, MARGIN + 183, y, { width: 50, lineBreak: false });
  // 47 digits + separators at 10 pt Helvetica-Bold take ~281 pt: the box must stay wider, or the line wraps.
  doc.fontSize(10).text(formatDigitableLine(line), MARGIN + 230, y + 3, {
    width: CONTENT_WIDTH - 230,
    align: 'right',
    lineBreak: false,
  });
  y += 22;
  doc
    .moveTo(MARGIN, y)
    .lineTo(MARGIN + CONTENT_WIDTH, y)
    .lineWidth(1.5)
    .stroke();
  y += 4;

  const row = 26;
  const right = 150;
  const left = CONTENT_WIDTH - right;
  box(doc, MARGIN, y, left, row, 'Local de pagamento', 'Pagável em qualquer banco até o vencimento');
  box(doc, MARGIN + left, y, right, row, 'Vencimento', brDate(c.dueDate));
  y += row;
  box(doc, MARGIN, y, left, row, 'Beneficiário', `${b.name} - CNPJ ${formatDocument(b.document)}`);
  box(doc, MARGIN + left, y, right, row, 'Agência / Código do beneficiário', `${b.branch} / ${b.accountNumber}`);
  y += row;
  const q = left / 4;
  box(doc, MARGIN, y, q, row, 'Data do documento', brDate(c.createdAt.slice(0, 10)));
  box(doc, MARGIN + q, y, q, row, 'Número do documento', c.yourNumber ?? '');
  box(doc, MARGIN + 2 * q, y, q, row, 'Carteira', c.wallet ?? '');
  box(doc, MARGIN + 3 * q, y, q, row, 'Situação', c.status);
  box(doc, MARGIN + left, y, right, row, 'Nosso número', c.ourNumber ?? '');
  y += row;
  box(doc, MARGIN, y, left, row, 'Endereço do beneficiário', `${b.address} - ${b.city}/${b.state} - CEP ${b.zipCode}`);
  box(doc, MARGIN + left, y, right, row, '(=) Valor do documento', formatBrl(c.amountCents));
  y += row;

  const instructions: string[] = [];
  const fine = c.extras.lateFine as { type?: string; amount?: number; date?: string } | undefined;
  if (fine?.amount !== undefined) {
    instructions.push(
      `Multa: ${fine.type === 'Percentage' ? `${fine.amount}%` : `R$ ${fine.amount}`}${fine.date ? ` a partir de ${brDate(fine.date)}` : ''}`,
    );
  }
  const interest = c.extras.latePayment as { type?: string; amount?: number; date?: string } | undefined;
  if (interest?.amount !== undefined) {
    instructions.push(
      `Juros: ${interest.type === 'Percentage' ? `${interest.amount}%` : `R$ ${interest.amount}`}${interest.date ? ` a partir de ${brDate(interest.date)}` : ''}`,
    );
  }
  const discount = c.extras.discount as { items?: Array<{ date?: string; amount?: number }> } | undefined;
  for (const item of discount?.items ?? []) {
    instructions.push(`Desconto de ${item.amount} até ${brDate(item.date ?? null)}`);
  }
  if (c.payments.length > 0) instructions.push(`Pagamentos: ${paymentsText(c.payments)}`);
  if (c.originalDueDate) instructions.push(`Vencimento original: ${brDate(c.originalDueDate)}`);
  const instrHeight = 70;
  box(
    doc,
    MARGIN,
    y,
    left,
    instrHeight,
    'Instruções',
    instructions.join('\n') || 'Não receber após 60 dias do vencimento.',
  );
  box(doc, MARGIN + left, y, right, instrHeight, '(=) Valor cobrado', '');
  y += instrHeight;

  const payerHeight = 48;
  doc.rect(MARGIN, y, CONTENT_WIDTH, payerHeight).lineWidth(0.5).stroke();
  doc
    .font('Helvetica')
    .fontSize(6)
    .fillColor('#333')
    .text('Pagador', MARGIN + 3, y + 2);
  doc
    .font('Helvetica-Bold')
    .fontSize(9)
    .fillColor('#000')
    .text(`${String(payer.name ?? '')} - CPF/CNPJ ${formatDocument(payer.document)}`, MARGIN + 3, y + 11, {
      width: CONTENT_WIDTH - 6,
    });
  doc
    .font('Helvetica')
    .fontSize(8)
    .text(addressLine(payer.address), MARGIN + 3, y + 24, { width: CONTENT_WIDTH - 6 });
  const fb = c.extras.finalBeneficiary as Record<string, unknown> | undefined;
  if (fb) {
    doc.text(`Sacador/Avalista: ${String(fb.name ?? '')} - ${formatDocument(fb.document)}`, MARGIN + 3, y + 35, {
      width: CONTENT_WIDTH - 6,
    });
  }
  y += payerHeight + 8;

  doc.font('Helvetica').fontSize(6).text('Autenticação mecânica - Ficha de compensação', MARGIN, y);
  y += 10;
  const bars = await barCodePng(c.barCode ?? '');
  // ITF bar code at the standard's printed size: about 103 mm wide, 13 mm high.
  doc.image(bars, MARGIN, y, { width: 292, height: 37 });
  y += 45;
  doc.font('Helvetica').fontSize(8).text(`Linha digitável: ${line}`, MARGIN, y);
  y += 12;
  doc.text(`Código de barras: ${c.barCode ?? ''}`, MARGIN, y);
  y += 20;

  if (c.type === 'BANKSLIP_PIX' && c.qrCode) {
    const qr = await qrCodePng(c.qrCode);
    doc.font('Helvetica-Bold').fontSize(10).text('Pague com Pix', MARGIN, y);
    doc.image(qr, MARGIN, y + 14, { width: 130, height: 130 });
    doc
      .font('Helvetica')
      .fontSize(7)
      .text(`Pix copia e cola: ${c.qrCode}`, MARGIN + 140, y + 14, { width: CONTENT_WIDTH - 140 });
  }
}

async function renderPix(doc: PDFKit.PDFDocument, c: StoredCharge, options: SandboxOptions): Promise<void> {
  const b = options.beneficiary;
  const payer = c.extras.payer as Record<string, unknown> | undefined;
  let y = MARGIN;
  doc.font('Helvetica-Bold').fontSize(16).text(`Cobrança Pix - ${options.participantName}`, MARGIN, y);
  y += 28;
  const lines = [
    `Tipo: ${c.type}`,
    `Identificador: ${c.correlationId}`,
    `Situação: ${c.status}`,
    `Valor: ${formatBrl(c.amountCents)}`,
    `Recebedor: ${b.name} - CNPJ ${formatDocument(b.document)}`,
    ...(payer ? [`Pagador: ${String(payer.name ?? '')} - CPF/CNPJ ${formatDocument(payer.document)}`] : []),
    ...(c.extras.description ? [`Descrição: ${c.extras.description}`] : []),
    ...(c.expiresAt ? [`Válido até: ${c.expiresAt}`] : []),
    ...(c.payments.length > 0 ? [`Pagamentos: ${paymentsText(c.payments)}`] : []),
  ];
  doc.font('Helvetica').fontSize(10);
  for (const l of lines) {
    doc.text(l, MARGIN, y, { width: CONTENT_WIDTH });
    y = doc.y + 4;
  }
  y += 8;
  if (c.qrCode) {
    doc.image(await qrCodePng(c.qrCode), MARGIN, y, { width: 200, height: 200 });
    y += 210;
    doc.font('Helvetica-Bold').fontSize(9).text('Pix copia e cola:', MARGIN, y);
    doc
      .font('Helvetica')
      .fontSize(8)
      .text(c.qrCode, MARGIN, y + 12, { width: CONTENT_WIDTH });
  }
}

/** The "DV" printed after the bank code on slips (mod 11 of the 3 digits, as banks print e.g. 001-9, 237-2). */
function bankCodeDv(code: string): string {
  let sum = 0;
  let weight = 2;
  for (let i = code.length - 1; i >= 0; i--) {
    sum += Number(code[i]) * weight;
    weight = weight === 9 ? 2 : weight + 1;
  }
  const dv = 11 - (sum % 11);
  return dv === 10 ? 'X' : dv === 11 ? '0' : String(dv);
}

/** Renders the charge's PDF (see the file comment for what it carries). */
export async function renderChargePdf(charge: StoredCharge, options: SandboxOptions): Promise<Buffer> {
  const doc = new PDFDocument({
    size: 'A4',
    margin: MARGIN,
    info: {
      Title: `${isBankSlip(charge.type) ? 'Boleto' : 'Cobrança Pix'} ${charge.correlationId}`,
      Author: options.participantName,
      Creator: 'remessa sandbox',
    },
  });
  const done = collect(doc);
  // The images are made asynchronously; end the document only after everything is drawn.
  if (isBankSlip(charge.type)) await renderSlip(doc, charge, options);
  else await renderPix(doc, charge, options);
  doc.end();
  return done;
}
