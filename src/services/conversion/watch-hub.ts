/**
 * The watches of conversion tasks on this instance, fed by one reader: every
 * `pollMs` it reads the records of the watched tasks — one store call per
 * task, all issued in the same event-loop turn, so they leave in one write on
 * the store's own connection — and wakes the watchers whose task changed.
 * No Redis connection per watcher or per task, and it works on a Cluster,
 * where one blocking read could not span the tasks' slots. A change reaches
 * its watchers within `pollMs` of being saved by any instance.
 *
 * Each watch takes a slot of the instance's watches (watch-slots.ts, shared
 * with the mute-event watches: MAX_WATCHES, and the watching project's
 * share of them: MAX_WATCHES_PER_PROJECT); `close` ends every watch as
 * `unavailable`, so clients reconnect elsewhere.
 */
import { Failure } from "../failure.js";
import type { ConversionTaskRecord, Store } from "../ports.js";
import type { WatchSlots } from "../watch-slots.js";

interface Waiter {
  readonly seenUpdatedAt: number;
  resolve(record: ConversionTaskRecord): void;
  reject(e: unknown): void;
}

export class ConversionWatchHub {
  private readonly waiters = new Map<string, Set<Waiter>>();
  private closed = false;
  private readonly timer: NodeJS.Timeout;
  private reading = false;

  constructor(
    private readonly store: Store,
    private readonly o: { readonly pollMs: number; readonly slots: WatchSlots },
  ) {
    this.timer = setInterval(() => void this.read(), o.pollMs);
    this.timer.unref();
  }

  /** Takes one of `project`'s watch slots; the function it answers gives it back. */
  open(project: string): () => void {
    if (this.closed) throw shuttingDown();
    return this.o.slots.take(project);
  }

  /** The task's record once it is newer than `seenUpdatedAt`. */
  next(uuid: string, seenUpdatedAt: number, signal?: AbortSignal): Promise<ConversionTaskRecord> {
    if (this.closed) return Promise.reject(shuttingDown());
    return new Promise((resolve, reject) => {
      const waiters = this.waiters.get(uuid) ?? new Set<Waiter>();
      this.waiters.set(uuid, waiters);
      const onAbort = () => done(() => reject(signal?.reason));
      const done = (settle: () => void) => {
        waiters.delete(waiter);
        if (waiters.size === 0) this.waiters.delete(uuid);
        signal?.removeEventListener("abort", onAbort);
        settle();
      };
      const waiter: Waiter = {
        seenUpdatedAt,
        resolve: (record) => done(() => resolve(record)),
        reject: (e) => done(() => reject(e)),
      };
      waiters.add(waiter);
      if (signal?.aborted) onAbort();
      else signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Ends every watch (as `unavailable`) and refuses new ones. */
  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    for (const waiters of [...this.waiters.values()]) for (const w of [...waiters]) w.reject(shuttingDown());
  }

  private async read(): Promise<void> {
    if (this.reading || this.waiters.size === 0) return;
    this.reading = true;
    try {
      await Promise.all([...this.waiters.keys()].map((uuid) => this.readOne(uuid)));
    } finally {
      this.reading = false;
    }
  }

  private async readOne(uuid: string): Promise<void> {
    let record: ConversionTaskRecord | undefined;
    try {
      record = await this.store.conversions.getConversion(uuid);
    } catch {
      return; // the store is away: the watchers wait for the next round
    }
    for (const w of [...(this.waiters.get(uuid) ?? [])]) {
      if (record === undefined) w.reject(new Failure("not_found", { detail: "the conversion task's record expired" }));
      else if (record.updatedAt > w.seenUpdatedAt) w.resolve(record);
    }
  }
}

function shuttingDown(): Failure {
  return new Failure("unavailable", { detail: "the server is shutting down; watch again" });
}
