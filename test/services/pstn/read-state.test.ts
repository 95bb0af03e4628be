/**
 * PstnStateReader (src/services/pstn/read-state.ts) on the in-memory store: a
 * channel named by any of its passphrases, or by its id with the
 * `pstn.gateway` scope, reads as its participants ordered by uid and the id of
 * the last mute event; a refused passphrase counts as a miss; reading writes
 * nothing else.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { GetPstnStateRequestSchema, PstnSetter } from "../../../gen/channel/v1/pstn_pb.js";
import { noGuard } from "../../../src/services/no-guard.js";
import { MissLimitGuard, type PassphraseGuard } from "../../../src/services/passphrase-guard.js";
import { type Caller, DEFAULT_LINE_POLICY, PSTN_GATEWAY_SCOPE } from "../../../src/services/ports.js";
import { PstnStateReader } from "../../../src/services/pstn/read-state.js";
import { MemoryStore } from "../../../src/store/memory/store.js";
import { callerOf, storeContents } from "../store-contents.js";

const HOST = "host-passphrase-of-weekly";
const ATTENDEE = "attendee-passphrase-of-weekly";
const OTHER = "host-passphrase-of-another-project";

async function world(guard: (store: MemoryStore) => PassphraseGuard = () => noGuard) {
  const store = new MemoryStore();
  await store.createChannel({ project: "p", channel: "weekly", hostPassphrase: HOST, attendeePassphrase: ATTENDEE });
  await store.createChannel({ project: "q", channel: "weekly", hostPassphrase: OTHER });
  const muteAt = (uid: string, mute: boolean, at: number, project = "p") =>
    store.setMute({ project, channel: "weekly", uid, mute, by: "bob", at });
  const reader = new PstnStateReader(store, guard(store));
  const byPassphrase = (passphrase: string, caller: Caller = callerOf("p")) =>
    reader.getState(caller, create(GetPstnStateRequestSchema, { channel: { case: "passphrase", value: passphrase } }));
  const byId = (channel: string, caller: Caller) =>
    reader.getState(caller, create(GetPstnStateRequestSchema, { channel: { case: "channelId", value: channel } }));
  return { store, reader, muteAt, byPassphrase, byId };
}

/** A state a host set, of a participant nobody reported on the line. */
const HOST_SET = { setter: PstnSetter.HOST, onLine: false, callerId: "", handRaised: false } as const;
describe("the state of a channel", () => {
  it("lists its participants by uid with who changed each when, as of the newest mute event", async () => {
    const { store, muteAt, byPassphrase } = await world();
    await muteAt("pstn-9", true, 1_000);
    await muteAt("pstn-10", true, 2_000);
    await muteAt("pstn-9", false, 3_000);
    const newest = (await store.getMuteEvents("p", "weekly", 1))[0]?.id;
    expect(await byPassphrase(HOST)).toEqual({
      channelId: "weekly",
      asOfEventId: newest,
      participants: [
        { uid: "pstn-10", mute: true, updatedBy: "bob", updatedAt: timestampFromMs(2_000), ...HOST_SET },
        { uid: "pstn-9", mute: false, updatedBy: "bob", updatedAt: timestampFromMs(3_000), ...HOST_SET },
      ],
      policy: DEFAULT_LINE_POLICY,
    });
  });

  it("reads the same with the attendee passphrase: reading is not a control action", async () => {
    const { muteAt, byPassphrase } = await world();
    await muteAt("pstn-1", true, 1_000);
    expect(await byPassphrase(ATTENDEE)).toEqual(await byPassphrase(HOST));
  });

  it("of a channel nobody muted in is empty, as of event 0-0", async () => {
    const { byPassphrase } = await world();
    expect(await byPassphrase(HOST)).toEqual({
      channelId: "weekly",
      asOfEventId: "0-0",
      participants: [],
      policy: DEFAULT_LINE_POLICY,
    });
  });

  it("by channel id needs the pstn.gateway scope, and reads within the caller's project only", async () => {
    const { muteAt, byId } = await world();
    await muteAt("pstn-1", true, 1_000);
    await muteAt("pstn-2", true, 1_000, "q");
    const gateway = (project: string) => callerOf(project, [PSTN_GATEWAY_SCOPE], "gw");
    expect((await byId("weekly", gateway("p"))).participants?.map((p) => p.uid)).toEqual(["pstn-1"]);
    expect((await byId("weekly", gateway("q"))).participants?.map((p) => p.uid)).toEqual(["pstn-2"]);
    await expect(byId("weekly", callerOf("p", ["channels.admin"]))).rejects.toMatchObject({
      kind: "permission_denied",
      detail: "naming a channel by channel_id needs a token with the scope pstn.gateway",
    });
  });

  it("is read without writing anything", async () => {
    const { store, muteAt, byPassphrase, byId } = await world();
    await muteAt("pstn-1", true, 1_000);
    const before = storeContents(store);
    await byPassphrase(ATTENDEE);
    await byId("weekly", callerOf("p", [PSTN_GATEWAY_SCOPE]));
    expect(storeContents(store)).toEqual(before);
  });
});

describe("a refused passphrase", () => {
  it.each([
    ["an unknown passphrase", "no-such-passphrase"],
    ["another project's passphrase", OTHER],
  ])("%s reads like any other refusal, and changes nothing", async (_, passphrase) => {
    const { store, byPassphrase } = await world();
    const before = storeContents(store);
    await expect(byPassphrase(passphrase)).rejects.toMatchObject({
      kind: "permission_denied",
      detail: "the passphrase is not a passphrase of a channel of this project",
    });
    expect(storeContents(store)).toEqual(before);
  });

  it("counts as a miss: at the limit, even a right passphrase is refused as rate_limited", async () => {
    const { byPassphrase } = await world((s) => new MissLimitGuard(s, { attempts: 1, windowSeconds: 30 }));
    await expect(byPassphrase(OTHER)).rejects.toMatchObject({ kind: "permission_denied" });
    await expect(byPassphrase(HOST)).rejects.toMatchObject({ kind: "rate_limited", retryAfterSeconds: 30 });
    // Another subject of the project has a count of its own.
    expect((await byPassphrase(HOST, callerOf("p", [], "carol"))).channelId).toBe("weekly");
  });

  it("a request naming no channel is invalid", async () => {
    const { reader } = await world();
    await expect(reader.getState(callerOf("p"), create(GetPstnStateRequestSchema))).rejects.toMatchObject({
      kind: "invalid",
    });
  });
});
