/**
 * A port of its own for the operator endpoints (`METRICS_PORT`): `/metrics`
 * (which costs real CPU to render, so outside the demo it stays off the public
 * port unless METRICS_ON_PUBLIC_PORT says otherwise), `/healthz` and `/readyz`.
 * Plain HTTP/1.1, the same header limits and deadlines as the main port,
 * nothing else served.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { pathOf } from "../http/request-answer.js";
import type { OpsEndpoints } from "./endpoints.js";

export interface OpsListener {
  readonly port: number;
  close(): Promise<void>;
}

export async function listenOps(
  host: string,
  port: number,
  ops: OpsEndpoints,
  onListenerError: (error: NodeJS.ErrnoException) => void,
): Promise<OpsListener> {
  const server = http.createServer({ maxHeaderSize: 16 * 1024, headersTimeout: 10_000, requestTimeout: 30_000 });
  server.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
    ops.handle(pathOf(req.url ?? "/"), req, res);
  });
  server.on("clientError", (_err, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      server.on("error", onListenerError); // after start: reported, and the port serves on
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
