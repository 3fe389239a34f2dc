/**
 * Seed 000's lesson: `self._sem or asyncio.Semaphore(4)` built a fresh semaphore per page, so an
 * unconfigured manager bounded nothing — forty pages of one document ran at once against what
 * every line called a limit of four. In sluice every page of a lane takes its slot through one
 * counted path, whichever entry it comes in by (`acquire`, `run`, `tryAcquire`, `stream`) and
 * whether the lane was configured or made from `defaults` on first use. Counted inside the page
 * (the far end): the most pages running at once.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Governor, type Lease } from "../../src/index.js";
import { ManualClock } from "../../src/testing.js";
import { flush } from "../helpers/index.js";

const PAGES = 40;
const LIMIT = 4;

/** A document's pages, each held until the test lets it finish; counts how many run at once. */
function pagesCounter() {
  let running = 0;
  let peak = 0;
  let done = 0;
  const gates: (() => void)[] = [];
  return {
    page: async (): Promise<void> => {
      running++;
      peak = Math.max(peak, running);
      await new Promise<void>((resolve) => gates.push(resolve));
      running--;
      done++;
    },
    /** Lets every page that is running finish. */
    finishRunning: () => {
      for (const open of gates.splice(0)) open();
    },
    get peak() {
      return peak;
    },
    get done() {
      return done;
    },
  };
}

describe("regress seed 000: a fresh semaphore per page", () => {
  for (const configured of [true, false]) {
    test(`forty pages through every entry of a ${configured ? "configured" : "defaults-made"} lane run at most ${LIMIT} at once`, async () => {
      const clock = new ManualClock();
      const lane = { limit: LIMIT, reserve: 0, queueLimit: PAGES };
      const gov = new Governor(configured ? { clock, lanes: { ocr: lane } } : { clock, defaults: lane });
      const pages = pagesCounter();
      // A page held by tryAcquire first: the lane must exist and count it, whichever way it was made.
      const early = gov.tryAcquire("ocr");
      assert.ok(early !== undefined, "tryAcquire found no slot in an empty lane");
      const held: Promise<void>[] = [pages.page().then(() => early.release())];
      for (let i = 1; i < PAGES; i++) {
        if (i % 3 === 0) held.push(gov.run("ocr", () => pages.page()));
        else if (i % 3 === 1)
          held.push(gov.acquire("ocr").then((lease: Lease) => pages.page().then(() => lease.release())));
        else {
          const lease = gov.tryAcquire("ocr");
          held.push(
            lease === undefined
              ? gov.run("ocr", () => pages.page())
              : pages.page().then(() => lease.release()),
          );
        }
      }
      while (pages.done < PAGES) {
        await flush();
        pages.finishRunning();
        await flush();
      }
      await Promise.all(held);
      assert.equal(pages.peak, LIMIT, `${pages.peak} pages ran at once against a limit of ${LIMIT}`);
      const ocr = gov.snapshot().lanes.find((l) => l.lane === "ocr")!;
      assert.equal(ocr.inflight, 0);
      gov.close();
    });
  }
});
