import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { keyRing } from "../../src/secrets/key-ring.js";
import {
  CONVERSION_TTL_SECONDS,
  checkChannelId,
  checkProjectId,
  DEFAULT_KEY_PREFIX,
  hashPassphrase,
  IDEMPOTENCY_TTL_SECONDS,
  keySchema,
  MUTE_EVENTS_MAXLEN,
} from "../../src/store/schema/keys.js";
import { parsePassphrase } from "../../src/store/schema/channel-records.js";

describe("key schema (docs/architecture.md, Redis schema)", () => {
  it("builds the documented keys under the default prefix bl:", () => {
    const keys = keySchema();
    expect(DEFAULT_KEY_PREFIX).toBe("bl:");
    expect(keys.passphrase("p", "abc")).toBe(`bl:pass:{${keys.passphraseDigestOf("p", "abc")}}`);
    expect(keys.whiteboard("proj-1")).toBe("bl:proj:{proj-1}:whiteboard");
    expect(keys.pstnMute("proj-1", "room 7")).toBe("bl:chan:{proj-1/room 7}:pstn-mute");
    expect(keys.pstnEvents("proj-1", "room 7")).toBe("bl:chan:{proj-1/room 7}:pstn-events");
    expect(keys.pstnMuteMeta("proj-1", "room 7")).toBe("bl:chan:{proj-1/room 7}:pstn-mute-meta");
    expect(keys.pstnNotify("proj-1", "room 7")).toBe("bl:chan:{proj-1/room 7}:pstn-notify");
    expect(keys.channelKeys("proj-1", "room 7")).toEqual({
      record: keys.channelRecord("proj-1", "room 7"),
      mute: keys.pstnMute("proj-1", "room 7"),
      events: keys.pstnEvents("proj-1", "room 7"),
      meta: keys.pstnMuteMeta("proj-1", "room 7"),
      notify: keys.pstnNotify("proj-1", "room 7"),
      line: keys.pstnLine("proj-1", "room 7"),
      leases: keys.pstnLeases("proj-1", "room 7"),
      policy: keys.pstnPolicy("proj-1", "room 7"),
      whiteboardEvents: keys.whiteboardEvents("proj-1", "room 7"),
    });
    expect(keys.pstnLine("proj-1", "room 7")).toBe("bl:chan:{proj-1/room 7}:pstn-line");
    expect(keys.pstnLeasesDue()).toBe("bl:{pstn-leases}:due");
    expect(keys.channelDataKeys("proj-1", "room 7")).toHaveLength(7);
    expect(keys.conversion("3f1c")).toBe("bl:conv:{3f1c}");
    expect(keys.conversionWebhook("Zm9vYmFy_-")).toBe("bl:conv-hook:{Zm9vYmFy_-}");
    expect(keys.passphrasePattern()).toBe("bl:pass:*");
    expect(keys.idempotency("proj-1", "alice", "k-1")).toBe(`bl:idem:{proj-1}:${hashPassphrase('["alice","k-1"]')}`);
  });

  it("builds the channel directory's keys, and reads project and channel back from them (repairs)", () => {
    const keys = keySchema();
    const sha = keys.passphraseDigestOf("p", "abc");
    expect(keys.channelIndex("proj-1")).toBe("bl:proj:{proj-1}:channels");
    expect(keys.adminEvents("proj-1")).toBe("bl:proj:{proj-1}:admin-events");
    expect(keys.channelRecord("proj-1", "room 7/b")).toBe("bl:chan:{proj-1/room 7/b}:channel");
    expect(keys.passphraseByHash(sha)).toBe(keys.passphrase("p", "abc"));
    expect(keys.passphraseHashOf(keys.passphrase("p", "abc"))).toBe(sha);
    expect(keys.passphraseHashOf("bl:pass:{not-a-sha}")).toBeUndefined();
    expect(keys.passphraseHashOf(`other:pass:{${sha}}`)).toBeUndefined();
    expect(keys.channelRecordOf("bl:chan:{proj-1/room 7/b}:channel")).toEqual({
      project: "proj-1",
      channel: "room 7/b",
    });
    expect(keys.channelRecordOf("bl:chan:{proj-1/room 7}:pstn-mute")).toBeUndefined();
    expect(keys.channelIndexOf("bl:proj:{proj-1}:channels")).toBe("proj-1");
    expect(keys.channelIndexOf("bl:proj:{proj-1}:whiteboard")).toBeUndefined();
    expect(keys.whiteboardOf("bl:proj:{proj-1}:whiteboard")).toBe("proj-1");
    expect(keys.whiteboardOf("bl:proj:{proj-1}:channels")).toBeUndefined();
    expect(keys.whiteboardPattern()).toBe("bl:proj:{*}:whiteboard");
    expect(keys.channelRecordPattern()).toBe("bl:chan:{*}:channel");
    expect(keys.channelRecordPattern("p*1")).toBe("bl:chan:{p\\*1/*}:channel");
    expect(keys.channelIndexPattern()).toBe("bl:proj:{*}:channels");
  });

  it("uses a custom prefix, escaped in the SCAN pattern", () => {
    const keys = keySchema("t:[x]*:");
    expect(keys.passphrase("p", "ab")).toBe(`t:[x]*:pass:{${keys.passphraseDigestOf("p", "ab")}}`);
    expect(keys.passphrasePattern()).toBe("t:\\[x\\]\\*:pass:*");
  });

  it("hashes passphrases as lowercase sha256 hex of their UTF-8 bytes", () => {
    expect(hashPassphrase("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(hashPassphrase("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    // "é" as UTF-8 (c3 a9), not Latin-1.
    expect(hashPassphrase("\u00e9")).toBe("4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c");
  });

  it("finds a passphrase by HMAC-SHA256 under the current key of the JSON [project, sha256 hex], then older keys, then the bare sha256", () => {
    const [current, older] = [Buffer.alloc(32, 7), Buffer.alloc(32, 9)];
    const keys = keySchema("bl:", keyRing([current.toString("base64"), older.toString("base64")]));
    const sha = hashPassphrase("abc");
    const hmac = (key: Buffer, project: string) =>
      createHmac("sha256", key).update(`["${project}","${sha}"]`).digest("hex");
    expect(keys.passphraseDigestOf("p", "abc")).toBe(hmac(current, "p"));
    expect(keys.passphrase("p", "abc")).toBe(`bl:pass:{${hmac(current, "p")}}`);
    expect(keys.passphraseDigests("p", "abc")).toEqual([hmac(current, "p"), hmac(older, "p"), sha]);
    // Scoped to the project: another project's digest of the same passphrase differs.
    expect(keys.passphraseDigestOf("q", "abc")).not.toBe(keys.passphraseDigestOf("p", "abc"));
    // No key, no digest: the development key gives others than these.
    expect(keySchema().passphraseDigestOf("p", "abc")).not.toBe(hmac(current, "p"));
  });

  it("takes passphrases and caller keys in clear and puts only their digest into the key", () => {
    const keys = keySchema();
    const passphrase = "open sesame \u00e9";
    expect(keys.passphrase("p", passphrase)).toBe(`bl:pass:{${keys.passphraseDigestOf("p", passphrase)}}`);
    expect(keys.passphrase("p", passphrase)).not.toContain(hashPassphrase(passphrase));
    expect(keys.guesses("caller-1")).toBe(`bl:guesses:{${hashPassphrase("caller-1")}}`);
    expect(keys.passphrase("p", passphrase)).not.toContain("sesame");
    expect(keys.guesses("caller-1")).not.toContain("caller-1");
    const idem = keys.idempotency("proj-1", "subject-secret", "key-secret");
    expect(idem).not.toContain("subject-secret");
    expect(idem).not.toContain("key-secret");
    // [subject, key] as JSON: no two pairs share a key name.
    expect(keys.idempotency("p", "a", "b c")).not.toBe(keys.idempotency("p", "a b", "c"));
  });

  it("documents the cap and the expiry", () => {
    expect(MUTE_EVENTS_MAXLEN).toBe(10_000);
    expect(CONVERSION_TTL_SECONDS).toBe(604_800);
    expect(IDEMPOTENCY_TTL_SECONDS).toBe(86_400);
  });

  it("refuses ids that would break the hash tag or be ambiguous", () => {
    expect(checkProjectId("proj-1")).toBeUndefined();
    expect(checkChannelId("room/7 ünïcode")).toBeUndefined();
    for (const bad of ["", "a{b", "a}b", "}a", "a/b", "a\nb"]) expect(checkProjectId(bad), bad).toBeDefined();
    for (const bad of ["", "a{b", "}a", "a\u0000b"]) expect(checkChannelId(bad), bad).toBeDefined();
  });

  it("gives no two channels one tag: project ids hold no '/', so the tag splits at its first '/'", () => {
    const keys = keySchema();
    expect(checkProjectId("a/b")).toBeDefined();
    expect(keys.channelRecord("a/b", "c")).toBe(keys.channelRecord("a", "b/c"));
    expect(keys.channelRecordOf(keys.channelRecord("a", "b/c"))).toEqual({ project: "a", channel: "b/c" });
  });

  it("treats a passphrase record of a project the key schema cannot hold as absent", () => {
    const record = { channel: "c", role: "host" };
    expect(parsePassphrase({ ...record, project: "a" })).toEqual({ ...record, project: "a" });
    for (const project of ["a/b", "a{", "}a", "a\nb"]) {
      expect(parsePassphrase({ ...record, project }), project).toBeUndefined();
    }
  });
});
