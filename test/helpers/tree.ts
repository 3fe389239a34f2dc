/** The repository's files as the docs' checks read them. */
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

/**
 * Every file under `root` (or `root` itself when it is a file) whose path `keep` accepts, with `/`
 * separators; `node_modules` and dot-folders are skipped, a missing root gives none.
 */
export function filesUnder(root: string, keep: (path: string) => boolean = () => true): string[] {
  const out: string[] = [];
  const walk = (path: string) => {
    if (statSync(path).isDirectory()) {
      for (const name of readdirSync(path)) {
        if (name !== "node_modules" && !name.startsWith(".")) walk(join(path, name));
      }
    } else {
      const slashed = path.split("\\").join("/");
      if (keep(slashed)) out.push(slashed);
    }
  };
  if (existsSync(root)) walk(root);
  return out;
}
