/**
 * `GET /` and `/dashboard/*` on a real gateway, without a browser: the page and every file it
 * loads are served by the gateway (so a newcomer's `npm start` has them, built or from source),
 * under a CSP that allows nothing else, cached by ETag, gzipped when asked, and behind the admin
 * rule like the other admin routes.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { gunzipSync } from "node:zlib";
import { request } from "undici";
import { PAGE_DIR } from "../../src/gateway/routes/dashboard.js";
import { call, model, type Stack, SUITE, sha256hex, startStack } from "../gateway/helpers.js";

describe("the dashboard's routes", SUITE, () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      sims: [{ maxNumSeqs: 1, serviceMs: 1 }],
      config: ([pod]) => ({ models: [model("m", [pod!])] }),
    });
  });
  after(() => stack.close());

  test("GET / is the page, under a CSP that allows this origin alone", async () => {
    const a = await call(stack.url, "/");
    assert.equal(a.status, 200);
    assert.equal(a.headers["content-type"], "text/html; charset=utf-8");
    const csp = String(a.headers["content-security-policy"]);
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self';/);
    assert.match(csp, /connect-src 'self';/);
    assert.equal(a.headers["x-content-type-options"], "nosniff");
    assert.match(a.text, /<script type="module" src="\/dashboard\/app\.js"><\/script>/);
  });

  test("every file the page and its modules load is served, with its type", async () => {
    const page = (await call(stack.url, "/")).text;
    const wanted = new Set([...page.matchAll(/(?:src|href)="(\/[^"]+)"/g)].map((m) => m[1]!));
    // The modules' own imports, from the served text (what the browser would follow).
    for (const path of [...wanted].filter((p) => p.endsWith(".js"))) {
      const js = (await call(stack.url, path)).text;
      for (const m of js.matchAll(/from "\.\/([\w-]+\.js)"/g)) wanted.add(`/dashboard/${m[1]}`);
    }
    const modules = [...wanted].filter((p) => p.endsWith(".js"));
    assert.ok(modules.length >= 8, `found the modules: ${modules.join(", ")}`);
    for (const path of wanted) {
      const a = await call(stack.url, path);
      assert.equal(a.status, 200, path);
      const type = path.endsWith(".js") ? "text/javascript" : path.endsWith(".css") ? "text/css" : "";
      assert.ok(String(a.headers["content-type"]).startsWith(type), `${path}: ${a.headers["content-type"]}`);
    }
    // Each module that is imported is one of the page's files, and every page file is served.
    for (const name of readdirSync(PAGE_DIR).filter((f) => /\.(js|css)$/.test(f))) {
      assert.equal((await call(stack.url, `/dashboard/${name}`)).status, 200, name);
    }
  });

  test("uPlot comes from its package, minified", async () => {
    const a = await call(stack.url, "/dashboard/uplot.js");
    assert.equal(a.status, 200);
    assert.match(a.text, /^\/\*! https:\/\/github\.com\/leeoniya\/uPlot \(v1\.6\.\d+\) \*\/\nvar uPlot=/);
    assert.ok(a.text.length < 60_000, `${a.text.length} bytes`);
  });

  test("an unknown file is 404; HEAD has no body; a POST is 405", async () => {
    const missing = await call(stack.url, "/dashboard/nope.js");
    assert.equal(missing.status, 404);
    assert.equal(JSON.parse(missing.text).error.code, "not_found");
    assert.equal((await call(stack.url, "/dashboard/../package.json")).status, 404);
    const head = await request(`${stack.url}/`, { method: "HEAD" });
    assert.equal(head.statusCode, 200);
    assert.equal(await head.body.text(), "");
    assert.equal((await call(stack.url, "/", { method: "POST", body: "{}" })).status, 405);
  });

  test("revalidates by ETag (304) and gzips for a client that takes it", async () => {
    const first = await call(stack.url, "/dashboard/app.js");
    const etag = String(first.headers.etag);
    assert.equal(first.headers["cache-control"], "no-cache");
    const again = await call(stack.url, "/dashboard/app.js", { headers: { "if-none-match": etag } });
    assert.equal(again.status, 304);
    const res = await request(`${stack.url}/dashboard/app.js`, { headers: { "accept-encoding": "gzip" } });
    assert.equal(res.headers["content-encoding"], "gzip");
    const zipped = Buffer.from(await res.body.arrayBuffer());
    assert.ok(zipped.length < first.text.length);
    assert.equal(gunzipSync(zipped).toString("utf8"), first.text);
  });
});

test("the build copies the page next to the compiled gateway (npm run build)", () => {
  const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { scripts: Record<string, string> };
  assert.match(pkg.scripts.build!, /cpSync\('src\/dashboard\/page', 'dist\/dashboard\/page'/);
  assert.match(pkg.scripts.prepare!, /npm run build/);
  const built = "dist/dashboard/page";
  assert.ok(existsSync(join(built, "index.html")), "dist has the page (npm install / npm run build)");
  assert.deepEqual(readdirSync(built).sort(), readdirSync(PAGE_DIR).sort());
});

/** A non-loopback IPv4 address of this machine, to reach the gateway from off loopback. */
function externalAddress(): string | undefined {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  }
  return undefined;
}

const external = externalAddress();
const ADMIN = "admin-secret";

describe("the dashboard off loopback", {
  ...SUITE,
  skip: external === undefined ? "no non-loopback IPv4 interface on this machine" : false,
}, () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      sims: [{ maxNumSeqs: 1, serviceMs: 1 }],
      config: ([pod]) => ({
        admin: { keys: [{ id: "ops", sha256: sha256hex(ADMIN) }] },
        models: [model("m", [pod!])],
      }),
      host: external,
    });
  });
  after(() => stack?.close());

  test("needs an admin key, like every admin route", async () => {
    for (const path of ["/", "/dashboard/app.js", "/dashboard/uplot.js"]) {
      const refused = await call(stack.url, path);
      assert.equal(refused.status, 401, path);
      assert.equal(JSON.parse(refused.text).error.code, "unauthorized");
      const allowed = await call(stack.url, path, { headers: { authorization: `Bearer ${ADMIN}` } });
      assert.equal(allowed.status, 200, path);
    }
  });
});
