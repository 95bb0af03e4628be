/**
 * Runs every kind of call — successes, caller mistakes, backend faults — with
 * debug logging captured, then searches the logs for every secret used:
 * bearer tokens, passphrases, the JWT secret, SDK tokens and secret keys.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { capturingLogger } from "../harness/capturing-logger.js";
import { postJson } from "../harness/http.js";
import { convertBody, muteBody } from "../harness/request-bodies.js";
import { ROUTES } from "../harness/routes.js";

const log = capturingLogger();
let bl: Boardline;

beforeAll(async () => {
  bl = await startBoardline({ logger: log.logger, conversionTimeoutMs: 300 });
});
afterAll(async () => {
  await bl.close();
});

/** Posts `body` with `token`; the answer's status. */
async function call(path: string, token: string, body: unknown): Promise<number> {
  return (await postJson(bl, path, body, { token })).status;
}

test("no secret reaches the logs", async () => {
  const w = bl.world;
  const tokenA = await bl.token(w.project, "alice");
  const tokenB = await bl.token(w.otherProject, "bob");
  const mute = (passphrase: string) => muteBody(bl, { uid: "1", passphrase });
  const convert = (passphrase: string) => convertBody(bl, { passphrase });
  const statuses: number[] = [];
  statuses.push(await call(ROUTES.mute, tokenA, mute(w.hostPassphrase)));
  statuses.push(await call(ROUTES.mute, tokenA, mute(w.otherHostPassphrase)));
  statuses.push(await call(ROUTES.mute, `${tokenA}x`, mute(w.hostPassphrase)));
  statuses.push(await call(ROUTES.convert, tokenA, convert(w.attendeePassphrase)));
  statuses.push(await call(ROUTES.convert, tokenB, convert(w.otherHostPassphrase)));
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
    statuses.push(await call(ROUTES.convert, tokenA, convert(w.hostPassphrase)));
    statuses.push(await call(ROUTES.convert, tokenB, convert(w.otherHostPassphrase)));
  }
  bl.simulator.clearFaults();
  expect(statuses.slice(0, 5)).toEqual([200, 403, 401, 200, 200]);
  expect(statuses.slice(5)).toEqual([500, 500, 500, 500, 503, 503, 500, 500, 503, 503, 504, 504]);

  const logs = log.text();
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
