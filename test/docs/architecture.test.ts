/**
 * What docs/architecture.md says that a test can check (issue 23: "docs/architecture.md made
 * true, with a test for the claims a test can check"): every file it names exists, its list of
 * Redis scripts is the scripts in src/store/redis/lua (their count too), the fleet defaults it quotes
 * are core/defaults.ts's, and the scheduler's one place of grant and give-back is where it says.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { DEFAULTS } from "../../src/core/defaults.js";
import { filesUnder } from "../helpers/index.js";

const DOC = readFileSync("docs/architecture.md", "utf8");

describe("docs/architecture.md", () => {
  test("every file it names exists (a module named inside its folder's section by its path there)", () => {
    const tree = ["src", "test", "scripts", "docs", "bench"].flatMap((d) => filesUnder(d));
    const named = new Set(
      [...DOC.matchAll(/`([\w./-]+\.(?:ts|js|mjs|lua|md|json))`/g)]
        .map((m) => m[1]!)
        .filter((name) => !name.includes("*")),
    );
    assert.ok(named.size > 50, `found the names (${named.size})`);
    const missing = [...named].filter(
      (name) => !existsSync(name) && !tree.some((path) => path.endsWith(`/${name}`)),
    );
    assert.deepEqual(missing, [], "named in docs/architecture.md, absent from the tree");
  });

  test("its Redis scripts are the ones in src/store/redis/lua, and so is their count", () => {
    const row =
      /\| `scripts\.ts`, `lua\/\*\.lua` \| one `\.lua` file per operation, (\d+) in all \(([^)]*)\)/.exec(
        DOC,
      );
    assert.ok(row, "the scripts row states a count and lists the scripts");
    const listed = row[2]!.split(",").map((s) => s.trim());
    const onDisk = readdirSync("src/store/redis/lua")
      .filter((f) => f.endsWith(".lua") && !f.startsWith("_"))
      .map((f) => f.slice(0, -".lua".length));
    assert.deepEqual([...listed].sort(), [...onDisk].sort());
    assert.equal(Number(row[1]), onDisk.length);
  });

  test("the fleet defaults it quotes are core/defaults.ts's", () => {
    const said =
      /lease TTL \((\d+) s\), outage policy \(`(\w+)`\), expected\s+replicas \((\d+)\) and key prefix \(`(\w+)`\)/.exec(
        DOC,
      );
    assert.ok(said, "the defaults paragraph quotes the fleet's defaults");
    assert.deepEqual(
      [Number(said[1]) * 1000, said[2], Number(said[3]), said[4]],
      [
        DEFAULTS.fleet.leaseTtlMs,
        DEFAULTS.fleet.onStoreError,
        DEFAULTS.fleet.expectedReplicas,
        DEFAULTS.fleet.prefix,
      ],
    );
  });

  test("the fleet store writes none of those defaults itself: it resolves them in core/fleet-options.ts", () => {
    const store = readFileSync("src/store/redis/redis-store.ts", "utf8");
    assert.match(store, /resolveFleetOptions\(options\)/);
    assert.doesNotMatch(store, /15_000|\?\? "local"|\?\? 2\b|\?\? "sluice"|ttlMs \/ 3/);
  });

  test("the store contract is the core's: no optional members, nothing in src/core imports a store, nor src/governor the Redis store", () => {
    assert.match(DOC, /nothing in `src\/core` imports from `src\/store`/);
    const contract = readFileSync("src/core/store.ts", "utf8");
    assert.match(contract, /export interface FleetStore extends Store/);
    assert.doesNotMatch(contract, /^\s+(readonly )?\w+\?[(:]/m, "an optional member of Store or FleetStore");
    const core = filesUnder("src/core").filter((f) => f.endsWith(".ts"));
    const importing = core.filter((f) => /from "\.\.\/store\//.test(readFileSync(f, "utf8")));
    assert.deepEqual(importing, []);
    // The Governor talks to a fleet store only through the contract: what it advertises
    // (waitingByLane) is computed in core/waiting-by-lane.ts, not imported from the Redis store.
    const governor = filesUnder("src/governor").filter((f) => f.endsWith(".ts"));
    const redis = governor.filter((f) => /from "\.\.\/store\/redis\//.test(readFileSync(f, "utf8")));
    assert.deepEqual(redis, [], "a governor file importing the Redis store");
    const callers = ["src/governor/waiters.ts", "src/core/grants.ts", "src/governor/governor.ts"];
    for (const f of callers)
      assert.doesNotMatch(
        readFileSync(f, "utf8"),
        /\.(confirm|rollback) [!=]== undefined|prototype\.commit/,
        f,
      );
  });

  test("a path is taken and given back in grants.ts, the scheduler's bookkeeping half, as it says", () => {
    assert.match(DOC, /\| `grants\.ts` \| `Grants`[^|]*`grant` and `giveBack`/);
    const grants = readFileSync("src/core/grants.ts", "utf8");
    assert.match(grants, /\n {2}protected grant\(/);
    assert.match(grants, /\n {2}protected giveBack\(/);
    assert.match(readFileSync("src/core/scheduler.ts", "utf8"), /class Scheduler extends Grants\b/);
  });
  test("the gateway answers each question in the one place it names (lane.ts, reply.ts, wait.ts's acquire)", () => {
    assert.match(DOC, /`lane\.ts` \(the one place the lane is decided/);
    assert.match(DOC, /`reply\.ts` \(the one place an error becomes an answer/);
    const sources = filesUnder("src/gateway").filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"));
    /** The gateway's source files that match `pattern`, by their path under src/gateway. */
    const using = (pattern: RegExp) =>
      sources.filter((f) => pattern.test(readFileSync(f, "utf8"))).map((f) => f.slice("src/gateway/".length));
    // The model resolved and the Governor asked about the lane only in lane.ts.
    assert.deepEqual(using(/ctx\.model = |governor\.(check|checkKey|admissionRefusal)\(/), ["lane.ts"]);
    // Refusals sent, and held while a client storms, only in reply.ts.
    assert.deepEqual(using(/\bsendRefusal\(|\bsendHttpError\(|\bholdUntil\(|\bheld\(ctx/).sort(), [
      "http-error.ts",
      "pacing.ts",
      "refusal.ts",
      "reply.ts",
    ]);
    // One queued acquire on the request path: the wait phase's, which the fallback reuses.
    assert.deepEqual(using(/\.acquire\(/).sort(), ["phases/wait.ts"]);
    assert.match(readFileSync("src/gateway/fallback.ts", "utf8"), /queuedLease\(ctx, gw, name\)/);
  });
});
