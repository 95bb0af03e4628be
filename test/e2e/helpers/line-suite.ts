/**
 * The phone line's end-to-end suite, run on each store the service runs on
 * (pstn-line.test.ts: memory and one Redis; pstn-line-cluster.test.ts: a
 * Redis Cluster), over every protocol (JSON h1/h2, Connect, gRPC-Web, gRPC via
 * connect-es and @grpc/grpc-js): the gateway's reports show in GetPstnState
 * and on a watch resumed from the snapshot; a repeated or late report changes
 * nothing; the policy refuses a keypad unmute; mute all against joins landing
 * at the same time leaves nobody unmuted; a gateway that stops reporting
 * loses its callers within the lease; and the refusals land on their rows of
 * the error table.
 */
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { JsonObject } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { PstnService } from "../../../gen/channel/v1/pstn_pb.js";
import type { Boardline, BoardlineOptions } from "../../harness/boardline.js";
import { openSse } from "../../harness/sse.js";
import { callLine, LINE_PROTOCOLS, lineOk } from "./line-calls.js";
import { scopedToken } from "./pstn-state.js";
import { PROTOCOLS, type ProtocolName, transport } from "./rpc.js";

/** The presence lease of the suite's servers: short, so a silent gateway's callers go within the test. */
export const LEASE_MS = 1_000;

/** The suite against the server `start` starts (given the lease option to pass on). */
export function lineSuite(start: (lease: Pick<BoardlineOptions, "presenceLeaseMs">) => Promise<Boardline>): void {
  let bl: Boardline;
  let gateway: string;
  let host: string;
  let admin: string;

  beforeAll(async () => {
    bl = await start({ presenceLeaseMs: LEASE_MS });
    gateway = await scopedToken(bl, bl.world.project, "gw-1", ["pstn.gateway"]);
    host = await bl.token(bl.world.project, "host-1");
    admin = await scopedToken(bl, bl.world.project, "backend", ["channels.admin"]);
  });
  afterAll(async () => {
    await bl?.close();
  });

  /** A channel of the world's project with a host passphrase of its own. */
  async function newChannel(): Promise<{ channel: string; hostPassphrase: string }> {
    const word = randomBytes(6).toString("hex");
    const c = { channel: `line-${word}`, hostPassphrase: `host line ${word}` };
    await bl.store.createChannel({ project: bl.world.project, ...c, attendeePassphrase: `guest line ${word}` });
    return c;
  }

  let sequence = 0;
  const join = (channel: string, uid: string, seq = ++sequence) => ({
    channel_id: channel,
    uid,
    sequence: String(seq),
    join: { caller_id: "***0142" },
  });

  function participants(state: JsonObject): Record<string, JsonObject> {
    return Object.fromEntries((state["participants"] as JsonObject[]).map((p) => [String(p["uid"]), p]));
  }

  describe.each(LINE_PROTOCOLS)("%s", (protocol) => {
    test("join, keypad unmute, hand and leave show in the state and on a watch resumed from the snapshot", async () => {
      const { channel, hostPassphrase } = await newChannel();
      const before = await lineOk(bl, protocol, "state", { channel_id: channel }, gateway);
      expect(before["policy"]).toEqual({ mute_on_join: false, allow_self_unmute: true });
      const joined = await lineOk(bl, protocol, "report", join(channel, "tel-1"), gateway);
      expect(joined).toMatchObject({
        outcome: "LINE_OUTCOME_APPLIED",
        participant: { uid: "tel-1", on_line: true, mute: false, caller_id: "***0142" },
      });
      await lineOk(bl, protocol, "mute", { uid: "tel-1", passphrase: hostPassphrase, mute: true }, host);
      const unmuted = await lineOk(
        bl,
        protocol,
        "report",
        { channel_id: channel, uid: "tel-1", sequence: String(++sequence), keypad_mute: { mute: false } },
        gateway,
      );
      expect(unmuted["participant"]).toMatchObject({ mute: false, setter: "PSTN_SETTER_SELF" });
      await lineOk(
        bl,
        protocol,
        "report",
        { channel_id: channel, uid: "tel-1", sequence: String(++sequence), hand: { raised: true } },
        gateway,
      );
      const mid = participants(await lineOk(bl, protocol, "state", { passphrase: hostPassphrase }, host));
      expect(mid["tel-1"]).toMatchObject({ on_line: true, hand_raised: true, mute: false, setter: "PSTN_SETTER_SELF" });
      await lineOk(
        bl,
        protocol,
        "report",
        { channel_id: channel, uid: "tel-1", sequence: String(++sequence), leave: {} },
        gateway,
      );
      const after = participants(await lineOk(bl, protocol, "state", { channel_id: channel }, gateway));
      expect(after["tel-1"]).toMatchObject({ on_line: false, hand_raised: false, mute: false });

      const asOf = String(before["as_of_event_id"]);
      const kinds = await watchKinds(protocol, channel, asOf, 5);
      expect(kinds).toEqual([
        "PSTN_EVENT_KIND_JOIN tel-1 mute=false",
        "PSTN_EVENT_KIND_MUTE tel-1 mute=true",
        "PSTN_EVENT_KIND_MUTE tel-1 mute=false",
        "PSTN_EVENT_KIND_HAND tel-1 mute=false",
        "PSTN_EVENT_KIND_LEAVE tel-1 mute=false",
      ]);
      // Without include_line a watch sees the mute changes only, as it always did.
      expect(await watchKinds(protocol, channel, asOf, 2, false)).toEqual([
        "PSTN_EVENT_KIND_MUTE tel-1 mute=true",
        "PSTN_EVENT_KIND_MUTE tel-1 mute=false",
      ]);
    });

    test("a repeated or late report changes nothing and says so", async () => {
      const { channel } = await newChannel();
      const first = join(channel, "tel-2");
      await lineOk(bl, protocol, "report", first, gateway);
      const again = await lineOk(bl, protocol, "report", first, gateway);
      expect(again["outcome"]).toBe("LINE_OUTCOME_DUPLICATE");
      const late = await lineOk(
        bl,
        protocol,
        "report",
        { channel_id: channel, uid: "tel-2", sequence: String(Number(first.sequence) - 1), leave: {} },
        gateway,
      );
      expect(late).toMatchObject({ outcome: "LINE_OUTCOME_STALE", participant: { on_line: true } });
      expect((await bl.store.getMuteEvents(bl.world.project, channel, 100)).length).toBe(1);
    });

    test("with allow_self_unmute false a keypad unmute of a host mute is refused and changes nothing", async () => {
      const { channel, hostPassphrase } = await newChannel();
      const policy = await lineOk(bl, protocol, "policy", { channel_id: channel, allow_self_unmute: false }, admin);
      expect(policy["policy"]).toEqual({ mute_on_join: false, allow_self_unmute: false });
      await lineOk(bl, protocol, "report", join(channel, "tel-3"), gateway);
      await lineOk(bl, protocol, "muteAll", { passphrase: hostPassphrase, mute: true }, host);
      const events = (await bl.store.getMuteEvents(bl.world.project, channel, 100)).length;
      const refused = await lineOk(
        bl,
        protocol,
        "report",
        { channel_id: channel, uid: "tel-3", sequence: String(++sequence), keypad_mute: { mute: false } },
        gateway,
      );
      expect(refused).toMatchObject({
        outcome: "LINE_OUTCOME_REFUSED",
        participant: { mute: true, setter: "PSTN_SETTER_HOST" },
      });
      expect(String(refused["reason"])).not.toBe("");
      expect((await bl.store.getMuteEvents(bl.world.project, channel, 100)).length).toBe(events);
    });

    test("a roster sync joins the listed and answers the line; the host lowers the hands it raised", async () => {
      const { channel, hostPassphrase } = await newChannel();
      await lineOk(bl, protocol, "report", join(channel, "gone"), gateway);
      const members = [
        { uid: "s-1", caller_id: "***0001" },
        { uid: "s-2", caller_id: "" },
      ];
      const synced = await lineOk(
        bl,
        protocol,
        "sync",
        { channel_id: channel, sequence: String(++sequence), members },
        gateway,
      );
      expect(synced).toMatchObject({ joined: 2, left: 1 });
      const state = participants(synced["state"] as JsonObject);
      expect(Object.keys(state).sort()).toEqual(["s-1", "s-2"]);
      expect(state["s-1"]).toMatchObject({ on_line: true, caller_id: "***0001" });
      for (const uid of ["s-1", "s-2"])
        await lineOk(
          bl,
          protocol,
          "report",
          { channel_id: channel, uid, sequence: String(++sequence), hand: { raised: true } },
          gateway,
        );
      expect(await lineOk(bl, protocol, "lowerHands", { passphrase: hostPassphrase, uids: ["s-2"] }, host)).toEqual({
        lowered: 1,
      });
      expect(await lineOk(bl, protocol, "lowerHands", { passphrase: hostPassphrase }, host)).toEqual({ lowered: 1 });
      const after = participants(await lineOk(bl, protocol, "state", { channel_id: channel }, gateway));
      expect(Object.values(after).map((p) => p["hand_raised"])).toEqual([false, false]);
      const twice = { channel_id: channel, sequence: String(++sequence), members: [members[0], members[0]] };
      const invalid = protocol === "grpc-js" ? -3 : 611;
      expect(await callLine(bl, protocol, "sync", twice, gateway)).toMatchObject({ ok: false, code: invalid });
    });

    test("refusals land on their rows: no gateway scope, not the host passphrase, a full caller id, no change", async () => {
      const { channel, hostPassphrase } = await newChannel();
      expect(await callLine(bl, protocol, "report", join(channel, "x"), host)).toMatchObject({
        ok: false,
        code: protocol === "grpc-js" ? -7 : 403,
      });
      expect(
        await callLine(bl, protocol, "policy", { channel_id: channel, mute_on_join: true }, gateway),
      ).toMatchObject({
        ok: false,
        code: protocol === "grpc-js" ? -7 : 403,
      });
      expect(
        await callLine(bl, protocol, "muteAll", { passphrase: `${hostPassphrase}?`, mute: true }, host),
      ).toMatchObject({ ok: false, code: protocol === "grpc-js" ? -7 : 403 });
      const invalid = protocol === "grpc-js" ? -3 : 611;
      expect(
        await callLine(bl, protocol, "report", { ...join(channel, "x"), join: { caller_id: "+4930123456" } }, gateway),
      ).toMatchObject({ ok: false, code: invalid });
      expect(
        await callLine(bl, protocol, "report", { channel_id: channel, uid: "x", sequence: "1" }, gateway),
      ).toMatchObject({ ok: false, code: invalid });
      expect(await callLine(bl, protocol, "policy", { passphrase: hostPassphrase }, host)).toMatchObject({
        ok: false,
        code: invalid,
      });
      expect((await lineOk(bl, protocol, "state", { channel_id: channel }, gateway))["participants"]).toEqual([]);
    });
  });

  describe("mute all against joins at the same time", () => {
    test("nobody who joins while mute all runs with mute_on_join is left unmuted (run many times)", async () => {
      for (let round = 0; round < 15; round++) {
        const { channel, hostPassphrase } = await newChannel();
        for (let i = 0; i < 5; i++) await lineOk(bl, "grpc h2", "report", join(channel, `early-${i}`), gateway);
        const joins = Array.from({ length: 20 }, (_, i) =>
          lineOk(bl, "grpc h2", "report", join(channel, `late-${i}`), gateway),
        );
        const all = lineOk(
          bl,
          "json h2",
          "muteAll",
          { passphrase: hostPassphrase, mute: true, mute_on_join: true },
          host,
        );
        const answers = await Promise.all(joins);
        await all;
        const state = participants(await lineOk(bl, "json", "state", { channel_id: channel }, gateway));
        const unmuted = Object.values(state).filter((p) => p["on_line"] && !p["mute"]);
        expect(unmuted, `round ${round}`).toEqual([]);
        // Every join's answer says the state the caller must start in; a mute all after it changed it, with an event.
        expect(answers.every((a) => a["outcome"] === "LINE_OUTCOME_APPLIED")).toBe(true);
      }
    });
  });

  describe("a gateway that stops reporting", () => {
    test("its callers are marked left within the lease and a sweep interval, each once, with an event", async () => {
      const { channel } = await newChannel();
      await lineOk(bl, "json", "report", join(channel, "ghost-1"), gateway);
      await lineOk(bl, "json", "report", join(channel, "ghost-2"), gateway);
      const asOf = String((await lineOk(bl, "json", "state", { channel_id: channel }, gateway))["as_of_event_id"]);
      const started = Date.now();
      let onLine = 2;
      while (onLine > 0 && Date.now() - started < LEASE_MS * 3) {
        await sleep(100);
        const state = participants(await lineOk(bl, "json", "state", { channel_id: channel }, gateway));
        onLine = Object.values(state).filter((p) => p["on_line"]).length;
      }
      const took = Date.now() - started;
      expect(onLine).toBe(0);
      // The bound the docs state: the lease plus one sweep interval (a quarter of it), with room for a slow machine.
      expect(took).toBeLessThan(LEASE_MS * 1.25 + 500);
      const leaves = await watchKinds("grpc h2", channel, asOf, 2);
      expect(leaves.sort()).toEqual([
        "PSTN_EVENT_KIND_LEAVE ghost-1 mute=false",
        "PSTN_EVENT_KIND_LEAVE ghost-2 mute=false",
      ]);
    });
  });

  /** The first `count` events of a watch of `channel` after `after`, as "KIND uid mute=…". */
  async function watchKinds(
    protocol: string,
    channel: string,
    after: string,
    count: number,
    includeLine = true,
  ): Promise<string[]> {
    const body = { channel_ids: [channel], after, include_line: includeLine };
    if (protocol === "json" || protocol === "json h2" || protocol === "grpc-js") {
      const sse = await openSse(`${bl.url}/v1/channel/pstn/events:watch`, { token: gateway, body });
      try {
        const out: string[] = [];
        while (out.length < count) {
          const e = await sse.next();
          if (e === undefined) break;
          const d = e.data as JsonObject;
          out.push(`${String(d["kind"])} ${String(d["uid"])} mute=${String(d["mute"])}`);
        }
        return out;
      } finally {
        sse.close();
      }
    }
    const client = createClient(
      PstnService,
      transport(bl, (PROTOCOLS.includes(protocol as ProtocolName) ? protocol : "grpc h2") as ProtocolName),
    );
    const abort = new AbortController();
    const out: string[] = [];
    try {
      for await (const e of client.watchPstnEvents(
        { channelIds: [channel], after, includeLine },
        { headers: { authorization: `Bearer ${gateway}` }, signal: abort.signal },
      )) {
        out.push(
          `PSTN_EVENT_KIND_${["UNSPECIFIED", "MUTE", "JOIN", "LEAVE", "HAND", "POLICY", "MUTE_ALL"][e.kind]} ${e.uid} mute=${String(e.mute)}`,
        );
        if (out.length >= count) break;
      }
    } finally {
      abort.abort();
    }
    return out;
  }
}
