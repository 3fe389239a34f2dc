/**
 * The built sluice CLI with retry-storm pacing switched off (src/gateway/pacing.ts), for the
 * gateway benchmark's "sluice, pacing off" rows: what the refusal path itself costs when every
 * early retry is answered at once. Not a product mode: the switch is the tests' hook.
 *
 *   node bench/gateway/unpaced.mjs BUILD_DIR serve --config FILE --port 0
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [dist, ...rest] = process.argv.slice(2);
if (dist === undefined) throw new Error("usage: unpaced.mjs BUILD_DIR serve --config FILE");
const pacing = await import(pathToFileURL(join(dist, "gateway", "pacing.js")).href);
pacing.setLoopSaturation(() => false);
pacing.setImmediateMs?.(-1);
const cli = join(dist, "cli", "main.js");
process.argv = [process.argv[0], cli, ...rest];
await import(pathToFileURL(cli).href);
