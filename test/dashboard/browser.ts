/**
 * Headless Chromium for the dashboard tests: Debian's `chromium` driven by playwright-core. Where
 * it is absent the tests skip and say why, except under `CI=true`, where `.ci/run` installs it
 * and its absence is a failure.
 */
import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

/** The browser binary. **Default:** `/usr/bin/chromium` (Debian's package). */
export const CHROMIUM = process.env.SLUICE_CHROMIUM ?? "/usr/bin/chromium";

const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

/** A skip message when there is no Chromium here and this is not CI; false when the tests run. */
export function skipWithoutChromium(): string | false {
  if (existsSync(CHROMIUM) || process.env.CI === "true") return false;
  return `no Chromium at ${CHROMIUM} (apt-get install chromium, or set SLUICE_CHROMIUM): dashboard browser tests skipped`;
}

/** Launches Chromium; under CI a missing binary fails here, naming it. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `CI=true and no Chromium at ${CHROMIUM}: .ci/run installs it (apt-get install -y chromium)`,
    );
  }
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
}
