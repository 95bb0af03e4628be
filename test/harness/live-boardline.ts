/**
 * A boardline as the example callers in examples/ meet it: the real process
 * (`node dist/src/main.js`) on a durable redis-server, converting with the
 * conversion simulator, seeded through its own API (CreateChannel and
 * SetWhiteboardSettings with a `channels.admin` token), and reached through a
 * loopback proxy the test can cut. It hands out the `BOARDLINE_*` variables
 * the examples read — the same the demo prints — and the levers that make each
 * error a caller must handle happen: a refused token, a refused passphrase,
 * the wrong-passphrase limit (`GUESS_LIMIT` 3 per 2 s window) and Redis down.
 */
import { randomBytes } from "node:crypto";
import { SignJWT } from "jose";
import { type ConversionSimulator, startConversionSimulator } from "../../src/demo/simulator/index.js";
import { type GatedProxy, startGatedProxy } from "./gated-proxy.js";
import { type MainProcess, startMainProcess } from "./main-process.js";
import { startRedisServer } from "./redis-server.js";

/** Wrong passphrases a caller may send per window before RESOURCE_EXHAUSTED / 429. */
export const GUESS_LIMIT = 3;
/** The window of GUESS_LIMIT: the longest `retry_after_seconds` the limit answers. */
export const GUESS_WINDOW_SECONDS = 2;

export interface LiveBoardline {
  /** `http://127.0.0.1:<port>`: the proxy in front of the service, which callers use. */
  readonly url: string;
  /** `127.0.0.1:<port>` of the same proxy (a gRPC target). */
  readonly target: string;
  readonly project: string;
  readonly channel: string;
  readonly hostPassphrase: string;
  readonly attendeePassphrase: string;
  /** A caller's token (no scope), a telephone gateway's (`pstn.gateway`), an admin's (`channels.admin`). */
  readonly tokens: { readonly user: string; readonly gateway: string; readonly admin: string };
  /** The variables the examples read: BOARDLINE_URL, BOARDLINE_TOKEN, … (see examples/README.md). */
  readonly env: Readonly<Record<string, string>>;
  readonly simulator: ConversionSimulator;
  readonly process: MainProcess;
  /** Signs a token of the project with the service's secret; `expSeconds` < 0 makes an expired one. */
  token(o?: { scope?: string; subject?: string; expSeconds?: number }): Promise<string>;
  /** Kills Redis (every call needing it answers UNAVAILABLE / 503 until `redisUp`). */
  redisDown(): void;
  /** Starts Redis again on its port, with everything acknowledged before (append-only file). */
  redisUp(): Promise<void>;
  /** Drops every open client connection, as a network failure would; the service runs on. */
  cutConnections(): void;
  stop(): Promise<void>;
}

export interface LiveBoardlineOptions {
  /** CORS_ORIGINS of the service (for a page served from another origin). */
  readonly corsOrigins?: string;
  /** More variables for the service. */
  readonly env?: Readonly<Record<string, string>>;
}

export async function startLiveBoardline(o: LiveBoardlineOptions = {}): Promise<LiveBoardline> {
  const secret = randomBytes(32).toString("base64url");
  const project = "example-project";
  const key = { accessKey: `ak-${randomBytes(4).toString("hex")}`, secretKey: randomBytes(24).toString("base64url") };
  const redis = await startRedisServer({ durable: true });
  const simulator = await startConversionSimulator({ credentials: { keys: [key] }, progressMs: 200, serveFiles: true });
  let service: MainProcess | undefined;
  let proxy: GatedProxy | undefined;
  const stop = async () => {
    service?.proc.kill("SIGTERM");
    await proxy?.close();
    await simulator.close();
    await redis.stop();
  };
  try {
    service = await startMainProcess({
      REDIS_URL: redis.url,
      JWT_SECRET: secret,
      CONVERSION_API_BASE: simulator.url,
      GUESS_LIMIT: String(GUESS_LIMIT),
      GUESS_WINDOW_SECONDS: String(GUESS_WINDOW_SECONDS),
      // A down Redis answers 503 quickly, so a caller's back-off is what the test waits for.
      REDIS_COMMAND_TIMEOUT_MS: "300",
      PASSPHRASE_CACHE_MS: "0",
      ...(o.corsOrigins === undefined ? {} : { CORS_ORIGINS: o.corsOrigins }),
      ...o.env,
    });
    proxy = await startGatedProxy(service.port);
    const url = `http://127.0.0.1:${proxy.port}`;
    const token = (t: { scope?: string; subject?: string; expSeconds?: number } = {}) =>
      new SignJWT({ project_id: project, ...(t.scope === undefined ? {} : { scope: t.scope }) })
        .setProtectedHeader({ alg: "HS256", typ: "JWT" })
        .setSubject(t.subject ?? "example")
        .setIssuedAt()
        .setExpirationTime(Math.floor(Date.now() / 1000) + (t.expSeconds ?? 3600))
        .sign(new TextEncoder().encode(secret));
    const tokens = {
      user: await token(),
      gateway: await token({ scope: "pstn.gateway", subject: "pstn-gateway" }),
      admin: await token({ scope: "channels.admin", subject: "meetings" }),
    };
    const seeded = await seed(url, tokens.admin, key);
    const env = {
      BOARDLINE_URL: url,
      BOARDLINE_TOKEN: tokens.user,
      BOARDLINE_GATEWAY_TOKEN: tokens.gateway,
      BOARDLINE_CHANNEL: seeded.channel,
      BOARDLINE_HOST_PASSPHRASE: seeded.hostPassphrase,
      BOARDLINE_ATTENDEE_PASSPHRASE: seeded.attendeePassphrase,
    };
    const cut = proxy;
    return {
      url,
      target: `127.0.0.1:${proxy.port}`,
      project,
      ...seeded,
      tokens,
      env,
      simulator,
      process: service,
      token,
      redisDown: () => redis.kill("SIGKILL"),
      redisUp: () => redis.restart(),
      cutConnections: () => cut.cut(),
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** A channel with both passphrases, and the whiteboard settings that point at the simulator's key. */
async function seed(
  url: string,
  adminToken: string,
  key: { accessKey: string; secretKey: string },
): Promise<{ channel: string; hostPassphrase: string; attendeePassphrase: string }> {
  // A 503 says "retry later": the first writes to a Redis that fsyncs every write can outlast the
  // 300 ms command timeout on a busy machine, and seeding is not what these tests check. Each try
  // creates another channel: a create that timed out may still have landed (409 on a retry).
  const call = async (method: string, path: string, body: (attempt: number) => unknown, attempt = 1) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      body: JSON.stringify(body(attempt)),
    });
    const text = await res.text();
    if (res.status === 503 && attempt < 5) {
      await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
      return call(method, path, body, attempt + 1);
    }
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  };
  const created = await call("POST", "/v1/channels", (attempt) => ({
    channel_id: attempt === 1 ? "weekly-sync" : `weekly-sync-${attempt}`,
  }));
  await call("PUT", "/v1/whiteboard/settings", () => ({
    region: "us-sv",
    access_key_pair: { access_key: key.accessKey, secret_key: key.secretKey },
  }));
  return {
    channel: String(created.channel_id),
    hostPassphrase: String(created.host_passphrase),
    attendeePassphrase: String(created.attendee_passphrase),
  };
}
