/**
 * Waiting in the bench scripts, written once for all of them (the bench does not import the tests'
 * helpers).
 */

/**
 * Lets every promise callback queued so far run, and those they queue: one macrotask turn
 * (`setImmediate` runs after the microtask queue is empty).
 */
export const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
