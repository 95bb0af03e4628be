/**
 * ChannelAdminService end to end, on the in-memory store, a single Redis and
 * a 3-master Redis Cluster (test/harness/redis-topologies.ts), over JSON, Connect, gRPC-Web, gRPC (connect-es: the fast path) and
 * @grpc/grpc-js: the life of a channel (create, get, list, rotate, delete)
 * and of whiteboard settings, rights (channels.admin only), tenancy (another
 * project's channel answers like an unknown one), the race of 50 creates of
 * one id, safe retries, bad input (611, nothing changed), and expiry: a
 * channel stops opening at its expire_time and, on Redis, every key of it
 * (its record, passphrases, mute hash, meta and event stream) is gone.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { keySchema } from "../../src/store/schema/keys.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { postJson } from "../harness/http.js";
import { type RedisClusterHandle, startRedisCluster } from "../harness/redis-topologies.js";
import { sleep } from "../harness/sleep.js";
import { ROUTES } from "../harness/routes.js";
import { ADMIN_PROTOCOLS, type AdminMethod, adminToken, callAdmin } from "./helpers/channel-admin.js";

const GENERATED = /^[a-km-np-z2-9]{4}(-[a-km-np-z2-9]{4}){6}$/;
/** The 611 message (docs/errors.md) of a conversion_qps outside 1..1000, as protovalidate words the rule. */
const INVALID_QPS =
  "the API request is invalid, improperly formed, or missing a required field: conversion_qps: " +
  "must be greater than or equal to 1 and less than or equal to 1000";
const ALL_METHODS: ReadonlyArray<[AdminMethod, Record<string, unknown>]> = [
  ["createChannel", { channel_id: "x" }],
  ["getChannel", { channel_id: "x" }],
  ["listChannels", {}],
  ["rotatePassphrase", { channel_id: "x", role: "PASSPHRASE_ROLE_HOST" }],
  ["deleteChannel", { channel_id: "x" }],
  ["setWhiteboardSettings", { region: "sg", sdk_token: "NETLESSSDK_secret-token" }],
  ["getWhiteboardSettings", {}],
  ["clearWhiteboardSettings", {}],
];

describe.each(["memory", "redis", "cluster"] as const)("%s store", (storeKind) => {
  let bl: Boardline;
  let cluster: RedisClusterHandle | undefined;
  let admin: string;
  let otherAdmin: string;
  let counter = 0;
  const id = (what: string) => `${what}-${process.pid}-${++counter}`;

  beforeAll(async () => {
    if (storeKind === "cluster") {
      cluster = await startRedisCluster(3);
      bl = await startBoardline({ store: "redis", connection: { mode: "cluster", nodes: cluster.seeds } });
    } else {
      bl = await startBoardline({ store: storeKind });
    }
    admin = await adminToken(bl, bl.world.project);
    otherAdmin = await adminToken(bl, bl.world.otherProject);
  }, 60_000);
  afterAll(async () => {
    await bl?.close();
    await cluster?.stop();
  });

  /** Every key under the server's prefix, on every master (SCAN: a test may). */
  const keysOfServer = async (): Promise<string[]> => {
    const urls = cluster === undefined ? [bl.redisUrl] : cluster.nodes.map((n) => n.url);
    const keys: string[] = [];
    for (const url of urls) {
      const node = new Redis(url, { maxRetriesPerRequest: 1 });
      try {
        let cursor = "0";
        do {
          const [next, found] = await node.scan(cursor, "MATCH", `${bl.prefix}*`, "COUNT", 1000);
          cursor = next;
          keys.push(...found);
        } while (cursor !== "0");
      } finally {
        node.disconnect();
      }
    }
    return keys;
  };

  const mute = async (passphrase: string, token?: string) =>
    (await postJson(bl, ROUTES.mute, { uid: "pstn-1", passphrase, mute: true }, { token: token ?? (await bl.token()) }))
      .status;

  describe.each(ADMIN_PROTOCOLS)("%s", (protocol) => {
    test("a channel's life: create, get, list, rotate, delete; passphrases only in create and rotate", async () => {
      const channel = id("life");
      const created = await callAdmin(bl, protocol, "createChannel", { channel_id: channel }, admin);
      expect(created.ok, JSON.stringify(created)).toBe(true);
      if (!created.ok) return;
      const { host_passphrase: host, attendee_passphrase: attendee } = created.body as Record<string, string>;
      expect(host).toMatch(GENERATED);
      expect(attendee).toMatch(GENERATED);
      expect(await mute(host as string)).toBe(200);

      const got = await callAdmin(bl, protocol, "getChannel", { channel_id: channel }, admin);
      expect(got).toMatchObject({
        ok: true,
        body: {
          channel: {
            channel_id: channel,
            created_by: "meetings",
            roles: ["PASSPHRASE_ROLE_HOST", "PASSPHRASE_ROLE_ATTENDEE"],
          },
          participants_with_mute_state: 1,
          newest_whiteboard_event_id: "0-0",
        },
      });
      expect(JSON.stringify(got)).not.toContain(host);
      if (got.ok) expect(String(got.body["newest_pstn_event_id"])).toMatch(/^\d+-\d+$/);

      const listed = await callAdmin(bl, protocol, "listChannels", { page_size: 1000 }, admin);
      expect(
        listed.ok && (listed.body["channels"] as Array<{ channel_id: string }>).map((c) => c.channel_id),
      ).toContain(channel);

      const rotated = await callAdmin(
        bl,
        protocol,
        "rotatePassphrase",
        { channel_id: channel, role: "PASSPHRASE_ROLE_HOST" },
        admin,
      );
      expect(rotated).toMatchObject({ ok: true, body: { channel_id: channel, role: "PASSPHRASE_ROLE_HOST" } });
      const fresh = rotated.ok ? String(rotated.body["passphrase"]) : "";
      expect(fresh).toMatch(GENERATED);
      expect(await mute(host as string)).toBe(403);
      expect(await mute(fresh)).toBe(200);

      expect(await callAdmin(bl, protocol, "deleteChannel", { channel_id: channel }, admin)).toEqual({
        ok: true,
        body: {},
      });
      expect(await mute(fresh)).toBe(403);
      expect(await callAdmin(bl, protocol, "getChannel", { channel_id: channel }, admin)).toMatchObject({
        ok: false,
        code: 404,
      });
      expect(await callAdmin(bl, protocol, "deleteChannel", { channel_id: channel }, admin)).toMatchObject({
        ok: false,
        code: 404,
      });
    });

    test("rights: no scope, or only pstn.gateway → 403 on every admin call; Mute unchanged", async () => {
      for (const scopes of [[], ["pstn.gateway"]]) {
        const token = await adminToken(bl, bl.world.project, scopes);
        for (const [method, body] of ALL_METHODS) {
          const answer = await callAdmin(bl, protocol, method, body, token);
          expect(answer, `${method} with [${scopes.join(" ")}]`).toMatchObject({ ok: false, code: 403 });
          if (!answer.ok) expect(answer.message).toContain("channels.admin");
        }
      }
      expect(await mute(bl.world.hostPassphrase)).toBe(200);
    });

    test("tenancy: project B's admin sees none of A's channels and its own whiteboard settings only", async () => {
      const channel = id("tenant");
      const created = await callAdmin(bl, protocol, "createChannel", { channel_id: channel }, admin);
      expect(created.ok).toBe(true);
      for (const [method, body] of [
        ["getChannel", { channel_id: channel }],
        ["rotatePassphrase", { channel_id: channel, role: "PASSPHRASE_ROLE_ATTENDEE" }],
        ["deleteChannel", { channel_id: channel }],
      ] as const) {
        expect(await callAdmin(bl, protocol, method, body, otherAdmin), method).toEqual(
          await callAdmin(bl, protocol, method, { ...body, channel_id: `${channel}-none` }, otherAdmin),
        );
      }
      const listed = await callAdmin(bl, protocol, "listChannels", { page_size: 1000 }, otherAdmin);
      expect(listed.ok && JSON.stringify(listed.body)).not.toContain(channel);
      expect((await callAdmin(bl, protocol, "getChannel", { channel_id: channel }, admin)).ok).toBe(true);
    });

    test("whiteboard settings: set, get (never a secret, nor a prefix of one), clear; per project", async () => {
      const secret = `sk-${id("secret")}-abcdefghijklmnop`;
      const set = await callAdmin(
        bl,
        protocol,
        "setWhiteboardSettings",
        { region: "eu", access_key_pair: { access_key: "AK-visible", secret_key: secret } },
        otherAdmin,
      );
      expect(set).toMatchObject({
        ok: true,
        body: {
          settings: {
            region: "eu",
            credential: "WHITEBOARD_CREDENTIAL_KIND_ACCESS_KEY",
            updated_by: "meetings",
            conversion_qps: 1,
          },
        },
      });
      const got = await callAdmin(bl, protocol, "getWhiteboardSettings", {}, otherAdmin);
      expect(got).toMatchObject({
        ok: true,
        body: { settings: { region: "eu", updated_by: "meetings", conversion_qps: 1 } },
      });
      for (const answer of [set, got]) expect(JSON.stringify(answer)).not.toMatch(/sk-|abcdefgh/);
      // The conversion QPS round-trips; setting again without it is the default plan's 1 again.
      const withQps = { region: "eu", sdk_token: "NETLESSSDK_qps", conversion_qps: 1000 };
      expect(await callAdmin(bl, protocol, "setWhiteboardSettings", withQps, otherAdmin)).toMatchObject({
        ok: true,
        body: { settings: { conversion_qps: 1000 } },
      });
      expect(await callAdmin(bl, protocol, "getWhiteboardSettings", {}, otherAdmin)).toMatchObject({
        ok: true,
        body: { settings: { conversion_qps: 1000 } },
      });
      const withoutQps = { region: "eu", sdk_token: "NETLESSSDK_qps" };
      expect(await callAdmin(bl, protocol, "setWhiteboardSettings", withoutQps, otherAdmin)).toMatchObject({
        ok: true,
        body: { settings: { conversion_qps: 1 } },
      });
      expect(await callAdmin(bl, protocol, "getWhiteboardSettings", {}, otherAdmin)).toMatchObject({
        ok: true,
        body: { settings: { conversion_qps: 1 } },
      });
      // Project A's settings are its own (the seeded ones).
      const mine = await callAdmin(bl, protocol, "getWhiteboardSettings", {}, admin);
      expect(mine.ok && JSON.stringify(mine.body)).not.toContain('"eu"');
      expect(await callAdmin(bl, protocol, "clearWhiteboardSettings", {}, otherAdmin)).toEqual({ ok: true, body: {} });
      expect(await callAdmin(bl, protocol, "getWhiteboardSettings", {}, otherAdmin)).toMatchObject({
        ok: false,
        code: 404,
      });
    });

    test("bad input → 611 naming the field, and nothing changed", async () => {
      const channel = id("bad");
      for (const body of [
        { channel_id: channel, host_passphrase: "short" },
        { channel_id: channel, host_passphrase: "aaaaaaaaaaaaaaaaaaaa" },
        { channel_id: channel, host_passphrase: "abababababababab12" },
        { channel_id: channel, expire_time: "2020-01-01T00:00:00Z" },
        { channel_id: channel, host_only: true, attendee_passphrase: "Attendee-passphrase-42" },
        { channel_id: "" },
        { channel_id: "a{b}" },
      ]) {
        const answer = await callAdmin(bl, protocol, "createChannel", body, admin);
        expect(answer, JSON.stringify(body)).toMatchObject({ ok: false, code: 611 });
      }
      expect(await callAdmin(bl, protocol, "getChannel", { channel_id: channel }, admin)).toMatchObject({
        ok: false,
        code: 404,
      });
      expect(await callAdmin(bl, protocol, "listChannels", { page_size: 1001 }, admin)).toMatchObject({
        ok: false,
        code: 611,
      });
      expect(await callAdmin(bl, protocol, "listChannels", { page_token: "nope" }, admin)).toMatchObject({
        ok: false,
        code: 611,
      });
      expect(
        await callAdmin(bl, protocol, "setWhiteboardSettings", { region: "mars", sdk_token: "x" }, admin),
      ).toMatchObject({ ok: false, code: 611 });
      const before = await callAdmin(bl, protocol, "getWhiteboardSettings", {}, admin);
      for (const conversionQps of [0, 1001]) {
        const body = { region: "sg", sdk_token: "NETLESSSDK_x", conversion_qps: conversionQps };
        expect(
          await callAdmin(bl, protocol, "setWhiteboardSettings", body, admin),
          String(conversionQps),
        ).toMatchObject({
          ok: false,
          code: 611,
          message: INVALID_QPS,
        });
      }
      expect(await callAdmin(bl, protocol, "getWhiteboardSettings", {}, admin)).toEqual(before);
    });
  });

  test("50 concurrent CreateChannel of one id: exactly one created, the rest ALREADY_EXISTS", async () => {
    const channel = id("race");
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        callAdmin(
          bl,
          ADMIN_PROTOCOLS[i % ADMIN_PROTOCOLS.length] ?? "json",
          "createChannel",
          { channel_id: channel },
          admin,
        ),
      ),
    );
    expect(answers.filter((a) => a.ok)).toHaveLength(1);
    for (const a of answers.filter((x) => !x.ok)) {
      expect(a).toMatchObject({ ok: false, code: 409 });
      if (!a.ok && a.grpc !== undefined) expect(a.grpc).toBe(6); // ALREADY_EXISTS
    }
  });

  test("a chosen passphrase that opens another channel of the project: FAILED_PRECONDITION naming no channel", async () => {
    const answer = await callAdmin(
      bl,
      "json",
      "createChannel",
      { channel_id: id("taken"), host_passphrase: bl.world.hostPassphrase },
      admin,
    );
    expect(answer).toMatchObject({ ok: false, code: 409 });
    if (!answer.ok) expect(answer.message).not.toMatch(new RegExp(bl.world.channel));
  });

  test("a chosen passphrase another project uses is taken as a fresh one: nothing tells it is in use", async () => {
    const shared = `shared passphrase ${id("p")} Aa1`;
    const theirs = await adminToken(bl, bl.world.otherProject);
    const first = await callAdmin(
      bl,
      "json",
      "createChannel",
      { channel_id: id("theirs"), host_passphrase: shared },
      theirs,
    );
    expect(first).toMatchObject({ ok: true });
    const ours = await callAdmin(
      bl,
      "json",
      "createChannel",
      { channel_id: id("ours"), host_passphrase: shared },
      admin,
    );
    expect(ours).toMatchObject({ ok: true });
    expect(await mute(shared)).toBe(200);
  });

  test("Idempotency-Key: a retry gets the same answer, passphrases included; another request → 422", async () => {
    const channel = id("idem");
    const key = `key-${channel}`;
    const first = await callAdmin(bl, "json", "createChannel", { channel_id: channel }, admin, key);
    const again = await callAdmin(bl, "grpc h2", "createChannel", { channel_id: channel }, admin, key);
    expect(first.ok).toBe(true);
    expect(again).toEqual(first);
    const other = await callAdmin(bl, "json", "createChannel", { channel_id: `${channel}-2` }, admin, key);
    expect(other).toMatchObject({ ok: false, code: 422 });
  });

  test("expiry: a channel created to expire in 2 s stops opening then, and its keys are gone", async () => {
    const channel = id("expiring");
    const expireAt = Date.now() + 2000;
    const created = await callAdmin(
      bl,
      "json",
      "createChannel",
      { channel_id: channel, expire_time: new Date(expireAt).toISOString() },
      admin,
    );
    expect(created.ok).toBe(true);
    const host = created.ok ? String(created.body["host_passphrase"]) : "";
    const attendee = created.ok ? String(created.body["attendee_passphrase"]) : "";
    // A mute first, so the channel has a mute hash, its meta and an event stream to lose.
    expect(await mute(host)).toBe(200);
    const mine = (keys: string[]) =>
      keys.filter(
        (k) =>
          k.includes(`{${bl.world.project}/${channel}}`) ||
          [host, attendee].some((p) => k === keySchema(bl.prefix).passphrase(bl.world.project, p)),
      );
    if (storeKind !== "memory") expect(mine(await keysOfServer()).length).toBeGreaterThanOrEqual(6);

    // Asked every 50 ms (each call another subject: a refusal counts as a wrong guess).
    const seen: Array<{ start: number; status: number }> = [];
    const token = (n: number) => adminToken(bl, bl.world.project, [], `expiry-${n}`);
    for (let n = 0; Date.now() < expireAt + 1000; n++) {
      const start = Date.now();
      seen.push({ start, status: await mute(host, await token(n)) });
      await sleep(50);
    }
    expect(seen.filter((c) => c.status !== 200 && c.status !== 403)).toEqual([]);
    expect(seen.filter((c) => c.start < expireAt - 100 && c.status !== 200)).toEqual([]);
    // This harness reads Redis on every call (no PASSPHRASE_CACHE_MS cache): the bound is 0, plus 100 ms of slack.
    const late = seen.filter((c) => c.start > expireAt + 100);
    expect(late.length).toBeGreaterThan(0);
    expect(late.filter((c) => c.status !== 403)).toEqual([]);
    const lastAccepted = Math.max(...seen.filter((c) => c.status === 200).map((c) => c.start)) - expireAt;
    console.log(`${storeKind}: an expired channel was last opened ${lastAccepted} ms after its expire_time`);

    expect(await callAdmin(bl, "json", "getChannel", { channel_id: channel }, admin)).toMatchObject({
      ok: false,
      code: 404,
    });
    const listed = await callAdmin(bl, "json", "listChannels", { page_size: 1000 }, admin);
    expect(listed.ok && JSON.stringify(listed.body)).not.toContain(channel);
    if (storeKind !== "memory") expect(mine(await keysOfServer())).toEqual([]);
  });
});
