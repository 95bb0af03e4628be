/**
 * Runs every kind of call — successes, caller mistakes, backend faults — with
 * debug logging captured, then searches the logs for every secret used:
 * bearer tokens, passphrases, the JWT secret, SDK tokens and secret keys.
 */
import { Writable } from "node:stream";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type Boardline, startBoardline } from "../harness/boardline.js";

const lines: string[] = [];
const sink = new Writable({
  write(chunk, _enc, done) {
    lines.push(String(chunk));
    done();
  },
});
let bl: Boardline;

beforeAll(async () => {
  bl = await startBoardline({ logStream: sink, conversionTimeoutMs: 300 });
});
afterAll(async () => {
  await bl.close();
});

async function call(path: string, token: string, body: unknown) {
  const res = await fetch(`${bl.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  await res.arrayBuffer();
  return res.status;
}

test("no secret reaches the logs", async () => {
  const w = bl.world;
  const tokenA = await bl.token(w.project, "alice");
  const tokenB = await bl.token(w.otherProject, "bob");
  const convert = (passphrase: string) => ({
    resource_url: "https://example.com/x.pdf",
    passphrase,
    conversion_type: "static",
  });
  const statuses: number[] = [];
  statuses.push(await call("/v1/channel/pstn/mute", tokenA, { uid: "1", passphrase: w.hostPassphrase, mute: true }));
  statuses.push(
    await call("/v1/channel/pstn/mute", tokenA, { uid: "1", passphrase: w.otherHostPassphrase, mute: true }),
  );
  statuses.push(
    await call("/v1/channel/pstn/mute", `${tokenA}x`, { uid: "1", passphrase: w.hostPassphrase, mute: true }),
  );
  statuses.push(await call("/v1/whiteboard/fileconvert", tokenA, convert(w.attendeePassphrase)));
  statuses.push(await call("/v1/whiteboard/fileconvert", tokenB, convert(w.otherHostPassphrase)));
  for (const fault of [
    { kind: "status", status: 401 },
    { kind: "status", status: 403 },
    { kind: "status", status: 500 },
    { kind: "garbage" },
    { kind: "reset" },
    { kind: "slow", delayMs: 1000 },
  ] as const) {
    bl.simulator.clearFaults();
    bl.simulator.setFault(fault);
    statuses.push(await call("/v1/whiteboard/fileconvert", tokenA, convert(w.hostPassphrase)));
    statuses.push(await call("/v1/whiteboard/fileconvert", tokenB, convert(w.otherHostPassphrase)));
  }
  bl.simulator.clearFaults();
  expect(statuses.slice(0, 5)).toEqual([200, 403, 401, 200, 200]);
  expect(statuses.slice(5)).toEqual([500, 500, 500, 500, 503, 503, 500, 500, 503, 503, 504, 504]);

  const logs = lines.join("");
  // The test can fail: the faults above must have been logged.
  expect(logs).toContain("refused our whiteboard credentials");
  expect(logs).toContain("timed out");
  const secrets = [
    tokenA,
    tokenB,
    w.hostPassphrase,
    w.attendeePassphrase,
    w.otherHostPassphrase,
    w.secretKey,
    w.sdkToken,
    Buffer.from(bl.secret).toString("base64"),
    Buffer.from(bl.secret).toString("base64url"),
    Buffer.from(bl.secret).toString("hex"),
    ...bl.simulator
      .requests()
      .map((r) => String(r.headers.token ?? ""))
      .filter((t) => t !== ""),
  ];
  expect(secrets.length).toBeGreaterThan(10);
  for (const s of secrets) expect(logs.includes(s), `a secret (${s.slice(0, 6)}…) is in the logs`).toBe(false);
});
