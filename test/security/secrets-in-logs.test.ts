/**
 * Runs every kind of call — successes, caller mistakes, backend faults met
 * while queued conversions are submitted; mute, convert and GetPstnState —
 * with debug logging captured, then searches the logs for every secret used:
 * bearer tokens, passphrases, the JWT secret, SDK tokens and secret keys, the
 * signatures of signed document URLs, the conversion webhook secret and the
 * signed webhook URLs (and their sig).
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type Boardline, startBoardline } from "../harness/boardline.js";
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
/**
 * A second service on the same log, with conversion webhooks (projector API). A service of its own:
 * the submitter of whichever instance takes a queued request submits it, and only this one issues webhooks.
 */
let hooked: Boardline;

beforeAll(async () => {
  bl = await startBoardline({ logger: log.logger, conversionTimeoutMs: 300 });
  hooked = await startBoardline({
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

/** The backend's uuid of a task, once it is submitted. */
async function submitted(at: Boardline, uuid: string): Promise<string> {
  let backendUuid: string | undefined;
  await eventually(
    async () => {
      backendUuid = (await at.store.conversions.getConversion(uuid))?.backendUuid;
      return backendUuid !== undefined;
    },
    5_000,
    "the submission",
  );
  return backendUuid as string;
}

/** A conversion whose webhook the backend calls, a forged call and a GET of it; the URL and its sig. */
async function webhookCalls(token: string): Promise<string[]> {
  const answer = await postJson(hooked, ROUTES.convert, convertBody(hooked), { token });
  expect(answer.status).toBe(200);
  const uuid = await submitted(hooked, (JSON.parse(answer.text) as { task_uuid: string }).task_uuid);
  const url = hooked.simulator.tasks().find((t) => t.uuid === uuid)?.webhookEndpoint ?? "";
  expect(url).toContain("?sig=");
  await eventually(() => hooked.simulator.webhookDeliveries().some((d) => d.uuid === uuid), 5_000, "the webhook call");
  expect(hooked.simulator.webhookDeliveries().find((d) => d.uuid === uuid)?.outcome).toBe(204);
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
  // Each conversion a document of its own (an identical request would reuse a task), at a signed URL.
  const signatures: string[] = [];
  const convert = (passphrase: string) => {
    const sig = randomBytes(16).toString("hex");
    signatures.push(sig);
    return convertBody(bl, {
      passphrase,
      resource_url: `https://docs.example.com/d${signatures.length}.pptx?sig=${sig}`,
    });
  };
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
  // Accepted either way: each project's request meets the fault when it is submitted, and is tried again 2 s later.
  for (const fault of [
    { kind: "status", status: 401 },
    { kind: "status", status: 403 },
    { kind: "status", status: 500 },
    { kind: "garbage" },
    { kind: "reset" },
    { kind: "slow", delayMs: 1000 },
  ] as const) {
    bl.simulator.clearFaults();
    bl.simulator.setFault({ ...fault, times: 2, operation: "create" });
    const accepted = [
      await postJson(bl, ROUTES.convert, convert(w.hostPassphrase), { token: tokenA }),
      await postJson(bl, ROUTES.convert, convert(w.otherHostPassphrase), { token: tokenB }),
    ];
    statuses.push(...accepted.map((a) => a.status));
    for (const a of accepted) await submitted(bl, (JSON.parse(a.text) as { task_uuid: string }).task_uuid);
  }
  bl.simulator.clearFaults();
  const tokenC = await hooked.token(hooked.world.project, "carol");
  const webhookUrls = await webhookCalls(tokenC);
  expect(statuses.slice(0, 5)).toEqual([200, 403, 401, 200, 200]);
  expect(statuses.slice(5)).toEqual(Array(12).fill(200));

  const logs = log.text();
  // The test can fail: the faults above must have been logged.
  expect(logs).toContain("refused our whiteboard credentials");
  expect(logs).toContain("timed out");
  expect(logs).toContain("conversion submission retried");
  const secrets = [
    tokenA,
    tokenB,
    tokenC,
    gateway,
    w.hostPassphrase,
    w.attendeePassphrase,
    w.otherHostPassphrase,
    w.secretKey,
    w.sdkToken,
    hooked.world.hostPassphrase,
    hooked.world.secretKey,
    hooked.world.sdkToken,
    ...signatures,
    Buffer.from(bl.secret).toString("base64"),
    Buffer.from(bl.secret).toString("base64url"),
    Buffer.from(bl.secret).toString("hex"),
    Buffer.from(webhookSecret).toString("base64"),
    Buffer.from(webhookSecret).toString("base64url"),
    Buffer.from(webhookSecret).toString("hex"),
    Buffer.from(hooked.secret).toString("base64"),
    Buffer.from(hooked.secret).toString("base64url"),
    Buffer.from(hooked.secret).toString("hex"),
    ...webhookUrls,
    ...[bl, hooked].flatMap((at) =>
      at.simulator
        .requests()
        .map((r) => String(r.headers.token ?? ""))
        .filter((t) => t !== ""),
    ),
  ];
  expect(secrets.length).toBeGreaterThan(10);
  for (const s of secrets) expect(logs.includes(s), `a secret (${s.slice(0, 6)}…) is in the logs`).toBe(false);
});
