/**
 * `GET /` (the dashboard page) and `GET /dashboard/<file>` (what it loads): served by the gateway
 * itself, behind the admin rule like every admin route, and nothing from anywhere else — the
 * page's Content-Security-Policy allows only this origin.
 *
 * The page is plain ES modules written to run as they are (`src/dashboard/page/`, copied next to
 * the compiled gateway by `npm run build`), and uPlot is served from its package. Files are read
 * once, at the first request, and kept with their gzip form and an ETag.
 */
import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createRequire } from "node:module";
import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { HttpError } from "../http-error.js";

/** Where the page's files are: `src/dashboard/page` in the source tree, `dist/dashboard/page` when built. */
export const PAGE_DIR = fileURLToPath(new URL("../../dashboard/page/", import.meta.url));

/** The URL prefix of the page's files. */
export const ASSET_PREFIX = "/dashboard/";

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
};

/**
 * Only this origin, no inline script or style markup (the page sets styles through the CSSOM),
 * no framing, and no form or base-URL tricks.
 */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

interface Asset {
  type: string;
  body: Buffer;
  gzip: Buffer;
  etag: string;
}

/** `url path → asset`, loaded once. */
let loading: Promise<Map<string, Asset>> | undefined;

function asset(type: string, body: Buffer): Asset {
  const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`;
  return { type, body, gzip: gzipSync(body), etag };
}

async function load(): Promise<Map<string, Asset>> {
  const assets = new Map<string, Asset>();
  for (const name of await readdir(PAGE_DIR)) {
    const type = TYPES[extname(name)];
    if (type === undefined) continue;
    const body = await readFile(join(PAGE_DIR, name));
    assets.set(name === "index.html" ? "/" : ASSET_PREFIX + name, asset(type, body));
  }
  // uPlot from its package (a dependency), minified: the IIFE build defines the global `uPlot`.
  const require = createRequire(import.meta.url);
  const uplot = (file: string) => readFile(require.resolve(`uplot/dist/${file}`));
  assets.set(`${ASSET_PREFIX}uplot.js`, asset(TYPES[".js"]!, await uplot("uPlot.iife.min.js")));
  assets.set(`${ASSET_PREFIX}uplot.css`, asset(TYPES[".css"]!, await uplot("uPlot.min.css")));
  if (!assets.has("/")) throw new Error(`the dashboard page is missing: no index.html in ${PAGE_DIR}`);
  return assets;
}

/** Whether `path` is the dashboard's: `/` or anything under `/dashboard/`. */
export function isDashboardPath(path: string | undefined): path is string {
  return path === "/" || (path?.startsWith(ASSET_PREFIX) ?? false);
}

/**
 * Answers a dashboard path (the caller has applied the admin rule): 200 with the file (gzip when
 * the client takes it), 304 when its ETag still matches, 404 for a name that is not one of the
 * page's files.
 */
export async function serveDashboard(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
  loading ??= load();
  let assets: Map<string, Asset>;
  try {
    assets = await loading;
  } catch (error) {
    loading = undefined; // a later request tries again
    throw error;
  }
  const file = assets.get(path);
  if (file === undefined) throw new HttpError(404, "not_found", `no dashboard file ${path}`);
  const headers: Record<string, string | number> = {
    "content-type": file.type,
    // Revalidated each time (ETag), so a new version of the page is never stale after an upgrade.
    "cache-control": "no-cache",
    etag: file.etag,
    vary: "accept-encoding",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "content-security-policy": CONTENT_SECURITY_POLICY,
  };
  if (req.headers["if-none-match"] === file.etag) {
    res.writeHead(304, headers);
    res.end();
    return;
  }
  const gzip = /\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""));
  const body = gzip ? file.gzip : file.body;
  if (gzip) headers["content-encoding"] = "gzip";
  headers["content-length"] = body.length;
  res.writeHead(200, headers);
  res.end(req.method === "HEAD" ? undefined : body);
}
