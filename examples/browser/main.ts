/**
 * boardline from a web page, with the TypeScript client generated from proto/
 * (gen/, by `npx buf generate`) over Connect or gRPC-Web: mute a telephone
 * participant, read the channel's mute state, convert a document and watch it
 * to its pages. Each step and each error is one line in #log; errors are
 * handled as docs/errors.md, "What a caller does with each error", says.
 */
import { type Client, Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { callError, nextTry, sleep } from "./errors.js";
import { PstnService } from "./gen/channel/v1/pstn_pb.js";
import { type Conversion, WhiteboardService } from "./gen/whiteboard/v1/whiteboard_pb.js";

interface Config {
  readonly url: string;
  readonly token: string;
  readonly hostPassphrase: string;
  readonly transport: "connect" | "grpc-web";
  readonly uid: string;
  readonly resourceUrl: string;
}

/** Gave up on a step: the reason is already on the page. */
class GaveUp extends Error {}

const $ = (id: string) => document.getElementById(id) as HTMLElement;

/** The BOARDLINE_* values from the query string (the form above fills it in). */
function readConfig(query: URLSearchParams): Config | undefined {
  const get = (name: string) => query.get(name)?.trim() ?? "";
  for (const input of document.querySelectorAll<HTMLInputElement | HTMLSelectElement>("form [name]")) {
    input.value = get(input.name) || input.value;
  }
  const [url, token, hostPassphrase] = ["BOARDLINE_URL", "BOARDLINE_TOKEN", "BOARDLINE_HOST_PASSPHRASE"].map(get);
  if (!url || !token || !hostPassphrase) return undefined;
  return {
    url,
    token,
    hostPassphrase,
    transport: get("transport") === "grpc-web" ? "grpc-web" : "connect",
    uid: get("uid") || "pstn-1001",
    resourceUrl: get("resource_url") || "https://example.com/deck.pdf",
  };
}

/** One line per step and outcome: `<li data-step data-outcome>`. */
function log(step: string, outcome: "ok" | "retrying" | "failed", text: string): void {
  const li = document.createElement("li");
  li.dataset.step = step;
  li.dataset.outcome = outcome;
  li.textContent = `${step}: ${text}`;
  $("log").append(li);
}

/** Runs `call` until it succeeds or an error says to stop, showing each retry. */
async function withRetries<T>(step: string, call: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (e) {
      const next = nextTry(callError(e), attempt);
      if ("giveUp" in next) {
        log(step, "failed", next.giveUp);
        throw new GaveUp(next.giveUp);
      }
      log(step, "retrying", next.why);
      await sleep(next.waitMs);
    }
  }
}

/** Follows a conversion to its end; a watch that ends early is opened again (it starts with the current state). */
async function watchToEnd(whiteboard: Client<typeof WhiteboardService>, taskUuid: string): Promise<Conversion> {
  return withRetries("watch", async (): Promise<Conversion> => {
    for await (const conversion of whiteboard.watchConversion({ taskUuid })) {
      if (["Finished", "Fail", "Abort"].includes(conversion.status)) return conversion;
      log("watch", "ok", `${conversion.status}, ${conversion.progressPercent}%`);
    }
    throw new ConnectError("the watch ended before the conversion did", Code.Unavailable);
  });
}

function showPages(conversion: Conversion): void {
  for (const page of conversion.pages) {
    const img = document.createElement("img");
    img.src = page.url;
    img.alt = `page ${page.page}`;
    img.width = page.width;
    img.height = page.height;
    $("pages").append(img);
  }
}

async function run(config: Config): Promise<void> {
  // Every call carries the caller's token.
  const withToken: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${config.token}`);
    return next(req);
  };
  const options = { baseUrl: config.url, interceptors: [withToken] };
  const transport = config.transport === "grpc-web" ? createGrpcWebTransport(options) : createConnectTransport(options);
  const pstn = createClient(PstnService, transport);
  const whiteboard = createClient(WhiteboardService, transport);
  log("transport", "ok", `${config.transport} to ${config.url}`);

  const muted = await withRetries("mute", () =>
    pstn.mute({ uid: config.uid, passphrase: config.hostPassphrase, mute: true }, { timeoutMs: 10_000 }),
  );
  log("mute", "ok", `${muted.uid} mute=${muted.mute}`);

  const state = await withRetries("state", () =>
    pstn.getPstnState({ channel: { case: "passphrase", value: config.hostPassphrase } }, { timeoutMs: 10_000 }),
  );
  const me = state.participants.find((p) => p.uid === config.uid);
  const shown = $("mute-state");
  shown.dataset.muted = String(me?.mute ?? false);
  shown.textContent = `${config.uid} in ${state.channelId}: ${me?.mute ? "muted" : "not muted"}`;
  log("state", "ok", `${state.participants.length} participant(s), as of event ${state.asOfEventId}`);

  // One Idempotency-Key for this conversion: a retry never starts a second one.
  const headers = { "idempotency-key": crypto.randomUUID() };
  const task = await withRetries("convert", () =>
    whiteboard.convertFile(
      { resourceUrl: config.resourceUrl, passphrase: config.hostPassphrase, conversionType: "static" },
      { timeoutMs: 15_000, headers },
    ),
  );
  log("convert", "ok", `task ${task.taskUuid} ${task.status}`);

  const done = await watchToEnd(whiteboard, task.taskUuid);
  if (done.status !== "Finished") {
    log("watch", "failed", `${done.status}: ${done.failedReason}`);
    throw new GaveUp(done.status);
  }
  log("watch", "ok", `Finished with ${done.pages.length} page(s)`);
  showPages(done);
}

const config = readConfig(new URLSearchParams(location.search));
if (config !== undefined) {
  run(config).then(
    () => {
      document.body.dataset.done = "ok";
    },
    (e: unknown) => {
      if (!(e instanceof GaveUp)) log("page", "failed", String(e));
      document.body.dataset.done = "failed";
    },
  );
}
