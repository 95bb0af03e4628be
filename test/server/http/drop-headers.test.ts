/**
 * `dropHeaders` (src/server/http/request-answer.ts) on Node's real requests: what it relies on of
 * Node — an HTTP/1.1 request's `headers` and `rawHeaders` can be replaced, and what is read
 * afterwards is the replacement — and that an HTTP/2 request is left as it is.
 */
import http from "node:http";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { afterEach, expect, test } from "vitest";
import { dropHeaders, type NodeRequest } from "../../../src/server/http/request-answer.js";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** A server that drops each request's headers and answers with what is left of them. */
function serve<S extends http.Server | http2.Http2Server>(server: S): Promise<number> {
  server.on("request", (req: NodeRequest, res: http.ServerResponse) => {
    dropHeaders(req);
    res.end(JSON.stringify({ headers: req.headers, raw: req.rawHeaders.length }));
  });
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port)));
}

test("an HTTP/1.1 request keeps only its Connection header, and no raw list", async () => {
  const port = await serve(http.createServer());
  const get = async (headers: Record<string, string>) =>
    (await fetch(`http://127.0.0.1:${port}/`, { headers })).json() as Promise<{ headers: object; raw: number }>;
  expect(await get({ authorization: "Bearer secret", "x-other": "1" })).toEqual({
    headers: { connection: "keep-alive" },
    raw: 0,
  });
  expect(await get({ authorization: "Bearer secret", connection: "close" })).toEqual({
    headers: { connection: "close" },
    raw: 0,
  });
});

test("an HTTP/2 request is left as it is", async () => {
  const server = http2.createServer();
  const port = await serve(server);
  const session = http2.connect(`http://127.0.0.1:${port}`);
  closers.push(() => new Promise((resolve) => session.close(() => resolve())));
  const stream = session.request({ ":path": "/", authorization: "Bearer secret" });
  const chunks: Buffer[] = [];
  stream.on("data", (c: Buffer) => chunks.push(c));
  await new Promise((resolve) => stream.on("end", resolve));
  const got = JSON.parse(Buffer.concat(chunks).toString()) as { headers: Record<string, string>; raw: number };
  expect(got.headers.authorization).toBe("Bearer secret");
  expect(got.raw).toBeGreaterThan(0);
});
