/**
 * The store contract's part about the phone line (src/services/pstn/line-ports.ts):
 * the gateway's reports with their order and idempotence, the policy, mute
 * all, hands, roster syncs and the presence leases, each checked through the
 * snapshot and the raw event stream. Run inside the store contract
 * (./contract.ts) on every store, with CONTRACT_LINE_LIMITS.
 */
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import type { AdminStore, LineChange, LineLimits, LineReport, ReportAnswer } from "../../src/services/ports.js";
import type { PstnParticipantState } from "../../src/services/pstn/snapshot.js";
import type { KeySchema } from "../../src/store/schema/keys.js";
import type { ContractSubject, RawAccess } from "./contract.js";

/** The line's limits of every contract store: a short lease, a small line. */
export const CONTRACT_LINE_LIMITS: LineLimits = { leaseMs: 400, maxLine: 20 };

function ids(): { project: string; channel: string } {
  const word = () => randomBytes(8).toString("hex");
  return { project: `proj-${word()}`, channel: `line ${word()}/s` };
}

export function lineContract(current: () => ContractSubject): void {
  let store: AdminStore;
  let keys: KeySchema;
  let raw: RawAccess;
  let subject: ContractSubject;
  const setUp = () => {
    subject = current();
    ({ store, keys, raw } = subject);
  };
  /** Lets `ms` pass by the store's own clock. */
  const pass = async (ms: number) => {
    if (subject.advanceClock) subject.advanceClock(ms);
    else await sleep(ms);
  };
  /** Lets every lease given so far run out. */
  const passLease = () => pass(CONTRACT_LINE_LIMITS.leaseMs + 100);

  const channelOf = () => {
    const ch = ids();
    let seq = 0;
    const report = (uid: string, change: LineChange, sequence = ++seq): Promise<ReportAnswer> =>
      store.line.report({
        ...ch,
        uid,
        change,
        sequence: String(sequence),
        by: "gw",
        at: 1_700_000_000_000 + sequence,
      } satisfies LineReport);
    const join = (uid: string, sequence?: number) =>
      report(uid, { kind: "join", callerId: "***1234", joinedAt: 1_700_000_000_000 }, sequence);
    const state = async (): Promise<Record<string, PstnParticipantState>> =>
      Object.fromEntries((await store.getPstnSnapshot(ch.project, ch.channel)).participants.map((p) => [p.uid, p]));
    const events = async () =>
      (await raw.xrange(keys.pstnEvents(ch.project, ch.channel))).map((e) => Object.fromEntries(e.fields));
    return { ch, report, join, state, events, nextSeq: () => ++seq };
  };

  describe("the phone line", () => {
    it("a join puts the participant on the line with an event; the same report again, or an older one, changes nothing", async () => {
      setUp();
      const line = channelOf();
      const joined = await line.join("1001", 5);
      expect(joined.outcome).toBe("applied");
      expect(joined.participant).toMatchObject({ uid: "1001", onLine: true, mute: false, callerId: "***1234" });
      expect((await line.state())["1001"]).toMatchObject({ onLine: true, joinedAt: 1_700_000_000_000, hand: false });
      expect(await line.events()).toEqual([
        { kind: "join", uid: "1001", mute: "0", by: "gw", at: "1700000000005", caller: "***1234" },
      ]);

      expect((await line.join("1001", 5)).outcome).toBe("duplicate");
      expect((await line.report("1001", { kind: "leave" }, 4)).outcome).toBe("stale");
      expect(await line.events()).toHaveLength(1);
      expect((await line.state())["1001"]?.onLine).toBe(true);
    });

    it("keypad mutes and hands show in the state and as events; a leave takes the participant off, keeping the mute state", async () => {
      setUp();
      const line = channelOf();
      await line.join("7");
      expect((await line.report("7", { kind: "keypad_mute", mute: true })).participant).toMatchObject({
        mute: true,
        setter: "self",
      });
      expect((await line.report("7", { kind: "keypad_mute", mute: true })).outcome).toBe("unchanged");
      expect((await line.report("7", { kind: "hand", raised: true })).participant.hand).toBe(true);
      expect((await line.state())["7"]).toMatchObject({ mute: true, setter: "self", hand: true, onLine: true });
      expect((await line.report("7", { kind: "leave" })).outcome).toBe("applied");
      const after = (await line.state())["7"];
      expect(after).toMatchObject({ onLine: false, mute: true });
      expect(after?.hand).toBeUndefined();
      const kinds = (await line.events()).map((e) => [
        e.kind ?? "mute",
        e.mute,
        e.setter ?? "",
        e.hand ?? "",
        e.reason ?? "",
      ]);
      expect(kinds).toEqual([
        ["join", "0", "", "", ""],
        ["mute", "1", "self", "", ""],
        ["hand", "1", "self", "1", ""],
        ["leave", "1", "", "", "reported"],
      ]);
      // Off the line: nothing but a join is taken.
      expect((await line.report("7", { kind: "keypad_mute", mute: false })).outcome).toBe("not_on_line");
    });

    it("a leave that overtakes its join keeps the late join out", async () => {
      setUp();
      const line = channelOf();
      expect((await line.report("9", { kind: "leave" }, 20)).outcome).toBe("unchanged");
      expect((await line.join("9", 10)).outcome).toBe("stale");
      expect((await line.state())["9"]).toBeUndefined();
      expect(await line.events()).toEqual([]);
    });

    it("mute on join mutes a newcomer by policy, and the answer tells the gateway", async () => {
      setUp();
      const line = channelOf();
      const policy = await store.line.setPolicy({ ...line.ch, by: "host", at: 1, muteOnJoin: true });
      expect(policy).toEqual({ muteOnJoin: true, allowSelfUnmute: true });
      const joined = await line.join("42");
      expect(joined.participant).toMatchObject({ mute: true, setter: "policy", onLine: true });
      const events = await line.events();
      expect(events.map((e) => [e.kind ?? "mute", e.mute, e.setter ?? ""])).toEqual([
        ["policy", "0", ""],
        ["join", "1", "policy"],
        ["mute", "1", "policy"],
      ]);
      expect((await store.getPstnSnapshot(line.ch.project, line.ch.channel)).policy).toEqual(policy);
    });

    it("with allow_self_unmute false a keypad unmute of a host mute is refused and changes nothing; a self mute still unmutes", async () => {
      setUp();
      const line = channelOf();
      await store.line.setPolicy({ ...line.ch, by: "host", at: 1, allowSelfUnmute: false });
      await line.join("a");
      await line.join("b");
      await store.setMute({ ...line.ch, uid: "a", mute: true, by: "host", at: 2 });
      await line.report("b", { kind: "keypad_mute", mute: true });
      const before = await line.events();
      const refused = await line.report("a", { kind: "keypad_mute", mute: false });
      expect(refused.outcome).toBe("refused");
      expect(refused.participant).toMatchObject({ mute: true, setter: "host" });
      expect(await line.events()).toEqual(before);
      expect((await line.report("b", { kind: "keypad_mute", mute: false })).outcome).toBe("applied");
    });

    it("mute all mutes everyone on the line but the exceptions in one step, with a summary event, and can set the policy", async () => {
      setUp();
      const line = channelOf();
      for (const uid of ["1", "2", "3", "4"]) await line.join(uid);
      await line.report("4", { kind: "keypad_mute", mute: true });
      const answer = await store.line.muteAll({
        ...line.ch,
        by: "host",
        at: 3,
        mute: true,
        except: ["1"],
        muteOnJoin: true,
      });
      // 4 had muted itself: the host's mute takes it over, so allow_self_unmute applies to it.
      expect(answer).toMatchObject({ changed: 3, unchanged: 1, policy: { muteOnJoin: true, allowSelfUnmute: true } });
      const state = await line.state();
      expect(Object.values(state).map((p) => [p.uid, p.mute, p.setter ?? ""])).toEqual(
        expect.arrayContaining([
          ["1", false, ""],
          ["2", true, "host"],
          ["3", true, "host"],
          ["4", true, "host"],
        ]),
      );
      const tail = (await line.events()).slice(-5);
      expect(tail.map((e) => e.kind ?? `mute ${e.uid} all=${e.all}`)).toEqual(
        expect.arrayContaining(["policy", "mute 2 all=1", "mute 3 all=1", "mute 4 all=1"]),
      );
      expect(tail.at(-1)).toMatchObject({ kind: "mute_all", uid: "", mute: "1", by: "host", changed: "3" });
      expect(answer.eventId).toBe((await raw.xrange(keys.pstnEvents(line.ch.project, line.ch.channel))).at(-1)?.id);
      // The newcomer is muted by the policy mute all set.
      expect((await line.join("5")).participant.mute).toBe(true);
    });

    it("hands are lowered by the host, one or all", async () => {
      setUp();
      const line = channelOf();
      for (const uid of ["x", "y", "z"]) {
        await line.join(uid);
        await line.report(uid, { kind: "hand", raised: true });
      }
      expect(await store.line.lowerHands({ ...line.ch, by: "host", at: 4, uids: ["x", "nobody"] })).toBe(1);
      expect(await store.line.lowerHands({ ...line.ch, by: "host", at: 5, uids: [] })).toBe(2);
      expect(await store.line.lowerHands({ ...line.ch, by: "host", at: 6, uids: [] })).toBe(0);
      expect(Object.values(await line.state()).every((p) => p.hand === false)).toBe(true);
      expect((await line.events()).filter((e) => e.kind === "hand" && e.setter === "host")).toHaveLength(3);
    });

    it("a roster sync joins the listed, and takes off those not listed unless a newer report of theirs came first", async () => {
      setUp();
      const line = channelOf();
      await line.join("old", 1);
      await line.join("newer", 50);
      const members = [
        { uid: "fresh", callerId: "", joinedAt: 7 },
        { uid: "old", callerId: "***1234", joinedAt: 1 },
      ];
      expect(await store.line.sync({ ...line.ch, by: "gw", at: 9, sequence: "10", members })).toEqual({
        joined: 1,
        left: 0,
      });
      const gone = await store.line.sync({ ...line.ch, by: "gw", at: 9, sequence: "60", members: members.slice(0, 1) });
      expect(gone).toEqual({ joined: 0, left: 2 });
      const state = await line.state();
      expect(Object.keys(state).filter((uid) => state[uid]?.onLine)).toEqual(["fresh"]);
      expect((await line.events()).filter((e) => e.kind === "leave").map((e) => e.reason)).toEqual(["sync", "sync"]);
    });

    it("a participant nobody reports in time is marked left by the sweep, once; one reported again stays", async () => {
      setUp();
      const line = channelOf();
      await line.join("ghost");
      await line.join("alive");
      await pass(CONTRACT_LINE_LIMITS.leaseMs / 2);
      await line.report("alive", { kind: "presence" });
      await pass(CONTRACT_LINE_LIMITS.leaseMs / 2 + 100);
      // Two sweeps at once, as two instances would: the lease ends once.
      const [a, b] = await Promise.all([store.line.expireLeases(100), store.line.expireLeases(100)]);
      expect(a.left + b.left).toBeGreaterThanOrEqual(1);
      const state = await line.state();
      // Off the line and never muted: not in the state any more.
      expect(state.ghost).toBeUndefined();
      expect(state.alive?.onLine).toBe(true);
      expect((await line.events()).filter((e) => e.kind === "leave")).toEqual([
        expect.objectContaining({ uid: "ghost", reason: "lease", by: "" }),
      ]);
      await passLease();
      await store.line.expireLeases(100);
      expect((await line.state()).alive).toBeUndefined();
    });

    it("a full line refuses a join and adds nobody", async () => {
      setUp();
      const line = channelOf();
      for (let i = 0; i < CONTRACT_LINE_LIMITS.maxLine; i++) expect((await line.join(`p${i}`)).outcome).toBe("applied");
      const refused = await line.join("one-too-many");
      expect(refused.outcome).toBe("line_full");
      expect(refused.participant.onLine).toBe(false);
      expect((await line.state())["one-too-many"]).toBeUndefined();
    });

    it("the line's keys carry the channel's expiry, and deleting the channel removes them", async () => {
      setUp();
      const line = channelOf();
      await store.line.report({
        ...line.ch,
        uid: "e",
        sequence: "1",
        change: { kind: "join", callerId: "", joinedAt: 1 },
        by: "gw",
        at: 1,
        // Far off: the in-memory store's clock runs ahead of the wall clock in the contract.
        expireAt: Date.now() + 10 * 365 * 86_400_000,
      });
      for (const key of [
        keys.pstnLine(line.ch.project, line.ch.channel),
        keys.pstnLeases(line.ch.project, line.ch.channel),
      ]) {
        const ttl = await raw.ttl(key);
        expect(ttl).toBeGreaterThan(0);
      }
      await store.deleteChannel(line.ch.project, line.ch.channel);
      expect(await raw.exists(keys.pstnLine(line.ch.project, line.ch.channel))).toBe(false);
      expect(await raw.exists(keys.pstnLeases(line.ch.project, line.ch.channel))).toBe(false);
    });
  });
}
