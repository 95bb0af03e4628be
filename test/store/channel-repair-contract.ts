/**
 * The store contract's part about the crash windows of channel writes and
 * their repairs (issue 20): a writer that dies between two steps (a test
 * seam: the directory's steps over primitives that fail from a chosen call
 * on, as a killed process would stop), then `channelDoctor` finds and repairs
 * what it left. Throughout, no passphrase ever opens a channel `list` does not
 * show. And `reindexChannels` indexes records written the old way, resumably.
 * Run inside the store contract (./contract.ts) on every store and topology.
 */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { AdminStore } from "../../src/services/ports.js";
import type { ChannelPrimitives } from "../../src/store/channels/primitives.js";
import { ChannelSteps } from "../../src/store/channels/steps.js";
import type { KeySchema } from "../../src/store/schema/keys.js";
import { newChannel, secret } from "./channel-contract.js";
import type { ContractSubject, RawAccess } from "./contract.js";

/** The directory of `store` as a writer that dies at the `nth` (0-based) call of `method`. */
function dyingWriter(store: AdminStore, method: keyof ChannelPrimitives, nth = 0): ChannelSteps {
  const { primitives, whiteboards, keys, now } = store.channels as ChannelSteps;
  let calls = 0;
  let dead = false;
  const wrapped = new Proxy(primitives, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      return async (...args: unknown[]) => {
        if (!dead && property === method && calls++ === nth) dead = true;
        if (dead) throw new Error("the writer died");
        return value.apply(target, args);
      };
    },
  });
  return new ChannelSteps(wrapped, whiteboards, keys, now);
}

export function channelRepairContract(current: () => ContractSubject): void {
  let store: AdminStore;
  let keys: KeySchema;
  let raw: RawAccess;
  const setUp = () => {
    ({ store, keys, raw } = current());
  };

  /** Every passphrase given that opens a channel opens one that `list` shows. */
  async function noUnlistedChannel(project: string, passphrases: readonly string[]): Promise<void> {
    const listed = new Set<string>();
    let after: string | undefined;
    do {
      const page = await store.channels.list(project, 100, after);
      for (const c of page.channels) listed.add(c.channel);
      after = page.next;
    } while (after !== undefined);
    for (const passphrase of passphrases) {
      const record = await store.lookupPassphrase(project, passphrase);
      if (record !== undefined) expect(listed.has(record.channel), `${record.channel} is listed`).toBe(true);
    }
  }

  const keysOf = async (project: string, channel: string) =>
    (await raw.keysUnder(keys.prefix)).filter((k) => k.includes(`{${project}/${channel}}`));

  describe("channel writes interrupted, and the doctor", () => {
    it("a create that died after its first passphrase record is listed, then undone", async () => {
      setUp();
      const ch = newChannel();
      const all = ch.passphrases.map((p) => p.passphrase);
      await expect(dyingWriter(store, "claimPassphrase", 1).create(ch)).rejects.toThrow("the writer died");
      expect(await store.lookupPassphrase(ch.project, all[0] ?? "")).toBeDefined();
      await noUnlistedChannel(ch.project, all);
      // Younger than the grace: taken to be under way, left alone.
      expect((await store.channelDoctor(ch.project)).findings).toEqual([]);

      const report = await store.channelDoctor(ch.project, { graceMs: 0 });
      expect(report.findings).toEqual([
        { problem: "interrupted_create", project: ch.project, channel: ch.channel, repair: "undone" },
      ]);
      for (const p of all) expect(await store.lookupPassphrase(ch.project, p)).toBeUndefined();
      await noUnlistedChannel(ch.project, all);
      expect(await keysOf(ch.project, ch.channel)).toEqual([]);
      expect(await store.channels.create(ch)).toEqual({ kind: "created" });
      expect((await store.channelDoctor(ch.project, { graceMs: 0 })).findings).toEqual([]);
    });

    it("a create that died before indexing opens nothing, and is undone", async () => {
      setUp();
      const ch = newChannel();
      await expect(dyingWriter(store, "index").create(ch)).rejects.toThrow("the writer died");
      await noUnlistedChannel(
        ch.project,
        ch.passphrases.map((p) => p.passphrase),
      );
      const report = await store.channelDoctor(ch.project, { graceMs: 0 });
      expect(report.findings.map((f) => f.problem)).toEqual(["interrupted_create"]);
      expect(await keysOf(ch.project, ch.channel)).toEqual([]);
    });

    it("a remove that died after the passphrase records is still listed, opens nothing, and is finished", async () => {
      setUp();
      const ch = newChannel();
      await store.channels.create(ch);
      await store.setMute({ project: ch.project, channel: ch.channel, uid: "u", mute: true, by: "s", at: 1 });
      await expect(dyingWriter(store, "removeChannelData").remove(ch.project, ch.channel)).rejects.toThrow();
      const all = ch.passphrases.map((p) => p.passphrase);
      for (const p of all) expect(await store.lookupPassphrase(ch.project, p)).toBeUndefined();
      expect((await store.channels.list(ch.project, 10, undefined)).channels).toHaveLength(1);
      const report = await store.channelDoctor(ch.project, { graceMs: 0 });
      expect(report.findings.map((f) => f.problem)).toEqual(["interrupted_delete"]);
      expect(await keysOf(ch.project, ch.channel)).toEqual([]);
      expect(await raw.zscore(keys.channelIndex(ch.project), ch.channel)).toBeUndefined();
    });

    it("a rotation that died before releasing the old record leaves both listed, and is finished", async () => {
      setUp();
      const ch = newChannel();
      await store.channels.create(ch);
      const old = ch.passphrases[0]?.passphrase ?? "";
      const next = secret();
      await expect(
        dyingWriter(store, "releasePassphrase").rotate(ch.project, ch.channel, "host", next),
      ).rejects.toThrow();
      await noUnlistedChannel(ch.project, [old, next]);
      const report = await store.channelDoctor(ch.project, { graceMs: 0 });
      expect(report.findings.map((f) => f.problem)).toEqual(["interrupted_rotate"]);
      expect(await store.lookupPassphrase(ch.project, old)).toBeUndefined();
      expect(await store.lookupPassphrase(ch.project, next)).toMatchObject({ role: "host" });
      expect((await store.channels.get(ch.project, ch.channel))?.roles).toEqual(["host", "attendee"]);
    });

    it("a rotation that died before claiming the new record drops the new hash", async () => {
      setUp();
      const ch = newChannel();
      await store.channels.create(ch);
      const next = secret();
      await expect(
        dyingWriter(store, "claimPassphrase").rotate(ch.project, ch.channel, "host", next),
      ).rejects.toThrow();
      const report = await store.channelDoctor(ch.project, { graceMs: 0 });
      expect(report.findings.map((f) => f.problem).sort()).toEqual(["interrupted_rotate", "stale_passphrase"]);
      expect(await store.lookupPassphrase(ch.project, ch.passphrases[0]?.passphrase ?? "")).toMatchObject({
        role: "host",
      });
      expect(await store.lookupPassphrase(ch.project, next)).toBeUndefined();
      const fields = await raw.hgetall(keys.channelRecord(ch.project, ch.channel));
      expect(Object.keys(fields).filter((f) => f.startsWith("pass:"))).toHaveLength(2);
      expect(fields.pending).toBeUndefined();
    });

    it("a passphrase record its channel does not list (another writer's) is indexed, then removable", async () => {
      setUp();
      const ch = newChannel({ roles: ["host"] });
      await store.channels.create(ch);
      const extra = secret();
      await raw.hset(keys.passphrase(ch.project, extra), {
        project: ch.project,
        channel: ch.channel,
        role: "attendee",
      });
      const lonely = { project: ch.project, channel: `lonely-${hex()}` };
      const lonelyPass = secret();
      await raw.hset(keys.passphrase(lonely.project, lonelyPass), { ...lonely, role: "host" });
      await expect(noUnlistedChannel(ch.project, [lonelyPass])).rejects.toThrow();

      const report = await store.channelDoctor(ch.project, { graceMs: 0 });
      expect(report.findings.map((f) => [f.problem, f.channel, f.repair]).sort()).toEqual(
        [
          ["unindexed_passphrase", ch.channel, "indexed"],
          ["unindexed_passphrase", lonely.channel, "indexed"],
        ].sort(),
      );
      await noUnlistedChannel(ch.project, [lonelyPass, extra]);
      expect((await store.channels.get(ch.project, ch.channel))?.roles).toEqual(["host", "attendee"]);
      expect(await store.channels.remove(ch.project, ch.channel)).toBe(true);
      expect(await store.lookupPassphrase(ch.project, extra)).toBeUndefined();
    });
  });

  describe("reindex", () => {
    it("indexes channels written the old way (raw passphrase records), resumably, and then they can be removed", async () => {
      setUp();
      const project = `proj-${hex()}`;
      const channels = ["one", "two", "three"];
      const passes = new Map<string, string[]>();
      for (const channel of channels) {
        const [h, a] = [secret(), secret()];
        await raw.hset(keys.passphrase(project, h), { project, channel, role: "host" });
        await raw.hset(keys.passphrase(project, a), { project, channel, role: "attendee" });
        passes.set(channel, [h, a]);
      }
      expect((await store.channels.list(project, 10, undefined)).channels).toEqual([]);

      let report = await store.reindexChannels({ batch: 3, pauseMs: 0, maxSteps: 1 });
      let steps = 1;
      while (report.cursor !== "0") {
        report = await store.reindexChannels({ batch: 3, pauseMs: 0, maxSteps: 1, from: report.cursor });
        steps++;
      }
      expect(steps).toBeGreaterThan(1);
      const page = await store.channels.list(project, 10, undefined);
      expect(page.channels.map((c) => [c.channel, c.roles, c.createdAt])).toEqual(
        [...channels].sort().map((c) => [c, ["host", "attendee"], undefined]),
      );
      await noUnlistedChannel(project, [...passes.values()].flat());
      expect(await store.channels.remove(project, "two")).toBe(true);
      for (const p of passes.get("two") ?? []) expect(await store.lookupPassphrase(project, p)).toBeUndefined();
      expect((await store.reindexChannels({ pauseMs: 0 })).cursor).toBe("0");
      expect((await store.channels.list(project, 10, undefined)).channels.map((c) => c.channel)).toEqual([
        "one",
        "three",
      ]);
    });
  });
}

function hex(): string {
  return randomBytes(6).toString("hex");
}
