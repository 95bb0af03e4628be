/**
 * The store contract's part about reading a channel's PSTN state: the meta
 * hash the mute script writes (who set each uid's state, when, with which
 * event), and the snapshot — every participant plus the id of the newest
 * event, read atomically. Checked against the documented keys
 * (docs/architecture.md, "Redis schema") read and written raw. Run inside the
 * store contract (./contract.ts) on every store.
 */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { AdminStore, MuteChange } from "../../src/services/ports.js";
import { DEFAULT_LINE_POLICY, type PstnSnapshot } from "../../src/services/pstn/snapshot.js";
import type { KeySchema } from "../../src/store/schema/keys.js";
import type { ContractSubject, RawAccess } from "./contract.js";

function ids(): { project: string; channel: string } {
  const word = () => randomBytes(8).toString("hex");
  return { project: `proj-${word()}`, channel: `chan ${word()}/s` };
}

/** Stream ids (`<ms>-<seq>`) in stream order. */
function compareIds(a: string, b: string): number {
  const [am = 0n, as = 0n] = a.split("-").map(BigInt);
  const [bm = 0n, bs = 0n] = b.split("-").map(BigInt);
  if (am !== bm) return am < bm ? -1 : 1;
  return as === bs ? 0 : as < bs ? -1 : 1;
}

/** Participants as uid → state, to compare snapshots regardless of order. */
function byUid(snapshot: PstnSnapshot): Record<string, unknown> {
  return Object.fromEntries(snapshot.participants.map((p) => [p.uid, p]));
}

/** A channel nobody muted in, or whose keys cannot be read. */
const EMPTY: PstnSnapshot = { participants: [], asOfEventId: "0-0", policy: DEFAULT_LINE_POLICY };
/** A participant not on the line (no line record). */
const OFF_LINE = { onLine: false } as const;
/** A state the host set (a meta without a setter). */
const BY_HOST = { setter: "host", onLine: false } as const;

export function pstnSnapshotContract(current: () => ContractSubject): void {
  let store: AdminStore;
  let keys: KeySchema;
  let raw: RawAccess;
  const setUp = () => ({ store, keys, raw } = current());

  describe("PSTN state snapshots", () => {
    it("the mute script records at, by and the event id of each uid's last change in the meta hash", async () => {
      setUp();
      const ch = ids();
      const metaKey = keys.pstnMuteMeta(ch.project, ch.channel);
      expect(metaKey).toBe(`${keys.prefix}chan:{${ch.project}/${ch.channel}}:pstn-mute-meta`);
      const by = 'ali"ce\\ é 🎤 </x>';
      await store.setMute({ ...ch, uid: "1001", mute: true, by, at: 1_700_000_000_123 });
      await store.setMute({ ...ch, uid: "1002", mute: false, by: "bob", at: 1_700_000_000_456 });
      await store.setMute({ ...ch, uid: "1001", mute: false, by: "carol", at: 1_700_000_000_789 });

      const entries = await raw.xrange(keys.pstnEvents(ch.project, ch.channel));
      const meta = await raw.hgetall(metaKey);
      expect(Object.keys(meta).sort()).toEqual(["1001", "1002"]);
      expect(meta["1002"]).toBe(`{"at":1700000000456,"by":"bob","event_id":"${entries[1]?.id}"}`);
      expect(JSON.parse(meta["1001"] ?? "")).toEqual({ at: 1_700_000_000_789, by: "carol", event_id: entries[2]?.id });

      await store.setMute({ ...ch, uid: "1003", mute: true, by, at: 5 });
      expect(JSON.parse((await raw.hgetall(metaKey))["1003"] ?? "")).toMatchObject({ at: 5, by });
    });

    it("a channel nobody muted in is empty, as of 0-0", async () => {
      setUp();
      const ch = ids();
      expect(await store.getPstnSnapshot(ch.project, ch.channel)).toEqual(EMPTY);
    });

    it("answers every participant with who set its state when, as of the newest event", async () => {
      setUp();
      const ch = ids();
      await store.setMute({ ...ch, uid: "b", mute: true, by: "alice", at: 1000 });
      await store.setMute({ ...ch, uid: "a", mute: true, by: "bob", at: 2000 });
      await store.setMute({ ...ch, uid: "b", mute: false, by: "carol", at: 3000 });

      const entries = await raw.xrange(keys.pstnEvents(ch.project, ch.channel));
      const snapshot = await store.getPstnSnapshot(ch.project, ch.channel);
      expect(snapshot.asOfEventId).toBe(entries.at(-1)?.id);
      expect(byUid(snapshot)).toEqual({
        a: { uid: "a", mute: true, updatedAt: 2000, updatedBy: "bob", ...BY_HOST },
        b: { uid: "b", mute: false, updatedAt: 3000, updatedBy: "carol", ...BY_HOST },
      });
      // Another project's channel of the same name is another channel.
      expect(await store.getPstnSnapshot(`${ch.project}x`, ch.channel)).toEqual(EMPTY);
    });

    it("reads states other writers set without meta, and ignores what it cannot read", async () => {
      setUp();
      const ch = ids();
      await raw.hset(keys.pstnMute(ch.project, ch.channel), {
        old: "1",
        bad: "yes",
        ["__proto__"]: "0",
        constructor: "1",
        "not json": "0",
        "wrong types": "1",
      });
      await raw.hset(keys.pstnMuteMeta(ch.project, ch.channel), {
        "not json": "{",
        "wrong types": '{"at":"soon","by":7,"event_id":"1-0"}',
        stray: '{"at":1,"by":"x","event_id":"1-0"}',
      });
      const snapshot = await store.getPstnSnapshot(ch.project, ch.channel);
      expect(snapshot.asOfEventId).toBe("0-0");
      expect(byUid(snapshot)).toEqual({
        old: { uid: "old", mute: true, ...OFF_LINE },
        ["__proto__"]: { uid: "__proto__", mute: false, ...OFF_LINE },
        constructor: { uid: "constructor", mute: true, ...OFF_LINE },
        "not json": { uid: "not json", mute: false, ...OFF_LINE },
        "wrong types": { uid: "wrong types", mute: true, ...BY_HOST },
      });
    });

    it("reads keys of the wrong type as empty, and the mute script writes nothing over a meta of the wrong type", async () => {
      setUp();
      const ch = ids();
      await raw.setString(keys.pstnMute(ch.project, ch.channel), "x");
      await raw.setString(keys.pstnMuteMeta(ch.project, ch.channel), "x");
      await raw.setString(keys.pstnEvents(ch.project, ch.channel), "x");
      expect(await store.getPstnSnapshot(ch.project, ch.channel)).toEqual(EMPTY);

      const other = ids();
      await raw.setString(keys.pstnMuteMeta(other.project, other.channel), "not a hash");
      const change: MuteChange = { ...other, uid: "u", mute: true, by: "s", at: 1 };
      await expect(store.setMute(change)).rejects.toMatchObject({ kind: "unavailable" });
      expect(await raw.exists(keys.pstnMute(other.project, other.channel))).toBe(false);
      expect(await raw.exists(keys.pstnEvents(other.project, other.channel))).toBe(false);
      expect(await raw.get(keys.pstnMuteMeta(other.project, other.channel))).toBe("not a hash");
    });

    it("is consistent while 8 writers mute: each snapshot is the stream replayed up to its as_of_event_id", async () => {
      setUp();
      const ch = ids();
      const uids = ["u0", "u1", "u2", "u3", "u4", "u5"];
      const writers = Array.from({ length: 8 }, async (_, w) => {
        for (let i = 0; i < 25; i++) {
          await store.setMute({
            ...ch,
            uid: uids[(w + i) % uids.length] ?? "u0",
            mute: i % 2 === 0,
            by: `w${w}`,
            at: i,
          });
        }
      });
      const snapshots: PstnSnapshot[] = [];
      let writing = true;
      const reader = (async () => {
        while (writing) snapshots.push(await store.getPstnSnapshot(ch.project, ch.channel));
      })();
      await Promise.all(writers);
      writing = false;
      await reader;
      snapshots.push(await store.getPstnSnapshot(ch.project, ch.channel));

      const entries = await raw.xrange(keys.pstnEvents(ch.project, ch.channel));
      expect(entries).toHaveLength(200);
      expect(snapshots.at(-1)?.asOfEventId).toBe(entries.at(-1)?.id);
      for (const snapshot of snapshots) {
        const replayed: Record<string, unknown> = {};
        for (const { id, fields } of entries) {
          if (compareIds(id, snapshot.asOfEventId) > 0) break;
          const f = Object.fromEntries(fields);
          replayed[f.uid ?? ""] = {
            uid: f.uid,
            mute: f.mute === "1",
            updatedAt: Number(f.at),
            updatedBy: f.by,
            ...BY_HOST,
          };
        }
        expect(byUid(snapshot), snapshot.asOfEventId).toEqual(replayed);
      }
    });

    it("deleteChannel removes the meta hash too", async () => {
      setUp();
      const ch = ids();
      await store.createChannel({ ...ch, hostPassphrase: randomBytes(8).toString("hex") });
      await store.setMute({ ...ch, uid: "u", mute: true, by: "s", at: 1 });
      expect(await store.deleteChannel(ch.project, ch.channel)).toBe(4);
      expect(await raw.exists(keys.pstnMuteMeta(ch.project, ch.channel))).toBe(false);
      expect(await store.getPstnSnapshot(ch.project, ch.channel)).toEqual(EMPTY);
    });
  });
}
