/**
 * The demo's telephone-gateway simulator against a real boardline, through a
 * proxy the test can hold and cut: its callers are on the line with masked
 * caller ids, a host's mute reaches its view of the caller, it rides out a
 * boardline that is away for a while, and it stops at once. Its moves are
 * the same for the same seed.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { silentLogger } from "../../src/log.js";
import { nextMove, seededRandom } from "../../src/demo/phone-gateway/next-move.js";
import { type PhoneGateway, startPhoneGateway } from "../../src/demo/phone-gateway/index.js";
import { Roster } from "../../src/demo/phone-gateway/roster.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { eventually } from "../harness/eventually.js";
import { type GatedProxy, startGatedProxy } from "../harness/gated-proxy.js";
import { sleep } from "../harness/sleep.js";

interface Participant {
  uid: string;
  mute?: boolean;
  on_line?: boolean;
  caller_id?: string;
  setter?: string;
}

let bl: Boardline;
let proxy: GatedProxy;

beforeAll(async () => {
  bl = await startBoardline({ store: "memory" });
  proxy = await startGatedProxy(bl.port);
});

afterAll(async () => {
  await proxy?.close();
  await bl?.close();
});

async function onLine(): Promise<Participant[]> {
  const res = await fetch(`${bl.url}/v1/channel/pstn/state`, {
    method: "POST",
    headers: { authorization: `Bearer ${await bl.gatewayToken()}`, "content-type": "application/json" },
    body: JSON.stringify({ channel_id: bl.world.channel }),
  });
  const state = (await res.json()) as { participants: Participant[] };
  return state.participants.filter((p) => p.on_line === true);
}

describe("the phone gateway simulator", () => {
  let gateway: PhoneGateway;

  beforeAll(async () => {
    gateway = startPhoneGateway({
      url: `http://127.0.0.1:${proxy.port}`,
      token: await bl.gatewayToken(),
      channel: bl.world.channel,
      periodMs: 50,
      presenceMs: 400,
      callers: 3,
      backOffMs: 50,
      maxBackOffMs: 200,
      callTimeoutMs: 1000,
      logger: silentLogger(),
    });
  });

  afterAll(async () => {
    await gateway?.close();
  });

  test("dials its callers in, with masked caller ids", async () => {
    await eventually(async () => (await onLine()).length === 3, 5000, "three callers on the line");
    for (const p of await onLine()) expect(p.caller_id).toMatch(/^\*\*\*\d{4}$/);
  });

  test("a host's mute reaches the caller's line", async () => {
    const [caller] = gateway.roster.all();
    expect(caller).toBeDefined();
    const uid = caller?.uid ?? "";
    const mute = async (value: boolean) => {
      const res = await fetch(`${bl.url}/v1/channel/pstn/mute`, {
        method: "POST",
        headers: { authorization: `Bearer ${await bl.token()}`, "content-type": "application/json" },
        body: JSON.stringify({ uid, passphrase: bl.world.hostPassphrase, mute: value }),
      });
      expect(res.status).toBe(200);
    };
    // The caller may press a key or hang up meanwhile: mute until the gateway has applied a host's mute.
    await eventually(
      async () => {
        await mute(true);
        await sleep(100);
        return gateway.roster.get(uid)?.muted === true || gateway.roster.get(uid) === undefined;
      },
      5000,
      "the gateway to apply the mute",
    );
  });

  test("rides out a boardline that is away, then goes on reporting", async () => {
    proxy.hold();
    proxy.cut();
    await sleep(800);
    proxy.release();
    const before = JSON.stringify(await onLine());
    await eventually(async () => JSON.stringify(await onLine()) !== before, 5000, "a report after the outage");
    await eventually(async () => (await onLine()).length >= 2, 5000, "callers still on the line");
  });

  test("close() stops it at once, and nothing is reported after", async () => {
    const at = Date.now();
    await gateway.close();
    expect(Date.now() - at).toBeLessThan(1000);
    const after = JSON.stringify(await onLine());
    await sleep(300);
    expect(JSON.stringify(await onLine())).toBe(after);
  });
});

test("the same seed plays the same moves", () => {
  const play = (seed: number) => {
    const roster = new Roster();
    for (let i = 0; i < 4; i++) roster.add(roster.newcomer(0));
    const random = seededRandom(seed);
    return Array.from({ length: 50 }, (_, tick) => nextMove(roster, tick, random));
  };
  expect(play(7)).toEqual(play(7));
  expect(play(7)).not.toEqual(play(8));
  const kinds = new Set(play(7).map((m) => m.kind));
  expect(kinds).toEqual(new Set(["keypad", "hand", "hang-up", "idle"]));
});
