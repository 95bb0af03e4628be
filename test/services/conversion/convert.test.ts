/**
 * WhiteboardConversions (src/services/conversion/convert.ts) and the
 * submitter that drains its queues (src/services/conversion/submitter.ts), on
 * the in-memory store with a fake backend and the test's own clock: a
 * passphrase of a channel of the caller's project queues a task under an id
 * of ours; the submitter hands it to the backend with the project's settings
 * at the project's pace, records the backend's uuid and makes the task due
 * for the follower; every refusal comes before anything is written; an
 * identical request reuses the task; an Idempotency-Key makes a retry answer
 * the first call's task.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ConvertFileRequestSchema } from "../../../gen/whiteboard/v1/whiteboard_pb.js";
import { WhiteboardConversions } from "../../../src/services/conversion/convert.js";
import { DEFAULT_FOLLOWER_SETTINGS } from "../../../src/services/conversion/follower.js";
import { paceMs } from "../../../src/services/conversion/pace.js";
import { ConversionSubmitter } from "../../../src/services/conversion/submitter.js";
import { Failure } from "../../../src/services/failure.js";
import { SafeRetries } from "../../../src/services/idempotency/safe-retries.js";
import { noGuard } from "../../../src/services/no-guard.js";
import { MissLimitGuard, type PassphraseGuard } from "../../../src/services/passphrase-guard.js";
import { MemoryStore } from "../../../src/store/memory/store.js";
import { callerOf, storeContents } from "../store-contents.js";
import { FakeBackend } from "./fake-backend.js";

const START = 1_800_000_000_000;
const FIRST_POLL_MS = 2_000;
const HOST = "host-passphrase-of-weekly";
const ATTENDEE = "attendee-passphrase-of-weekly";
const OTHER = "host-passphrase-of-another-project";
const CREDENTIALS = { sdkToken: "NETLESSSDK_p" };
const DECK = "https://files.example/deck.pptx?X-Amz-Signature=secret-signature";

interface Options {
  readonly guard?: (store: MemoryStore) => PassphraseGuard;
  readonly webhooks?: boolean;
  readonly queueMax?: number;
}

async function world(o: Options = {}) {
  const clock = { now: START };
  const now = () => clock.now;
  const store = new MemoryStore({ now });
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
  const settings = { ...DEFAULT_FOLLOWER_SETTINGS, firstPollMs: FIRST_POLL_MS, queueMax: o.queueMax ?? 100 };
  const troubles: unknown[] = [];
  const submitter = new ConversionSubmitter({
    store,
    backend,
    settings,
    owner: "submitter-1",
    webhooks: o.webhooks === true ? webhooks : undefined,
    onTrouble: (_, e) => troubles.push(e),
    now,
  });
  const conversions = new WhiteboardConversions(
    store,
    (o.guard ?? (() => noGuard))(store),
    new SafeRetries(store.idempotency, 15_000, now),
    { queueMax: settings.queueMax, now },
  );
  const convert = (
    passphrase: string,
    more: { key?: string; url?: string; project?: string; reuse?: boolean; scale?: number } = {},
  ) =>
    conversions.convertFile(
      callerOf(more.project ?? "p", [], "bob"),
      create(ConvertFileRequestSchema, {
        passphrase,
        resourceUrl: more.url ?? DECK,
        conversionType: "dynamic",
        conversionScale: more.scale ?? 1.5,
        ...(more.reuse === undefined ? {} : { reuse: more.reuse }),
      }),
      undefined,
      more.key,
    );
  /** One look of the submitter at `at` (ms after START). */
  const submitAt = async (at: number) => {
    clock.now = START + at;
    await submitter.tick();
  };
  return { store, backend, convert, submitAt, clock, troubles };
}

describe("a conversion with a passphrase of the project's channel", () => {
  it("is queued under an id of ours, the backend not asked yet", async () => {
    const { store, backend, convert } = await world();
    const answer = await convert(ATTENDEE);
    expect(answer).toEqual({
      taskUuid: expect.stringMatching(/^[0-9a-f]{32}$/),
      status: "Queued",
      reused: false,
      queuePosition: 1,
    });
    expect(backend.created).toEqual([]);
    expect(await store.conversions.getConversion(String(answer.taskUuid))).toMatchObject({
      project: "p",
      channel: "weekly",
      status: "Queued",
      createdAt: START,
      by: "bob",
    });
  });

  it("keeps the queued resource URL sealed, never in clear", async () => {
    const { store, convert } = await world();
    await convert(HOST);
    expect(JSON.stringify([...storeContents(store).values()], (_, v) => (v instanceof Map ? [...v] : v))).not.toContain(
      "secret-signature",
    );
  });

  it("is submitted with the project's settings, its uuid recorded, due at its first poll", async () => {
    const { store, backend, convert, submitAt } = await world();
    const { taskUuid } = await convert(HOST);
    await submitAt(0);
    expect(backend.created).toEqual([
      { resourceUrl: DECK, type: "dynamic", scale: 1.5, region: "eu", credentials: CREDENTIALS },
    ]);
    const record = await store.conversions.getConversion(String(taskUuid));
    expect(record).toMatchObject({
      uuid: taskUuid,
      backendUuid: "task0000000000000000000000000001",
      status: "Waiting",
      submittedAt: START,
    });
    expect(await store.conversionQueue.queueLength("p")).toBe(0);
    expect(await store.conversions.claimDueConversions(START + FIRST_POLL_MS - 1, 10, "f", 1_000)).toEqual([]);
    const due = await store.conversions.claimDueConversions(START + FIRST_POLL_MS, 10, "f", 1_000);
    expect(due.map((d) => d.uuid)).toEqual([taskUuid]);
  });

  it("with webhooks, gives a task a webhook of its own, mapped to our id before the backend is asked", async () => {
    const { store, backend, convert, submitAt } = await world({ webhooks: true });
    const { taskUuid } = await convert(HOST);
    await submitAt(0);
    expect(backend.created[0]?.webhookEndpoint).toBe("https://boardline.example/hook1");
    expect(await store.conversions.webhookTask("hook1")).toBe(taskUuid);
  });
});

describe("the queue of a project", () => {
  it("is submitted first come, first served, one a pace apart", async () => {
    const { backend, convert, submitAt } = await world();
    for (const n of [1, 2, 3]) await convert(HOST, { url: `https://files.example/${n}.pdf` });
    const pace = paceMs(1);
    await submitAt(0);
    await submitAt(pace - 1);
    expect(backend.created.map((r) => r.resourceUrl)).toEqual(["https://files.example/1.pdf"]);
    await submitAt(pace);
    await submitAt(2 * pace);
    expect(backend.created.map((r) => r.resourceUrl)).toEqual([1, 2, 3].map((n) => `https://files.example/${n}.pdf`));
  });

  it("does not hold up another project's request", async () => {
    const { backend, convert, submitAt } = await world();
    for (const n of [1, 2, 3]) await convert(HOST, { url: `https://files.example/${n}.pdf` });
    await submitAt(0);
    await convert(OTHER, { project: "q" });
    await submitAt(10);
    expect(backend.created.map((r) => r.region)).toEqual(["eu", "sg"]);
  });

  it("answers the place in the queue, and refuses past its limit with the expected wait", async () => {
    const { store, backend, convert } = await world({ queueMax: 2 });
    await convert(HOST, { url: "https://files.example/1.pdf" });
    expect((await convert(HOST, { url: "https://files.example/2.pdf" })).queuePosition).toBe(2);
    const before = storeContents(store);
    await expect(convert(HOST, { url: "https://files.example/3.pdf" })).rejects.toMatchObject({
      kind: "queue_full",
      retryAfterSeconds: Math.ceil((2 * paceMs(1)) / 1000),
    });
    expect(storeContents(store)).toEqual(before);
    expect(backend.created).toEqual([]);
  });

  it("keeps a request the backend refused for its capacity at the head, and tries it after the backend's wait", async () => {
    const { store, backend, convert, submitAt } = await world();
    const { taskUuid } = await convert(HOST);
    backend.failWith = new Failure("unavailable", { retryAfterSeconds: 3 });
    await submitAt(0);
    backend.failWith = undefined;
    expect(await store.conversionQueue.queuePosition("p", String(taskUuid))).toBe(1);
    await submitAt(2_999);
    expect(backend.created).toEqual([]);
    await submitAt(3_000);
    expect(backend.created).toHaveLength(1);
    expect((await store.conversions.getConversion(String(taskUuid)))?.status).toBe("Waiting");
  });

  it("ends a request the backend rejects as Fail, and goes on with the next", async () => {
    const { store, backend, convert, submitAt } = await world();
    const { taskUuid } = await convert(HOST, { url: "https://files.example/1.pdf" });
    await convert(HOST, { url: "https://files.example/2.pdf" });
    backend.failWith = new Failure("invalid", { detail: "resource_url was rejected" });
    await submitAt(0);
    backend.failWith = undefined;
    expect(await store.conversions.getConversion(String(taskUuid))).toMatchObject({
      status: "Fail",
      failedReason: "the conversion backend rejected the request",
    });
    await submitAt(paceMs(1));
    expect(backend.created.map((r) => r.resourceUrl)).toEqual(["https://files.example/2.pdf"]);
  });

  it("submits a request again whose earlier attempt left no uuid (an instance died while the backend answered)", async () => {
    const { store, backend, convert, submitAt } = await world();
    const { taskUuid } = await convert(HOST);
    await store.conversionQueue.markSubmitting(String(taskUuid), START);
    await submitAt(0);
    expect(backend.created).toHaveLength(1);
  });

  it("never submits again a request whose uuid was recorded before an instance died", async () => {
    const { store, backend, convert, submitAt } = await world();
    const { taskUuid } = await convert(HOST);
    const uuid = String(taskUuid);
    await store.conversionQueue.markSubmitting(uuid, START);
    await store.conversionQueue.recordSubmission(uuid, {
      backendUuid: "backend-1",
      api: "projector",
      status: "Waiting",
      at: START,
      firstPollAt: START + FIRST_POLL_MS,
    });
    await submitAt(0);
    expect(backend.created).toEqual([]);
    expect(await store.conversionQueue.queueLength("p")).toBe(0);
    expect((await store.conversions.getConversion(uuid))?.backendUuid).toBe("backend-1");
  });
});

describe("an identical request", () => {
  it("gets the same task while it is queued, and after it is submitted; one backend submission", async () => {
    const { backend, convert, submitAt } = await world();
    const first = await convert(HOST);
    expect(await convert(ATTENDEE)).toEqual({ ...first, reused: true });
    await submitAt(0);
    expect(await convert(HOST)).toEqual({
      taskUuid: first.taskUuid,
      status: "Waiting",
      reused: true,
      queuePosition: 0,
    });
    expect(backend.created).toHaveLength(1);
  });

  it("with reuse false is converted again; another scale is another request", async () => {
    const { convert } = await world();
    const first = await convert(HOST);
    const again = await convert(HOST, { reuse: false });
    expect(again.taskUuid).not.toBe(first.taskUuid);
    expect((await convert(HOST, { scale: 2 })).reused).toBe(false);
    // The newest conversion is the one reused from now on.
    expect((await convert(HOST)).taskUuid).toBe(again.taskUuid);
  });

  it("of another project is converted on its own", async () => {
    const { convert } = await world();
    const mine = await convert(HOST);
    const theirs = await convert(OTHER, { project: "q" });
    expect(theirs.reused).toBe(false);
    expect(theirs.taskUuid).not.toBe(mine.taskUuid);
  });

  it("after the task failed is converted again", async () => {
    const { backend, convert, submitAt } = await world();
    const first = await convert(HOST);
    backend.failWith = new Failure("invalid");
    await submitAt(0);
    backend.failWith = undefined;
    const again = await convert(HOST);
    expect(again).toMatchObject({ status: "Queued", reused: false });
    expect(again.taskUuid).not.toBe(first.taskUuid);
  });
});

describe("a refused conversion", () => {
  it.each([
    ["an unknown passphrase", "no-such-passphrase", "p", "not_found"],
    ["another project's passphrase", OTHER, "p", "not_found"],
    ["a project without whiteboard settings", HOST, "r", "permission_denied"],
  ])("%s: refused before anything is written", async (_, passphrase, project, kind) => {
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
});

describe("a conversion with an Idempotency-Key", () => {
  it("answers a retry with the first call's task, submitted once", async () => {
    const { backend, convert, submitAt } = await world();
    const first = await convert(HOST, { key: "retry-me" });
    expect(await convert(HOST, { key: "retry-me" })).toEqual(first);
    await submitAt(0);
    expect(await convert(HOST, { key: "retry-me" })).toEqual(first);
    expect(backend.created).toHaveLength(1);
  });

  it("refuses the key with another request, and a new key with reuse false makes a new task", async () => {
    const { convert } = await world();
    const first = await convert(HOST, { key: "retry-me" });
    await expect(convert(HOST, { key: "retry-me", url: "https://files.example/other.pdf" })).rejects.toMatchObject({
      kind: "idempotency_key_reused",
    });
    const second = await convert(HOST, { key: "another", reuse: false });
    expect(second.taskUuid).not.toBe(first.taskUuid);
  });

  it("releases the key of a call refused for a full queue, so a retry later is a new call", async () => {
    const { convert, submitAt } = await world({ queueMax: 1 });
    await convert(HOST, { url: "https://files.example/1.pdf" });
    await expect(convert(HOST, { key: "k", url: "https://files.example/2.pdf" })).rejects.toMatchObject({
      kind: "queue_full",
    });
    await submitAt(0);
    expect(await convert(HOST, { key: "k", url: "https://files.example/2.pdf" })).toMatchObject({ status: "Queued" });
  });

  it("refuses a malformed key as invalid before anything is asked", async () => {
    const { backend, convert } = await world();
    await expect(async () => convert(HOST, { key: "" })).rejects.toMatchObject({ kind: "invalid" });
    expect(backend.created).toEqual([]);
  });
});
