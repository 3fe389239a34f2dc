/** A one-shot wake-up many can wait on: `wait()` until the next `wake()`, then it resets. */
export class Signal {
  #waiting: { promise: Promise<void>; resolve: () => void } | null = null;

  /** Resolves at the next `wake()`. */
  wait(): Promise<void> {
    if (this.#waiting === null) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      this.#waiting = { promise, resolve };
    }
    return this.#waiting.promise;
  }

  /** Wakes everyone waiting now; a no-op when nobody is. */
  wake(): void {
    const waiting = this.#waiting;
    this.#waiting = null;
    waiting?.resolve();
  }
}
