/**
 * Running out of file descriptors, made visible. When an accept finds no
 * descriptor left (EMFILE), libuv does not report it: it accepts the
 * connection on a descriptor it keeps in reserve and closes it at once, so
 * the listener never sees an error and the client just sees its connection
 * closed. So this looks for the condition itself, once a second (Linux: the
 * count of `/proc/self/fd` against the soft `Max open files` limit), and
 * reports it as the listener's EMFILE while it lasts. Elsewhere it does
 * nothing. One per process (the real one), not per test server.
 */
import { readdirSync, readFileSync } from "node:fs";

/** Descriptors left unused below the limit that still count as exhausted (libuv's reserve, a log write). */
const HEADROOM = 2;

/** Starts the watch; returns its stop. `report` gets an EMFILE error each second descriptors run out. */
export function watchDescriptors(report: (error: NodeJS.ErrnoException) => void, everyMs = 1_000): () => void {
  const limit = openFilesLimit();
  if (limit === undefined) return () => {};
  const timer = setInterval(() => {
    let open: number;
    try {
      open = readdirSync("/proc/self/fd").length;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EMFILE") return;
      open = limit; // not even a descriptor to look with
    }
    if (open < limit - HEADROOM) return;
    const error: NodeJS.ErrnoException = new Error(
      `every file descriptor is in use (${open} of at most ${limit}): new connections are closed at once`,
    );
    error.code = "EMFILE";
    report(error);
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

function openFilesLimit(): number | undefined {
  try {
    const line = /^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"));
    return line === null ? undefined : Number(line[1]);
  } catch {
    return undefined;
  }
}
