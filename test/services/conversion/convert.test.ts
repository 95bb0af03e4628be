/**
 * WhiteboardConversions (src/services/conversion/convert.ts) on the in-memory
 * store with a fake backend: a passphrase of a channel of the caller's project
 * starts a task with the project's Netless settings, recorded for the follower
 * and due at its first poll; every refusal comes before the backend is asked
 * and leaves the store as it was; an Idempotency-Key makes a retry answer the
 * first call's task.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ConvertFileRequestSchema } from "../../../gen/whiteboard/v1/whiteboard_pb.js";
import { WhiteboardConversions } from "../../../src/services/conversion/convert.js";
import { Failure } from "../../../src/services/failure.js";
import { SafeRetries } from "../../../src/services/idempotency/safe-retries.js";
import { MissLimitGuard, noGuard, type PassphraseGuard } from "../../../src/services/passphrase-guard.js";
import { MemoryStore } from "../../../src/store/memory/store.js";
import { callerOf, storeContents } from "../store-contents.js";
import { FakeBackend } from "./fake-backend.js";

const NOW = 1_800_000_000_000;
const FIRST_POLL_MS = 2_000;
const HOST = "host-passphrase-of-weekly";
const ATTENDEE = "attendee-passphrase-of-weekly";
const OTHER = "host-passphrase-of-another-project";
const CREDENTIALS = { sdkToken: "NETLESSSDK_p" };

interface Options {
  readonly guard?: (store: MemoryStore) => PassphraseGuard;
  readonly webhooks?: boolean;
}

async function world(o: Options = {}) {
  const store = new MemoryStore({ now: () => NOW });
  await store.createChannel({ project: "p", channel: "weekly", hostPassphrase: HOST, attendeePassphrase: ATTENDEE });
  await store.createChannel({ project: "q", channel: "other", hostPassphrase: OTHER });
  await store.setWhiteboard("p", { region: "eu", credentials: CREDENTIALS });
  await store.setWhiteboard("q", { region: "sg", credentials: { sdkToken: "NETLESSSDK_q" } });
  const backend = new FakeBackend();
  let issued = 0;
  const webhooks = {
    issue: () => {
      issued++;
      return { id: `hook${issued}`, url: `https://boardline.example/hook${issued}` };
    },
  };
  const conversions = new WhiteboardConversions(
    store,
    backend,
    (o.guard ?? (() => noGuard))(store),
    FIRST_POLL_MS,
    new SafeRetries(store.idempotency, 15_000, () => NOW),
    o.webhooks === true ? webhooks : undefined,
    () => NOW,
  );
  const convert = (passphrase: string, more: { key?: string; url?: string; project?: string } = {}) =>
    conversions.convertFile(
      callerOf(more.project ?? "p", [], "bob"),
      create(ConvertFileRequestSchema, {
        passphrase,
        resourceUrl: more.url ?? "https://files.example/deck.pptx",
        conversionType: "dynamic",
        conversionScale: 1.5,
      }),
      undefined,
      more.key,
    );
  return { store, backend, convert };
}

describe("a conversion with a passphrase of the project's channel", () => {
  it("asks the backend with the project's settings and answers the new task", async () => {
    const { backend, convert } = await world();
    const answer = await convert(ATTENDEE);
    expect(answer).toEqual({ taskUuid: "task0000000000000000000000000001", status: "Waiting" });
    expect(backend.created).toEqual([
      {
        resourceUrl: "https://files.example/deck.pptx",
        type: "dynamic",
        scale: 1.5,
        region: "eu",
        credentials: CREDENTIALS,
      },
    ]);
  });

  it("records the task for the follower, due at its first poll", async () => {
    const { store, convert } = await world();
    const { taskUuid } = await convert(HOST);
    expect(await store.conversions.getConversion(String(taskUuid))).toMatchObject({
      uuid: taskUuid,
      project: "p",
      channel: "weekly",
      type: "dynamic",
      api: "projector",
      status: "Waiting",
      createdAt: NOW,
      by: "bob",
    });
    expect(await store.conversions.claimDueConversions(NOW + FIRST_POLL_MS - 1, 10, "f", 1_000)).toEqual([]);
    const due = await store.conversions.claimDueConversions(NOW + FIRST_POLL_MS, 10, "f", 1_000);
    expect(due.map((d) => d.uuid)).toEqual([taskUuid]);
  });

  it("with webhooks, gives a projector task a webhook of its own and maps it to the task", async () => {
    const { store, backend, convert } = await world({ webhooks: true });
    const { taskUuid } = await convert(HOST);
    expect(backend.created[0]?.webhookEndpoint).toBe("https://boardline.example/hook1");
    expect(await store.conversions.webhookTask("hook1")).toBe(taskUuid);
  });

  it("with webhooks, maps none for a task of the legacy API", async () => {
    const { store, backend, convert } = await world({ webhooks: true });
    backend.api = "legacy";
    await convert(HOST);
    expect(await store.conversions.webhookTask("hook1")).toBeUndefined();
  });
});

describe("a refused conversion", () => {
  it.each([
    ["an unknown passphrase", "no-such-passphrase", "p", "not_found"],
    ["another project's passphrase", OTHER, "p", "not_found"],
    ["a project without whiteboard settings", HOST, "r", "permission_denied"],
  ])("%s: refused before the backend is asked, nothing written", async (_, passphrase, project, kind) => {
    const { store, backend, convert } = await world();
    const before = storeContents(store);
    await expect(convert(passphrase, { project })).rejects.toMatchObject({ kind });
    await expect(convert(passphrase, { project, key: "k-1" })).rejects.toMatchObject({ kind });
    expect(backend.created).toEqual([]);
    expect(storeContents(store)).toEqual(before);
  });

  it("a wrong passphrase counts as a miss; at the limit the right one is refused too", async () => {
    const { backend, convert } = await world({
      guard: (s) => new MissLimitGuard(s, { attempts: 1, windowSeconds: 9 }),
    });
    await expect(convert(OTHER)).rejects.toMatchObject({ kind: "not_found" });
    await expect(convert(HOST)).rejects.toMatchObject({ kind: "rate_limited", retryAfterSeconds: 9 });
    expect(backend.created).toEqual([]);
  });

  it("the backend's failure is the caller's, and no task is recorded", async () => {
    const { store, backend, convert } = await world();
    backend.failWith = new Failure("unavailable", { detail: "the conversion backend is unavailable" });
    const before = storeContents(store);
    await expect(convert(HOST)).rejects.toMatchObject({ kind: "unavailable" });
    expect(storeContents(store)).toEqual(before);
  });
});

describe("a conversion with an Idempotency-Key", () => {
  it("answers a retry with the first call's task, asking the backend once", async () => {
    const { backend, convert } = await world();
    const first = await convert(HOST, { key: "retry-me" });
    expect(await convert(HOST, { key: "retry-me" })).toEqual(first);
    expect(backend.created).toHaveLength(1);
  });

  it("refuses the key with another request, and a new key makes a new task", async () => {
    const { backend, convert } = await world();
    await convert(HOST, { key: "retry-me" });
    await expect(convert(HOST, { key: "retry-me", url: "https://files.example/other.pdf" })).rejects.toMatchObject({
      kind: "idempotency_key_reused",
    });
    await convert(HOST, { key: "another" });
    expect(backend.created).toHaveLength(2);
  });

  it("refuses a malformed key as invalid before anything is asked", async () => {
    const { backend, convert } = await world();
    await expect(async () => convert(HOST, { key: "" })).rejects.toMatchObject({ kind: "invalid" });
    expect(backend.created).toEqual([]);
  });
});
