/**
 * PNG images saved next to a batch's results: the QR code of a `qr-codes` row (the image the bank sent) and of a Pix
 * charge or BANKSLIP_PIX of the `charges` kind (drawn here from the charge's BR Code: the bank serves no image of a
 * charge's QR code; docs/service-gaps.md).
 *
 * What must hold: the file is named after the row's correlationId (`safeFileName`), and is written by
 * `writeFileAtomic` (temporary name in the same folder, flushed, renamed), so a reader never sees half an image;
 * writing it again (a resent or recovered step) gives the same name and the same picture.
 */
import { writeFileAtomic } from '../atomic-file.js';
import { type StepContext, StepOutcomeError } from './kind.js';
import { safeFileName } from './safe-name.js';

export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Side of the QR images drawn from a BR Code, in pixels (quiet zone included). */
export const QR_IMAGE_WIDTH_PX = 400;

/**
 * Writes `bytes` (a PNG) as `<correlationId made safe>.png` in the row's output folder; returns the file name.
 * Bytes that are not a PNG fail the row with QR_IMAGE_INVALID (nothing is written).
 */
export async function writePng(
  ctx: Pick<StepContext<unknown>, 'outputPath'>,
  correlationId: string,
  bytes: Buffer,
): Promise<string> {
  if (!bytes.subarray(0, 8).equals(PNG_SIGNATURE)) {
    throw new StepOutcomeError('failed', 'QR_IMAGE_INVALID', 'Expected a PNG image from the bank, got other data');
  }
  const fileName = safeFileName(correlationId, 'png');
  await writeFileAtomic(ctx.outputPath(fileName), bytes);
  return fileName;
}

/**
 * The QR code of a BR Code (the Pix copy-and-paste text) as a PNG: error correction M, 4-module quiet zone. `qrcode`
 * is loaded on first use, so commands that draw no image (validate) do not load it (docs/performance.md).
 */
export async function brCodePng(payload: string): Promise<Buffer> {
  const { default: QRCode } = await import('qrcode');
  return QRCode.toBuffer(payload, {
    type: 'png',
    errorCorrectionLevel: 'M',
    margin: 4,
    width: QR_IMAGE_WIDTH_PX,
  });
}
