/**
 * PstnControl (src/services/pstn/mute.ts) on the in-memory store: the host
 * passphrase of a channel of the caller's project mutes and unmutes, recording
 * who and when; every other passphrase is refused with one message, counted as
 * a miss, and changes nothing else in the store.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { MuteRequestSchema } from "../../../gen/channel/v1/pstn_pb.js";
import { noGuard } from "../../../src/services/no-guard.js";
import { MissLimitGuard, type PassphraseGuard } from "../../../src/services/passphrase-guard.js";
import { PstnControl } from "../../../src/services/pstn/mute.js";
import { MemoryStore } from "../../../src/store/memory/store.js";
import { memoryRaw } from "../../store/memory-raw.js";
import { callerOf, storeContents } from "../store-contents.js";

const NOW = 1_800_000_000_000;
const HOST = "host-passphrase-of-weekly";
const ATTENDEE = "attendee-passphrase-of-weekly";
const OTHER_HOST = "host-passphrase-of-another-project";

async function world(guard: (store: MemoryStore) => PassphraseGuard = () => noGuard) {
  const clock = { now: NOW };
  const store = new MemoryStore({ now: () => clock.now });
  await store.createChannel({ project: "p", channel: "weekly", hostPassphrase: HOST, attendeePassphrase: ATTENDEE });
  await store.createChannel({ project: "q", channel: "weekly", hostPassphrase: OTHER_HOST });
  const control = new PstnControl(store, guard(store), () => clock.now);
  const mute = (passphrase: string, uid = "pstn-1", on = true) =>
    control.mute(callerOf("p", [], "bob"), create(MuteRequestSchema, { passphrase, uid, mute: on }));
  return { store, clock, mute };
}

describe("a mute with the host passphrase", () => {
  it("answers the uid and the new state, and records the state, who and when", async () => {
    const { store, mute } = await world();
    expect(await mute(HOST, "pstn-1", true)).toEqual({ uid: "pstn-1", mute: true });
    expect(await mute(HOST, "pstn-2", false)).toEqual({ uid: "pstn-2", mute: false });
    expect(await store.getMuteState("p", "weekly")).toEqual({ "pstn-1": true, "pstn-2": false });
    const events = await store.getMuteEvents("p", "weekly");
    expect(events.map(({ uid, mute, by, at }) => ({ uid, mute, by, at }))).toEqual([
      { uid: "pstn-2", mute: false, by: "bob", at: NOW },
      { uid: "pstn-1", mute: true, by: "bob", at: NOW },
    ]);
    const snapshot = await store.getPstnSnapshot("p", "weekly");
    expect(snapshot.asOfEventId).toBe(events[0]?.id);
  });

  it("touches only its own project's channel of that name", async () => {
    const { store, mute } = await world();
    await mute(HOST);
    expect(await store.getMuteState("q", "weekly")).toEqual({});
  });

  it("gives the channel's mute keys the channel's expiry", async () => {
    const clock = { now: NOW };
    const store = new MemoryStore({ now: () => clock.now });
    const expireAt = NOW + 3_600_000;
    await store.channels.create({
      project: "p",
      channel: "short",
      passphrases: [{ role: "host", passphrase: HOST }],
      createdBy: "admin",
      createdAt: NOW,
      expireAt,
    });
    await new PstnControl(store, noGuard, () => clock.now).mute(
      callerOf("p"),
      create(MuteRequestSchema, { passphrase: HOST, uid: "pstn-1", mute: true }),
    );
    expect(await memoryRaw(store.data).ttl(store.keys.pstnMute("p", "short"))).toBe(3600);
    clock.now = expireAt;
    expect(await store.getMuteState("p", "short")).toEqual({});
  });
});

describe("a mute with any other passphrase", () => {
  it.each([
    ["the attendee passphrase", ATTENDEE],
    ["an unknown passphrase", "no-such-passphrase"],
    ["the host passphrase of another project's channel", OTHER_HOST],
  ])("is refused for %s with the one message, and changes nothing", async (_, passphrase) => {
    const { store, mute } = await world();
    const before = storeContents(store);
    await expect(mute(passphrase)).rejects.toMatchObject({
      kind: "permission_denied",
      detail: "the passphrase is not the host passphrase of a channel of this project",
    });
    expect(storeContents(store)).toEqual(before);
  });

  it("counts a miss; at the limit even the host passphrase is refused as rate_limited, and mutes nothing", async () => {
    const { store, mute } = await world((s) => new MissLimitGuard(s, { attempts: 2, windowSeconds: 60 }));
    await expect(mute(ATTENDEE)).rejects.toMatchObject({ kind: "permission_denied" });
    expect(await mute(HOST)).toEqual({ uid: "pstn-1", mute: true }); // one miss: under the limit
    await expect(mute("no-such-passphrase")).rejects.toMatchObject({ kind: "permission_denied" });
    await expect(mute(HOST, "pstn-2")).rejects.toMatchObject({ kind: "rate_limited", retryAfterSeconds: 60 });
    expect(await store.getMuteState("p", "weekly")).toEqual({ "pstn-1": true });
  });
});
