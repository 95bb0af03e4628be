/**
 * The gateway's report order (ReportLine's and SyncLine's `sequence`): the
 * clock in nanoseconds, never repeating and never going back, so a report
 * made after another is always newer, across a restart of the gateway too.
 */
export class SequenceClock {
  #last = 0n;

  constructor(private readonly now: () => number = Date.now) {}

  next(): bigint {
    const fromClock = BigInt(Math.trunc(this.now())) * 1_000_000n;
    this.#last = fromClock > this.#last ? fromClock : this.#last + 1n;
    return this.#last;
  }
}
