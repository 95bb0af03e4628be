/**
 * The real client against the real simulator over loopback: no mocks.
 */
import { createServer as createHttpServer } from "node:http";
import { type AddressInfo, createServer } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { NetlessConversionClient } from "../../src/netless/client.js";
import { verifySdkToken } from "../../src/netless/sdk-token.js";
import {
  type ConversionSimulator,
  type SimulatorFault,
  startConversionSimulator,
} from "../../src/demo/simulator/index.js";
import { silentLogger } from "../../src/log.js";
import type { FailureKind } from "../../src/services/failure.js";
import type { ConversionRequest } from "../../src/services/ports.js";
import { capturingLogger } from "../harness/capturing-logger.js";
import { eventually } from "../harness/eventually.js";
import { sleep } from "../harness/sleep.js";
import { failureKindOf, failureOf, trackTimersAndSockets } from "./helpers.js";

const SDK_TOKEN = "NETLESSSDK_simulator-test-token";
const KEY = { accessKey: "sim-ak", secretKey: "sim-secret-key-for-tests" };
const RESOURCE = "https://files.example.com/decks/q3-review.pptx";

const withSdkToken: ConversionRequest = {
  resourceUrl: RESOURCE,
  type: "dynamic",
  region: "sg",
  credentials: { sdkToken: SDK_TOKEN },
};
const withKeys: ConversionRequest = {
  resourceUrl: RESOURCE,
  type: "static",
  scale: 2.5,
  region: "us-sv",
  credentials: KEY,
};

let sim: ConversionSimulator;
let client: NetlessConversionClient;
const log = capturingLogger();

beforeAll(async () => {
  sim = await startConversionSimulator({
    credentials: { sdkTokens: [SDK_TOKEN], keys: [KEY] },
    progressMs: 60,
  });
  client = new NetlessConversionClient({
    baseUrl: sim.url,
    timeoutMs: 2_000,
    api: "legacy",
    logger: log.logger,
    tokenLifespanMs: 60_000,
  });
});

afterEach(() => sim.clearFaults());

afterAll(async () => {
  client.close();
  await sim.close();
});

const lastRequest = () => {
  const request = sim.requests().at(-1);
  if (request === undefined) throw new Error("the simulator saw no request");
  return request;
};

describe("createTask: what the backend receives", () => {
  it("posts resource, type and preview: false with the given SDK token and region (no scale)", async () => {
    const task = await client.createTask(withSdkToken);

    expect(task).toEqual({
      uuid: expect.stringMatching(/^[0-9a-f]{32}$/),
      type: "dynamic",
      status: "Waiting",
      api: "legacy",
    });
    const request = lastRequest();
    expect(request.method).toBe("POST");
    expect(request.path).toBe("/v5/services/conversion/tasks");
    expect(request.headers.token).toBe(SDK_TOKEN);
    expect(request.headers.region).toBe("sg");
    expect(request.headers["content-type"]).toBe("application/json");
    // Exactly these keys: no scale when the caller gave none.
    expect(request.body).toStrictEqual({ resource: RESOURCE, type: "dynamic", preview: false });
    expect(sim.tasks().map((t) => t.uuid)).toContain(task.uuid);
  });

  it("sends scale when given, and signs a short-lived writer token from an access/secret key", async () => {
    const before = Date.now();
    const task = await client.createTask(withKeys);

    expect(task.type).toBe("static");
    const request = lastRequest();
    expect(request.body).toStrictEqual({ resource: RESOURCE, type: "static", preview: false, scale: 2.5 });
    expect(request.headers.region).toBe("us-sv");
    const token = request.headers.token ?? "";
    const claims = verifySdkToken(token, (ak) => (ak === KEY.accessKey ? KEY.secretKey : undefined));
    expect(claims.ak).toBe(KEY.accessKey);
    expect(claims.role).toBe("writer");
    expect(claims.expireAt).toBeGreaterThanOrEqual(before + 60_000);
    expect(claims.expireAt).toBeLessThanOrEqual(Date.now() + 60_000);
  });

  it("keeps a path prefix of the base URL and tolerates a trailing slash", async () => {
    const prefixed = new NetlessConversionClient({
      baseUrl: `${sim.url}/`,
      timeoutMs: 2_000,
      api: "legacy",
      logger: silentLogger(),
    });
    try {
      await prefixed.createTask(withSdkToken);
      expect(lastRequest().path).toBe("/v5/services/conversion/tasks");
    } finally {
      prefixed.close();
    }
  });

  it("never logs the SDK token or the secret key", async () => {
    sim.setFault({ kind: "status", status: 401, times: 2 });
    await failureOf(client.createTask(withSdkToken));
    await failureOf(client.createTask(withKeys));
    await client.createTask(withKeys);
    const text = log.text();
    expect(text).not.toContain(SDK_TOKEN);
    expect(text).not.toContain(KEY.secretKey);
    expect(text).not.toContain("NETLESSSDK_");
  });
});

describe("createTask: backend trouble becomes the documented failure", () => {
  const cases: [SimulatorFault, FailureKind][] = [
    [{ kind: "status", status: 500 }, "unavailable"],
    [{ kind: "status", status: 502 }, "unavailable"],
    [{ kind: "status", status: 503 }, "unavailable"],
    [{ kind: "status", status: 429 }, "unavailable"],
    [{ kind: "status", status: 400 }, "invalid"],
    [{ kind: "status", status: 401 }, "internal"],
    [{ kind: "status", status: 403 }, "internal"],
    [{ kind: "garbage" }, "internal"],
    [{ kind: "reset" }, "unavailable"],
  ];

  it.each(cases)("%o → %s", async (fault, kind) => {
    sim.setFault(fault);
    expect(await failureKindOf(client.createTask(withSdkToken))).toBe(kind);
    expect(await failureKindOf(client.createTask(withKeys))).toBe(kind);
  });

  it("backend 400 names resource_url and does not echo the backend's body", async () => {
    sim.setFault({ kind: "status", status: 400, times: 1 });
    const failure = await failureOf(client.createTask(withSdkToken));
    expect(failure.kind).toBe("invalid");
    expect(failure.detail).toContain("resource_url");
    expect(failure.detail).not.toContain("simulated");
  });

  it("a real 400 from the backend (unknown region) is invalid too", async () => {
    const request = { ...withSdkToken, region: "mars" } as unknown as ConversionRequest;
    expect(await failureKindOf(client.createTask(request))).toBe("invalid");
  });

  it("credentials the backend refuses → internal, logged at error level without secrets", async () => {
    const before = log.lines().length;
    const wrongToken = { ...withSdkToken, credentials: { sdkToken: "NETLESSSDK_not-ours" } };
    expect(await failureKindOf(client.createTask(wrongToken))).toBe("internal");
    const wrongSecret = { ...withKeys, credentials: { ...KEY, secretKey: "not-the-secret" } };
    expect(await failureKindOf(client.createTask(wrongSecret))).toBe("internal");

    const errors = log
      .lines()
      .slice(before)
      .filter((line) => line.level === 50);
    expect(errors).toHaveLength(2);
    expect(errors[0]).toMatchObject({ status: 401, credentials: "sdk_token" });
    expect(errors[1]).toMatchObject({ status: 401, credentials: "access_key", accessKey: KEY.accessKey });
    expect(JSON.stringify(errors)).not.toContain("not-the-secret");
    expect(JSON.stringify(errors)).not.toContain("not-ours");
  });

  it("an unexpected status (404: wrong base URL) → internal", async () => {
    const lost = new NetlessConversionClient({
      baseUrl: `${sim.url}/nowhere`,
      timeoutMs: 2_000,
      logger: silentLogger(),
    });
    try {
      expect(await failureKindOf(lost.createTask(withSdkToken))).toBe("internal");
    } finally {
      lost.close();
    }
  });

  it("a fault for the next N requests only ends after N", async () => {
    sim.setFault({ kind: "status", status: 503, times: 2 });
    expect(await failureKindOf(client.createTask(withSdkToken))).toBe("unavailable");
    expect(await failureKindOf(client.createTask(withSdkToken))).toBe("unavailable");
    await expect(client.createTask(withSdkToken)).resolves.toMatchObject({ status: "Waiting" });
  });

  it("slow but within the deadline still succeeds", async () => {
    sim.setFault({ kind: "slow", delayMs: 100, times: 1 });
    await expect(client.createTask(withSdkToken)).resolves.toMatchObject({ status: "Waiting" });
  });

  it("nobody listening → unavailable", async () => {
    const port = await closedPort();
    const nowhere = new NetlessConversionClient({
      baseUrl: `http://127.0.0.1:${port}`,
      timeoutMs: 2_000,
      logger: silentLogger(),
    });
    try {
      expect(await failureKindOf(nowhere.createTask(withSdkToken))).toBe("unavailable");
    } finally {
      nowhere.close();
    }
  });
});

describe("createTask: deadlines and cancellation", () => {
  const TIMEOUT_MS = 250;
  const MARGIN_MS = 200;
  // A simulator of its own, so that its connection count is exactly ours.
  let quiet: ConversionSimulator;
  let quick: NetlessConversionClient;

  beforeAll(async () => {
    quiet = await startConversionSimulator({ credentials: { sdkTokens: [SDK_TOKEN] } });
    quick = new NetlessConversionClient({ baseUrl: quiet.url, timeoutMs: TIMEOUT_MS, logger: silentLogger() });
  });
  afterEach(() => quiet.clearFaults());
  afterAll(async () => {
    quick.close();
    await quiet.close();
  });

  /** Starts a call the quiet simulator sits on, and waits until it holds the request. */
  async function stalledCall(signal?: AbortSignal): Promise<{ call: Promise<unknown> }> {
    quiet.setFault({ kind: "slow", delayMs: 10_000 });
    const seen = quiet.requests().length;
    const call = quick.createTask(withSdkToken, signal);
    call.catch(() => {}); // observed by the caller; avoid an unhandled-rejection warning meanwhile
    await eventually(() => quiet.requests().length > seen, 2_000, "the request to arrive");
    expect(quiet.openConnections()).toBe(1);
    return { call }; // wrapped: an async function would otherwise wait for it
  }

  it("times out within timeoutMs + a small margin and leaves no timer or socket behind", async () => {
    const resources = trackTimersAndSockets();
    try {
      const started = performance.now();
      const failure = await failureOf((await stalledCall()).call);
      const elapsed = performance.now() - started;
      resources.stop();

      expect(failure.kind).toBe("deadline_exceeded");
      expect(elapsed).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
      expect(elapsed).toBeLessThan(TIMEOUT_MS + MARGIN_MS);
      // The client hung up, and the simulator saw it.
      await eventually(() => quiet.openConnections() === 0, 2_000, "the socket to close");
      // Every timer and socket made for the call (client and simulator side) is gone.
      await eventually(() => resources.alive().length === 0, 2_000, "timers and sockets to go");
    } finally {
      resources.dispose();
    }
  });

  it("the deadline covers the body too: headers on time, body never finished", async () => {
    const stalling = createHttpServer((_req, res) => {
      res.writeHead(201, { "content-type": "application/json" });
      res.write('{"uuid": "'); // and never more
    });
    await new Promise<void>((resolve) => stalling.listen(0, "127.0.0.1", resolve));
    const { port } = stalling.address() as AddressInfo;
    const stalled = new NetlessConversionClient({
      baseUrl: `http://127.0.0.1:${port}`,
      timeoutMs: TIMEOUT_MS,
      logger: silentLogger(),
    });
    try {
      const started = performance.now();
      expect(await failureKindOf(stalled.createTask(withSdkToken))).toBe("deadline_exceeded");
      expect(performance.now() - started).toBeLessThan(TIMEOUT_MS + MARGIN_MS);
    } finally {
      stalled.close();
      stalling.closeAllConnections();
      await new Promise((resolve) => stalling.close(resolve));
    }
  });

  it("a caller's AbortSignal cancels the call with the caller's reason", async () => {
    const controller = new AbortController();
    const reason = new Error("the caller went away");
    const { call } = await stalledCall(controller.signal);
    controller.abort(reason);
    await expect(call).rejects.toBe(reason);
    await eventually(() => quiet.openConnections() === 0, 2_000, "the socket to close");
  });

  it("an already aborted signal sends nothing", async () => {
    const seen = quiet.requests().length;
    await expect(quick.createTask(withSdkToken, AbortSignal.abort())).rejects.toMatchObject({ name: "AbortError" });
    expect(quiet.requests()).toHaveLength(seen);
  });

  it("close() drops the pooled keep-alive sockets", async () => {
    const pooled = new NetlessConversionClient({ baseUrl: quiet.url, timeoutMs: 2_000, logger: silentLogger() });
    await pooled.createTask(withSdkToken);
    await pooled.createTask(withSdkToken);
    expect(quiet.openConnections()).toBe(1); // one socket, kept alive and reused
    pooled.close();
    await eventually(() => quiet.openConnections() === 0, 2_000, "the pooled socket to close");
  });
});

describe("getTask", () => {
  it("follows a task from Waiting through Converting to Finished", async () => {
    const { uuid } = await client.createTask(withKeys);
    const seen: string[] = [];
    let last = await client.getTask(uuid, "static", KEY, "us-sv");
    const deadline = Date.now() + 5_000;
    while (last.status !== "Finished" && Date.now() < deadline) {
      if (seen.at(-1) !== last.status) seen.push(last.status);
      await sleep(15);
      last = await client.getTask(uuid, "static", KEY, "us-sv");
    }
    seen.push(last.status);

    expect(seen).toEqual(["Waiting", "Converting", "Finished"]);
    expect(last.uuid).toBe(uuid);
    expect(last.progress).toMatchObject({ totalPageSize: 3, convertedPageSize: 3, convertedPercentage: 100 });
    expect(last.progress?.convertedFileList).toHaveLength(3);
    expect(last.progress?.convertedFileList[0]).toMatchObject({
      width: expect.any(Number),
      height: expect.any(Number),
    });

    const request = lastRequest();
    expect(request.method).toBe("GET");
    expect(request.path).toBe(`/v5/services/conversion/tasks/${uuid}?type=static`);
    expect(request.headers.region).toBe("us-sv");
  });

  it("an unknown task, or one asked for with the other type, is not_found", async () => {
    const { uuid } = await client.createTask(withSdkToken); // dynamic
    expect(await failureKindOf(client.getTask(uuid, "static", { sdkToken: SDK_TOKEN }, "sg"))).toBe("not_found");
    expect(await failureKindOf(client.getTask("0".repeat(32), "dynamic", { sdkToken: SDK_TOKEN }, "sg"))).toBe(
      "not_found",
    );
  });

  it("maps faults like createTask", async () => {
    const { uuid } = await client.createTask(withSdkToken);
    const credentials = { sdkToken: SDK_TOKEN };
    sim.setFault({ kind: "garbage", times: 1 });
    expect(await failureKindOf(client.getTask(uuid, "dynamic", credentials, "sg"))).toBe("internal");
    sim.setFault({ kind: "status", status: 502, times: 1 });
    expect(await failureKindOf(client.getTask(uuid, "dynamic", credentials, "sg"))).toBe("unavailable");
    sim.setFault({ kind: "reset", times: 1 });
    expect(await failureKindOf(client.getTask(uuid, "dynamic", credentials, "sg"))).toBe("unavailable");
  });
});

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
