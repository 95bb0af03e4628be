/**
 * WhiteboardSettingsAdmin (src/services/channel/whiteboard-settings.ts) on the
 * in-memory store: with `channels.admin`, a project sets (trimmed), reads and
 * clears its Netless region, credentials and conversion QPS (1 when left
 * out, set or not before); what comes back and what is
 * audited never holds a secret; an invalid request or a caller without the
 * scope changes nothing.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import {
  SetWhiteboardSettingsRequestSchema,
  WhiteboardCredentialKind,
} from "../../../gen/channel/v1/channel_admin_pb.js";
import { WhiteboardSettingsAdmin } from "../../../src/services/channel/whiteboard-settings.js";
import { CHANNELS_ADMIN_SCOPE } from "../../../src/services/ports.js";
import { MemoryStore } from "../../../src/store/memory/store.js";
import { adminEvents, callerOf, storeContents } from "../store-contents.js";

const NOW = 1_800_000_000_000;
const ADMIN = callerOf("p", [CHANNELS_ADMIN_SCOPE], "meetings");

type SetInit = Parameters<typeof create<typeof SetWhiteboardSettingsRequestSchema>>[1];

function world() {
  const store = new MemoryStore({ now: () => NOW });
  const admin = new WhiteboardSettingsAdmin(store, () => NOW);
  const set = (init: SetInit, caller = ADMIN) =>
    admin.setSettings(caller, create(SetWhiteboardSettingsRequestSchema, init));
  return { store, admin, set };
}

const sdkToken = (value: string): SetInit => ({ region: "eu", credential: { case: "sdkToken", value } });
const keyPair = (accessKey: string, secretKey: string): SetInit => ({
  region: "sg",
  credential: { case: "accessKeyPair", value: { accessKey, secretKey } },
});

describe("setting the whiteboard", () => {
  it("with an SDK token: stored trimmed, answered and audited without the token", async () => {
    const { store, set } = world();
    const answer = await set(sdkToken("  NETLESSSDK_secret \n"));
    expect(answer).toEqual({
      settings: {
        region: "eu",
        credential: WhiteboardCredentialKind.SDK_TOKEN,
        conversionQps: 1,
        updatedBy: "meetings",
        updateTime: timestampFromMs(NOW),
      },
    });
    expect(await store.getWhiteboard("p")).toEqual({ region: "eu", credentials: { sdkToken: "NETLESSSDK_secret" } });
    expect(adminEvents(store, "p")).toEqual([
      { at: String(NOW), by: "meetings", action: "whiteboard.set", detail: "eu sdk_token" },
    ]);
  });

  it("with an access key pair, replacing what was set", async () => {
    const { store, set } = world();
    await set(sdkToken("NETLESSSDK_old"));
    const answer = await set(keyPair("AK", " SK "));
    expect(answer.settings?.credential).toBe(WhiteboardCredentialKind.ACCESS_KEY);
    expect(await store.getWhiteboard("p")).toEqual({ region: "sg", credentials: { accessKey: "AK", secretKey: "SK" } });
    expect(JSON.stringify(adminEvents(store, "p"))).not.toMatch(/SK|NETLESSSDK/);
  });

  it("with a conversion QPS: stored, answered and read back; set again without it, the default plan's 1", async () => {
    const { store, admin, set } = world();
    const answer = await set({ ...sdkToken("NETLESSSDK_t"), conversionQps: 25 });
    expect(answer.settings?.conversionQps).toBe(25);
    expect(await store.getWhiteboard("p")).toEqual({
      region: "eu",
      credentials: { sdkToken: "NETLESSSDK_t" },
      conversionQps: 25,
    });
    expect((await admin.getSettings(ADMIN)).settings?.conversionQps).toBe(25);

    const again = await set(keyPair("AK", "SK"));
    expect(again.settings?.conversionQps).toBe(1);
    expect(await store.getWhiteboard("p")).toEqual({ region: "sg", credentials: { accessKey: "AK", secretKey: "SK" } });
    expect((await admin.getSettings(ADMIN)).settings?.conversionQps).toBe(1);
  });

  it.each([
    ["an unknown region", { ...sdkToken("t"), region: "mars" }, "region: must be one of us-sv, sg, in-mum, eu, cn-hz"],
    ["a blank SDK token", sdkToken("   "), "sdk_token: must not be empty"],
    ["a blank secret key", keyPair("AK", ""), "access_key_pair.secret_key: must not be empty"],
    ["no credential", { region: "eu" }, "credential: exactly one of sdk_token, access_key_pair is required"],
    ["a conversion QPS of 0", { ...sdkToken("t"), conversionQps: 0 }, "conversion_qps: must be from 1 to 1000"],
    ["a conversion QPS of 1001", { ...sdkToken("t"), conversionQps: 1001 }, "conversion_qps: must be from 1 to 1000"],
  ])("refuses %s as invalid, naming the field, and changes nothing", async (_, init, detail) => {
    const { store, set } = world();
    await set(sdkToken("NETLESSSDK_kept"));
    const before = storeContents(store);
    await expect(set(init)).rejects.toMatchObject({ kind: "invalid", detail });
    expect(storeContents(store)).toEqual(before);
  });
});

describe("reading and clearing", () => {
  it("reads what was set, as who and when, never the secret", async () => {
    const { admin, set } = world();
    await set(keyPair("AK", "SK"));
    const got = await admin.getSettings(ADMIN);
    expect(got).toEqual({
      settings: {
        region: "sg",
        credential: WhiteboardCredentialKind.ACCESS_KEY,
        conversionQps: 1,
        updatedBy: "meetings",
        updateTime: timestampFromMs(NOW),
      },
    });
  });

  it("a project without settings reads not_found; another project's settings are not its own", async () => {
    const { admin, set } = world();
    await set(sdkToken("NETLESSSDK_p"));
    await expect(admin.getSettings(callerOf("q", [CHANNELS_ADMIN_SCOPE]))).rejects.toMatchObject({
      kind: "not_found",
    });
  });

  it("clears the settings (the whiteboard is then not set up), audited", async () => {
    const { store, admin, set } = world();
    await set(sdkToken("NETLESSSDK_p"));
    expect(await admin.clearSettings(ADMIN)).toEqual({});
    expect(await store.getWhiteboard("p")).toBeUndefined();
    await expect(admin.getSettings(ADMIN)).rejects.toMatchObject({ kind: "not_found" });
    expect(adminEvents(store, "p").at(-1)).toMatchObject({ action: "whiteboard.clear", by: "meetings" });
  });
});

describe("without channels.admin", () => {
  it("every call is refused and nothing changes", async () => {
    const { store, admin, set } = world();
    await set(sdkToken("NETLESSSDK_p"));
    const before = storeContents(store);
    const gateway = callerOf("p", ["pstn.gateway"]);
    await expect(set(sdkToken("NETLESSSDK_new"), gateway)).rejects.toMatchObject({ kind: "permission_denied" });
    await expect(admin.getSettings(gateway)).rejects.toMatchObject({ kind: "permission_denied" });
    await expect(admin.clearSettings(gateway)).rejects.toMatchObject({ kind: "permission_denied" });
    expect(storeContents(store)).toEqual(before);
  });
});
