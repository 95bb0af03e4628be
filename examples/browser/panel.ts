/**
 * A moderation panel for a channel's phone line, with the TypeScript client
 * generated from proto/ over Connect or gRPC-Web: the roster from a snapshot
 * (GetPstnState) and then live from the line watch (WatchPstnEvents with
 * `include_line`, from the snapshot's `as_of_event_id`, so nothing is missed
 * in between); per caller mute, unmute and lower hand; mute or unmute
 * everyone, newcomers muted or not, keypad unmute allowed or not. Moderation
 * takes the host passphrase; the watch takes a `pstn.gateway` token (in a
 * product, the product's backend would hold that one and relay the events).
 */
import { type Client, Code, createClient, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { callError, jitter, nextTry, sleep } from "./errors.js";
import { PstnService } from "./gen/channel/v1/pstn_pb.js";
import { LineRoster, renderRoster } from "./roster-view.js";

interface Config {
  readonly url: string;
  readonly token: string;
  readonly gatewayToken: string;
  readonly hostPassphrase: string;
  readonly transport: "connect" | "grpc-web";
}

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

function readConfig(query: URLSearchParams): Config | undefined {
  const get = (name: string) => query.get(name)?.trim() ?? "";
  for (const input of document.querySelectorAll<HTMLInputElement | HTMLSelectElement>("form [name]")) {
    input.value = get(input.name) || input.value;
  }
  const names = ["BOARDLINE_URL", "BOARDLINE_TOKEN", "BOARDLINE_GATEWAY_TOKEN", "BOARDLINE_HOST_PASSPHRASE"];
  const [url, token, gatewayToken, hostPassphrase] = names.map(get);
  if (!url || !token || !gatewayToken || !hostPassphrase) return undefined;
  const transport = get("transport") === "grpc-web" ? "grpc-web" : "connect";
  return { url, token, gatewayToken, hostPassphrase, transport };
}

/** One line per action and outcome, newest first: `<li data-step data-outcome>`. */
function log(step: string, outcome: "ok" | "retrying" | "failed", text: string): void {
  const li = document.createElement("li");
  li.dataset.step = step;
  li.dataset.outcome = outcome;
  li.textContent = `${new Date().toLocaleTimeString()} ${step}: ${text}`;
  $("log").prepend(li);
  while ($("log").childElementCount > 200) $("log").lastElementChild?.remove();
}

function transportFor(config: Config, token: string): Transport {
  const withToken: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
  const options = { baseUrl: config.url, interceptors: [withToken] };
  return config.transport === "grpc-web" ? createGrpcWebTransport(options) : createConnectTransport(options);
}

/** A host's action: tried again as the error says, logged either way. */
async function act<T>(step: string, call: () => Promise<T>, done: (answer: T) => string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      log(step, "ok", done(await call()));
      return;
    } catch (e) {
      const next = nextTry(callError(e), attempt);
      if ("giveUp" in next) return log(step, "failed", next.giveUp);
      log(step, "retrying", next.why);
      await sleep(next.waitMs);
    }
  }
}

/** The snapshot, then the watch from it; a cut watch resumes from its last cursor, a trimmed one from a new snapshot. */
async function follow(host: Client<typeof PstnService>, gateway: Client<typeof PstnService>, c: Config) {
  const roster = new LineRoster();
  const show = () => {
    renderRoster($("roster"), roster, moderation(host, c));
    $<HTMLInputElement>("mute-on-join").checked = roster.policy.muteOnJoin;
    $<HTMLInputElement>("allow-self-unmute").checked = roster.policy.allowSelfUnmute;
    $("count").textContent = `${roster.callers.size} on the line`;
  };
  let after = "";
  let channel = "";
  for (let failures = 0; ; ) {
    try {
      if (after === "") {
        const state = await host.getPstnState({ channel: { case: "passphrase", value: c.hostPassphrase } });
        roster.load(state.participants, state.policy);
        ({ channelId: channel, asOfEventId: after } = state);
        $("channel").textContent = channel;
        show();
        log("snapshot", "ok", `${roster.callers.size} on the line, as of event ${after}`);
      }
      document.body.dataset.live = "true";
      for await (const event of gateway.watchPstnEvents({ channelIds: [channel], after, includeLine: true })) {
        after = event.cursor;
        failures = 0;
        const line = roster.apply(event);
        show();
        if (line !== undefined) log("line", "ok", line);
      }
      throw new Error("the watch ended");
    } catch (e) {
      document.body.dataset.live = "false";
      const err = callError(e);
      if (err.code === Code.OutOfRange) after = "";
      const next = nextTry(err, failures);
      if ("giveUp" in next && err.code !== Code.OutOfRange && err.code !== Code.Unknown) {
        return log("watch", "failed", next.giveUp);
      }
      const waitMs = "waitMs" in next ? next.waitMs : jitter(Math.min(5000, 200 * 2 ** failures));
      log("watch", "retrying", `${err.rawMessage}; watching again in ${waitMs} ms`);
      failures++;
      await sleep(waitMs);
    }
  }
}

function moderation(host: Client<typeof PstnService>, c: Config) {
  const passphrase = c.hostPassphrase;
  return {
    mute: (uid: string, mute: boolean) =>
      act(
        mute ? "mute" : "unmute",
        () => host.mute({ uid, passphrase, mute }, { timeoutMs: 10_000 }),
        (a) => `${a.uid} mute=${a.mute}`,
      ),
    lowerHand: (uid: string) =>
      act(
        "lower-hand",
        () => host.lowerHands({ passphrase, uids: [uid] }, { timeoutMs: 10_000 }),
        (a) => `${uid}: ${a.lowered} lowered`,
      ),
  };
}

function wireButtons(host: Client<typeof PstnService>, c: Config): void {
  const passphrase = c.hostPassphrase;
  const muteOnJoin = $<HTMLInputElement>("mute-on-join");
  const allowSelfUnmute = $<HTMLInputElement>("allow-self-unmute");
  const all = (mute: boolean) => () =>
    act(
      mute ? "mute-all" : "unmute-all",
      () => host.muteAll({ passphrase, mute, muteOnJoin: muteOnJoin.checked }, { timeoutMs: 10_000 }),
      (a) => `${a.changed} changed, ${a.unchanged} unchanged; mute newcomers ${a.policy?.muteOnJoin}`,
    );
  $("mute-all").addEventListener("click", all(true));
  $("unmute-all").addEventListener("click", all(false));
  $("lower-all").addEventListener("click", () =>
    act(
      "lower-all",
      () => host.lowerHands({ passphrase }, { timeoutMs: 10_000 }),
      (a) => `${a.lowered} lowered`,
    ),
  );
  const policy = (field: "muteOnJoin" | "allowSelfUnmute", box: HTMLInputElement) => () =>
    act(
      "policy",
      () => host.setPstnPolicy({ channel: { case: "passphrase", value: passphrase }, [field]: box.checked }),
      (a) => `mute newcomers ${a.policy?.muteOnJoin}, keypad unmute ${a.policy?.allowSelfUnmute}`,
    );
  muteOnJoin.addEventListener("change", policy("muteOnJoin", muteOnJoin));
  allowSelfUnmute.addEventListener("change", policy("allowSelfUnmute", allowSelfUnmute));
}

const config = readConfig(new URLSearchParams(location.search));
if (config !== undefined) {
  const host = createClient(PstnService, transportFor(config, config.token));
  const gateway = createClient(PstnService, transportFor(config, config.gatewayToken));
  wireButtons(host, config);
  $("controls").hidden = false;
  follow(host, gateway, config).catch((e: unknown) => log("page", "failed", String(e)));
}
