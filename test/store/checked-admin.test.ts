/**
 * The admin front checks admin input once, for both stores: invalid input is
 * refused with the operator-facing message and never reaches a store's raw
 * admin operations; valid input reaches them as given.
 */
import { describe, expect, it, vi } from "vitest";
import { developmentKeyRing } from "../../src/secrets/key-ring.js";
import type { WhiteboardSettings } from "../../src/services/ports.js";
import { DEFAULT_EVENT_COUNT } from "../../src/store/schema/admin-checks.js";
import { CheckedAdmin, type AdminPrimitives } from "../../src/store/checked-admin.js";
import { MemoryStore } from "../../src/store/memory/store.js";

/**
 * A front over raw operations that only record how they were called; its
 * channels (which createChannel writes through) are an in-memory store's.
 */
class RecordingFront extends CheckedAdmin {
  readonly calls: Array<[string, ...unknown[]]> = [];
  readonly memory = new MemoryStore();
  readonly channels = this.memory.channels;
  readonly keys = this.memory.keys;
  protected readonly secretsKeys = developmentKeyRing("SECRETS_KEYS");
  protected readonly primitives: AdminPrimitives = {
    deleteChannel: async (...args) => this.record("deleteChannel", args, 0),
    writeWhiteboard: async (...args) => this.record("writeWhiteboard", args, undefined),
    clearWhiteboard: async (...args) => this.record("clearWhiteboard", args, undefined),
    replaceWhiteboardFields: async (...args) => this.record("replaceWhiteboardFields", args, true),
    getMuteState: async (...args) => this.record("getMuteState", args, {}),
    readMuteEvents: async (...args) => this.record("readMuteEvents", args, []),
    readWhiteboardEvents: async (...args) => this.record("readWhiteboardEvents", args, []),
  };

  private record<T>(operation: string, args: unknown[], result: T): T {
    this.calls.push([operation, ...args]);
    return result;
  }
}

const sdk: WhiteboardSettings = { region: "sg", credentials: { sdkToken: "t" } };

describe("admin front", () => {
  it("refuses invalid input with the operator-facing message, before any raw operation", async () => {
    const front = new RecordingFront();
    await expect(front.createChannel({ project: "p", channel: "c", hostPassphrase: "" })).rejects.toMatchObject({
      kind: "invalid",
      detail: "host passphrase must not be empty",
    });
    await expect(
      front.createChannel({ project: "p", channel: "c", hostPassphrase: "same", attendeePassphrase: "same" }),
    ).rejects.toMatchObject({ kind: "invalid", detail: "attendee passphrase must differ from the host passphrase" });
    await expect(front.setWhiteboard("a/b", sdk)).rejects.toMatchObject({
      kind: "invalid",
      detail: "project must not contain '{', '}' or '/'",
    });
    await expect(front.setWhiteboard("p", { region: "sg", credentials: { sdkToken: "" } })).rejects.toMatchObject({
      kind: "invalid",
      detail: "sdk token must not be empty",
    });
    await expect(front.getMuteEvents("p", "c", 0)).rejects.toMatchObject({
      kind: "invalid",
      detail: "count must be an integer from 1 to 10000",
    });
    expect(front.calls).toEqual([]);
    expect(await front.channels.get("p", "c")).toBeUndefined();
  });

  it("refuses a project or channel id the key schema cannot hold on reads and deletes too", async () => {
    const front = new RecordingFront();
    const slash = { kind: "invalid", detail: "project must not contain '{', '}' or '/'" };
    const brace = { kind: "invalid", detail: "channel must not contain '{' or '}'" };
    await expect(front.deleteChannel("a/b", "c")).rejects.toMatchObject(slash);
    await expect(front.deleteChannel("a", "}c")).rejects.toMatchObject(brace);
    await expect(front.clearWhiteboard("a/b")).rejects.toMatchObject(slash);
    await expect(front.getMuteState("a/b", "c")).rejects.toMatchObject(slash);
    await expect(front.getMuteState("a", "c{")).rejects.toMatchObject(brace);
    await expect(front.getMuteEvents("a/b", "c")).rejects.toMatchObject(slash);
    await expect(front.getWhiteboardEvents("a", "")).rejects.toMatchObject({ detail: "channel must not be empty" });
    await expect(front.channelDoctor("a}")).rejects.toMatchObject(slash);
    expect(front.calls).toEqual([]);
  });

  it("passes checked input on to the raw operations", async () => {
    const front = new RecordingFront();
    const scan = vi.spyOn(front.channels.primitives, "scan");
    await front.createChannel({ project: "p", channel: "c", hostPassphrase: "h", attendeePassphrase: "a" });
    // A channel no index knew yet: its older passphrases are looked for by SCAN.
    expect(scan).toHaveBeenCalledWith(front.keys.passphrasePattern(), "0", expect.any(Number));
    await front.setWhiteboard("p", sdk);
    await front.getMuteEvents("p", "c");
    await front.getMuteEvents("p", "c", 5);
    expect(await front.memory.lookupPassphrase("p", "h")).toEqual({ project: "p", channel: "c", role: "host" });
    expect(await front.memory.lookupPassphrase("p", "a")).toEqual({ project: "p", channel: "c", role: "attendee" });
    expect(front.calls).toEqual([
      ["writeWhiteboard", "p", sdk, undefined],
      ["readMuteEvents", "p", "c", DEFAULT_EVENT_COUNT],
      ["readMuteEvents", "p", "c", 5],
    ]);
  });

  it("checks the count of whiteboard events as it does for mute events", async () => {
    const front = new RecordingFront();
    await expect(front.getWhiteboardEvents("p", "c", 10_001)).rejects.toMatchObject({
      kind: "invalid",
      detail: "count must be an integer from 1 to 10000",
    });
    await front.getWhiteboardEvents("p", "c");
    await front.getWhiteboardEvents("p", "c", 7);
    expect(front.calls).toEqual([
      ["readWhiteboardEvents", "p", "c", DEFAULT_EVENT_COUNT],
      ["readWhiteboardEvents", "p", "c", 7],
    ]);
  });
});
