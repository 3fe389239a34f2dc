/** Small helpers shared by the regression tests (no timers: a ManualClock drives time). */

/** Lets every promise callback queued so far run. */
export const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Tracks whether a promise has settled, without waiting for it. */
export function track<T>(promise: Promise<T>): { readonly settled: boolean; readonly value: T | undefined } {
  const state: { settled: boolean; value: T | undefined } = { settled: false, value: undefined };
  promise.then(
    (value) => {
      state.settled = true;
      state.value = value;
    },
    () => {
      state.settled = true;
    },
  );
  return state;
}
