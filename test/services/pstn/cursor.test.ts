/**
 * The cursor of a mute-event watch (src/services/pstn/cursor.ts): what a
 * client resumes from. Decoding what was encoded gives every channel back its
 * position; anything else a client sends is `invalid`, never a position; and
 * when the cursor cannot tell a channel apart it errs low (events again), never
 * high (events lost).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Failure } from "../../../src/services/failure.js";
import { channelHash, decodeAfter, encodeCursor, WatchCursor } from "../../../src/services/pstn/cursor.js";
import { compareStreamIds, normalizeStreamId } from "../../../src/services/pstn/stream-ids.js";

const U64 = 18_446_744_073_709_551_615n;
const id = fc
  .tuple(fc.bigInt({ min: 0n, max: U64 }), fc.bigInt({ min: 0n, max: U64 }))
  .map(([ms, seq]) => `${ms}-${seq}`);
const later = (base: string) =>
  fc.tuple(fc.bigInt({ min: 0n, max: 1n << 40n }), fc.bigInt({ min: 0n, max: 1n << 20n })).map(([d, seq]) => {
    const ms = BigInt(base.split("-")[0] as string) + d;
    return `${ms > U64 ? U64 : ms}-${seq}`;
  });

function positionsOf(after: string, channels: readonly string[]): string[] {
  const start = decodeAfter(after, channels.map(channelHash));
  if (start.kind === "now") throw new Error("not a position");
  return channels.map((_, i) => start.positions.get(i) ?? start.base);
}

describe("decodeAfter / encodeCursor", () => {
  it("gives every channel back the position it was encoded with", () => {
    fc.assert(
      fc.property(
        id.chain((base) =>
          fc.tuple(
            fc.constant(base),
            fc.uniqueArray(fc.tuple(fc.string({ minLength: 1, maxLength: 20 }), fc.option(later(base))), {
              selector: ([c]) => c,
              minLength: 1,
              maxLength: 50,
            }),
          ),
        ),
        ([base, channels]) => {
          const names = channels.map(([c]) => c);
          const listed = channels.flatMap(([c, p], i) => (p === null ? [] : [[i, c, p] as const]));
          const cursor = encodeCursor(
            base,
            listed.map(([, c, p]) => [channelHash(c), p] as const),
          );
          const hashes = names.map(channelHash);
          const shared = new Set(hashes.filter((h, i) => hashes.indexOf(h) !== i));
          const want = channels.map(([c, p]) => (p === null || shared.has(channelHash(c)) ? base : p));
          expect(positionsOf(cursor, names)).toEqual(want);
        },
      ),
    );
  });

  it("an event id as `after` is every channel's position; empty means from now on", () => {
    expect(positionsOf("1700000000000-3", ["a", "b"])).toEqual(["1700000000000-3", "1700000000000-3"]);
    expect(positionsOf("0007-01", ["a"])).toEqual(["7-1"]);
    expect(decodeAfter("", [channelHash("a")])).toEqual({ kind: "now" });
  });

  it("a channel the cursor does not list resumes from its base (a channel added to the watch)", () => {
    const cursor = encodeCursor("100-0", [[channelHash("a"), "250-4"]]);
    expect(positionsOf(cursor, ["a", "new"])).toEqual(["250-4", "100-0"]);
  });

  it.each([
    "nonsense",
    "v1.",
    "v1.!!!",
    "v2.AAAA",
    "1-",
    "-1",
    "18446744073709551616-0",
    `v1.${Buffer.from([0x80]).toString("base64url")}`,
    `v1.${Buffer.from([1, 1, 0xde, 0xad]).toString("base64url")}`,
    `v1.${Buffer.from([1, 1, 0xde, 0xad, 0xbe, 0xef, 0x80]).toString("base64url")}`,
    `v1.${Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0]).toString("base64url")}`,
  ])("%j is invalid", (after) => {
    let error: unknown;
    try {
      decodeAfter(after, [channelHash("a"), channelHash("b")]);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(Failure);
    expect((error as Failure).kind).toBe("invalid");
    expect((error as Failure).detail).toMatch(/^after: /);
  });

  it("random text is invalid or a position, never an exception of another kind", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string().map((s) => `v1.${s}`),
        ),
        (after) => {
          try {
            decodeAfter(after, [channelHash("a"), channelHash("b")]);
          } catch (e) {
            expect(e).toBeInstanceOf(Failure);
            expect((e as Failure).kind).toBe("invalid");
          }
        },
      ),
    );
  });
});

describe("WatchCursor", () => {
  it("one channel: the cursor is the id of the last event handed out", () => {
    const c = new WatchCursor([channelHash("a")], decodeAfter("", [channelHash("a")]));
    c.started(0, "5-0");
    expect(c.encode()).toBe("5-0");
    c.delivered(0, "7-2");
    c.raise("100-0"); // no base for one channel
    expect(c.encode()).toBe("7-2");
  });

  it("several channels: lists the channels beyond the base, and forgets them as the base passes them", () => {
    const hashes = ["a", "b", "c"].map(channelHash);
    const c = new WatchCursor(hashes, decodeAfter("", hashes));
    c.started(0, "0-0");
    c.started(1, "90-0");
    c.started(2, "120-1");
    c.raise("100-0");
    expect(positionsOf(c.encode(), ["a", "b", "c"])).toEqual(["100-0", "100-0", "120-1"]);
    c.delivered(0, "130-0");
    c.raise("125-0");
    c.raise("110-0"); // never down
    expect(positionsOf(c.encode(), ["a", "b", "c"])).toEqual(["130-0", "125-0", "125-0"]);
    expect(compareStreamIds(normalizeStreamId("0130-00") ?? "", "130-0")).toBe(0);
  });

  it("a typical cursor of 1000 channels with 30 active lately fits a header easily", () => {
    const names = Array.from({ length: 1000 }, (_, i) => `channel-${i}`);
    const hashes = names.map(channelHash);
    const c = new WatchCursor(hashes, decodeAfter("1700000000000-0", hashes));
    for (let i = 0; i < 30; i++) c.delivered(i * 7, `${1_700_000_000_000 + 3000 + i * 97}-${i % 3}`);
    const cursor = c.encode();
    expect(cursor.length).toBeLessThan(600);
    expect(positionsOf(cursor, names)[7]).toBe(`${1_700_000_000_000 + 3097}-1`);
  });
});
