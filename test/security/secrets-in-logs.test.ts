/**
 * Runs every kind of call — successes, caller mistakes, backend faults; mute,
 * convert and GetPstnState — with debug logging captured, then searches the
 * logs for every secret used: bearer tokens, passphrases, the JWT secret, SDK
 * tokens and secret keys, the conversion webhook secret and the signed webhook
 * URLs (and their sig).
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type Boardline, startBoardline, startTwin } from "../harness/boardline.js";
import { capturingLogger } from "../harness/capturing-logger.js";
import { eventually } from "../harness/eventually.js";
import { postJson } from "../harness/http.js";
import { convertBody, muteBody } from "../harness/request-bodies.js";
import { ROUTES } from "../harness/routes.js";
import { STATE_ROUTE } from "../e2e/helpers/pstn-state.js";
import { mintToken } from "../../src/auth/jwt.js";

const log = capturingLogger();
const webhookSecret = new Uint8Array(randomBytes(32));
let bl: Boardline;
/** A second instance on the same store and log, with conversion webhooks (projector API). */
let hooked: Boardline;

beforeAll(async () => {
  bl = await startBoardline({ logger: log.logger, conversionTimeoutMs: 300 });
  hooked = await startTwin(bl, {
    logger: log.logger,
    conversionApi: "projector",
    webhooks: { secret: webhookSecret },
    follow: { tickMs: 60_000, firstPollMs: 60_000, maxPollMs: 60_000 },
  });
});
afterAll(async () => {
  await hooked.close();
  await bl.close();
});

/** A conversion whose webhook the backend calls, a forged call and a GET of it; the URL and its sig. */
async function webhookCalls(token: string): Promise<string[]> {
  const answer = await postJson(hooked, ROUTES.convert, convertBody(hooked), { token });
  expect(answer.status).toBe(200);
  const uuid = (JSON.parse(answer.text) as { task_uuid: string }).task_uuid;
  const url = bl.simulator.tasks().find((t) => t.uuid === uuid)?.webhookEndpoint ?? "";
  expect(url).toContain("?sig=");
  await eventually(() => bl.simulator.webhookDeliveries().some((d) => d.uuid === uuid), 5_000, "the webhook call");
  expect(bl.simulator.webhookDeliveries().find((d) => d.uuid === uuid)?.outcome).toBe(204);
  const forged = `${url.slice(0, -3)}AAA`;
  expect((await fetch(forged, { method: "POST" })).status).toBe(401);
  expect((await fetch(url, { method: "GET" })).status).toBe(405);
  return [url, url.slice(url.indexOf("?sig=") + 5)];
}

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
  // GetPstnState: a passphrase read, an attendee's, another project's, and a channel-id read with a scoped token.
  const gateway = await mintToken({
    secret: bl.secret,
    project: w.project,
    subject: "gw",
    ttlSeconds: 60,
    scopes: ["pstn.gateway"],
  });
  const reads: number[] = [];
  reads.push(await call(STATE_ROUTE, tokenA, { passphrase: w.hostPassphrase }));
  reads.push(await call(STATE_ROUTE, tokenA, { passphrase: w.attendeePassphrase }));
  reads.push(await call(STATE_ROUTE, tokenA, { passphrase: w.otherHostPassphrase }));
  reads.push(await call(STATE_ROUTE, gateway, { channel_id: w.channel }));
  reads.push(await call(STATE_ROUTE, tokenA, { channel_id: w.channel }));
  expect(reads).toEqual([200, 200, 403, 200, 403]);
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
  const webhookUrls = await webhookCalls(tokenA);
  expect(statuses.slice(0, 5)).toEqual([200, 403, 401, 200, 200]);
  expect(statuses.slice(5)).toEqual([500, 500, 500, 500, 503, 503, 500, 500, 503, 503, 504, 504]);

  const logs = log.text();
  // The test can fail: the faults above must have been logged.
  expect(logs).toContain("refused our whiteboard credentials");
  expect(logs).toContain("timed out");
  const secrets = [
    tokenA,
    tokenB,
    gateway,
    w.hostPassphrase,
    w.attendeePassphrase,
    w.otherHostPassphrase,
    w.secretKey,
    w.sdkToken,
    Buffer.from(bl.secret).toString("base64"),
    Buffer.from(bl.secret).toString("base64url"),
    Buffer.from(bl.secret).toString("hex"),
    Buffer.from(webhookSecret).toString("base64"),
    Buffer.from(webhookSecret).toString("base64url"),
    Buffer.from(webhookSecret).toString("hex"),
    ...webhookUrls,
    ...bl.simulator
      .requests()
      .map((r) => String(r.headers.token ?? ""))
      .filter((t) => t !== ""),
  ];
  expect(secrets.length).toBeGreaterThan(10);
  for (const s of secrets) expect(logs.includes(s), `a secret (${s.slice(0, 6)}…) is in the logs`).toBe(false);
});
