/**
 * A concurrency budget: a counter with a limit (DESIGN §1). GPU groups, keys and the gateway's
 * admission bound are budgets; lanes and pods build on the same counting. Giving back more than
 * was taken is a bug upstream, so `give` never drives the count negative (async-sema's lesson:
 * releasing twice must never add capacity).
 */
export class Budget {
  inflight = 0;

  constructor(
    /** Name as it appears in snapshots and errors. */
    readonly name: string,
    /** Calls allowed in flight at once; `Infinity` for a tag with no bound. */
    public limit: number,
  ) {}

  get hasRoom(): boolean {
    return this.inflight < this.limit;
  }

  take(): void {
    this.inflight++;
  }

  give(): void {
    if (this.inflight > 0) this.inflight--;
  }
}

/**
 * A key's (tenant's) budget counts its calls in flight plus queued (DESIGN §1 table), so it is
 * checked on arrival and never blocks a grant.
 */
export class KeyBudget {
  inflight = 0;
  queued = 0;

  constructor(
    readonly name: string,
    readonly maxInflight: number,
    /** The highest class this key may claim; higher claims are lowered to it. */
    readonly maxRank: 0 | 1 | 2,
  ) {}

  get full(): boolean {
    return this.inflight + this.queued >= this.maxInflight;
  }
}
