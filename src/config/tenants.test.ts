/**
 * Keys' budgets and tenants in the config (issue 24): `auth.keys[].tpm` / `rpm` / `weight` /
 * `tenant` and `tenants.<name>.{tpm, rpm, weight}` are accepted and reach the Governor's options;
 * every bad value is refused naming its key path, and a tenant's `max_inflight` is refused as not
 * built (never accepted and ignored).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { resolveGovernorOptions } from "../core/options.js";
import { governorOptions } from "./governor-options.js";
import { parseConfig } from "./schema.js";
import { config, DIGEST, invalid } from "./test-helpers.js";

const OTHER = "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"; // sha256("foo")

const keys = (...list: Record<string, unknown>[]) => ({
  auth: { keys: list.map((k, i) => ({ id: `k${i}`, sha256: i === 0 ? DIGEST : OTHER, ...k })) },
});

describe("config: keys' budgets and tenants", () => {
  test("accepted values reach the Governor's keys and tenants", () => {
    const c = parseConfig(
      config({
        ...keys({ tpm: 20_000, rpm: 60, weight: 2 }, { tenant: "team" }),
        tenants: { team: { tpm: 50_000, rpm: 100, weight: 3 } },
      }),
    );
    assert.deepEqual(
      { ...c.auth.keys[0], sha256: undefined },
      {
        id: "k0",
        sha256: undefined,
        maxPriority: "default",
        tpm: 20_000,
        rpm: 60,
        weight: 2,
      },
    );
    assert.equal(c.auth.keys[1]!.tenant, "team");
    assert.deepEqual(c.tenants, { team: { tpm: 50_000, rpm: 100, weight: 3 } });
    const o = governorOptions(c);
    assert.deepEqual(o.keys.k0, {
      maxInflight: Number.MAX_SAFE_INTEGER,
      maxPriority: "default",
      tpm: 20_000,
      rpm: 60,
      weight: 2,
    });
    assert.equal(o.keys.k1!.tenant, "team");
    assert.deepEqual(o.tenants, { team: { tpm: 50_000, rpm: 100, weight: 3 } });
    // The library validator accepts what the gateway config made.
    assert.doesNotThrow(() => resolveGovernorOptions({ keys: { ...o.keys }, tenants: { ...o.tenants } }));
  });

  const refusals: { name: string; input: unknown; path: string; expected: RegExp }[] = [
    {
      name: "a zero tpm",
      input: config(keys({ tpm: 0 })),
      path: "auth.keys[0].tpm",
      expected: /integer ≥ 1/,
    },
    {
      name: "a negative rpm",
      input: config(keys({ rpm: -5 })),
      path: "auth.keys[0].rpm",
      expected: /integer ≥ 1/,
    },
    {
      name: "a fractional tpm",
      input: config(keys({ tpm: 2.5 })),
      path: "auth.keys[0].tpm",
      expected: /integer ≥ 1/,
    },
    {
      name: "a zero weight",
      input: config(keys({ weight: 0 })),
      path: "auth.keys[0].weight",
      expected: /number > 0/,
    },
    {
      name: "a negative weight",
      input: config(keys({ weight: -1 })),
      path: "auth.keys[0].weight",
      expected: /number > 0/,
    },
    {
      name: "an unknown tenant",
      input: config({ ...keys({}, { tenant: "teem" }), tenants: { team: { tpm: 1000 } } }),
      path: "auth.keys[1].tenant",
      expected: /the name of a tenant in tenants \(team\)/,
    },
    {
      name: "a weight on a key of a tenant (the tenant's weight is the flow's)",
      input: config({ ...keys({ tenant: "team", weight: 2 }), tenants: { team: { weight: 1 } } }),
      path: "auth.keys[0].weight",
      expected: /tenants\.team\.weight instead/,
    },
    {
      name: "a tenant with no tenants configured",
      input: config(keys({ tenant: "team" })),
      path: "auth.keys[0].tenant",
      expected: /none configured/,
    },
    {
      name: "a tenant's zero tpm",
      input: config({ tenants: { team: { tpm: 0 } } }),
      path: "tenants.team.tpm",
      expected: /integer ≥ 1/,
    },
    {
      name: "a tenant's negative rpm",
      input: config({ tenants: { team: { rpm: -1 } } }),
      path: "tenants.team.rpm",
      expected: /integer ≥ 1/,
    },
    {
      name: "a tenant's zero weight",
      input: config({ tenants: { team: { weight: 0 } } }),
      path: "tenants.team.weight",
      expected: /number > 0/,
    },
    {
      name: "a tenant's max_inflight (not built)",
      input: config({ tenants: { team: { max_inflight: 4 } } }),
      path: "tenants.team.max_inflight",
      expected: /not built/,
    },
    {
      name: "an unknown key in a tenant",
      input: config({ tenants: { team: { tmp: 5 } } }),
      path: "tenants.team.tmp",
      expected: /.+/,
    },
  ];
  for (const r of refusals) {
    test(`refused: ${r.name}, naming ${r.path}`, () => {
      const e = invalid(r.input);
      const issue = e.issues.find((i) => i.path === r.path);
      assert.ok(issue, `an issue at ${r.path}; got ${e.issues.map((i) => i.path).join(", ")}`);
      assert.match(`${issue.expected} ${issue.hint ?? ""}`, r.expected, issue.message);
    });
  }

  test("the library's options refuse the same, naming the option path", () => {
    const bad = (o: Parameters<typeof resolveGovernorOptions>[0], path: string) =>
      assert.throws(
        () => resolveGovernorOptions(o),
        (e: { path?: string }) => e.path === path,
        path,
      );
    bad({ keys: { a: { maxInflight: 1, tpm: 0 } } }, "keys.a.tpm");
    bad({ keys: { a: { maxInflight: 1, rpm: -1 } } }, "keys.a.rpm");
    bad({ keys: { a: { maxInflight: 1, weight: 0 } } }, "keys.a.weight");
    bad({ keys: { a: { maxInflight: 1, tenant: "x" } } }, "keys.a.tenant");
    bad({ keys: { a: { maxInflight: 1, tenant: "x", weight: 2 } }, tenants: { x: {} } }, "keys.a.weight");
    bad({ tenants: { x: { tpm: -3 } } }, "tenants.x.tpm");
    bad({ tenants: { x: { weight: -3 } } }, "tenants.x.weight");
    bad({ tenants: { x: { maxInflight: 3 } } }, "tenants.x.maxInflight");
  });
});
