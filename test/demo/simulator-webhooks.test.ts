/**
 * The simulator's projector webhook: a task created with a `webhookEndpoint`
 * gets one POST of its answer there when it ends (Finished, Fail) or is
 * cancelled (Abort), on loopback only; no timer outlives `close()`.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ConversionSimulator,
  PROJECTOR_TASKS_PATH,
  startConversionSimulator,
} from "../../src/demo/simulator/index.js";
import { eventually } from "../harness/eventually.js";

const TOKEN = "NETLESSSDK_webhook-sim-token";

interface Received {
  readonly path: string;
  readonly contentType: string | undefined;
  readonly body: Record<string, unknown>;
}

let sim: ConversionSimulator;
let receiver: http.Server;
let hookBase: string;
const received: Received[] = [];

beforeAll(async () => {
  sim = await startConversionSimulator({ credentials: { sdkTokens: [TOKEN] }, progressMs: 20 });
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>;
      received.push({ path: req.url ?? "", contentType: req.headers["content-type"], body });
      res.statusCode = 204;
      res.end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  hookBase = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await sim.close();
  await new Promise((resolve) => receiver.close(resolve));
});

async function create(resource: string, webhookEndpoint?: string): Promise<string> {
  const res = await fetch(sim.url + PROJECTOR_TASKS_PATH, {
    method: "POST",
    headers: { token: TOKEN, region: "eu", "content-type": "application/json" },
    body: JSON.stringify({ resource, type: "static", ...(webhookEndpoint === undefined ? {} : { webhookEndpoint }) }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { uuid: string }).uuid;
}

const hooksOf = (uuid: string) => received.filter((r) => r.body.uuid === uuid);
const deliveriesOf = (uuid: string) => sim.webhookDeliveries().filter((d) => d.uuid === uuid);

describe("the projector webhook", () => {
  it("is called once with the task's answer when it finishes", async () => {
    const url = `${hookBase}/hook/one?sig=abc`;
    const uuid = await create("https://docs.example.com/deck.pptx", url);
    await eventually(() => hooksOf(uuid).length === 1, 3_000, "the webhook call");
    const [hook] = hooksOf(uuid);
    expect(hook).toMatchObject({ path: "/hook/one?sig=abc", contentType: "application/json" });
    expect(hook?.body).toMatchObject({ uuid, status: "Finished", convertedPercentage: 100 });
    // The simulator records the delivery once our 204 reaches it, a moment after we saw the call.
    await eventually(() => deliveriesOf(uuid).length === 1, 3_000, "the delivery's record");
    expect(deliveriesOf(uuid)).toEqual([{ uuid, url, outcome: 204, at: expect.any(Number) }]);
    await new Promise((r) => setTimeout(r, 100));
    expect(hooksOf(uuid)).toHaveLength(1);
  });

  it("is called with Fail for a document that cannot be converted", async () => {
    const uuid = await create("https://docs.example.com/fail.pptx", `${hookBase}/hook/two`);
    await eventually(() => hooksOf(uuid).length === 1, 3_000, "the webhook call");
    expect(hooksOf(uuid)[0]?.body).toMatchObject({ uuid, status: "Fail" });
  });

  it("is called at once, with Abort, when the task is cancelled", async () => {
    const uuid = await create("https://docs.example.com/slow.pptx", `${hookBase}/hook/three`);
    const res = await fetch(`${sim.url}${PROJECTOR_TASKS_PATH}/${uuid}`, {
      method: "DELETE",
      headers: { token: TOKEN, region: "eu" },
    });
    expect(res.status).toBe(200);
    await eventually(() => hooksOf(uuid).length === 1, 3_000, "the webhook call");
    expect(hooksOf(uuid)[0]?.body).toMatchObject({ uuid, status: "Abort" });
  });

  it("is never called off loopback (recorded as skipped), nor without an endpoint", async () => {
    const away = await create("https://docs.example.com/deck.pptx", "https://hooks.example.com/boardline");
    const none = await create("https://docs.example.com/deck.pptx");
    await eventually(() => deliveriesOf(away).length === 1, 3_000, "the skipped delivery");
    expect(deliveriesOf(away)[0]?.outcome).toBe("skipped (not loopback)");
    await new Promise((r) => setTimeout(r, 200)); // well past the end of `none`
    expect(deliveriesOf(none)).toEqual([]);
  });

  it("a refused delivery is recorded as failed, and not tried again", async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const uuid = await create("https://docs.example.com/deck.pptx", `http://127.0.0.1:${port}/hook`);
    await eventually(() => deliveriesOf(uuid).length === 1, 3_000, "the failed delivery");
    expect(deliveriesOf(uuid)[0]?.outcome).toBe("failed");
  });
});
