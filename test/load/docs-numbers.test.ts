/**
 * Issue 25 item 5: docs/load.md says, for every profile, which of its numbers the seed gives
 * (named with the seed) and which are the profile's own assumptions — the numbers the issue named
 * among the latter: a provider answering 429 past 40, a burst of 200, backoff 2 s → 64 s, a box of
 * 48 sequences down for 15 s.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { isNotBuilt, LOAD_PROFILES } from "../../src/load/profiles/index.js";

const doc = readFileSync(new URL("../../docs/load.md", import.meta.url), "utf8");

/** The profile's section: from its `### \`name\`` heading to the next heading. */
function section(name: string): string {
  const start = doc.indexOf(`### \`${name}\``);
  assert.ok(start >= 0, `docs/load.md has a section for ${name}`);
  const end = doc.slice(start + 1).search(/\n#{2,3} /);
  return end < 0 ? doc.slice(start) : doc.slice(start, start + 1 + end);
}

/** The text of the bullet that starts with `lead`, up to the next bullet or blank line. */
function bullet(text: string, lead: string): string {
  const at = text.indexOf(lead);
  assert.ok(at >= 0, `no "${lead}"`);
  const rest = text.slice(at);
  const end = rest.slice(1).search(/\n(- |\n)/);
  return end < 0 ? rest : rest.slice(0, end + 1);
}

describe("docs/load.md: where each profile's numbers come from", () => {
  for (const p of LOAD_PROFILES) {
    if (isNotBuilt(p)) continue;
    test(`${p.name}: the seed's numbers and the profile's assumptions are told apart`, () => {
      const text = section(p.name);
      assert.ok(text.includes(`- **From seed ${p.seed}:**`), `${p.name}: a "From seed ${p.seed}" bullet`);
      assert.ok(text.includes("- **Assumptions of the profile:**"), `${p.name}: an assumptions bullet`);
    });
  }

  test("the numbers the issue named are listed as assumptions", () => {
    const assumed = (name: string) => bullet(section(name), "- **Assumptions of the profile:**");
    assert.match(assumed("model-capacity"), /\*\*40\*\* exchanges at once and answers \*\*429/);
    assert.match(assumed("model-capacity"), /\*\*burst of 200\*\*/);
    assert.match(assumed("ocr-flood"), /backoff 2 s → 64 s/);
    assert.match(assumed("shared-gpu"), /\*\*48\*\* running sequences/);
    assert.match(assumed("shared-gpu"), /down \*\*15 s\*\*/);
    assert.match(assumed("panel-burst"), /the server runs \*\*4\*\* calls at once/);
    assert.match(assumed("autoscale"), /every \*\*6 s\*\*, its \*\*4 s\*\* target/);
  });
});
