/**
 * One HTTP request/response exchange with a deadline over the whole of it
 * (connect, send, headers and body), used by the Netless client.
 *
 * Why node:http rather than global fetch: we want our own keep-alive Agent that
 * `close()` can destroy, so a process (or a test) can exit the moment it is done
 * with the client, and we want the body read under the same timer as the
 * headers. fetch's pool is Node's internal undici dispatcher, which we can
 * neither configure nor close without adding undici as a dependency.
 */
import http from "node:http";
import https from "node:https";

export interface ExchangeRequest {
  readonly method: "GET" | "POST" | "DELETE";
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
  readonly timeoutMs: number;
  readonly maxBodyBytes: number;
  readonly signal?: AbortSignal;
}

export interface ExchangeResponse {
  readonly status: number;
  readonly body: string;
}

/** The deadline passed before the exchange finished. */
export class ExchangeTimeoutError extends Error {
  override readonly name = "ExchangeTimeoutError";
}

/** The answer was larger than `maxBodyBytes`. */
export class ExchangeBodyTooLargeError extends Error {
  override readonly name = "ExchangeBodyTooLargeError";
}

export interface Agents {
  readonly http: http.Agent;
  readonly https: https.Agent;
}

/**
 * Keep-alive agents. Node honours the server's `Keep-Alive: timeout=` hint and
 * unrefs idle sockets, so an idle pool never keeps the process alive.
 */
export function createAgents(): Agents {
  return {
    http: new http.Agent({ keepAlive: true, maxSockets: 64 }),
    https: new https.Agent({ keepAlive: true, maxSockets: 64 }),
  };
}

/**
 * Sends the request and reads the whole answer. Rejects with
 * `ExchangeTimeoutError` after `timeoutMs`, with `signal.reason` when the caller
 * aborts, with `ExchangeBodyTooLargeError`, or with the socket error. Whatever
 * happens, the timer is cleared, the abort listener removed, and a response that
 * is not read to its end is destroyed (so its socket is not handed back dirty).
 */
export function exchange(agents: Agents, request: ExchangeRequest): Promise<ExchangeResponse> {
  const { signal } = request;
  if (signal?.aborted) {
    return Promise.reject(signal.reason);
  }
  return new Promise<ExchangeResponse>((resolve, reject) => {
    const secure = request.url.protocol === "https:";
    const headers: Record<string, string | number> = { ...request.headers };
    if (request.body !== undefined) {
      headers["content-length"] = Buffer.byteLength(request.body);
    }
    const req = (secure ? https : http).request(request.url, {
      method: request.method,
      headers,
      agent: secure ? agents.https : agents.http,
    });

    let settled = false;
    const settle = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      outcome();
    };
    // Destroying the request also destroys the response and the socket, so a
    // half-read answer never goes back into the pool.
    const fail = (error: unknown): void => {
      settle(() => reject(error));
      req.destroy();
    };
    const onAbort = (): void => fail(signal?.reason);
    const timer = setTimeout(
      () => fail(new ExchangeTimeoutError(`no complete answer within ${request.timeoutMs} ms`)),
      request.timeoutMs,
    );
    signal?.addEventListener("abort", onAbort, { once: true });

    req.on("error", fail);
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > request.maxBodyBytes) {
          fail(new ExchangeBodyTooLargeError(`answer larger than ${request.maxBodyBytes} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      res.on("error", fail);
      // "aborted" (the server hung up mid-body) surfaces as a res "error";
      // "close" without "end" covers whatever remains.
      res.on("close", () => {
        if (!res.complete) fail(new Error("the connection closed before the answer was complete"));
      });
      res.on("end", () => {
        const status = res.statusCode ?? 0;
        settle(() => resolve({ status, body: Buffer.concat(chunks).toString("utf8") }));
      });
    });
    req.end(request.body);
  });
}
