// The traffic the preview's live boardline gets, so that the panels have shapes rather than flat
// lines: mutes over JSON at a rate that rises and falls, mutes and GetPstnState over gRPC, a
// conversion every few seconds over JSON (the simulator converts it) with one followed by a watch,
// a pstn-events watch open all along over JSON and a second over gRPC for the middle of the run, a
// burst of wrong passphrases past the guessing limit, a few expired tokens, and Redis killed for 2 s
// (503s for the SLO panels, a reconnect for the Redis ones). Every loop ends by
// itself at `seconds`; answers are counted, not checked (a refusal is part of the picture).

import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { PstnService } from "../../gen/channel/v1/pstn_pb.js";
import type { LiveBoardline } from "../../test/harness/live-boardline.js";
import { ROUTES } from "../../test/harness/routes.js";
import { sleep } from "../../test/harness/sleep.js";

/** Answers by what answered them, e.g. `json Mute 200`, `grpc Mute ok`. */
export type TrafficCounts = Map<string, number>;

export async function driveTraffic(live: LiveBoardline, seconds: number): Promise<TrafficCounts> {
  const counts: TrafficCounts = new Map();
  const count = (what: string) => counts.set(what, (counts.get(what) ?? 0) + 1);
  const t0 = Date.now();
  const end = t0 + seconds * 1000;
  /** Where in the run we are, 0 → 1. */
  const phase = () => Math.min(1, (Date.now() - t0) / (seconds * 1000));
  const stop = new AbortController();
  const grpc = createClient(PstnService, createGrpcTransport({ baseUrl: live.url }));

  const post = async (path: string, body: unknown, token: string, what: string) => {
    try {
      const res = await fetch(`${live.url}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(5_000),
      });
      const text = await res.text();
      count(`${what} ${res.status}`);
      return { ok: res.ok, text };
    } catch {
      count(`${what} failed`);
      return undefined;
    }
  };

  const jsonMutes = async () => {
    for (let n = 0; Date.now() < end; n++) {
      const body = { uid: `pstn-${n % 12}`, passphrase: live.hostPassphrase, mute: n % 2 === 0 };
      await post(ROUTES.mute, body, live.tokens.user, "json Mute");
      // From ~5 to ~40 a second and back: one hump over the run.
      await sleep(1000 / (5 + 35 * Math.sin(Math.PI * phase())));
    }
  };

  const grpcCalls = async () => {
    for (let n = 0; Date.now() < end; n++) {
      const headers = { authorization: `Bearer ${live.tokens.user}` };
      try {
        await grpc.mute({ uid: `grpc-${n % 6}`, passphrase: live.hostPassphrase, mute: n % 3 !== 0 }, { headers });
        if (n % 4 === 0)
          await grpc.getPstnState({ channel: { case: "passphrase", value: live.attendeePassphrase } }, { headers });
        count("grpc ok");
      } catch (e) {
        count(`grpc ${Code[ConnectError.from(e).code]}`);
      }
      // Steady, then faster in the second half.
      await sleep(phase() < 0.5 ? 150 : 60);
    }
  };

  const conversions = async () => {
    for (let n = 0; Date.now() < end; n++) {
      const body = {
        resource_url: `https://docs.example.com/preview-${t0}-${n}.pptx`,
        passphrase: live.hostPassphrase,
        conversion_type: n % 2 === 0 ? "static" : "dynamic",
      };
      const res = await post(ROUTES.convert, body, live.tokens.user, "json ConvertFile");
      // One conversion is followed to its end, as a caller waiting for its pages would.
      if (n === 1 && res?.ok) void watchConversion((JSON.parse(res.text) as { task_uuid: string }).task_uuid);
      await sleep(3_000);
    }
  };

  const watchConversion = (task: string) =>
    holdOpen(`${live.url}${ROUTES.convert}/${task}/watch`, { method: "GET" }, "json WatchConversion", live.tokens.user);

  /** Reads a server-sent-events answer until it ends or the run does. */
  const holdOpen = async (url: string, init: RequestInit, what: string, token: string) => {
    try {
      const res = await fetch(url, {
        ...init,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        signal: stop.signal,
      });
      count(`${what} ${res.status}`);
      const reader = res.body?.getReader();
      while (reader !== undefined && !(await reader.read()).done) {}
    } catch {
      // Ended by the run's end.
    }
  };

  const grpcWatch = async () => {
    await sleep((seconds * 1000) / 4);
    const ends = AbortSignal.any([stop.signal, AbortSignal.timeout((seconds * 1000) / 2)]);
    try {
      const headers = { authorization: `Bearer ${live.tokens.gateway}` };
      for await (const _ of grpc.watchPstnEvents({ channelIds: [live.channel] }, { headers, signal: ends })) {
        count("grpc WatchPstnEvents event");
      }
    } catch {
      // Ended by its timeout: the watch closes halfway through the run's second half.
    }
  };

  const guesses = async () => {
    const guesser = await live.token({ subject: "guesser" });
    await sleep((seconds * 1000) / 3);
    for (let i = 0; i < 25 && Date.now() < end; i++) {
      await post(ROUTES.mute, { uid: "pstn-1", passphrase: "not-the-passphrase", mute: true }, guesser, "json guess");
      await sleep(200);
    }
  };

  const expiredTokens = async () => {
    const expired = await live.token({ subject: "late", expSeconds: -60 });
    await sleep((seconds * 1000) / 2);
    for (let i = 0; i < 12 && Date.now() < end; i++) {
      await post(ROUTES.mute, { uid: "pstn-1", passphrase: live.hostPassphrase, mute: true }, expired, "json expired");
      await sleep(400);
    }
  };

  const redisOutage = async () => {
    await sleep(seconds * 1000 * 0.6);
    live.redisDown();
    await sleep(2_000);
    await live.redisUp();
  };

  // Opened again when it ends, as a gateway would (Redis's outage ends it).
  const eventsWatch = (async () => {
    while (!stop.signal.aborted) {
      await holdOpen(
        `${live.url}/v1/channel/pstn/events:watch`,
        { method: "POST", body: JSON.stringify({ channel_ids: [live.channel] }) },
        "json WatchPstnEvents",
        live.tokens.gateway,
      );
      await sleep(500);
    }
  })();
  await Promise.all([jsonMutes(), grpcCalls(), conversions(), grpcWatch(), guesses(), expiredTokens(), redisOutage()]);
  stop.abort();
  await eventsWatch;
  return counts;
}
