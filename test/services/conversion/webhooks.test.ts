/**
 * The domain side of conversion webhooks on the in-memory store: the URLs
 * handed to the backend, the signature check (good, forged, missing, another
 * id's), and what a call does — nothing at all without the right signature
 * (not even a store read), else the task made due now and the follower woken,
 * once and only while the task is followed.
 */
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ConversionWebhooks } from "../../../src/services/conversion/webhooks.js";
import type { ConversionTaskRecord } from "../../../src/services/ports.js";
import { MemoryStore } from "../../../src/store/memory/store.js";

const SECRET = new TextEncoder().encode("a webhook secret of 32 bytes at least");
const NOW = 1_800_000_000_000;

function setUp() {
  const store = new MemoryStore();
  const wakes: number[] = [];
  const webhooks = new ConversionWebhooks({
    secret: SECRET,
    endpoint: (id, sig) => `https://boardline.example/hook/${id}?sig=${sig}`,
    store,
    wakeFollower: () => wakes.push(1),
    now: () => NOW,
  });
  return { store, wakes, webhooks };
}

const sign = (id: string, key: Uint8Array = SECRET) => createHmac("sha256", key).update(id).digest("base64url");

function task(uuid: string): ConversionTaskRecord {
  return {
    uuid,
    project: "p",
    channel: "c",
    type: "dynamic",
    api: "projector",
    status: "Waiting",
    percent: 0,
    pages: [],
    createdAt: NOW - 1000,
    updatedAt: NOW - 1000,
    by: "u",
  };
}

describe("conversion webhooks", () => {
  it("issue a fresh random id each time, in a URL signed with HMAC-SHA256 of the id (base64url)", () => {
    const { webhooks } = setUp();
    const a = webhooks.issue();
    const b = webhooks.issue();
    expect(a.id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(b.id).not.toBe(a.id);
    expect(a.url).toBe(`https://boardline.example/hook/${a.id}?sig=${sign(a.id)}`);
    expect(sign(a.id)).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it("verify only the id's own signature under our key", () => {
    const { webhooks } = setUp();
    const { id } = webhooks.issue();
    const other = webhooks.issue().id;
    const good = sign(id);
    expect(webhooks.verify(id, good)).toBe(true);
    const flipped = `${good.slice(0, 10)}${good[10] === "A" ? "B" : "A"}${good.slice(11)}`;
    const forged = [
      undefined,
      "",
      sign(other),
      flipped,
      good.slice(0, -1),
      `${good}=`,
      `${good}A`,
      sign(id, new TextEncoder().encode("another key of thirty-two bytes!!")),
      Buffer.from(createHmac("sha256", SECRET).update(id).digest()).toString("base64"),
      createHmac("sha256", SECRET).update(id).digest("hex"),
      "é".repeat(43),
    ];
    for (const sig of forged) expect(webhooks.verify(id, sig), String(sig)).toBe(false);
  });

  it("a call with a wrong or missing signature is unauthenticated and reads nothing", async () => {
    const { store, wakes, webhooks } = setUp();
    const { id } = webhooks.issue();
    store.setUnavailable(true); // any store call would fail as unavailable instead
    for (const sig of [undefined, sign("another id"), "x"]) {
      await expect(webhooks.receive(id, sig)).rejects.toMatchObject({
        kind: "unauthenticated",
        detail: "the webhook signature is missing or wrong",
      });
    }
    expect(wakes).toEqual([]);
  });

  it("a signed call makes its followed task due now and wakes the follower; unknown or ended: nothing", async () => {
    const { store, wakes, webhooks } = setUp();
    const { id } = webhooks.issue();
    await webhooks.receive(id, sign(id)); // not mapped yet (the task is being created)
    expect(wakes).toEqual([]);

    await store.conversions.recordConversion(task("t1"), NOW + 60_000);
    await store.conversions.recordWebhook(id, "t1");
    expect((await store.conversions.claimDueConversions(NOW, 10, "f", 1000)).map((t) => t.uuid)).toEqual([]);
    await webhooks.receive(id, sign(id));
    expect(wakes).toHaveLength(1);
    expect((await store.conversions.claimDueConversions(NOW, 10, "f", 1000)).map((t) => t.uuid)).toEqual(["t1"]);

    await store.conversions.saveConversionState(
      "t1",
      "f",
      { status: "Finished", percent: 100, pages: [] },
      NOW,
      undefined,
    );
    await webhooks.receive(id, sign(id));
    expect(wakes).toHaveLength(1);
    expect((await store.conversions.claimDueConversions(NOW + 1e9, 10, "f", 1000)).map((t) => t.uuid)).toEqual([]);
  });
});
