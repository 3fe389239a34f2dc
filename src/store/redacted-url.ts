/** Fleet store URLs as they may be shown. */

/** The URL without its password, for logs, snapshots and errors. */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== "") u.password = "***";
    return u.toString();
  } catch {
    return "redis://…";
  }
}
