/**
 * Typed, opt-in events (STYLE G10, after cockatiel): an `Event<T>` is a subscribe function that
 * returns a `Disposable`. Emitters expose `size`, so a caller computes a payload only when
 * someone listens.
 */

/** Subscribe to an event; dispose the result to unsubscribe. */
export type Event<T> = (listener: (value: T) => void) => Disposable;

/** The producing side of an {@link Event}. */
export class Emitter<T> {
  #listeners: Array<(value: T) => void> = [];

  /** How many listeners are attached; check it before building an expensive payload. */
  get size(): number {
    return this.#listeners.length;
  }

  /** The subscribe function handed to consumers. */
  readonly event: Event<T> = (listener) => {
    this.#listeners = [...this.#listeners, listener];
    return {
      [Symbol.dispose]: () => {
        this.#listeners = this.#listeners.filter((l) => l !== listener);
      },
    };
  };

  /** Calls every listener; a listener that throws does not stop the others or the caller. */
  emit(value: T): void {
    for (const listener of this.#listeners) {
      try {
        listener(value);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }
}
