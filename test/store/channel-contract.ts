/**
 * The store contract's part about the channel directory (`Store.channels`,
 * issue 20): the documented keys (`proj:{p}:channels`, `chan:{p/c}:channel`,
 * `proj:{p}:admin-events`), create/get/list/rotate/remove with their
 * outcomes, paging that is stable under concurrent creates and deletes,
 * expiry, one winner among concurrent creates of one id, the audit trail and
 * whiteboard info without secrets. Run inside the store contract
 * (./contract.ts) on every store and topology.
 */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { AdminStore, NewChannel, PassphraseRole } from "../../src/services/ports.js";
import type { ChannelSteps } from "../../src/store/channels/steps.js";
import type { KeySchema } from "../../src/store/schema/keys.js";
import type { ContractOptions, ContractSubject, RawAccess } from "./contract.js";

export function channelDirectoryContract(current: () => ContractSubject, options: ContractOptions): void {
  let store: AdminStore;
  let keys: KeySchema;
  let raw: RawAccess;
  let subject: ContractSubject;
  const setUp = () => {
    subject = current();
    ({ store, keys, raw } = subject);
  };

  describe("channel directory", () => {
    it("create writes the channel record, its index entry and the passphrase records; get shows no secret", async () => {
      setUp();
      const ch = newChannel();
      const [host, attendee] = ch.passphrases.map((p) => p.passphrase);
      expect(await store.channels.create(ch)).toEqual({ kind: "created" });

      expect(keys.channelIndex(ch.project)).toBe(`${keys.prefix}proj:{${ch.project}}:channels`);
      expect(keys.channelRecord(ch.project, ch.channel)).toBe(
        `${keys.prefix}chan:{${ch.project}/${ch.channel}}:channel`,
      );
      expect(await raw.zscore(keys.channelIndex(ch.project), ch.channel)).toBe(0);
      expect(await raw.hgetall(keys.channelRecord(ch.project, ch.channel))).toEqual({
        created_at: String(ch.createdAt),
        created_by: "alice",
        [`pass:${keys.passphraseDigestOf(ch.project, host ?? "")}`]: "host",
        [`pass:${keys.passphraseDigestOf(ch.project, attendee ?? "")}`]: "attendee",
      });
      expect(await store.lookupPassphrase(ch.project, host ?? "")).toEqual({
        project: ch.project,
        channel: ch.channel,
        role: "host",
      });
      expect(await store.lookupPassphrase(ch.project, attendee ?? "")).toMatchObject({ role: "attendee" });
      const info = await store.channels.get(ch.project, ch.channel);
      expect(info).toEqual({
        project: ch.project,
        channel: ch.channel,
        createdAt: ch.createdAt,
        createdBy: "alice",
        expireAt: undefined,
        roles: ["host", "attendee"],
      });
      expect(await store.channels.get(ch.project, "nobody")).toBeUndefined();
      expect(await store.channels.get(`other-${ch.project}`, ch.channel)).toBeUndefined();
    });

    it("create of an id that exists answers exists and writes nothing", async () => {
      setUp();
      const ch = newChannel();
      await store.channels.create(ch);
      const before = await channelKeys(ch.project);
      const again = newChannel({ project: ch.project, channel: ch.channel });
      expect(await store.channels.create(again)).toEqual({ kind: "exists" });
      expect(await channelKeys(ch.project)).toEqual(before);
      for (const p of again.passphrases) expect(await store.lookupPassphrase(ch.project, p.passphrase)).toBeUndefined();
    });

    it("a passphrase that opens another channel is refused with its role, and nothing is left behind", async () => {
      setUp();
      const a = newChannel();
      await store.channels.create(a);
      const taken = a.passphrases[0]?.passphrase ?? "";
      const b = newChannel({ project: a.project });
      const fresh = b.passphrases[0]?.passphrase ?? "";
      const attempt = {
        ...b,
        passphrases: [
          { role: "host" as const, passphrase: fresh },
          { role: "attendee" as const, passphrase: taken },
        ],
      };
      expect(await store.channels.create(attempt)).toEqual({ kind: "passphrase_taken", role: "attendee" });
      expect(await store.lookupPassphrase(b.project, fresh)).toBeUndefined();
      expect(await store.lookupPassphrase(a.project, taken)).toMatchObject({ channel: a.channel, role: "host" });
      expect(await store.channels.get(b.project, b.channel)).toBeUndefined();
      expect((await channelKeys(b.project, b.channel)).length).toBe(0);
      expect(await raw.zscore(keys.channelIndex(b.project), b.channel)).toBeUndefined();
      // One passphrase for both roles: taken (by the host), and nothing written.
      const same = secret();
      const twice = {
        ...b,
        passphrases: [
          { role: "host" as const, passphrase: same },
          { role: "attendee" as const, passphrase: same },
        ],
      };
      expect(await store.channels.create(twice)).toEqual({ kind: "passphrase_taken", role: "attendee" });
      expect(await store.lookupPassphrase(b.project, same)).toBeUndefined();
      expect((await channelKeys(b.project, b.channel)).length).toBe(0);
      // The id is free again.
      expect(await store.channels.create(b)).toEqual({ kind: "created" });
    });

    it("rotate: the new passphrase opens the channel, the old one no longer does", async () => {
      setUp();
      const ch = newChannel();
      await store.channels.create(ch);
      const [oldHost, attendee] = ch.passphrases.map((p) => p.passphrase);
      const next = secret();
      expect(await store.channels.rotate(ch.project, ch.channel, "host", next)).toEqual({ kind: "rotated" });
      expect(await store.lookupPassphrase(ch.project, oldHost ?? "")).toBeUndefined();
      expect(await store.lookupPassphrase(ch.project, next)).toEqual({
        project: ch.project,
        channel: ch.channel,
        role: "host",
      });
      expect(await store.lookupPassphrase(ch.project, attendee ?? "")).toMatchObject({ role: "attendee" });
      expect(Object.keys(await raw.hgetall(keys.channelRecord(ch.project, ch.channel))).sort()).toEqual(
        [
          "created_at",
          "created_by",
          `pass:${keys.passphraseDigestOf(ch.project, next)}`,
          `pass:${keys.passphraseDigestOf(ch.project, attendee ?? "")}`,
        ].sort(),
      );
      expect(await raw.exists(keys.passphrase(ch.project, oldHost ?? ""))).toBe(false);

      expect(await store.channels.rotate(ch.project, "nobody", "host", secret())).toEqual({ kind: "unknown" });
      const hostOnly = newChannel({ project: ch.project, roles: ["host"] });
      await store.channels.create(hostOnly);
      expect(await store.channels.rotate(hostOnly.project, hostOnly.channel, "attendee", secret())).toEqual({
        kind: "unknown",
      });
      // Another channel's passphrase (of the project), or one of this channel's own: taken, and nothing changes.
      const other = hostOnly.passphrases[0]?.passphrase ?? "";
      expect(await store.channels.rotate(ch.project, ch.channel, "attendee", other)).toEqual({
        kind: "passphrase_taken",
      });
      expect(await store.channels.rotate(ch.project, ch.channel, "attendee", next)).toEqual({
        kind: "passphrase_taken",
      });
      expect(await store.lookupPassphrase(ch.project, other)).toMatchObject({ channel: hostOnly.channel });
      expect(await store.lookupPassphrase(ch.project, attendee ?? "")).toMatchObject({ role: "attendee" });
      expect((await store.channels.get(ch.project, ch.channel))?.roles).toEqual(["host", "attendee"]);
    });

    it("two rotations of one role at once: the old passphrase stops, both new ones open and are listed", async () => {
      setUp();
      const ch = newChannel({ roles: ["host"] });
      await store.channels.create(ch);
      const [x, y] = [secret(), secret()];
      const outcomes = await Promise.all([
        store.channels.rotate(ch.project, ch.channel, "host", x),
        store.channels.rotate(ch.project, ch.channel, "host", y),
      ]);
      expect(outcomes).toEqual([{ kind: "rotated" }, { kind: "rotated" }]);
      expect(await store.lookupPassphrase(ch.project, ch.passphrases[0]?.passphrase ?? "")).toBeUndefined();
      const fields = await raw.hgetall(keys.channelRecord(ch.project, ch.channel));
      for (const p of [x, y]) {
        expect(await store.lookupPassphrase(ch.project, p)).toMatchObject({ role: "host" });
        expect(fields[`pass:${keys.passphraseDigestOf(ch.project, p)}`]).toBe("host");
      }
      expect(await store.channels.remove(ch.project, ch.channel)).toBe(true);
      for (const p of [x, y]) expect(await store.lookupPassphrase(ch.project, p)).toBeUndefined();
    });

    it("remove takes every key of the channel, its passphrase records and its index entry", async () => {
      setUp();
      const ch = newChannel();
      const neighbour = newChannel({ project: ch.project });
      await store.channels.create(ch);
      await store.channels.create(neighbour);
      await store.setMute({ project: ch.project, channel: ch.channel, uid: "u", mute: true, by: "s", at: 1 });
      const passKeys = ch.passphrases.map((p) => keys.passphrase(ch.project, p.passphrase));
      expect((await channelKeys(ch.project, ch.channel)).length).toBe(4); // record, mute, meta, events

      expect(await store.channels.remove(ch.project, ch.channel)).toBe(true);
      expect(await channelKeys(ch.project, ch.channel)).toEqual([]);
      for (const key of passKeys) expect(await raw.exists(key)).toBe(false);
      expect(await raw.zscore(keys.channelIndex(ch.project), ch.channel)).toBeUndefined();
      expect(await store.channels.get(ch.project, ch.channel)).toBeUndefined();
      expect(await store.channels.remove(ch.project, ch.channel)).toBe(false);
      expect(await store.channels.get(neighbour.project, neighbour.channel)).toBeDefined();
      expect(await store.lookupPassphrase(neighbour.project, neighbour.passphrases[0]?.passphrase ?? "")).toBeDefined();
    });

    it("list pages by id, in byte order, and never repeats or skips a channel while others come and go", async () => {
      setUp();
      const project = `proj-${hex()}`;
      const stay = [
        "a",
        "b b",
        "c/x",
        "z",
        "ä",
        "日本",
        ...Array.from({ length: 24 }, (_, i) => `m${String(i).padStart(2, "0")}`),
      ];
      const going = Array.from({ length: 20 }, (_, i) => `m${String(i).padStart(2, "0")}-going`);
      for (const channel of [...stay, ...going]) await store.channels.create(newChannel({ project, channel }));
      const seen: string[] = [];
      let after: string | undefined;
      let round = 0;
      do {
        const page = await store.channels.list(project, 4, after);
        expect(page.channels.length).toBeLessThanOrEqual(4);
        seen.push(...page.channels.map((c) => c.channel));
        after = page.next;
        // Between pages: some channels go, new ones come (before and after the cursor).
        const gone = going[round];
        await Promise.all([
          gone === undefined ? Promise.resolve() : store.channels.remove(project, gone),
          store.channels.create(newChannel({ project, channel: `a-new-${round}` })),
          store.channels.create(newChannel({ project, channel: `y-new-${round}` })),
        ]);
        round++;
      } while (after !== undefined);
      const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
      expect(seen).toEqual([...seen].sort(byBytes));
      expect(new Set(seen).size).toBe(seen.length);
      for (const channel of stay) expect(seen.filter((c) => c === channel)).toHaveLength(1);
      expect((await store.channels.list(`proj-${hex()}`, 10, undefined)).channels).toEqual([]);
    });

    it("of 50 concurrent creates of one id exactly one is created, and only its passphrases open it", async () => {
      setUp();
      const project = `proj-${hex()}`;
      const attempts = Array.from({ length: 50 }, () => newChannel({ project, channel: "contested" }));
      const outcomes = await Promise.all(attempts.map((a) => store.channels.create(a)));
      expect(outcomes.filter((o) => o.kind === "created")).toHaveLength(1);
      expect(outcomes.filter((o) => o.kind === "exists")).toHaveLength(49);
      const winner = attempts[outcomes.findIndex((o) => o.kind === "created")];
      for (const attempt of attempts) {
        for (const p of attempt.passphrases) {
          const found = await store.lookupPassphrase(project, p.passphrase);
          if (attempt === winner) expect(found).toMatchObject({ channel: "contested", role: p.role });
          else expect(found).toBeUndefined();
        }
      }
      expect((await store.channels.list(project, 10, undefined)).channels.map((c) => c.channel)).toEqual(["contested"]);
    });

    it("a channel created with an expiry stops opening then, and its keys go", async () => {
      setUp();
      // The store's clock: the in-memory store's may have been moved forward by earlier tests.
      const ch = newChannel({ expireAt: (store.channels as ChannelSteps).now() + 1500 });
      await store.channels.create(ch);
      await store.setMute({ project: ch.project, channel: ch.channel, uid: "u", mute: true, by: "s", at: 1 });
      const host = ch.passphrases[0]?.passphrase ?? "";
      expect(await store.lookupPassphrase(ch.project, host)).toBeDefined();
      expect((await store.channels.get(ch.project, ch.channel))?.expireAt).toBe(ch.expireAt);
      for (const key of [...(await channelKeys(ch.project, ch.channel)), keys.passphrase(ch.project, host)]) {
        expect(await raw.ttl(key), key).toBeGreaterThan(0);
      }
      if (options.hasClock && subject.advanceClock) subject.advanceClock(1500);
      else await new Promise((r) => setTimeout(r, 1700));
      expect(await store.lookupPassphrase(ch.project, host)).toBeUndefined();
      expect(await store.channels.get(ch.project, ch.channel)).toBeUndefined();
      expect((await store.channels.list(ch.project, 10, undefined)).channels).toEqual([]);
      expect(await channelKeys(ch.project, ch.channel)).toEqual([]);
      for (const p of ch.passphrases) expect(await raw.exists(keys.passphrase(ch.project, p.passphrase))).toBe(false);
      // The index member cannot expire: the doctor removes it.
      const report = await store.channelDoctor(ch.project, { graceMs: 0 });
      expect(report.findings).toEqual([
        { problem: "index_without_record", project: ch.project, channel: ch.channel, repair: "removed from the index" },
      ]);
      expect(await raw.zscore(keys.channelIndex(ch.project), ch.channel)).toBeUndefined();
    });

    it("audit appends who, what, when to the project's admin stream", async () => {
      setUp();
      const project = `proj-${hex()}`;
      await store.channels.audit(project, {
        at: 1_700_000_000_000,
        by: "alice",
        action: "channel.create",
        channel: "c1",
      });
      await store.channels.audit(project, {
        at: 1_700_000_000_001,
        by: "bob",
        action: "whiteboard.set",
        detail: "sdk_token",
      });
      const key = keys.adminEvents(project);
      expect(key).toBe(`${keys.prefix}proj:{${project}}:admin-events`);
      expect((await raw.xrange(key)).map((e) => e.fields)).toEqual([
        [
          ["at", "1700000000000"],
          ["by", "alice"],
          ["action", "channel.create"],
          ["channel", "c1"],
        ],
        [
          ["at", "1700000000001"],
          ["by", "bob"],
          ["action", "whiteboard.set"],
          ["detail", "sdk_token"],
        ],
      ]);
    });

    it("whiteboardInfo shows region, credential kind, conversion QPS and set at/by, never a secret", async () => {
      setUp();
      const project = `proj-${hex()}`;
      expect(await store.channels.whiteboardInfo(project)).toBeUndefined();
      const token = `NETLESSSDK_${hex()}`;
      await store.setWhiteboard(project, { region: "sg", credentials: { sdkToken: token } }, { by: "alice", at: 5 });
      const info = await store.channels.whiteboardInfo(project);
      expect(info).toEqual({
        region: "sg",
        credential: "sdk_token",
        conversionQps: 1,
        updatedAt: 5,
        updatedBy: "alice",
      });
      expect(JSON.stringify(info)).not.toContain("NETLESSSDK");
      const [ak, sk] = [`ak-${hex()}`, `sk-${hex()}`];
      await store.setWhiteboard(project, {
        region: "eu",
        credentials: { accessKey: ak, secretKey: sk },
        conversionQps: 8,
      });
      const info2 = await store.channels.whiteboardInfo(project);
      expect(info2).toEqual({
        region: "eu",
        credential: "access_key",
        conversionQps: 8,
        updatedAt: undefined,
        updatedBy: undefined,
      });
      for (const s of [ak.slice(0, 5), sk.slice(0, 5)]) expect(JSON.stringify(info2)).not.toContain(s);
      // The secret key is sealed (the store contract's whiteboard cases); the access key names the pair.
      const record = await raw.hgetall(keys.whiteboard(project));
      expect(record).toEqual({
        enabled: "1",
        region: "eu",
        access_key: ak,
        secret_key: expect.stringMatching(/^v1\./),
        conversion_qps: "8",
      });
      expect(JSON.stringify(record)).not.toContain(sk);
    });

    it("the CLI's createChannel indexes the channel and deleteChannel removes it without a scan's help", async () => {
      setUp();
      const ch = { project: `proj-${hex()}`, channel: "cli" };
      const [h, a] = [secret(), secret()];
      await store.createChannel({ ...ch, hostPassphrase: h, attendeePassphrase: a });
      expect(await store.channels.get(ch.project, ch.channel)).toMatchObject({
        createdBy: undefined,
        roles: ["host", "attendee"],
      });
      expect((await raw.hgetall(keys.channelRecord(ch.project, ch.channel))).pending).toBeUndefined();
      await store.createChannel({ ...ch, hostPassphrase: a });
      expect((await store.channels.get(ch.project, ch.channel))?.roles).toEqual(["host"]);
      expect(await store.lookupPassphrase(ch.project, h)).toBeUndefined();
      expect(await store.deleteChannel(ch.project, ch.channel)).toBe(1);
      expect(await channelKeys(ch.project)).toEqual([]);
    });
  });

  /** Every key of the project (or of one channel of it): its index, admin stream, channel records and data. */
  async function channelKeys(project: string, channel?: string): Promise<string[]> {
    const all = await raw.keysUnder(keys.prefix);
    const tag = channel === undefined ? `{${project}/` : `{${project}/${channel}}`;
    return all.filter((k) => k.includes(tag) || (channel === undefined && k.includes(`proj:{${project}}:channels`)));
  }
}

function hex(): string {
  return randomBytes(6).toString("hex");
}

export function secret(): string {
  return randomBytes(16).toString("base64url");
}

/** A new channel of a fresh project (or the given one) with fresh passphrases. */
export function newChannel(
  over: { project?: string; channel?: string; expireAt?: number; roles?: PassphraseRole[] } = {},
): NewChannel {
  return {
    project: over.project ?? `proj-${hex()}`,
    channel: over.channel ?? `chan ${hex()}/x`,
    passphrases: (over.roles ?? ["host", "attendee"]).map((role) => ({ role, passphrase: secret() })),
    createdBy: "alice",
    createdAt: 1_700_000_000_000,
    expireAt: over.expireAt,
  };
}
