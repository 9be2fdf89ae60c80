/**
 * The keys seen so far in one file, held compactly for `validate` (./validate.ts), which streams files of a million
 * rows within its memory target (docs/performance.md (a)): per key a 64-bit digest and the line of the first row that
 * brought it, in typed arrays (open addressing, 12 bytes a slot), never the key's text. A digest can collide: a hit
 * only says "maybe the same key as line L"; the caller reads line L again and compares the real keys (./validate.ts
 * does, in a second pass over the few lines concerned), so a collision never makes a false error.
 */

/** Two independent 32-bit hashes (FNV-1a and a multiplicative one) of the UTF-16 units of `s`. */
function digest(s: string): [number, number] {
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 15;
  }
  return [a >>> 0, (b ^ s.length) >>> 0];
}

export class FileKeys {
  private hi = new Uint32Array(1024);
  private lo = new Uint32Array(1024);
  /** Line of the first row with the key; 0 = empty slot. */
  private lines = new Uint32Array(1024);
  private size = 0;

  /** Records `key` for `line` unless a key with its digest is there: then answers that earlier line. */
  claim(key: string, line: number): number | undefined {
    if ((this.size + 1) * 4 > this.lines.length * 3) this.grow();
    const [h, l] = digest(key);
    const slot = this.find(h, l);
    const owner = this.lines[slot]!;
    if (owner !== 0) return owner;
    this.hi[slot] = h;
    this.lo[slot] = l;
    this.lines[slot] = line;
    this.size++;
    return undefined;
  }

  /** The line recorded for `key` (maybe another key with its digest), or undefined. */
  get(key: string): number | undefined {
    const [h, l] = digest(key);
    return this.lines[this.find(h, l)] || undefined;
  }

  /** Records `line` for `key`, over any line recorded before (the last row that claimed it). */
  set(key: string, line: number): void {
    if ((this.size + 1) * 4 > this.lines.length * 3) this.grow();
    const [h, l] = digest(key);
    const slot = this.find(h, l);
    if (this.lines[slot] === 0) this.size++;
    this.hi[slot] = h;
    this.lo[slot] = l;
    this.lines[slot] = line;
  }

  private find(h: number, l: number): number {
    const mask = this.lines.length - 1;
    let i = (h ^ Math.imul(l, 0x9e3779b1)) & mask;
    while (this.lines[i] !== 0 && (this.hi[i] !== h || this.lo[i] !== l)) i = (i + 1) & mask;
    return i;
  }

  private grow(): void {
    const { hi, lo, lines } = this;
    this.hi = new Uint32Array(lines.length * 2);
    this.lo = new Uint32Array(lines.length * 2);
    this.lines = new Uint32Array(lines.length * 2);
    for (let i = 0; i < lines.length; i++) {
      if (lines[i] === 0) continue;
      const slot = this.find(hi[i]!, lo[i]!);
      this.hi[slot] = hi[i]!;
      this.lo[slot] = lo[i]!;
      this.lines[slot] = lines[i]!;
    }
  }
}
