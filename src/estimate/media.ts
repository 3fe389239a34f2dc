/**
 * What an image or an audio clip in a request costs in prompt tokens, for the estimate
 * (estimate.ts). Providers bill them by formulas over the decoded media, which the gateway does
 * not decode; these are the formulas where the size is cheap to read, and documented bounds
 * where it is not (docs/config.md, "What a request is estimated at").
 */

/**
 * The most one image costs on OpenAI's tile formula (gpt-4o, gpt-4.1): 8 tiles of 512 px
 * (768 × 2048 after scaling) × 170 + 85. The default of a model's `image_tokens`.
 */
export const IMAGE_TOKENS_DEFAULT = 1445;
/** OpenAI's cost of a `detail: "low"` image (one 512 px tile) on the same models. */
const LOW_DETAIL = 85;
const TILE = 170;

/**
 * OpenAI's tile formula for a `width` × `height` image: `low` is one fixed tile; otherwise the
 * image is scaled to fit 2048 × 2048, then its shorter side to 768 (never up), and each 512 px
 * tile costs 170, plus 85.
 */
export function tileTokens(width: number, height: number, detail: string | undefined): number {
  if (detail === "low") return LOW_DETAIL;
  let w = width;
  let h = height;
  const fit = Math.min(1, 2048 / Math.max(w, h));
  w *= fit;
  h *= fit;
  const shorter = Math.min(1, 768 / Math.min(w, h));
  w *= shorter;
  h *= shorter;
  return LOW_DETAIL + TILE * Math.ceil(w / 512) * Math.ceil(h / 512);
}

/**
 * Tokens of one image part. `imageTokens` is the model's `image_tokens`: what its largest image
 * costs. The tile formula is scaled by it (a model billing more per image — gpt-4o-mini's 2833 +
 * 5667 a tile is exactly 33⅓ × gpt-4o's — sets `image_tokens` to 48169), so an image of unknown
 * size costs `imageTokens`, a low-detail one 85 ÷ 1445 of it, and a PNG or GIF sent inline (its
 * size read from the first bytes of its data URL) its tiles.
 */
export function imageTokens(url: unknown, detail: unknown, imageTokens: number): number {
  const d = typeof detail === "string" ? detail : undefined;
  const size = typeof url === "string" ? inlineImageSize(url) : undefined;
  const formula =
    size !== undefined ? tileTokens(size[0], size[1], d) : d === "low" ? LOW_DETAIL : IMAGE_TOKENS_DEFAULT;
  return Math.ceil((formula * imageTokens) / IMAGE_TOKENS_DEFAULT);
}

/** Width and height of a base64 PNG or GIF data URL, from its first bytes; undefined otherwise. */
export function inlineImageSize(url: string): [number, number] | undefined {
  if (!url.startsWith("data:image/")) return undefined;
  const comma = url.indexOf(",");
  if (comma < 0 || comma > 100 || !url.slice(0, comma).endsWith(";base64")) return undefined;
  // 32 base64 characters are the first 24 bytes: a PNG's IHDR size, a GIF's screen size.
  const head = Buffer.from(url.slice(comma + 1, comma + 33), "base64");
  if (head.length >= 24 && head.readUInt32BE(0) === 0x89504e47 && head.toString("latin1", 12, 16) === "IHDR")
    return positive(head.readUInt32BE(16), head.readUInt32BE(20));
  if (head.length >= 10 && head.toString("latin1", 0, 4) === "GIF8")
    return positive(head.readUInt16LE(6), head.readUInt16LE(8));
  return undefined;
}

const positive = (w: number, h: number): [number, number] | undefined =>
  w > 0 && h > 0 ? [w, h] : undefined;

/**
 * Tokens of one `input_audio` part, from its base64 size: audio bills about 10 tokens a second
 * (OpenAI's gpt-4o audio, 600 a minute). Uncompressed `wav`/`pcm16` is counted as 8 kHz 16-bit
 * mono (1600 bytes a token), any other format as 32 kbit/s (400 bytes a token): a higher rate is
 * over-counted (the reconcile gives the difference back), a lower one under-counted.
 */
export function audioTokens(data: unknown, format: unknown): number {
  if (typeof data !== "string") return 0;
  const bytes = Math.floor((data.length * 3) / 4);
  const perToken = format === "wav" || format === "pcm16" ? 1600 : 400;
  return Math.ceil(bytes / perToken);
}

/** Tokens of an inline file (`file_data`, a PDF say): its decoded bytes ÷ 4, as text would count. */
export function fileTokens(data: string): number {
  return Math.ceil((data.length * 3) / 16);
}
