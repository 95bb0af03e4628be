/**
 * The backend's limit on conversions started per project: by default it takes
 * one create a second per project and answers any more with the "too many
 * tasks" error (faults.ts, `tooManyTasksAnswer`). Here it is a token bucket per
 * project, of `perSecond` tokens refilling at `perSecond` a second on the
 * simulator's clock; a create that passed every other check takes one token.
 * A fraction under 1 holds one token (0.5: a create every two seconds), since
 * a smaller bucket would never allow one. An infinite `perSecond` is no limit.
 */

interface Bucket {
  tokens: number;
  /** When `tokens` was last brought up to date (the simulator's clock). */
  at: number;
}

export class CreateLimit {
  readonly #perSecond: number;
  readonly #capacity: number;
  readonly #now: () => number;
  /** By the project's opaque key (credentials.ts); a project not seen yet has a full bucket. */
  readonly #buckets = new Map<string, Bucket>();
  #refused = 0;

  constructor(perSecond: number, now: () => number) {
    this.#perSecond = perSecond;
    this.#capacity = Math.max(1, perSecond);
    this.#now = now;
  }

  /** Takes a token for one create of `project`: false (and counted) when its bucket is empty. */
  take(project: string): boolean {
    if (this.#perSecond === Number.POSITIVE_INFINITY) return true;
    const now = this.#now();
    const bucket = this.#buckets.get(project) ?? { tokens: this.#capacity, at: now };
    // A clock set back (a test's fake one) refills nothing rather than draining the bucket.
    const elapsedMs = Math.max(0, now - bucket.at);
    bucket.tokens = Math.min(this.#capacity, bucket.tokens + (elapsedMs * this.#perSecond) / 1000);
    bucket.at = now;
    this.#buckets.set(project, bucket);
    if (bucket.tokens < 1) {
      this.#refused += 1;
      return false;
    }
    bucket.tokens -= 1;
    return true;
  }

  /** The creates refused so far for want of a token. */
  refused(): number {
    return this.#refused;
  }
}
