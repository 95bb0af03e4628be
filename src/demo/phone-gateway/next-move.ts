/**
 * What a caller does next, chosen with the gateway's seeded random numbers:
 * a keypad mute or unmute, a hand raised (or now and then lowered), a hang-up
 * (the line stays short for a few ticks, then a new caller dials in), or
 * nothing. A pure function of the roster, the tick and the numbers drawn, so
 * the same seed plays the same moves.
 */
import type { Roster } from "./roster.js";

export type Move =
  | { readonly kind: "keypad"; readonly uid: string; readonly mute: boolean }
  | { readonly kind: "hand"; readonly uid: string; readonly raised: boolean }
  | { readonly kind: "hang-up"; readonly uid: string }
  | { readonly kind: "idle" };

/** Ticks a hung-up caller's place stays empty. */
export const REDIAL_TICKS = 3;

export function nextMove(roster: Roster, tick: number, random: () => number): Move {
  const awake = roster.all().filter((c) => c.calmUntil <= tick);
  const caller = awake[Math.floor(random() * awake.length)];
  if (caller === undefined) return { kind: "idle" };
  const r = random();
  if (r < 0.35) return { kind: "keypad", uid: caller.uid, mute: !caller.muted };
  if (r < 0.7) {
    if (!caller.handRaised) return { kind: "hand", uid: caller.uid, raised: true };
    // A raised hand mostly waits for the host.
    return r < 0.45 ? { kind: "hand", uid: caller.uid, raised: false } : { kind: "idle" };
  }
  if (r < 0.82 && roster.size > 1) return { kind: "hang-up", uid: caller.uid };
  return { kind: "idle" };
}

/** Mulberry32: small, seedable, and good enough to vary a demo. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
