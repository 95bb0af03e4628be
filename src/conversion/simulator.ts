/**
 * A stand-in for the Netless legacy file-conversion API, for the demo and the
 * tests: a real HTTP server on loopback with the same two routes, the same
 * token and region checks, tasks that progress over time, and faults that can
 * be switched on at runtime (error statuses, slowness, garbage, resets).
 *
 *   POST /v5/services/conversion/tasks              → 201 {uuid, type, status: "Waiting"}
 *   GET  /v5/services/conversion/tasks/{uuid}?type=  → 200 {uuid, type, status, failedReason?, progress}
 *
 * Errors answer `{"message": …}` as the real API does. Tokens are recorded
 * (tests look at them) but never logged.
 */
import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { Logger } from "../log.js";
import { REGIONS, type Region } from "../services/ports.js";
import { InvalidSdkTokenError, SDK_TOKEN_PREFIX, type TokenRole, verifySdkToken } from "./netless-token.js";
import { type SimulatedTask, type SimulatedTaskSpec, taskState } from "./simulator-tasks.js";
import { isConversionType } from "./task-shapes.js";

export type { SimulatedTask } from "./simulator-tasks.js";

/** A fault applies to the next `times` requests (every request when absent). */
export type SimulatorFault =
  | { readonly kind: "status"; readonly status: 400 | 401 | 403 | 429 | 500 | 502 | 503; readonly times?: number }
  /** Waits before answering (then answers normally, or as another fault says). */
  | { readonly kind: "slow"; readonly delayMs: number; readonly times?: number }
  /** 201 (POST) or 200 (GET) with a body that is not JSON. */
  | { readonly kind: "garbage"; readonly times?: number }
  /** Resets the connection instead of answering. */
  | { readonly kind: "reset"; readonly times?: number };

export interface SimulatorCredentials {
  /** Opaque tokens accepted as they are (any role). */
  readonly sdkTokens?: readonly string[];
  /** Key pairs whose signed `NETLESSSDK_` tokens are accepted. */
  readonly keys?: readonly { readonly accessKey: string; readonly secretKey: string }[];
}

export interface SimulatorOptions {
  readonly host?: string;
  readonly port?: number;
  readonly credentials: SimulatorCredentials;
  /** Duration of one progress step (Waiting, each page, …). Default 500 ms. */
  readonly progressMs?: number;
  /** Pages of every simulated document. Default 3. */
  readonly pageCount?: number;
  /** Resources whose conversion ends in `Fail`. Default: none. */
  readonly failWhen?: (resource: string) => boolean;
  /** Clock for token expiry and task progress. Default `Date.now`. */
  readonly now?: () => number;
  readonly logger?: Logger;
}

export interface RecordedRequest {
  readonly method: string;
  /** Path and query, as sent. */
  readonly path: string;
  /** Lower-case names; includes `token` and `region`. */
  readonly headers: Readonly<Record<string, string>>;
  /** Parsed JSON, the raw text when it is not JSON, or undefined when empty. */
  readonly body: unknown;
  readonly at: number;
}

export interface ConversionSimulator {
  /** `http://host:port`, no trailing slash. */
  readonly url: string;
  readonly port: number;
  /** Adds a fault; it replaces an active fault of the same kind. */
  setFault(fault: SimulatorFault): void;
  clearFaults(): void;
  tasks(): readonly SimulatedTask[];
  requests(): readonly RecordedRequest[];
  /** Connections currently open (to check that clients do not leak sockets). */
  openConnections(): number;
  /** Stops listening and closes every connection, idle or not. */
  close(): Promise<void>;
}

const TASKS_PATH = "/v5/services/conversion/tasks";
const MAX_BODY_BYTES = 64 * 1024;
const WRITE_ROLES: ReadonlySet<TokenRole> = new Set(["admin", "writer"]);

interface ActiveFault {
  fault: SimulatorFault;
  remaining: number;
}

export async function startConversionSimulator(options: SimulatorOptions): Promise<ConversionSimulator> {
  const now = options.now ?? Date.now;
  const progressMs = options.progressMs ?? 500;
  const pageCount = options.pageCount ?? 3;
  if (!(progressMs > 0) || !Number.isSafeInteger(pageCount) || pageCount < 1) {
    throw new RangeError("progressMs must be positive and pageCount a positive integer");
  }
  const sdkTokens = new Set(options.credentials.sdkTokens ?? []);
  const secrets = new Map((options.credentials.keys ?? []).map((k) => [k.accessKey, k.secretKey]));
  const logger = options.logger;

  const tasks = new Map<string, SimulatedTaskSpec>();
  const recorded: RecordedRequest[] = [];
  let faults: ActiveFault[] = [];
  const sockets = new Set<Socket>();
  const delays = new Set<() => void>();

  /** Takes the faults for this request, counting them down. */
  function takeFaults(): SimulatorFault[] {
    const taken = faults.map((active) => {
      active.remaining -= 1;
      return active.fault;
    });
    faults = faults.filter((active) => active.remaining > 0);
    return taken;
  }

  /** Sleeps `ms`, or less when the response closes first (client gone, or `close()`). */
  function delay(ms: number, res: http.ServerResponse): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        delays.delete(wake);
        res.off("close", wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      delays.add(wake);
      res.on("close", wake);
    });
  }

  /** Who may do what: undefined when the token is acceptable, else the reason. */
  function refuseToken(token: string | undefined, write: boolean): string | undefined {
    if (token === undefined || token === "") return "missing token";
    if (sdkTokens.has(token)) return undefined;
    if (!token.startsWith(SDK_TOKEN_PREFIX)) return "invalid token";
    try {
      const claims = verifySdkToken(token, (ak) => secrets.get(ak), now());
      if (write && !WRITE_ROLES.has(claims.role)) return "the token's role may not start conversions";
      return undefined;
    } catch (error) {
      if (error instanceof InvalidSdkTokenError) return `invalid token: ${error.reason}`;
      throw error;
    }
  }

  function createTask(req: http.IncomingMessage, body: unknown, region: Region): Answer {
    if (!(req.headers["content-type"] ?? "").toLowerCase().startsWith("application/json")) {
      return errorAnswer(400, "content-type must be application/json");
    }
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      return errorAnswer(400, "the body must be a JSON object");
    }
    const { resource, type, scale, preview } = body as Record<string, unknown>;
    if (typeof resource !== "string" || !isHttpUrl(resource))
      return errorAnswer(400, "resource must be an http(s) URL");
    if (!isConversionType(type)) return errorAnswer(400, "type must be static or dynamic");
    if (scale !== undefined && !(typeof scale === "number" && scale >= 0.1 && scale <= 3)) {
      return errorAnswer(400, "scale must be a number from 0.1 to 3");
    }
    if (preview !== undefined && typeof preview !== "boolean") return errorAnswer(400, "preview must be a boolean");

    const task: SimulatedTaskSpec = {
      // Real task UUIDs are 32 hex digits.
      uuid: randomUUID().replaceAll("-", ""),
      type,
      resource,
      ...(typeof scale === "number" ? { scale } : {}),
      region,
      createdAt: now(),
      pageCount,
      willFail: options.failWhen?.(resource) ?? false,
    };
    tasks.set(task.uuid, task);
    return { status: 201, body: { uuid: task.uuid, type: task.type, status: "Waiting" } };
  }

  function queryTask(uuid: string, url: URL): Answer {
    const type = url.searchParams.get("type");
    if (!isConversionType(type)) return errorAnswer(400, "type must be static or dynamic");
    const task = tasks.get(uuid);
    // A task of the other type lives in the other service: not found there.
    if (task === undefined || task.type !== type) return errorAnswer(404, "task not found");
    return { status: 200, body: taskState(task, now(), progressMs) };
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://simulator");
    const text = await readBody(req);
    if (text === undefined) {
      send(res, errorAnswer(413, "body too large"));
      return;
    }
    const body = parseBody(text);
    recorded.push({
      method: req.method ?? "",
      path: req.url ?? "",
      headers: flattenHeaders(req.headers),
      body,
      at: now(),
    });

    const isCreate = url.pathname === TASKS_PATH;
    const queryMatch = /^\/v5\/services\/conversion\/tasks\/([^/]+)$/.exec(url.pathname);
    if (!isCreate && queryMatch === null) {
      send(res, errorAnswer(404, "not found"));
      return;
    }
    const method = isCreate ? "POST" : "GET";
    if (req.method !== method) {
      send(res, errorAnswer(405, "method not allowed"), { allow: method });
      return;
    }

    const active = takeFaults();
    for (const fault of active) {
      if (fault.kind === "slow") await delay(fault.delayMs, res);
    }
    // The client gave up (or we are closing) while we slept.
    if (res.destroyed || req.socket.destroyed) return;
    if (active.some((fault) => fault.kind === "reset")) {
      req.socket.resetAndDestroy();
      return;
    }
    if (active.some((fault) => fault.kind === "garbage")) {
      res.writeHead(isCreate ? 201 : 200, { "content-type": "application/json" });
      res.end("<html>this is not JSON {");
      return;
    }
    const statusFault = active.find((fault) => fault.kind === "status");
    if (statusFault !== undefined) {
      send(
        res,
        errorAnswer(statusFault.status, "simulated fault"),
        statusFault.status === 429 ? { "retry-after": "1" } : {},
      );
      return;
    }

    const refusal = refuseToken(header(req, "token"), isCreate);
    if (refusal !== undefined) {
      send(res, errorAnswer(401, refusal));
      return;
    }
    const region = header(req, "region");
    if (!isRegion(region)) {
      send(res, errorAnswer(400, `region must be one of ${REGIONS.join(", ")}`));
      return;
    }
    const answer = isCreate ? createTask(req, body, region) : queryTask(safeDecode(queryMatch?.[1] ?? ""), url);
    send(res, answer);
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      logger?.error({ err: err instanceof Error ? err.message : String(err) }, "conversion simulator failed");
      if (!res.headersSent) send(res, errorAnswer(500, "simulator error"));
      else res.destroy();
    });
    res.on("finish", () =>
      logger?.debug({ method: req.method, path: req.url, status: res.statusCode }, "conversion simulator answered"),
    );
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const simulatorUrl = `http://${host}:${address.port}`;
  let closing: Promise<void> | undefined;

  return {
    url: simulatorUrl,
    port: address.port,
    setFault(fault) {
      const times = fault.times ?? Number.POSITIVE_INFINITY;
      if (!(times > 0)) throw new RangeError("times must be positive");
      faults = [...faults.filter((active) => active.fault.kind !== fault.kind), { fault, remaining: times }];
    },
    clearFaults() {
      faults = [];
    },
    tasks() {
      const at = now();
      return [...tasks.values()].map((task) => ({ ...task, state: taskState(task, at, progressMs) }));
    },
    requests() {
      return [...recorded];
    },
    openConnections() {
      return sockets.size;
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        // Wake handlers sleeping in a "slow" fault; they see a destroyed response and stop.
        for (const wake of [...delays]) wake();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

interface Answer {
  readonly status: number;
  readonly body: unknown;
}

function errorAnswer(status: number, message: string): Answer {
  return { status, body: { message } };
}

function send(res: http.ServerResponse, answer: Answer, headers: Record<string, string> = {}): void {
  if (res.destroyed || res.headersSent) return;
  const text = JSON.stringify(answer.body);
  res.writeHead(answer.status, {
    ...headers,
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}

/**
 * The body as text, or undefined when it is over the limit. An oversized body
 * is still drained (not kept) so the 413 can be answered on a healthy socket.
 */
function readBody(req: http.IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on("end", () => resolve(size > MAX_BODY_BYTES ? undefined : Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function parseBody(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function header(req: http.IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(", ") : value;
}

function flattenHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return flat;
}

/** A segment that does not decode names no task; "" is never a task's uuid. */
function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return "";
  }
}

function isRegion(value: string | undefined): value is Region {
  return (REGIONS as readonly string[]).includes(value ?? "");
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}
