/**
 * The gateway's own view of its callers: who it has on the line, as it last
 * knew their mute state and hand, and the numbers it gives newcomers. Caller
 * ids are made up and masked as a real gateway masks them (last 4 digits).
 */

export interface LineCaller {
  readonly uid: string;
  /** Masked, e.g. `***0142`: never a whole number. */
  readonly callerId: string;
  readonly joinedAt: number;
  muted: boolean;
  handRaised: boolean;
  /** The tick before which the caller does nothing: the host just spoke to them. */
  calmUntil: number;
}

/** `***` and 4 digits that look like the end of a phone number, the same for the same caller number. */
export function maskedCallerId(n: number): string {
  return `***${String((n * 7919 + 142) % 10_000).padStart(4, "0")}`;
}

export class Roster {
  readonly #callers = new Map<string, LineCaller>();
  #nextNumber = 1001;
  /** No new caller dials in before this tick (a hang-up leaves the line short for a while). */
  redialAt = 0;

  get size(): number {
    return this.#callers.size;
  }

  all(): LineCaller[] {
    return [...this.#callers.values()];
  }

  get(uid: string): LineCaller | undefined {
    return this.#callers.get(uid);
  }

  /** The next caller to dial in; not on the roster until `add`. */
  newcomer(now: number): LineCaller {
    const n = this.#nextNumber++;
    return {
      uid: `pstn-${n}`,
      callerId: maskedCallerId(n),
      joinedAt: now,
      muted: false,
      handRaised: false,
      calmUntil: 0,
    };
  }

  add(caller: LineCaller): void {
    this.#callers.set(caller.uid, caller);
  }

  remove(uid: string): void {
    this.#callers.delete(uid);
  }
}
