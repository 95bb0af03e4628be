/**
 * ChannelAdmin (src/services/channel/admin.ts) on the in-memory store: with
 * `channels.admin`, a project creates, reads, lists, rotates and deletes its
 * channels, each change audited without a passphrase; every refusal (no scope,
 * invalid, exists, taken, unknown, expired) leaves the store as it was; an
 * Idempotency-Key makes a retried create answer the first passphrases.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import {
  CreateChannelRequestSchema,
  DeleteChannelRequestSchema,
  GetChannelRequestSchema,
  ListChannelsRequestSchema,
  PassphraseRole,
  RotatePassphraseRequestSchema,
} from "../../../gen/channel/v1/channel_admin_pb.js";
import { ChannelAdmin } from "../../../src/services/channel/admin.js";
import { SafeRetries } from "../../../src/services/idempotency/safe-retries.js";
import { CHANNELS_ADMIN_SCOPE } from "../../../src/services/ports.js";
import { MemoryStore } from "../../../src/store/memory/store.js";
import { adminEvents, callerOf, storeContents } from "../store-contents.js";

const NOW = 1_800_000_000_000;
const HOUR = 3_600_000;
const GENERATED = /^[a-z2-9]{4}(-[a-z2-9]{4}){6}$/;
const CHOSEN_HOST = "Chosen-host-passphrase-1";
const CHOSEN_ATTENDEE = "Chosen-attendee-passphrase-2";

type CreateInit = Parameters<typeof create<typeof CreateChannelRequestSchema>>[1];

function world(defaultTtlMs?: number) {
  const clock = { now: NOW };
  const store = new MemoryStore({ now: () => clock.now });
  const retries = new SafeRetries(store.idempotency, 15_000, () => clock.now);
  const admin = new ChannelAdmin(store, retries, { defaultTtlMs }, () => clock.now);
  const caller = callerOf("p", [CHANNELS_ADMIN_SCOPE], "meetings");
  const createChannel = (init: CreateInit, key?: string, who = caller) =>
    admin.createChannel(who, create(CreateChannelRequestSchema, init), key);
  const get = (channelId: string) => admin.getChannel(caller, create(GetChannelRequestSchema, { channelId }));
  const list = (pageSize: number, pageToken = "") =>
    admin.listChannels(caller, create(ListChannelsRequestSchema, { pageSize, pageToken }));
  const rotate = (channelId: string, role: PassphraseRole, passphrase?: string) =>
    admin.rotatePassphrase(caller, create(RotatePassphraseRequestSchema, { channelId, role, passphrase }));
  const remove = (channelId: string) => admin.deleteChannel(caller, create(DeleteChannelRequestSchema, { channelId }));
  return { clock, store, admin, caller, createChannel, get, list, rotate, remove };
}

describe("creating a channel", () => {
  it("generates strong host and attendee passphrases that open it, and audits the roles only", async () => {
    const { store, createChannel } = world();
    const answer = await createChannel({ channelId: "weekly" });
    expect(answer).toEqual({
      channelId: "weekly",
      hostPassphrase: expect.stringMatching(GENERATED),
      attendeePassphrase: expect.stringMatching(GENERATED),
    });
    expect(answer.attendeePassphrase).not.toBe(answer.hostPassphrase);
    expect(await store.lookupPassphrase("p", String(answer.hostPassphrase))).toMatchObject({
      project: "p",
      channel: "weekly",
      role: "host",
    });
    expect(await store.lookupPassphrase("p", String(answer.attendeePassphrase))).toMatchObject({ role: "attendee" });
    expect(adminEvents(store, "p")).toEqual([
      { at: String(NOW), by: "meetings", action: "channel.create", channel: "weekly", detail: "host,attendee" },
    ]);
  });

  it("keeps chosen passphrases; host_only has none for attendees", async () => {
    const { store, createChannel } = world();
    expect(
      await createChannel({ channelId: "a", hostPassphrase: CHOSEN_HOST, attendeePassphrase: CHOSEN_ATTENDEE }),
    ).toMatchObject({ hostPassphrase: CHOSEN_HOST, attendeePassphrase: CHOSEN_ATTENDEE });
    expect(await createChannel({ channelId: "b", hostOnly: true })).toMatchObject({ attendeePassphrase: "" });
    expect((await store.channels.get("p", "b"))?.roles).toEqual(["host"]);
  });

  it("expires at expire_time, else after the default lifetime, else never", async () => {
    const { createChannel } = world(24 * HOUR);
    const at = timestampFromMs(NOW + HOUR);
    expect((await createChannel({ channelId: "a", expireTime: at })).expireTime).toEqual(at);
    expect((await createChannel({ channelId: "b" })).expireTime).toEqual(timestampFromMs(NOW + 24 * HOUR));
    expect((await world().createChannel({ channelId: "c" })).expireTime).toBeUndefined();
  });

  const refusals: ReadonlyArray<[string, string, CreateInit, readonly string[]]> = [
    ["without channels.admin", "permission_denied", {}, ["pstn.gateway"]],
    [
      "host_only with an attendee passphrase",
      "invalid",
      { hostOnly: true, attendeePassphrase: CHOSEN_ATTENDEE },
      [CHANNELS_ADMIN_SCOPE],
    ],
    [
      "the same passphrase twice",
      "invalid",
      { hostPassphrase: CHOSEN_HOST, attendeePassphrase: CHOSEN_HOST },
      [CHANNELS_ADMIN_SCOPE],
    ],
    ["a weak chosen passphrase", "invalid", { hostPassphrase: "short" }, [CHANNELS_ADMIN_SCOPE]],
    ["an expire_time that has passed", "invalid", { expireTime: timestampFromMs(NOW) }, [CHANNELS_ADMIN_SCOPE]],
    ["an id the project has", "already_exists", { channelId: "taken" }, [CHANNELS_ADMIN_SCOPE]],
    [
      "a passphrase another channel of the project has",
      "failed_precondition",
      { hostPassphrase: CHOSEN_ATTENDEE },
      [CHANNELS_ADMIN_SCOPE],
    ],
  ];
  it.each(refusals)("%s is refused (%s) and writes nothing", async (_, kind, init, scopes) => {
    const { store, createChannel } = world();
    await createChannel({ channelId: "taken", attendeePassphrase: CHOSEN_ATTENDEE });
    await createChannel(
      { channelId: "theirs", hostPassphrase: CHOSEN_HOST },
      undefined,
      callerOf("q", [CHANNELS_ADMIN_SCOPE]),
    );
    const before = storeContents(store);
    await expect(createChannel({ channelId: "new", ...init }, undefined, callerOf("p", scopes))).rejects.toMatchObject({
      kind,
    });
    expect(storeContents(store)).toEqual(before);
  });

  it("a passphrase another project's channel has is taken as a fresh one: nothing tells it is in use", async () => {
    const { store, createChannel } = world();
    await createChannel(
      { channelId: "theirs", hostPassphrase: CHOSEN_HOST },
      undefined,
      callerOf("q", [CHANNELS_ADMIN_SCOPE]),
    );
    const answer = await createChannel({ channelId: "ours", hostPassphrase: CHOSEN_HOST });
    expect(answer.hostPassphrase).toBe(CHOSEN_HOST);
    expect(await store.lookupPassphrase("p", CHOSEN_HOST)).toMatchObject({ channel: "ours" });
    expect(await store.lookupPassphrase("q", CHOSEN_HOST)).toMatchObject({ channel: "theirs" });
  });

  it("with an Idempotency-Key, answers a retry with the first passphrases and creates once", async () => {
    const { store, createChannel } = world();
    const first = await createChannel({ channelId: "weekly" }, "create-weekly");
    expect(await createChannel({ channelId: "weekly" }, "create-weekly")).toEqual(first);
    expect(adminEvents(store, "p")).toHaveLength(1);
    await expect(createChannel({ channelId: "other" }, "create-weekly")).rejects.toMatchObject({
      kind: "idempotency_key_reused",
    });
  });
});

describe("reading channels", () => {
  it("gets a channel with its mute state's size and newest event ids, never a passphrase", async () => {
    const { store, createChannel, get } = world();
    await createChannel({ channelId: "weekly" });
    await store.setMute({ project: "p", channel: "weekly", uid: "pstn-1", mute: true, by: "x", at: NOW });
    const [event] = await store.getMuteEvents("p", "weekly", 1);
    expect(await get("weekly")).toEqual({
      channel: {
        channelId: "weekly",
        createdBy: "meetings",
        roles: [PassphraseRole.HOST, PassphraseRole.ATTENDEE],
        createTime: timestampFromMs(NOW),
      },
      participantsWithMuteState: 1,
      newestPstnEventId: event?.id,
      newestWhiteboardEventId: "0-0",
    });
  });

  it("answers an unknown, another project's or an expired channel as not_found", async () => {
    const { clock, createChannel, get } = world();
    await createChannel({ channelId: "theirs" }, undefined, callerOf("q", [CHANNELS_ADMIN_SCOPE]));
    await createChannel({ channelId: "brief", expireTime: timestampFromMs(NOW + 1_000) });
    await expect(get("unknown")).rejects.toMatchObject({ kind: "not_found" });
    await expect(get("theirs")).rejects.toMatchObject({ kind: "not_found" });
    clock.now = NOW + 1_000;
    await expect(get("brief")).rejects.toMatchObject({ kind: "not_found" });
  });

  it("lists page by page in id order, leaving out expired channels", async () => {
    const { clock, createChannel, list } = world();
    for (const id of ["c", "a", "b"]) await createChannel({ channelId: id });
    await createChannel({ channelId: "aa", expireTime: timestampFromMs(NOW + 1) });
    clock.now = NOW + 1;
    const pages: string[][] = [];
    let token = "";
    do {
      const page = await list(2, token);
      pages.push(page.channels?.map((c) => String(c.channelId)) ?? []);
      token = page.nextPageToken ?? "";
    } while (token !== "" && pages.length < 5);
    expect(pages.flat()).toEqual(["a", "b", "c"]);
    expect(pages[0]).toEqual(["a", "b"]);
    await expect(list(1001)).rejects.toMatchObject({ kind: "invalid" });
  });
});

describe("rotating and deleting", () => {
  it("a rotated passphrase replaces the old one, audited with its role", async () => {
    const { store, createChannel, rotate } = world();
    const { hostPassphrase } = await createChannel({ channelId: "weekly" });
    const answer = await rotate("weekly", PassphraseRole.HOST);
    expect(answer).toEqual({
      channelId: "weekly",
      role: PassphraseRole.HOST,
      passphrase: expect.stringMatching(GENERATED),
    });
    expect(await store.lookupPassphrase("p", String(hostPassphrase))).toBeUndefined();
    expect(await store.lookupPassphrase("p", String(answer.passphrase))).toMatchObject({
      channel: "weekly",
      role: "host",
    });
    expect(adminEvents(store, "p").at(-1)).toMatchObject({
      action: "channel.rotate",
      channel: "weekly",
      detail: "host",
    });
  });

  it.each([
    ["an unknown channel", "nope", PassphraseRole.HOST, "not_found"],
    ["a role the channel has no passphrase for", "hosts", PassphraseRole.ATTENDEE, "failed_precondition"],
    ["no role", "hosts", PassphraseRole.UNSPECIFIED, "invalid"],
  ])("rotating for %s is refused and writes nothing", async (_, channel, role, kind) => {
    const { store, createChannel, rotate } = world();
    await createChannel({ channelId: "hosts", hostOnly: true });
    const before = storeContents(store);
    await expect(rotate(channel, role)).rejects.toMatchObject({ kind });
    expect(storeContents(store)).toEqual(before);
  });

  it("a deleted channel's passphrases stop working; deleting it again is not_found", async () => {
    const { store, createChannel, remove } = world();
    const { hostPassphrase } = await createChannel({ channelId: "weekly" });
    expect(await remove("weekly")).toEqual({});
    expect(await store.lookupPassphrase("p", String(hostPassphrase))).toBeUndefined();
    expect(adminEvents(store, "p").at(-1)).toMatchObject({ action: "channel.delete", channel: "weekly" });
    const before = storeContents(store);
    await expect(remove("weekly")).rejects.toMatchObject({ kind: "not_found" });
    expect(storeContents(store)).toEqual(before);
  });

  it("every call needs channels.admin", async () => {
    const { store, admin, createChannel } = world();
    await createChannel({ channelId: "weekly" });
    const before = storeContents(store);
    const gateway = callerOf("p", ["pstn.gateway"]);
    const channelId = "weekly";
    for (const call of [
      () => admin.getChannel(gateway, create(GetChannelRequestSchema, { channelId })),
      () => admin.listChannels(gateway, create(ListChannelsRequestSchema)),
      () =>
        admin.rotatePassphrase(
          gateway,
          create(RotatePassphraseRequestSchema, { channelId, role: PassphraseRole.HOST }),
        ),
      () => admin.deleteChannel(gateway, create(DeleteChannelRequestSchema, { channelId })),
    ]) {
      await expect(call()).rejects.toMatchObject({ kind: "permission_denied" });
    }
    expect(storeContents(store)).toEqual(before);
  });
});
