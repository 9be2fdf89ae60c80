/**
 * Looking at a PDF as a person would: a page rendered to an image by poppler's `pdftoppm`, the text as poppler's
 * `pdftotext` reads it, ITF bar codes decoded from the rendered image by zbar's `zbarimg`, QR codes by jsqr. Nothing
 * here reads the PDF's drawing commands: what is checked is what a printer or a screen shows.
 *
 * Needs the Debian packages poppler-utils and zbar-tools (`.ci/run` installs them when missing).
 */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import jsQRModule from 'jsqr';
import { PNG } from 'pngjs';

const run = promisify(execFile);

// jsqr is CommonJS typed as `export default`: under NodeNext the default import is the module itself at run time.
const jsQR = ((jsQRModule as unknown as { default?: typeof jsQRModule }).default ?? jsQRModule) as unknown as (
  data: Uint8ClampedArray,
  width: number,
  height: number,
) => { data: string } | null;

const PACKAGES: Record<string, string> = {
  pdftoppm: 'poppler-utils',
  pdftotext: 'poppler-utils',
  zbarimg: 'zbar-tools',
};

async function tool(command: string, args: string[]): Promise<{ stdout: string; code: number }> {
  try {
    const { stdout } = await run(command, args, { maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' });
    return { stdout, code: 0 };
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { code?: unknown; stdout?: string };
    if (e.code === 'ENOENT') {
      throw new Error(
        `${command} is not installed: apt-get install --no-install-recommends ${PACKAGES[command]} (.ci/run does it)`,
      );
    }
    if (typeof e.code === 'number') return { stdout: e.stdout ?? '', code: e.code };
    throw err;
  }
}

/** A rendered page: 8-bit gray, 0 black .. 255 white, row by row. */
export interface RenderedPage {
  width: number;
  height: number;
  dpi: number;
  gray: Uint8Array;
  /** The image as a PGM file (for zbarimg). */
  file: string;
}

/** Reads a binary PGM (P5, maxval 255), as `pdftoppm -gray` writes it. */
function parsePgm(bytes: Buffer): { width: number; height: number; gray: Uint8Array } {
  const header = /^P5\s+(\d+)\s+(\d+)\s+255\s/.exec(bytes.subarray(0, 64).toString('latin1'));
  if (!header) throw new Error('Expected a binary PGM with maxval 255');
  const width = Number(header[1]);
  const height = Number(header[2]);
  const start = header[0].length;
  return { width, height, gray: new Uint8Array(bytes.buffer, bytes.byteOffset + start, width * height) };
}

/** Renders page `page` (1-based) of the PDF file at `dpi`, in gray, next to the PDF. */
export async function renderPage(pdfFile: string, dpi = 200, page = 1): Promise<RenderedPage> {
  const base = `${pdfFile}.p${page}.${dpi}`;
  await tool('pdftoppm', [
    '-r',
    String(dpi),
    '-gray',
    '-f',
    String(page),
    '-l',
    String(page),
    '-singlefile',
    pdfFile,
    base,
  ]);
  const file = `${base}.pgm`;
  return { ...parsePgm(await readFile(file)), dpi, file };
}

/** Number of pages of the PDF, as poppler counts them. */
export async function pageCount(pdfFile: string): Promise<number> {
  const { stdout } = await tool('pdftotext', ['-raw', '-enc', 'UTF-8', pdfFile, '-']);
  // pdftotext ends every page with a form feed.
  return stdout.split('\f').length - 1;
}

/** The text of the PDF as `pdftotext -raw` reads it (content order, one line per text line). */
export async function pdfText(pdfFile: string): Promise<string> {
  return (await tool('pdftotext', ['-raw', '-enc', 'UTF-8', pdfFile, '-'])).stdout;
}

/** The interleaved 2 of 5 symbols zbarimg finds in the rendered page (none: []). */
export async function decodeItf(page: RenderedPage): Promise<string[]> {
  const { stdout, code } = await tool('zbarimg', ['-q', '--raw', '-Sdisable', '-Si25.enable', page.file]);
  // zbarimg exits 4 when the image holds no symbol of the enabled kinds.
  if (code !== 0 && code !== 4) throw new Error(`zbarimg failed with exit code ${code}`);
  return stdout.split('\n').filter((l) => l !== '');
}

/** The QR code jsqr finds in a region of the rendered page (whole page by default), or undefined. */
export function decodeQr(
  page: RenderedPage,
  region: { x: number; y: number; width: number; height: number } = {
    x: 0,
    y: 0,
    width: page.width,
    height: page.height,
  },
): string | undefined {
  const rgba = new Uint8ClampedArray(region.width * region.height * 4);
  for (let y = 0; y < region.height; y++) {
    for (let x = 0; x < region.width; x++) {
      const v = page.gray[(region.y + y) * page.width + region.x + x]!;
      const i = (y * region.width + x) * 4;
      rgba[i] = v;
      rgba[i + 1] = v;
      rgba[i + 2] = v;
      rgba[i + 3] = 255;
    }
  }
  return jsQR(rgba, region.width, region.height)?.data;
}

/** The QR code jsqr finds in a PNG file's bytes, or undefined. */
export function decodeQrPng(bytes: Buffer): string | undefined {
  const png = PNG.sync.read(bytes);
  return jsQR(new Uint8ClampedArray(png.data), png.width, png.height)?.data;
}

/** Where the bar code is on the rendered page and how its elements measure, in millimetres. */
export interface BarCodeMeasure {
  widthMm: number;
  heightMm: number;
  /** Mean wide element over mean narrow element (bars and spaces). */
  wideToNarrow: number;
  /** Distance from its foot to the bottom edge of the page. */
  bottomMm: number;
  /** Distance from its left end to the left edge of the page. */
  leftMm: number;
}

function darkRow(page: RenderedPage, y: number): boolean[] {
  const row: boolean[] = [];
  for (let x = 0; x < page.width; x++) row.push(page.gray[y * page.width + x]! < 128);
  return row;
}

function transitions(row: boolean[]): number {
  let n = 0;
  for (let x = 1; x < row.length; x++) if (row[x] !== row[x - 1]) n++;
  return n;
}

/**
 * Measures the lowest bar code of the page: the bottom-most row with 200 or more dark/light transitions (an ITF of
 * 44 digits has 226), then the rows above it that show the same bars (vertical bars: identical rows).
 */
export function measureBarCode(page: RenderedPage): BarCodeMeasure {
  let bottom = -1;
  for (let y = page.height - 1; y >= 0 && bottom < 0; y--) if (transitions(darkRow(page, y)) >= 200) bottom = y;
  if (bottom < 0) throw new Error('No bar code found on the rendered page');
  const reference = darkRow(page, bottom);
  const same = (row: boolean[]) => row.filter((v, x) => v !== reference[x]).length <= 4;
  let top = bottom;
  while (top > 0 && same(darkRow(page, top - 1))) top--;
  const middle = darkRow(page, Math.floor((top + bottom) / 2));
  const first = middle.indexOf(true);
  const last = middle.lastIndexOf(true);
  const runs: number[] = [];
  let x = first;
  while (x <= last) {
    let n = 0;
    const color = middle[x];
    while (x <= last && middle[x] === color) {
      n++;
      x++;
    }
    runs.push(n);
  }
  const cut = (Math.min(...runs) + Math.max(...runs)) / 2;
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
  const mm = (px: number) => (px * 25.4) / page.dpi;
  return {
    widthMm: mm(last - first + 1),
    heightMm: mm(bottom - top + 1),
    wideToNarrow: mean(runs.filter((r) => r > cut)) / mean(runs.filter((r) => r <= cut)),
    bottomMm: mm(page.height - 1 - bottom),
    leftMm: mm(first),
  };
}

/** Writes `bytes` to `dir/name` and returns the path (PDFs fetched over HTTP are looked at from a file). */
export async function saveTo(dir: string, name: string, bytes: Buffer): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, bytes);
  return file;
}
