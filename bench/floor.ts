/**
 * The floor for JS: the least a promise-based semaphore can do. `acquire` returns a resolved
 * promise when a slot is free, else parks a resolver in an array (head index, no `shift`);
 * `release` hands the slot straight to the next resolver. No timeouts, no abort, no accounting.
 */

const RESOLVED: Promise<void> = Promise.resolve();
type Resolver = (() => void) | undefined;

export class FloorSemaphore {
  #free: number;
  #q: Resolver[] = [];
  #head = 0;

  constructor(limit: number) {
    this.#free = limit;
  }

  acquire(): Promise<void> {
    if (this.#free > 0) {
      this.#free--;
      return RESOLVED;
    }
    return new Promise<void>((resolve) => {
      this.#q.push(resolve);
    });
  }

  release(): void {
    const q = this.#q;
    if (this.#head === q.length) {
      this.#free++;
      return;
    }
    const next = q[this.#head]!;
    q[this.#head++] = undefined;
    if (this.#head === q.length) {
      this.#q = [];
      this.#head = 0;
    } else if (this.#head >= 4096 && this.#head * 2 >= q.length) {
      this.#q = q.slice(this.#head);
      this.#head = 0;
    }
    next();
  }
}

/** The same with three classes: one array per class, the best non-empty one served first. */
export class FloorPrioritySemaphore {
  #free: number;
  readonly #q: [Resolver[], Resolver[], Resolver[]] = [[], [], []];
  readonly #head = [0, 0, 0];

  constructor(limit: number) {
    this.#free = limit;
  }

  /** `rank`: 0 = interactive (served first), 1 = default, 2 = bulk. */
  acquire(rank: 0 | 1 | 2): Promise<void> {
    if (this.#free > 0) {
      this.#free--;
      return RESOLVED;
    }
    return new Promise<void>((resolve) => {
      this.#q[rank].push(resolve);
    });
  }

  release(): void {
    for (let r = 0; r < 3; r++) {
      const q = this.#q[r as 0 | 1 | 2];
      const head = this.#head[r]!;
      if (head === q.length) continue;
      const next = q[head]!;
      q[head] = undefined;
      if (head + 1 === q.length) {
        q.length = 0;
        this.#head[r] = 0;
      } else if (head + 1 >= 4096 && (head + 1) * 2 >= q.length) {
        q.splice(0, head + 1);
        this.#head[r] = 0;
      } else this.#head[r] = head + 1;
      next();
      return;
    }
    this.#free++;
  }
}
