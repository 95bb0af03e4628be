/**
 * The admin front checks admin input once, for both stores: invalid input is
 * refused with the operator-facing message and never reaches a store's raw
 * admin operations; valid input reaches them as given.
 */
import { describe, expect, it } from "vitest";
import type { WhiteboardSettings } from "../../src/services/ports.js";
import { DEFAULT_EVENT_COUNT } from "../../src/store/schema/admin-checks.js";
import { CheckedAdmin, type AdminPrimitives } from "../../src/store/checked-admin.js";

/** A front over raw operations that only record how they were called. */
class RecordingFront extends CheckedAdmin {
  readonly calls: Array<[string, ...unknown[]]> = [];
  protected readonly primitives: AdminPrimitives = {
    writeChannel: async (...args) => this.record("writeChannel", args, undefined),
    deleteChannel: async (...args) => this.record("deleteChannel", args, 0),
    writeWhiteboard: async (...args) => this.record("writeWhiteboard", args, undefined),
    clearWhiteboard: async (...args) => this.record("clearWhiteboard", args, undefined),
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
  });

  it("passes checked input on to the raw operations", async () => {
    const front = new RecordingFront();
    await front.createChannel({ project: "p", channel: "c", hostPassphrase: "h", attendeePassphrase: "a" });
    await front.setWhiteboard("p", sdk);
    await front.getMuteEvents("p", "c");
    await front.getMuteEvents("p", "c", 5);
    expect(front.calls).toEqual([
      [
        "writeChannel",
        "p",
        "c",
        [
          { passphrase: "h", record: { project: "p", channel: "c", role: "host" } },
          { passphrase: "a", record: { project: "p", channel: "c", role: "attendee" } },
        ],
      ],
      ["writeWhiteboard", "p", sdk],
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
