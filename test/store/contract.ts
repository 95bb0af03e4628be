/**
 * The store contract: what every AdminStore must do, checked against the
 * documented records (docs/architecture.md, "Redis schema") read and written
 * raw, the way other services see them. Run by store-contract.test.ts for
 * the Redis and the in-memory store.
 */
import { randomBytes } from "node:crypto";
import type { Cluster, Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Failure } from "../../src/services/failure.js";
import type { AdminStore, ConversionTaskRecord, MuteChange } from "../../src/services/ports.js";
import { silentLogger } from "../../src/log.js";
import { keyRing } from "../../src/secrets/key-ring.js";
import { open, seal } from "../../src/secrets/sealed-fields.js";
import type { AdminPrimitives } from "../../src/store/checked-admin.js";
import { hashPassphrase, type KeySchema } from "../../src/store/schema/keys.js";
import { createRedisStore, type RedisConnectionOptions } from "../../src/store/redis/store.js";
import type { ReplicaAck } from "../../src/store/redis/replica-ack.js";
import { freePort } from "../harness/redis-server.js";
import { channelDirectoryContract } from "./channel-contract.js";
import { channelRepairContract } from "./channel-repair-contract.js";
import { conversionFollowContract } from "./conversion-contract.js";
import { conversionQueueContract } from "./conversion-queue-contract.js";
import { conversionWebhookContract } from "./conversion-webhook-contract.js";
import { idempotencyContract } from "./idempotency-contract.js";
import { CONTRACT_LINE_LIMITS, lineContract } from "./line-contract.js";
import { pstnSnapshotContract } from "./pstn-snapshot-contract.js";
import { pstnEventsContract } from "./pstn-events-contract.js";
import { uniquePrefix } from "../harness/redis-url.js";

/** Direct access to the key space, bypassing the store. */
export interface RawAccess {
  /** {} when missing. */
  hgetall(key: string): Promise<Record<string, string>>;
  hset(key: string, fields: Record<string, string>): Promise<void>;
  /** Writes a plain string value (a record of the wrong type). */
  setString(key: string, value: string): Promise<void>;
  /** Oldest first; [] when missing. */
  xrange(key: string): Promise<Array<{ id: string; fields: [string, string][] }>>;
  /** XADD with a generated id (an entry of any shape). */
  xadd(key: string, fields: Record<string, string>): Promise<void>;
  /** Redis only: XINFO STREAM's `max-deleted-entry-id`. */
  maxDeletedEntryId?(key: string): Promise<string>;
  xlen(key: string): Promise<number>;
  /** Seconds; -1 without expiry, -2 missing. */
  ttl(key: string): Promise<number>;
  exists(key: string): Promise<boolean>;
  /** Redis only: lets the key's remaining lifetime run out now (PEXPIRE 1). */
  expireNow?(key: string): Promise<void>;
  /** A plain string value; undefined when missing. */
  get(key: string): Promise<string | undefined>;
  del(key: string): Promise<void>;
  zadd(key: string, score: number, member: string): Promise<void>;
  /** undefined when the member (or the key) is missing. */
  zscore(key: string, member: string): Promise<number | undefined>;
  /** Every key that starts with `prefix` (on every master of a Cluster), sorted. */
  keysUnder(prefix: string): Promise<string[]>;
}

export interface ContractSubject {
  readonly store: AdminStore;
  readonly keys: KeySchema;
  readonly raw: RawAccess;
  /** Moves the store's clock forward, when the store has an injectable one. */
  readonly advanceClock?: (ms: number) => void;
  /** A store of the same kind whose backend cannot be reached. */
  unreachableStore(): Promise<AdminStore>;
  cleanup(): Promise<void>;
}

const IDEM_SCOPE = { project: "p", subject: "s", key: "k" };

/** The key a contract store's whiteboard secrets were sealed under before the rotation to CURRENT_SECRETS_KEY. */
const OLDER_SECRETS_KEY = Buffer.alloc(32, 0x51).toString("base64");
const CURRENT_SECRETS_KEY = Buffer.alloc(32, 0x52).toString("base64");
/** SECRETS_KEYS of every contract store: a new key, and the older one it replaced. */
export const CONTRACT_SECRETS_KEYS = keyRing([CURRENT_SECRETS_KEY, OLDER_SECRETS_KEY]);
const OLDER_RING = keyRing([OLDER_SECRETS_KEY]);
/** A key no contract store knows. */
const FOREIGN_RING = keyRing([Buffer.alloc(32, 0x53).toString("base64")]);
const SEALED_UNDER = (ring: { current: { id: string } }) =>
  new RegExp(`^v1\\.${ring.current.id}\\.[A-Za-z0-9_-]{16}\\.[A-Za-z0-9_-]+$`);

/** One call of every store method, for the availability checks. */
export const EVERY_METHOD: ReadonlyArray<[string, (store: AdminStore) => Promise<unknown>]> = [
  ["lookupPassphrase", (s) => s.lookupPassphrase("p", "some passphrase")],
  ["getWhiteboard", (s) => s.getWhiteboard("p")],
  ["setMute", (s) => s.setMute({ project: "p", channel: "c", uid: "u", mute: true, by: "sub", at: 1 })],
  ["getPstnSnapshot", (s) => s.getPstnSnapshot("p", "c")],
  ["recordConversion", (s) => s.conversions.recordConversion(conversion("00000000-0000-4000-8000-000000000000"), 1)],
  ["claimDueConversions", (s) => s.conversions.claimDueConversions(Date.now(), 10, "owner", 1000)],
  [
    "renewConversionLease",
    (s) => s.conversions.renewConversionLease("00000000-0000-4000-8000-000000000000", "owner", 1000),
  ],
  [
    "saveConversionState",
    (s) =>
      s.conversions.saveConversionState(
        "00000000-0000-4000-8000-000000000000",
        "owner",
        { status: "Converting", percent: 5, pages: [] },
        1,
        2,
      ),
  ],
  [
    "rescheduleConversion",
    (s) => s.conversions.rescheduleConversion("00000000-0000-4000-8000-000000000000", "owner", 1),
  ],
  [
    "readConversionChanges",
    (s) => s.conversions.readConversionChanges("00000000-0000-4000-8000-000000000000", "0", 10),
  ],
  ["recordWebhook", (s) => s.conversions.recordWebhook("hook-id", "00000000-0000-4000-8000-000000000000")],
  ["webhookTask", (s) => s.conversions.webhookTask("hook-id")],
  ["wakeConversion", (s) => s.conversions.wakeConversion("00000000-0000-4000-8000-000000000000", 1)],
  ["readEvents", (s) => s.pstnEvents.readEvents({ project: "p", channel: "c" }, "0-0", 10)],
  ["subscribe (notifications)", (s) => s.pstnEvents.notifications.subscribe({ project: "p", channel: "c" })],
  [
    "claimIdempotencyKey",
    (s) => s.idempotency.claim(IDEM_SCOPE, { owner: "o", fingerprint: "f", lockMs: 1000, at: 1 }),
  ],
  ["completeIdempotencyKey", (s) => s.idempotency.complete(IDEM_SCOPE, { owner: "o", fingerprint: "f", at: 1 }, "a")],
  ["markIdempotencyKeyUnknown", (s) => s.idempotency.markUnknown(IDEM_SCOPE, "o", 1000)],
  ["releaseIdempotencyKey", (s) => s.idempotency.release(IDEM_SCOPE, "o")],
  ["ping", (s) => s.ping()],
  ["createChannel", (s) => s.createChannel({ project: "p", channel: "c", hostPassphrase: "h" })],
  ["deleteChannel", (s) => s.deleteChannel("p", "c")],
  ["setWhiteboard", (s) => s.setWhiteboard("p", { region: "sg", credentials: { sdkToken: "t" } })],
  ["clearWhiteboard", (s) => s.clearWhiteboard("p")],
  ["getMuteState", (s) => s.getMuteState("p", "c")],
  ["getMuteEvents", (s) => s.getMuteEvents("p", "c")],
  ["getConversion", (s) => s.conversions.getConversion("00000000-0000-4000-8000-000000000000")],
  ["getWhiteboardEvents", (s) => s.getWhiteboardEvents("p", "c")],
  ["resealWhiteboards", (s) => s.resealWhiteboards({ pauseMs: 0 })],
  [
    "channels.create",
    (s) =>
      s.channels.create({
        project: "p",
        channel: "c",
        passphrases: [{ role: "host", passphrase: "h" }],
        createdBy: "sub",
        createdAt: 1,
        expireAt: undefined,
      }),
  ],
  ["channels.get", (s) => s.channels.get("p", "c")],
  ["channels.list", (s) => s.channels.list("p", 10, undefined)],
  ["channels.rotate", (s) => s.channels.rotate("p", "c", "host", "new")],
  ["channels.remove", (s) => s.channels.remove("p", "c")],
  ["channels.audit", (s) => s.channels.audit("p", { at: 1, by: "sub", action: "channel.create" })],
  ["channels.whiteboardInfo", (s) => s.channels.whiteboardInfo("p")],
];

/** Far beyond every due time the conversion-follow tests use, so tasks recorded here are never claimed there. */
export const NEVER_DUE = 4_102_444_800_000;

const WEEK_SECONDS = 604_800;

export interface ContractOptions {
  /** Builds the store under test (once per suite). */
  factory(): Promise<ContractSubject>;
  /** Whether XADD MAXLEN trims approximately (Redis) or exactly. */
  approximateTrim: boolean;
  /** Whether the subject offers `advanceClock` (expiry can be tested by moving time). */
  hasClock: boolean;
}

export function storeContract(name: string, options: ContractOptions): void {
  describe(`${name}: store contract`, () => {
    let subject: ContractSubject;
    let store: AdminStore;
    let keys: KeySchema;
    let raw: RawAccess;

    beforeAll(async () => {
      subject = await options.factory();
      ({ store, keys, raw } = subject);
    });
    afterAll(async () => {
      await subject?.cleanup();
    });

    describe("passphrases", () => {
      it("creates host and attendee records under the keyed digest of project and passphrase, never in clear or bare sha256", async () => {
        const { project, channel } = ids();
        const host = `host ${unique()} 🎤`;
        const attendee = `attendee ${unique()}`;
        await store.createChannel({ project, channel, hostPassphrase: host, attendeePassphrase: attendee });

        const key = keys.passphraseKeys.current.id;
        expect(await raw.hgetall(keys.passphrase(project, host))).toEqual({ project, channel, role: "host", key });
        expect(await raw.hgetall(keys.passphrase(project, attendee))).toEqual({
          project,
          channel,
          role: "attendee",
          key,
        });
        expect(keys.passphrase(project, host)).toBe(`${keys.prefix}pass:{${keys.passphraseDigestOf(project, host)}}`);
        expect(await raw.exists(keys.passphraseByHash(hashPassphrase(host)))).toBe(false);
        expect(await store.lookupPassphrase(project, host)).toEqual({ project, channel, role: "host" });
        expect(await store.lookupPassphrase(project, attendee)).toEqual({ project, channel, role: "attendee" });
      });

      it("answers undefined for an unknown passphrase", async () => {
        expect(await store.lookupPassphrase("p", `nobody ${unique()}`)).toBeUndefined();
      });

      it("reads records other services wrote, and ignores malformed ones", async () => {
        const good = unique();
        await raw.hset(keys.passphrase("p1", good), {
          project: "p1",
          channel: "c1",
          role: "host",
          extra: "x",
        });
        expect(await store.lookupPassphrase("p1", good)).toEqual({ project: "p1", channel: "c1", role: "host" });

        const malformed: Record<string, string>[] = [
          { project: "p", channel: "c" },
          { project: "p", channel: "c", role: "admin" },
          { project: "p", role: "host" },
          { channel: "c", role: "host" },
          { project: "", channel: "c", role: "host" },
        ];
        for (const fields of malformed) {
          const passphrase = unique();
          await raw.hset(keys.passphrase("p", passphrase), fields);
          expect(await store.lookupPassphrase("p", passphrase), JSON.stringify(fields)).toBeUndefined();
        }
        const wrongType = unique();
        await raw.setString(keys.passphrase("p", wrongType), "host");
        expect(await store.lookupPassphrase("p", wrongType)).toBeUndefined();
      });

      it("refuses a passphrase that opens another channel of the project, and writes nothing", async () => {
        const a = ids();
        const b = { project: a.project, channel: `${a.channel}-b` };
        const taken = unique();
        await store.createChannel({ ...a, hostPassphrase: taken });
        const fresh = unique();

        const attempt = store.createChannel({ ...b, hostPassphrase: fresh, attendeePassphrase: taken });
        await expect(attempt).rejects.toMatchObject({ kind: "invalid" });
        await expect(attempt).rejects.toThrow(new RegExp(`${a.channel}.*${a.project}`));
        expect(await raw.exists(keys.passphrase(b.project, fresh))).toBe(false);
        expect(await store.lookupPassphrase(a.project, taken)).toEqual({ ...a, role: "host" });
      });

      it("takes a passphrase another project uses as a fresh one: each project finds its own channel", async () => {
        const a = ids();
        const b = ids();
        const shared = unique();
        await store.createChannel({ ...a, hostPassphrase: shared });
        await store.createChannel({ ...b, hostPassphrase: shared });
        expect(await store.lookupPassphrase(a.project, shared)).toEqual({ ...a, role: "host" });
        expect(await store.lookupPassphrase(b.project, shared)).toEqual({ ...b, role: "host" });
        expect(await store.lookupPassphrase(`other-${a.project}`, shared)).toBeUndefined();
      });

      it("finds a record written before keys (bare sha256) or under an older key, and moves it to the current key", async () => {
        const ch = ids();
        const legacy = unique();
        await store.createChannel({ ...ch, hostPassphrase: unique() });
        const bare = hashPassphrase(legacy);
        // As an earlier version (or another service without the keys) wrote it.
        await raw.hset(keys.passphraseByHash(bare), { project: ch.project, channel: ch.channel, role: "attendee" });
        await raw.hset(keys.channelRecord(ch.project, ch.channel), { [`pass:${bare}`]: "attendee" });
        expect(await store.lookupPassphrase(`other-${ch.project}`, legacy)).toBeUndefined();
        expect(await store.lookupPassphrase(ch.project, legacy)).toEqual({ ...ch, role: "attendee" });
        const moved = keys.passphrase(ch.project, legacy);
        await vi.waitFor(async () => expect(await raw.exists(keys.passphraseByHash(bare))).toBe(false));
        expect(await raw.hgetall(moved)).toMatchObject({
          ...ch,
          role: "attendee",
          key: keys.passphraseKeys.current.id,
        });
        const fields = await raw.hgetall(keys.channelRecord(ch.project, ch.channel));
        expect(fields[`pass:${bare}`]).toBeUndefined();
        expect(fields[`pass:${keys.passphraseDigestOf(ch.project, legacy)}`]).toBe("attendee");
        expect(await store.lookupPassphrase(ch.project, legacy)).toEqual({ ...ch, role: "attendee" });
      });

      it("refuses one passphrase for both roles, and invalid ids", async () => {
        const { project, channel } = ids();
        const same = unique();
        const bad: Array<Parameters<AdminStore["createChannel"]>[0]> = [
          { project, channel, hostPassphrase: same, attendeePassphrase: same },
          { project, channel, hostPassphrase: "" },
          { project, channel, hostPassphrase: "x".repeat(257) },
          { project: "a{b", channel, hostPassphrase: unique() },
          { project: "a}b", channel, hostPassphrase: unique() },
          { project: "a/b", channel, hostPassphrase: unique() },
          { project, channel: "}c", hostPassphrase: unique() },
          { project: "", channel, hostPassphrase: unique() },
          { project, channel: "", hostPassphrase: unique() },
        ];
        for (const input of bad) {
          await expect(store.createChannel(input), JSON.stringify(input)).rejects.toMatchObject({ kind: "invalid" });
        }
        expect(await store.lookupPassphrase(project, same)).toBeUndefined();
      });

      it("re-creating a channel is idempotent, rotates passphrases and can swap roles", async () => {
        const ch = ids();
        const [p1, p2, p3] = [unique(), unique(), unique()];
        await store.createChannel({ ...ch, hostPassphrase: p1, attendeePassphrase: p2 });
        await store.createChannel({ ...ch, hostPassphrase: p1, attendeePassphrase: p2 });
        expect(await store.lookupPassphrase(ch.project, p1)).toEqual({ ...ch, role: "host" });

        await store.createChannel({ ...ch, hostPassphrase: p2, attendeePassphrase: p1 });
        expect(await store.lookupPassphrase(ch.project, p1)).toEqual({ ...ch, role: "attendee" });
        expect(await store.lookupPassphrase(ch.project, p2)).toEqual({ ...ch, role: "host" });

        await store.createChannel({ ...ch, hostPassphrase: p3 });
        expect(await store.lookupPassphrase(ch.project, p3)).toEqual({ ...ch, role: "host" });
        expect(await store.lookupPassphrase(ch.project, p1)).toBeUndefined();
        expect(await store.lookupPassphrase(ch.project, p2)).toBeUndefined();
      });

      it("deleteChannel removes its passphrases, mute and meta hashes and event stream, and nothing else", async () => {
        const ch = ids();
        const neighbour = { project: ch.project, channel: `${ch.channel}2` };
        const [h, a, n] = [unique(), unique(), unique()];
        await store.createChannel({ ...ch, hostPassphrase: h, attendeePassphrase: a });
        await store.createChannel({ ...neighbour, hostPassphrase: n });
        await store.setMute(mute(ch, "u1", true));
        await store.setMute(mute(neighbour, "u1", true));

        expect(await store.deleteChannel(ch.project, ch.channel)).toBe(5);
        expect(await store.lookupPassphrase(ch.project, h)).toBeUndefined();
        expect(await store.lookupPassphrase(ch.project, a)).toBeUndefined();
        expect(await raw.exists(keys.pstnMute(ch.project, ch.channel))).toBe(false);
        expect(await raw.exists(keys.pstnEvents(ch.project, ch.channel))).toBe(false);
        expect(await raw.exists(keys.pstnMuteMeta(ch.project, ch.channel))).toBe(false);
        expect(await store.lookupPassphrase(neighbour.project, n)).toEqual({ ...neighbour, role: "host" });
        expect(await store.getMuteState(neighbour.project, neighbour.channel)).toEqual({ u1: true });

        expect(await store.deleteChannel(ch.project, ch.channel)).toBe(0);
      });
    });

    it("grants a caller's guesses up to the limit, even when taken at once, and refuses the rest with the wait", async () => {
      const caller = `caller-${unique()}`;
      const taken = await Promise.all(
        Array.from({ length: 40 }, (_, i) => store.takeGuess(caller, `slot-${i}`, 5, 30)),
      );
      expect(taken.filter((t) => t.granted)).toHaveLength(5);
      for (const t of taken.filter((t) => !t.granted)) {
        // Every guess of the window is still being judged (none kept yet).
        expect(t).toEqual({ granted: false, retryAfterSeconds: expect.any(Number), held: true });
        if (!t.granted) expect(t.retryAfterSeconds).toBeGreaterThanOrEqual(1);
        if (!t.granted) expect(t.retryAfterSeconds).toBeLessThanOrEqual(30);
      }
      expect(await store.takeGuess(`other-${unique()}`, "slot-0", 5, 30)).toEqual({ granted: true });
    });

    it("counts a guess for one window from when it was taken: older ones drop out, the wait is the oldest's", async () => {
      const caller = `caller-${unique()}`;
      const key = keys.guesses(caller);
      // The store's own clock (Redis: the server's), read off a probe's score.
      expect((await store.takeGuess(caller, "probe", 4, 60)).granted).toBe(true);
      const now = (await raw.zscore(key, "probe")) ?? Number.NaN;
      await store.returnGuess(caller, "probe");
      for (const gone of ["gone-1", "gone-2"]) await raw.zadd(key, now - 65_000, gone);
      for (const live of ["live-1", "live-2"]) await raw.zadd(key, now - 30_000, live);
      expect((await store.takeGuess(caller, "new-1", 4, 60)).granted).toBe(true);
      expect((await store.takeGuess(caller, "new-2", 4, 60)).granted).toBe(true);
      const refused = await store.takeGuess(caller, "new-3", 4, 60);
      expect(refused.granted).toBe(false);
      // The live guesses leave the window 30 s after `now`.
      if (!refused.granted) expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(25);
      if (!refused.granted) expect(refused.retryAfterSeconds).toBeLessThanOrEqual(30);
      expect(await raw.zscore(key, "gone-1")).toBeUndefined();
      expect(await raw.zscore(key, "new-3")).toBeUndefined();
    });

    it("tells a window full of kept misses from one some calls still hold, and keeps a miss from when it was taken", async () => {
      const caller = `caller-${unique()}`;
      const key = keys.guesses(caller);
      for (let i = 0; i < 3; i++) expect((await store.takeGuess(caller, `s${i}`, 3, 30)).granted).toBe(true);
      const taken = (await raw.zscore(key, "s0")) ?? Number.NaN;
      await store.keepGuess(caller, "s0");
      await store.keepGuess(caller, "s1");
      expect(await raw.zscore(key, "s0!")).toBe(taken);
      expect(await store.takeGuess(caller, "s3", 3, 30)).toMatchObject({ granted: false, held: true });
      await store.keepGuess(caller, "s2");
      await store.keepGuess(caller, "never-granted");
      expect(await store.takeGuess(caller, "s4", 3, 30)).toMatchObject({ granted: false, held: false });
      // A kept miss is never given back.
      await store.returnGuess(caller, "s0");
      expect((await store.takeGuess(caller, "s5", 3, 30)).granted).toBe(false);
    });

    it("takes a guess given back off the count, and ignores a slot it never granted", async () => {
      const caller = `caller-${unique()}`;
      for (let i = 0; i < 3; i++) expect((await store.takeGuess(caller, `s${i}`, 3, 30)).granted).toBe(true);
      expect((await store.takeGuess(caller, "s3", 3, 30)).granted).toBe(false);
      await store.returnGuess(caller, "s3");
      expect((await store.takeGuess(caller, "s4", 3, 30)).granted).toBe(false);
      await store.returnGuess(caller, "s1");
      expect((await store.takeGuess(caller, "s5", 3, 30)).granted).toBe(true);
      expect((await store.takeGuess(caller, "s6", 3, 30)).granted).toBe(false);
    });

    describe("whiteboard settings", () => {
      /** A secret as the store writes it: sealed under the current SECRETS_KEYS key. */
      const SEALED = SEALED_UNDER(CONTRACT_SECRETS_KEYS);

      it("writes the documented fields and switches credential kinds cleanly", async () => {
        const { project } = ids();
        const key = keys.whiteboard(project);
        expect(key).toBe(`${keys.prefix}proj:{${project}}:whiteboard`);

        await store.setWhiteboard(project, { region: "sg", credentials: { sdkToken: "NETLESSSDK_abc" } });
        expect(await raw.hgetall(key)).toEqual({
          enabled: "1",
          region: "sg",
          sdk_token: expect.stringMatching(SEALED),
        });
        expect(await store.getWhiteboard(project)).toEqual({
          region: "sg",
          credentials: { sdkToken: "NETLESSSDK_abc" },
        });

        await store.setWhiteboard(project, { region: "eu", credentials: { accessKey: "ak", secretKey: "sk" } });
        expect(await raw.hgetall(key)).toEqual({
          enabled: "1",
          region: "eu",
          access_key: "ak",
          secret_key: expect.stringMatching(SEALED),
        });
        expect(await store.getWhiteboard(project)).toEqual({
          region: "eu",
          credentials: { accessKey: "ak", secretKey: "sk" },
        });

        await store.setWhiteboard(project, { region: "cn-hz", credentials: { sdkToken: "t2" } });
        expect(await raw.hgetall(key)).toEqual({
          enabled: "1",
          region: "cn-hz",
          sdk_token: expect.stringMatching(SEALED),
        });

        await store.clearWhiteboard(project);
        expect(await raw.exists(key)).toBe(false);
        expect(await store.getWhiteboard(project)).toBeUndefined();
      });

      it("keeps the conversion QPS as a decimal field in clear; setting without it is the default plan again", async () => {
        const { project } = ids();
        const key = keys.whiteboard(project);
        await store.setWhiteboard(project, { region: "sg", credentials: { sdkToken: "t" }, conversionQps: 5 });
        expect(await raw.hgetall(key)).toEqual({
          enabled: "1",
          region: "sg",
          conversion_qps: "5",
          sdk_token: expect.stringMatching(SEALED),
        });
        expect(await store.getWhiteboard(project)).toEqual({
          region: "sg",
          credentials: { sdkToken: "t" },
          conversionQps: 5,
        });
        expect(await store.channels.whiteboardInfo(project)).toMatchObject({ conversionQps: 5 });

        const pair = { accessKey: "ak", secretKey: "sk" };
        await store.setWhiteboard(project, { region: "eu", credentials: pair, conversionQps: 1000 });
        expect((await raw.hgetall(key)).conversion_qps).toBe("1000");
        expect(await store.getWhiteboard(project)).toEqual({ region: "eu", credentials: pair, conversionQps: 1000 });

        // Set replaces the settings: left out, the QPS goes and reads as the default plan's.
        await store.setWhiteboard(project, { region: "eu", credentials: pair });
        expect(await raw.hgetall(key)).not.toHaveProperty("conversion_qps");
        expect(await store.getWhiteboard(project)).toEqual({ region: "eu", credentials: pair });
        expect(await store.channels.whiteboardInfo(project)).toMatchObject({ conversionQps: 1 });
      });

      it("reads an unreadable conversion_qps as absent and the rest of the record as usable", async () => {
        for (const qps of ["0", "1001", "-3", "2.5", "1e2", "05", " 7", "7 ", "", "many"]) {
          const { project } = ids();
          await raw.hset(keys.whiteboard(project), { enabled: "1", region: "sg", sdk_token: "t", conversion_qps: qps });
          expect(await store.getWhiteboard(project), qps).toEqual({ region: "sg", credentials: { sdkToken: "t" } });
          expect(await store.channels.whiteboardInfo(project), qps).toMatchObject({ conversionQps: 1 });
        }
        const { project } = ids();
        await raw.hset(keys.whiteboard(project), {
          enabled: "1",
          region: "sg",
          sdk_token: "t",
          conversion_qps: "1000",
        });
        expect((await store.getWhiteboard(project))?.conversionQps).toBe(1000);
      });

      it("seals the SDK token and the secret key: the store answers them in clear, the record holds neither", async () => {
        const { project } = ids();
        const key = keys.whiteboard(project);
        const token = `NETLESSSDK_${unique()}${unique()}`;
        const secretKey = `sk-${unique()}${unique()}`;
        await store.setWhiteboard(project, { region: "sg", credentials: { sdkToken: token } });
        const sealedToken = await raw.hgetall(key);
        expect(JSON.stringify(sealedToken)).not.toContain(token);
        expect(sealedToken.sdk_token).toMatch(SEALED);
        expect(open(CONTRACT_SECRETS_KEYS, project, "sdk_token", sealedToken.sdk_token ?? "")).toBe(token);
        expect(await store.getWhiteboard(project)).toEqual({ region: "sg", credentials: { sdkToken: token } });

        await store.setWhiteboard(project, { region: "eu", credentials: { accessKey: "ak-1", secretKey } });
        const sealedPair = await raw.hgetall(key);
        expect(JSON.stringify(sealedPair)).not.toContain(secretKey);
        expect(JSON.stringify(sealedPair)).not.toContain(token);
        expect(sealedPair.access_key).toBe("ak-1"); // names the key pair, signs nothing
        expect(open(CONTRACT_SECRETS_KEYS, project, "secret_key", sealedPair.secret_key ?? "")).toBe(secretKey);
        expect(await store.getWhiteboard(project)).toEqual({
          region: "eu",
          credentials: { accessKey: "ak-1", secretKey },
        });
        // What the admin API shows of it: no secret, sealed or not.
        const info = await store.channels.whiteboardInfo(project);
        expect(info).toMatchObject({ region: "eu", credential: "access_key" });
        expect(JSON.stringify(info)).not.toContain(sealedPair.secret_key);
      });

      it("reads secrets in clear (written before sealing, or by another writer) and under an older key", async () => {
        const clear = ids().project;
        await raw.hset(keys.whiteboard(clear), {
          enabled: "1",
          region: "sg",
          access_key: "ak",
          secret_key: "sk-clear",
        });
        expect(await store.getWhiteboard(clear)).toEqual({
          region: "sg",
          credentials: { accessKey: "ak", secretKey: "sk-clear" },
        });
        const older = ids().project;
        await raw.hset(keys.whiteboard(older), {
          enabled: "1",
          region: "eu",
          sdk_token: seal(OLDER_RING, older, "sdk_token", "NETLESSSDK_older"),
        });
        expect(await store.getWhiteboard(older)).toEqual({
          region: "eu",
          credentials: { sdkToken: "NETLESSSDK_older" },
        });
      });

      it("fails internal, never answering the value, for a secret it cannot open", async () => {
        const foreign = ids().project;
        const sealedForeign = seal(FOREIGN_RING, foreign, "sdk_token", "NETLESSSDK_foreign");
        await raw.hset(keys.whiteboard(foreign), { enabled: "1", region: "sg", sdk_token: sealedForeign });
        const missing = await store.getWhiteboard(foreign).catch((e: unknown) => e);
        expect(missing).toBeInstanceOf(Failure);
        expect(missing).toMatchObject({ kind: "internal", detail: undefined });
        const why = String((missing as Failure).cause);
        expect(why).toContain(`key ${FOREIGN_RING.current.id}, which is missing from SECRETS_KEYS`);
        expect(why).not.toContain("NETLESSSDK_foreign");

        // A sealed value copied into another project's record does not open there.
        const { project } = ids();
        await store.setWhiteboard(project, { region: "sg", credentials: { sdkToken: "NETLESSSDK_mine" } });
        const moved = (await raw.hgetall(keys.whiteboard(project))).sdk_token ?? "";
        const thief = ids().project;
        await raw.hset(keys.whiteboard(thief), { enabled: "1", region: "sg", sdk_token: moved });
        await expect(store.getWhiteboard(thief)).rejects.toMatchObject({ kind: "internal" });
        await raw.hset(keys.whiteboard(thief), { sdk_token: "", access_key: "ak", secret_key: moved });
        await expect(store.getWhiteboard(thief)).rejects.toMatchObject({ kind: "internal" });
        await raw.del(keys.whiteboard(foreign));
        await raw.del(keys.whiteboard(thief));
      });

      it("reseals records in clear or under an older key under the current key, once, in resumable steps", async () => {
        const clear = ids().project;
        await raw.hset(keys.whiteboard(clear), {
          enabled: "1",
          region: "sg",
          access_key: "ak",
          secret_key: "sk-clear",
          conversion_qps: "3",
        });
        const older = ids().project;
        await raw.hset(keys.whiteboard(older), {
          enabled: "1",
          region: "eu",
          sdk_token: seal(OLDER_RING, older, "sdk_token", "NETLESSSDK_older"),
          updated_by: "someone",
        });
        const current = ids().project;
        await store.setWhiteboard(current, { region: "sg", credentials: { sdkToken: "NETLESSSDK_current" } });
        const currentBefore = await raw.hgetall(keys.whiteboard(current));
        const foreign = ids().project;
        const sealedForeign = seal(FOREIGN_RING, foreign, "sdk_token", "NETLESSSDK_foreign");
        await raw.hset(keys.whiteboard(foreign), { enabled: "1", region: "sg", sdk_token: sealedForeign });

        // One key per step, one step per call: a pass resumed from each cursor it reported.
        let cursor = "0";
        let calls = 0;
        const total = { scanned: 0, resealed: 0, unreadable: [] as string[] };
        do {
          const step = await store.resealWhiteboards({ batch: 1, pauseMs: 0, from: cursor, maxSteps: 1 });
          total.scanned += step.scanned;
          total.resealed += step.resealed;
          total.unreadable.push(...step.unreadable);
          cursor = step.cursor;
          calls++;
        } while (cursor !== "0" && calls < 100_000);
        expect(cursor).toBe("0");
        expect(total.scanned).toBeGreaterThanOrEqual(4);
        expect(total.resealed).toBeGreaterThanOrEqual(2);
        expect(total.unreadable).toContain(foreign);

        const clearAfter = await raw.hgetall(keys.whiteboard(clear));
        expect(clearAfter).toEqual({
          enabled: "1",
          region: "sg",
          access_key: "ak",
          secret_key: expect.stringMatching(SEALED),
          conversion_qps: "3",
        });
        expect(JSON.stringify(clearAfter)).not.toContain("sk-clear");
        const olderAfter = await raw.hgetall(keys.whiteboard(older));
        expect(olderAfter).toEqual({
          enabled: "1",
          region: "eu",
          sdk_token: expect.stringMatching(SEALED),
          updated_by: "someone",
        });
        expect(await store.getWhiteboard(clear)).toEqual({
          region: "sg",
          credentials: { accessKey: "ak", secretKey: "sk-clear" },
          conversionQps: 3,
        });
        expect(await store.getWhiteboard(older)).toEqual({
          region: "eu",
          credentials: { sdkToken: "NETLESSSDK_older" },
        });
        // Already under the current key: not written at all. Unreadable: left as it was.
        expect(await raw.hgetall(keys.whiteboard(current))).toEqual(currentBefore);
        expect((await raw.hgetall(keys.whiteboard(foreign))).sdk_token).toBe(sealedForeign);

        // Idempotent: a second pass finds nothing more to do.
        const again = await store.resealWhiteboards({ pauseMs: 0 });
        expect(again).toMatchObject({ resealed: 0, changed: 0, cursor: "0", unreadable: [foreign] });
        expect(await raw.hgetall(keys.whiteboard(clear))).toEqual(clearAfter);
        await raw.del(keys.whiteboard(foreign));
      });

      it("reseals only a record that is unchanged since it was read (compare-and-set)", async () => {
        // The store's own step, as the pass calls it: a write in between must win.
        const admin = (store as unknown as { primitives: AdminPrimitives }).primitives;
        const { project } = ids();
        const key = keys.whiteboard(project);
        await raw.hset(key, { enabled: "1", region: "sg", sdk_token: "clear-token" });
        const resealed = seal(CONTRACT_SECRETS_KEYS, project, "sdk_token", "clear-token");
        await store.setWhiteboard(project, { region: "sg", credentials: { sdkToken: "NETLESSSDK_newer" } });
        const written = await raw.hgetall(key);
        expect(
          await admin.replaceWhiteboardFields(project, { sdk_token: "clear-token" }, { sdk_token: resealed }),
        ).toBe(false);
        expect(await raw.hgetall(key)).toEqual(written);
        expect(await store.getWhiteboard(project)).toEqual({
          region: "sg",
          credentials: { sdkToken: "NETLESSSDK_newer" },
        });
        expect(
          await admin.replaceWhiteboardFields(ids().project, { sdk_token: "clear-token" }, { sdk_token: resealed }),
        ).toBe(false);
        await raw.hset(key, { sdk_token: "clear-token" });
        expect(
          await admin.replaceWhiteboardFields(project, { sdk_token: "clear-token" }, { sdk_token: resealed }),
        ).toBe(true);
        expect((await raw.hgetall(key)).sdk_token).toBe(resealed);
        expect(await store.getWhiteboard(project)).toEqual({ region: "sg", credentials: { sdkToken: "clear-token" } });
      });

      it("accepts every documented region", async () => {
        for (const region of ["us-sv", "sg", "in-mum", "eu", "cn-hz"] as const) {
          const { project } = ids();
          await store.setWhiteboard(project, { region, credentials: { sdkToken: "t" } });
          expect((await store.getWhiteboard(project))?.region).toBe(region);
        }
      });

      it("treats a record that is not usable as no whiteboard", async () => {
        const unusable: Record<string, string>[] = [
          { region: "sg", sdk_token: "t" },
          { enabled: "0", region: "sg", sdk_token: "t" },
          { enabled: "true", region: "sg", sdk_token: "t" },
          { enabled: "1", region: "mars", sdk_token: "t" },
          { enabled: "1", sdk_token: "t" },
          { enabled: "1", region: "sg" },
          { enabled: "1", region: "sg", sdk_token: "" },
          { enabled: "1", region: "sg", access_key: "ak" },
          { enabled: "1", region: "sg", secret_key: "sk" },
        ];
        for (const fields of unusable) {
          const { project } = ids();
          await raw.hset(keys.whiteboard(project), fields);
          expect(await store.getWhiteboard(project), JSON.stringify(fields)).toBeUndefined();
        }
        const { project } = ids();
        await raw.setString(keys.whiteboard(project), "1");
        expect(await store.getWhiteboard(project)).toBeUndefined();
        expect(await store.getWhiteboard(ids().project)).toBeUndefined();
      });

      it("prefers the SDK token when another writer stored both kinds", async () => {
        const { project } = ids();
        await raw.hset(keys.whiteboard(project), {
          enabled: "1",
          region: "in-mum",
          sdk_token: "t",
          access_key: "ak",
          secret_key: "sk",
        });
        expect(await store.getWhiteboard(project)).toEqual({ region: "in-mum", credentials: { sdkToken: "t" } });
      });

      it("refuses invalid settings and project ids", async () => {
        const { project } = ids();
        await expect(
          store.setWhiteboard(project, { region: "mars" as "sg", credentials: { sdkToken: "t" } }),
        ).rejects.toMatchObject({ kind: "invalid" });
        await expect(
          store.setWhiteboard(project, { region: "sg", credentials: { sdkToken: "" } }),
        ).rejects.toMatchObject({
          kind: "invalid",
        });
        await expect(
          store.setWhiteboard(project, { region: "sg", credentials: { accessKey: "ak", secretKey: "" } }),
        ).rejects.toMatchObject({ kind: "invalid" });
        await expect(
          store.setWhiteboard("p{x}", { region: "sg", credentials: { sdkToken: "t" } }),
        ).rejects.toMatchObject({
          kind: "invalid",
        });
        for (const conversionQps of [0, 1001, 2.5, Number.NaN]) {
          await expect(
            store.setWhiteboard(project, { region: "sg", credentials: { sdkToken: "t" }, conversionQps }),
          ).rejects.toMatchObject({ kind: "invalid", detail: "conversion qps must be a whole number from 1 to 1000" });
        }
        expect(await raw.exists(keys.whiteboard(project))).toBe(false);
      });
    });

    describe("PSTN mute", () => {
      it("writes the hash field and one stream entry with uid, mute, by, at", async () => {
        const ch = ids();
        const muteKey = keys.pstnMute(ch.project, ch.channel);
        const eventsKey = keys.pstnEvents(ch.project, ch.channel);
        expect(muteKey).toBe(`${keys.prefix}chan:{${ch.project}/${ch.channel}}:pstn-mute`);
        expect(eventsKey).toBe(`${keys.prefix}chan:{${ch.project}/${ch.channel}}:pstn-events`);

        await store.setMute({ ...ch, uid: "1001", mute: true, by: "alice", at: 1_700_000_000_123 });
        await store.setMute({ ...ch, uid: "1002", mute: false, by: "bob", at: 1_700_000_000_456 });

        expect(await raw.hgetall(muteKey)).toEqual({ "1001": "1", "1002": "0" });
        const entries = await raw.xrange(eventsKey);
        expect(entries.map((e) => e.fields)).toEqual([
          [
            ["uid", "1001"],
            ["mute", "1"],
            ["by", "alice"],
            ["at", "1700000000123"],
          ],
          [
            ["uid", "1002"],
            ["mute", "0"],
            ["by", "bob"],
            ["at", "1700000000456"],
          ],
        ]);
        for (const e of entries) expect(e.id).toMatch(/^\d+-\d+$/);

        expect(await store.getMuteState(ch.project, ch.channel)).toEqual({ "1001": true, "1002": false });
        const events = await store.getMuteEvents(ch.project, ch.channel);
        expect(events).toEqual([
          { id: entries[1]?.id, uid: "1002", mute: false, by: "bob", at: 1_700_000_000_456 },
          { id: entries[0]?.id, uid: "1001", mute: true, by: "alice", at: 1_700_000_000_123 },
        ]);
      });

      it("overwrites the state of a uid and keeps every change in the stream", async () => {
        const ch = ids();
        await store.setMute(mute(ch, "u", true));
        await store.setMute(mute(ch, "u", false));
        expect(await store.getMuteState(ch.project, ch.channel)).toEqual({ u: false });
        expect((await store.getMuteEvents(ch.project, ch.channel)).map((e) => e.mute)).toEqual([false, true]);
      });

      it("returns the newest events first, 20 unless asked otherwise", async () => {
        const ch = ids();
        for (let i = 0; i < 25; i++) await store.setMute({ ...ch, uid: `u${i}`, mute: true, by: "s", at: 1000 + i });
        const events = await store.getMuteEvents(ch.project, ch.channel);
        expect(events).toHaveLength(20);
        expect(events[0]?.uid).toBe("u24");
        expect(events[19]?.uid).toBe("u5");
        expect((await store.getMuteEvents(ch.project, ch.channel, 3)).map((e) => e.uid)).toEqual(["u24", "u23", "u22"]);
        expect(await store.getMuteEvents(ids().project, "none")).toEqual([]);
        await expect(store.getMuteEvents(ch.project, ch.channel, 0)).rejects.toMatchObject({ kind: "invalid" });
        await expect(store.getMuteEvents(ch.project, ch.channel, 1.5)).rejects.toMatchObject({ kind: "invalid" });
      });

      it("skips mute values and stream entries other writers got wrong", async () => {
        const ch = ids();
        await raw.hset(keys.pstnMute(ch.project, ch.channel), { a: "1", b: "0", c: "yes" });
        expect(await store.getMuteState(ch.project, ch.channel)).toEqual({ a: true, b: false });
        expect(await store.getMuteState(ids().project, "none")).toEqual({});
      });

      it("lands every one of 200 concurrent changes, hash and stream agreeing", async () => {
        const ch = ids();
        const changes = Array.from({ length: 200 }, (_, i) => ({
          ...ch,
          uid: `u${i % 50}`,
          mute: i % 3 === 0,
          by: `s${i}`,
          at: 2000 + i,
        }));
        await Promise.all(changes.map((c) => store.setMute(c)));

        expect(await raw.xlen(keys.pstnEvents(ch.project, ch.channel))).toBe(200);
        const state = await store.getMuteState(ch.project, ch.channel);
        expect(Object.keys(state)).toHaveLength(50);
        // Atomic writes: each uid's state is the one of its newest stream entry.
        const newest = new Map<string, boolean>();
        for (const e of await store.getMuteEvents(ch.project, ch.channel, 200)) {
          if (!newest.has(e.uid)) newest.set(e.uid, e.mute);
        }
        expect(state).toEqual(Object.fromEntries(newest));
      });

      it("caps the event stream near 10,000 entries", async () => {
        const ch = ids();
        const total = 11_000;
        for (let start = 0; start < total; start += 1000) {
          await Promise.all(
            Array.from({ length: 1000 }, (_, i) =>
              store.setMute({ ...ch, uid: `u${start + i}`, mute: true, by: "s", at: start + i }),
            ),
          );
        }
        const length = await raw.xlen(keys.pstnEvents(ch.project, ch.channel));
        if (options.approximateTrim) {
          expect(length).toBeGreaterThanOrEqual(10_000);
          expect(length).toBeLessThanOrEqual(10_100);
        } else {
          expect(length).toBe(10_000);
        }
        expect((await store.getMuteEvents(ch.project, ch.channel, 1))[0]?.uid).toBe(`u${total - 1}`);
        // The hash is not capped: it holds the state of every uid.
        expect(Object.keys(await store.getMuteState(ch.project, ch.channel))).toHaveLength(total);
      });

      it("writes neither key when one of them has the wrong type", async () => {
        const ch = ids();
        await raw.setString(keys.pstnEvents(ch.project, ch.channel), "not a stream");
        await expect(store.setMute(mute(ch, "u", true))).rejects.toMatchObject({ kind: "unavailable" });
        expect(await raw.exists(keys.pstnMute(ch.project, ch.channel))).toBe(false);
      });
    });

    describe("conversion tasks", () => {
      it("writes the documented fields with a 7-day expiry", async () => {
        const uuid = crypto.randomUUID();
        const task = conversion(uuid);
        await store.conversions.recordConversion(task, NEVER_DUE);

        const key = keys.conversion(uuid);
        expect(key).toBe(`${keys.prefix}conv:{${uuid}}`);
        expect(await raw.hgetall(key)).toEqual({
          project: task.project,
          channel: task.channel,
          type: "static",
          status: "Waiting",
          created_at: String(task.createdAt),
          by: task.by,
          api: "projector",
          percent: "0",
          pages: "[]",
          updated_at: String(task.createdAt),
          backend_uuid: uuid,
        });
        const ttl = await raw.ttl(key);
        expect(ttl).toBeGreaterThan(WEEK_SECONDS - 10);
        expect(ttl).toBeLessThanOrEqual(WEEK_SECONDS);
        expect(await store.conversions.getConversion(uuid)).toEqual(task);
        expect(await store.conversions.getConversion(crypto.randomUUID())).toBeUndefined();
      });

      it("a later record of the same task replaces it and renews the expiry", async () => {
        const uuid = crypto.randomUUID();
        await store.conversions.recordConversion(conversion(uuid), NEVER_DUE);
        const finished = { ...conversion(uuid), type: "dynamic" as const, status: "Finished" };
        await store.conversions.recordConversion(finished, NEVER_DUE);
        expect(await store.conversions.getConversion(uuid)).toEqual(finished);
        expect(await raw.ttl(keys.conversion(uuid))).toBeGreaterThan(WEEK_SECONDS - 10);
      });

      it("ignores malformed records", async () => {
        const base = { project: "p", channel: "c", type: "static", status: "Waiting", created_at: "1", by: "s" };
        const malformed: Record<string, string>[] = [
          { ...base, type: "animated" },
          { ...base, created_at: "yesterday" },
          { ...base, created_at: "" },
          Object.fromEntries(Object.entries(base).filter(([k]) => k !== "project")),
        ];
        for (const fields of malformed) {
          const uuid = crypto.randomUUID();
          await raw.hset(keys.conversion(uuid), fields);
          expect(await store.conversions.getConversion(uuid), JSON.stringify(fields)).toBeUndefined();
        }
      });

      it("forgets records after 7 days", async () => {
        const uuid = crypto.randomUUID();
        await store.conversions.recordConversion(conversion(uuid), NEVER_DUE);
        const advance = subject.advanceClock;
        if (options.hasClock && advance) {
          advance(WEEK_SECONDS * 1000 - 1000);
          expect(await store.conversions.getConversion(uuid)).toBeDefined();
          advance(1000);
        } else {
          // Real Redis keeps its own clock: let the last millisecond of the week run out.
          expect(await raw.ttl(keys.conversion(uuid))).toBeGreaterThan(WEEK_SECONDS - 10);
          if (!raw.expireNow) throw new Error("a subject without a clock must offer expireNow");
          await raw.expireNow(keys.conversion(uuid));
          await new Promise((r) => setTimeout(r, 20));
        }
        expect(await store.conversions.getConversion(uuid)).toBeUndefined();
        expect(await raw.ttl(keys.conversion(uuid))).toBe(-2);
      });
    });

    pstnSnapshotContract(() => subject);
    conversionFollowContract(() => subject);
    conversionQueueContract(() => subject);
    conversionWebhookContract(() => subject);
    pstnEventsContract(() => subject);
    lineContract(() => subject);
    idempotencyContract(() => subject);
    channelDirectoryContract(() => subject, options);
    channelRepairContract(() => subject);

    describe("availability", () => {
      it("ping resolves while the backend is there", async () => {
        await expect(store.ping()).resolves.toBeUndefined();
      });

      it.each(EVERY_METHOD)(
        "%s fails with unavailable within 1.5 s when the backend is unreachable",
        async (_, call) => {
          const unreachable = await subject.unreachableStore();
          try {
            const started = performance.now();
            const error = await call(unreachable).then(
              () => undefined,
              (e: unknown) => e,
            );
            expect(performance.now() - started).toBeLessThan(1500);
            expect(error).toBeInstanceOf(Failure);
            expect((error as Failure).kind).toBe("unavailable");
          } finally {
            await unreachable.close();
          }
        },
      );

      it("close is idempotent and later calls fail as unavailable", async () => {
        const unreachable = await subject.unreachableStore();
        await unreachable.close();
        await unreachable.close();
        await expect(unreachable.ping()).rejects.toMatchObject({ kind: "unavailable" });
      });
    });
  });
}

export function conversion(uuid: string): ConversionTaskRecord {
  return {
    uuid,
    project: "proj-1",
    channel: "chan-1",
    type: "static",
    api: "projector",
    status: "Waiting",
    percent: 0,
    pages: [],
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_000_000,
    by: "user-1",
    backendUuid: uuid,
  };
}

function mute(ch: { project: string; channel: string }, uid: string, muted: boolean): MuteChange {
  return { ...ch, uid, mute: muted, by: "sub", at: Date.now() };
}

function unique(): string {
  return randomBytes(8).toString("hex");
}

/** Fresh project/channel ids, so tests never see each other's records. */
function ids(): { project: string; channel: string } {
  return { project: `proj-${unique()}`, channel: `chan ${unique()}/x` };
}

export interface RedisSubjectOptions {
  /** Where the store under test connects. */
  readonly connection: RedisConnectionOptions;
  /** The same kind of connection to a port where nothing listens. */
  readonly unreachable: (port: number) => RedisConnectionOptions;
  /** A client of the same deployment for the raw reads and writes. */
  readonly client: Redis | Cluster;
  /** More clean-up after the store and the client are closed (given the key prefix). */
  readonly cleanup?: (keyPrefix: string) => Promise<void>;
  /** Replicas every acknowledged write must reach (REDIS_MIN_REPLICAS); default none. */
  readonly replicaAck?: ReplicaAck;
  /** The store's key prefix (default: a fresh `uniquePrefix`), e.g. one an ACL user's key pattern allows. */
  readonly keyPrefix?: string;
}

/** The Redis store under a fresh key prefix, as a contract subject, on any deployment. */
export async function redisSubject(o: RedisSubjectOptions): Promise<ContractSubject> {
  const keyPrefix = o.keyPrefix ?? uniquePrefix();
  const replicaAck = o.replicaAck === undefined ? {} : { replicaAck: o.replicaAck };
  const store = createRedisStore(o.connection, {
    keyPrefix,
    logger: silentLogger(),
    secretsKeys: CONTRACT_SECRETS_KEYS,
    line: CONTRACT_LINE_LIMITS,
    ...replicaAck,
  });
  await store.waitUntilReady();
  return {
    store,
    keys: store.keys,
    raw: redisRaw(o.client),
    async unreachableStore() {
      return createRedisStore(o.unreachable(await freePort()), { keyPrefix, logger: silentLogger() });
    },
    async cleanup() {
      await store.close();
      await o.client.quit();
      await o.cleanup?.(keyPrefix);
    },
  };
}

/** RawAccess through an ioredis client (one node, or a whole Cluster). */
function redisRaw(client: Redis | Cluster): RawAccess {
  return {
    hgetall: (key) => client.hgetall(key),
    async hset(key, fields) {
      await client.hset(key, fields);
    },
    async setString(key, value) {
      await client.set(key, value);
    },
    async xrange(key) {
      const entries = await client.xrange(key, "-", "+");
      return entries.map(([id, flat]) => ({ id, fields: pairs(flat) }));
    },
    async xadd(key, fields) {
      await client.xadd(key, "*", ...Object.entries(fields).flat());
    },
    async maxDeletedEntryId(key) {
      const info = (await client.call("XINFO", "STREAM", key)) as unknown[];
      return String(info[info.indexOf("max-deleted-entry-id") + 1]);
    },
    xlen: (key) => client.xlen(key),
    ttl: (key) => client.ttl(key),
    exists: async (key) => (await client.exists(key)) === 1,
    async expireNow(key) {
      await client.pexpire(key, 1);
    },
    get: async (key) => (await client.get(key)) ?? undefined,
    async del(key) {
      await client.del(key);
    },
    async zadd(key, score, member) {
      await client.zadd(key, score, member);
    },
    async zscore(key, member) {
      const score = await client.zscore(key, member);
      return score === null ? undefined : Number(score);
    },
    async keysUnder(prefix) {
      const nodes = "nodes" in client && typeof client.nodes === "function" ? client.nodes("master") : [client];
      const found: string[] = [];
      for (const node of nodes as Redis[]) {
        let cursor = "0";
        do {
          const [next, keys] = await node.scan(
            cursor,
            "MATCH",
            `${prefix.replace(/[*?[\]\\]/g, "\\$&")}*`,
            "COUNT",
            1000,
          );
          cursor = next;
          found.push(...keys);
        } while (cursor !== "0");
      }
      return [...new Set(found)].sort();
    },
  };
}

function pairs(flat: string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([flat[i] ?? "", flat[i + 1] ?? ""]);
  return out;
}
