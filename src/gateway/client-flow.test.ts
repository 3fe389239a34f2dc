import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";
import { describe, mock, test } from "node:test";
import type { Dispatcher } from "undici";
import { ClientFlow } from "./client-flow.js";

/** A client connection that is full (`write` false) until told otherwise. */
class FakeResponse extends EventEmitter {
  full = true;
  written = 0;
  write(chunk: Buffer): boolean {
    this.written += chunk.length;
    return !this.full;
  }
}

function controller() {
  const c = { paused: 0, resumed: 0, pause: () => c.paused++, resume: () => c.resumed++ };
  return c;
}

describe("ClientFlow: backpressure with a bound (issue 21 defect 8)", () => {
  test("a client that drains within the bound each time is never cut, however long it takes overall", () => {
    mock.timers.enable({ apis: ["setTimeout"] });
    try {
      const res = new FakeResponse();
      let stalled = 0;
      const flow = new ClientFlow(res as unknown as ServerResponse, () => stalled++);
      const c = controller();
      for (let i = 0; i < 20; i++) {
        flow.write(Buffer.alloc(10), c as unknown as Dispatcher.DispatchController, 1000);
        mock.timers.tick(900); // slow, but it reads
        res.emit("drain");
      }
      mock.timers.tick(5000);
      assert.equal(stalled, 0);
      assert.deepEqual([c.paused, c.resumed], [20, 20], "the pod paused and resumed each time");
    } finally {
      mock.timers.reset();
    }
  });

  test("a client that takes nothing for the bound is given up once; a chunk while paused does not re-arm", () => {
    mock.timers.enable({ apis: ["setTimeout"] });
    try {
      const res = new FakeResponse();
      let stalled = 0;
      const flow = new ClientFlow(res as unknown as ServerResponse, () => stalled++);
      const c = controller();
      const ctl = c as unknown as Dispatcher.DispatchController;
      flow.write(Buffer.alloc(10), ctl, 1000);
      mock.timers.tick(600);
      flow.write(Buffer.alloc(10), ctl, 1000); // undici may hand over a chunk already read
      mock.timers.tick(400);
      assert.equal(stalled, 1, "cut 1000 ms after the first refused write");
      assert.equal(c.paused, 1);
      mock.timers.tick(5000);
      res.emit("drain");
      assert.equal(stalled, 1);
      assert.equal(c.resumed, 0, "a call given up is not resumed");
    } finally {
      mock.timers.reset();
    }
  });

  test("stop() ends the watch: an answer that ended is never cut", () => {
    mock.timers.enable({ apis: ["setTimeout"] });
    try {
      const res = new FakeResponse();
      let stalled = 0;
      const flow = new ClientFlow(res as unknown as ServerResponse, () => stalled++);
      flow.write(Buffer.alloc(10), controller() as unknown as Dispatcher.DispatchController, 1000);
      flow.stop();
      mock.timers.tick(5000);
      assert.equal(stalled, 0);
      assert.equal(res.listenerCount("drain"), 0);
    } finally {
      mock.timers.reset();
    }
  });
});
