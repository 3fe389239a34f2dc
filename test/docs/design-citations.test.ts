/**
 * Every design citation in the repository resolves inside it (issue 23): a "DESIGN §1.3" in a
 * comment or a doc names a heading of docs/design.md, a "STYLE G5" a heading of docs/style.md, and
 * no doc sends its reader to a document outside the repository (the old ../shared/DESIGN.md).
 *
 * A citation is found as it is written in the tree: "DESIGN §1.3", lists ("DESIGN §1, §5",
 * "STYLE G2, G11"), a citation broken over a comment line ("DESIGN\n * §1.1"), and a bare "§4"
 * (the tree's shorthand for a design section). A "§" whose nearest keyword before it is "RFC" or
 * "issue" cites that RFC or issue instead ("RFC 3986 §5.2.4", "issue 22 §2, §4") and is skipped.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { filesUnder } from "../helpers/index.js";

const ROOTS = ["src", "test", "bench", "scripts", "docs", "README.md"];
const TEXT = /\.(ts|mts|js|mjs|cjs|md|lua|ya?ml|html|css|json)$/;
const SELF = "test/docs/design-citations.test.ts";

interface Citation {
  /** `§1.3` or `G5`. */
  id: string;
  /** `file:line`, for the failure message. */
  at: string;
}

function lineOf(text: string, index: number): number {
  let line = 1;
  for (let i = 0; i < index; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

// The nearest keyword in the 100 characters before a "§" decides what it cites.
const KEYWORD = /\b(DESIGN|RFC|[Ii]ssue)\b/g;

function sectionCitations(file: string, text: string): Citation[] {
  const out: Citation[] = [];
  for (const m of text.matchAll(/§\s?(\d+(?:\.\d+)*)/g)) {
    const before = text.slice(Math.max(0, m.index - 100), m.index);
    const keywords = [...before.matchAll(KEYWORD)].map((k) => k[1]!.toLowerCase());
    const nearest = keywords.at(-1);
    if (nearest === "rfc" || nearest === "issue") continue;
    out.push({ id: `§${m[1]}`, at: `${file}:${lineOf(text, m.index)}` });
  }
  return out;
}

function styleCitations(file: string, text: string): Citation[] {
  const out: Citation[] = [];
  for (const m of text.matchAll(/STYLE(?:\.md)?\s+(G\d+(?:\s*(?:,|\/|&|and)\s*G\d+)*)/g)) {
    for (const g of m[1]!.matchAll(/G\d+/g)) {
      out.push({ id: g[0], at: `${file}:${lineOf(text, m.index + 6 + g.index)}` });
    }
  }
  return out;
}

/** Section numbers (`§1.3`) and guideline ids (`G5`) that headings of the given files define. */
function headings(paths: string[]): Set<string> {
  const ids = new Set<string>();
  for (const path of paths) {
    if (!existsSync(path)) continue;
    for (const line of readFileSync(path, "utf8").split("\n")) {
      const section = /^#{1,6}\s+§?\s*(\d+(?:\.\d+)*)\.?\s/.exec(line);
      if (section) ids.add(`§${section[1]}`);
      const guideline = /^#{1,6}\s+(G\d+)\b/.exec(line);
      if (guideline) ids.add(guideline[1]!);
    }
  }
  return ids;
}

const tree = ROOTS.flatMap((root) => filesUnder(root, (f) => TEXT.test(f) && f !== SELF));
const texts = new Map(tree.map((f) => [f, readFileSync(f, "utf8")]));
const sections = [...texts].flatMap(([f, t]) => sectionCitations(f, t));
const guidelines = [...texts].flatMap(([f, t]) => styleCitations(f, t));
const defined = headings(["docs/design.md", "docs/style.md"]);

function unresolved(cites: Citation[]): string[] {
  const missing = new Map<string, string[]>();
  for (const c of cites) {
    if (defined.has(c.id)) continue;
    missing.set(c.id, [...(missing.get(c.id) ?? []), c.at]);
  }
  return [...missing].map(([id, at]) => `${id} (${at.length}×, e.g. ${at.slice(0, 3).join(", ")})`);
}

describe("design citations", () => {
  test("the scan finds the tree's citations (it cannot pass by finding none)", () => {
    const ids = new Set(sections.map((c) => c.id));
    for (const id of ["§1", "§1.1", "§1.3", "§1.4", "§3.2", "§4", "§5"]) assert.ok(ids.has(id), id);
    assert.ok(sections.length >= 100, `${sections.length} section citations`);
    assert.ok(new Set(guidelines.map((c) => c.id)).has("G5"));
    // The skipped kinds are really skipped: RFC sections and an issue's sections are not design's.
    assert.ok(!ids.has("§7.6.1") && !ids.has("§5.2.4") && !ids.has("§6.2.2.2"));
  });

  test('every "DESIGN §N" resolves to a heading of docs/design.md', () => {
    assert.deepEqual(unresolved(sections), []);
  });

  test('every "STYLE GN" resolves to a heading of docs/style.md (or docs/design.md)', () => {
    assert.deepEqual(unresolved(guidelines), []);
  });

  test("no doc points to a design document outside the repository", () => {
    const docs = tree.filter((f) => f.endsWith(".md"));
    const outside = docs.flatMap((f) =>
      texts
        .get(f)!
        .split("\n")
        .flatMap((line, i) =>
          /\.\.\/shared\b|\bDESIGN\.md\b|\bSTYLE\.md\b|\bshared\/seeds\b/.test(line)
            ? [`${f}:${i + 1}: ${line.trim()}`]
            : [],
        ),
    );
    assert.deepEqual(outside, []);
  });
});
