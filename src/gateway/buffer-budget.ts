/**
 * The gateway's one bound of its own: request body bytes held in memory by every request together
 * (`admission.max_buffered_bytes`). The gateway bound on requests (`max_concurrency` in flight +
 * `max_queued` admitted) is the Governor's admission budget (src/core/admission.ts), on every
 * lane's path like the other budgets.
 */
/** The gateway-wide count of buffered request body bytes (`admission.max_buffered_bytes`). */
export class BufferBudget {
  used = 0;

  /** @param limit `admission.max_buffered_bytes`; a reload sets it (the count carries on). */
  constructor(public limit: number) {}
}
