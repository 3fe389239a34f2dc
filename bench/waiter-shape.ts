/**
 * How a waiter's shape moves the young-generation GC of a 100k burst (issue 13 (b); docs/bench.md,
 * "fourth pass"): 100,000 tasks each waiting on a promise, then all released, six rounds.
 *
 *   sema          the resolve function in an array (async-sema's shape)
 *   ticket-array  a Ticket-like record (14 fields, sluice's) holding its resolve, in an array
 *   ticket-list   the same records linked in two doubly linked lists (sluice's WaitQueue)
 *
 *   node --trace-gc-nvp --import tsx bench/waiter-shape.ts MODE 2>&1 | grep 'gc=s'
 *
 * Prints the wall time; the scavenges' pauses and copied bytes are in V8's trace. A benchmark,
 * not a test.
 */
type Mode = "sema" | "ticket-array" | "ticket-list";
const mode = (process.argv[2] ?? "ticket-list") as Mode;
const N = 100_000;

class Ticket {
  prev: Ticket | null = null;
  next: Ticket | null = null;
  dprev: Ticket | null = null;
  dnext: Ticket | null = null;
  enqueuedAt = 0;
  grantedAt = 0;
  state = "waiting";
  path: object | null = null;
  resolve: ((t: Ticket) => void) | null = null;
  extras: object | null = null;
  constructor(
    readonly laneRef: object | null,
    public rank: number,
    readonly arrivedAt: number,
    readonly key: object | null,
  ) {}
}

let captured: ((t: Ticket) => void) | null = null;
const capture = (resolve: (t: Ticket) => void): void => {
  captured = resolve;
};

async function burst(): Promise<void> {
  const resolvers: Array<() => void> = [];
  const tickets: Ticket[] = [];
  const list: { head: Ticket | null; tail: Ticket | null } = { head: null, tail: null };
  let left = N;
  let done!: () => void;
  const all = new Promise<void>((resolve) => {
    done = resolve;
  });
  const acquire = (): Promise<unknown> => {
    if (mode === "sema") return new Promise<void>((resolve) => resolvers.push(resolve));
    const t = new Ticket(null, 1, 5, null);
    const p = new Promise<Ticket>(capture);
    t.resolve = captured;
    captured = null;
    if (mode === "ticket-array") tickets.push(t);
    else {
      const tail = list.tail;
      if (tail === null) list.head = t;
      else {
        tail.next = t;
        t.prev = tail;
        tail.dnext = t;
        t.dprev = tail;
      }
      list.tail = t;
    }
    return p;
  };
  const task = async (): Promise<void> => {
    await acquire();
    await null;
    if (--left === 0) done();
  };
  for (let i = 0; i < N; i++) void task();
  if (mode === "sema") for (const r of resolvers) r();
  else if (mode === "ticket-array") for (const t of tickets) t.resolve!(t);
  else for (let t = list.head; t !== null; t = t.next) t.resolve!(t);
  await all;
}

const t0 = performance.now();
for (let round = 0; round < 6; round++) await burst();
console.log(`${mode}: 6 × ${N.toLocaleString("en")} waiters in ${(performance.now() - t0).toFixed(0)} ms`);
