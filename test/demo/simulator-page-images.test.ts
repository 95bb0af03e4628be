/**
 * A simulator started with `serveFiles` (the demo's) names its pages under its
 * own /files and serves each as a real PNG of the page's size; without it the
 * names stay at the CDN that is never served, and /files is not a route.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSdkToken } from "../../src/netless/sdk-token.js";
import {
  type ConversionSimulator,
  FILES_BASE,
  PROJECTOR_TASKS_PATH,
  startConversionSimulator,
} from "../../src/demo/simulator/index.js";
import { eventually } from "../harness/eventually.js";

const key = { accessKey: "ak-images", secretKey: "sk-images-0123456789" };
const token = createSdkToken({ ...key, role: "writer" });
let serving: ConversionSimulator;
let plain: ConversionSimulator;
beforeAll(async () => {
  [serving, plain] = await Promise.all([
    startConversionSimulator({ credentials: { keys: [key] }, progressMs: 20, serveFiles: true }),
    startConversionSimulator({ credentials: { keys: [key] }, progressMs: 20 }),
  ]);
});
afterAll(() => Promise.all([serving?.close(), plain?.close()]));

async function finishedPages(sim: ConversionSimulator): Promise<string[]> {
  const headers = { token, region: "us-sv", "content-type": "application/json" };
  const created = await fetch(sim.url + PROJECTOR_TASKS_PATH, {
    method: "POST",
    headers,
    body: JSON.stringify({ resource: "https://docs.example.com/deck.pptx", type: "static" }),
  });
  const { uuid } = (await created.json()) as { uuid: string };
  let answer: { status?: string; images?: Record<string, { url: string }> } = {};
  await eventually(async () => {
    answer = (await (await fetch(`${sim.url}${PROJECTOR_TASKS_PATH}/${uuid}`, { headers })).json()) as typeof answer;
    return answer.status === "Finished";
  }, 3_000);
  return Object.values(answer.images ?? {}).map((image) => image.url);
}

describe("the simulator's page images", () => {
  it("with serveFiles: named under its own /files, each a PNG of the page's size", async () => {
    const urls = await finishedPages(serving);
    expect(urls).toHaveLength(3);
    for (const url of urls) {
      expect(url.startsWith(`${serving.url}/files/staticConvert/`)).toBe(true);
      const res = await fetch(url);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("image/png");
      const png = Buffer.from(await res.arrayBuffer());
      expect(png.subarray(1, 4).toString("latin1")).toBe("PNG");
      expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([1280, 720]); // IHDR width, height
    }
    expect((await fetch(`${serving.url}/files/staticConvert/nope/x.png`)).status).toBe(404);
    // The files are not the API: not recorded as requests to it.
    expect(serving.requests().some((r) => r.path.startsWith("/files/"))).toBe(false);
  });

  it("without it: named at the CDN that is never served, and /files is no route", async () => {
    const urls = await finishedPages(plain);
    expect(urls.every((url) => url.startsWith(`${FILES_BASE}/staticConvert/`))).toBe(true);
    expect((await fetch(`${plain.url}/files/staticConvert/0/1.png`)).status).toBe(404);
  });
});
