/**
 * A stand-in for the Netless projector and legacy file-conversion APIs, for the
 * demo and the tests: a real HTTP server on loopback with the same routes (`routes.ts`), the
 * same token and region checks, tasks that progress over time (`tasks.ts`), the
 * projector API's webhook called at a task's end (`webhooks.ts`), and faults
 * that can be switched on at runtime (`faults.ts`).
 *
 * Errors answer `{"message": …}` as the real API does. Tokens are recorded
 * (tests look at them) but never logged.
 */
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { SimulatorFault } from "./faults.js";
import { errorAnswer, type RecordedRequest, send } from "./http-io.js";
import type { SimulatorOptions } from "./options.js";
import { FILES_PATH } from "./page-images.js";
import { handleRequest } from "./request-handler.js";
import { SIMULATOR_ROUTES } from "./routes.js";
import { createState, type SimulatorState } from "./state.js";
import { type AcceptedCreate, type SimulatedTask, taskEndsAt, taskProgress } from "./tasks.js";
import type { WebhookDelivery } from "./webhooks.js";

export interface ConversionSimulator {
  /** `http://host:port`, no trailing slash. */
  readonly url: string;
  readonly port: number;
  /** Adds a fault; it replaces an active fault of the same kind aimed at the same operation(s). */
  setFault(fault: SimulatorFault): void;
  clearFaults(): void;
  tasks(): readonly SimulatedTask[];
  /** Forgets every task, as the backend does a week after it ended: queries answer "task not found". */
  forgetTasks(): void;
  requests(): readonly RecordedRequest[];
  /**
   * Every create that made a task, in order, with when it arrived — kept when the tasks are
   * forgotten. (`requests()` has every request as sent, tokens included, accepted or not.)
   */
  creates(): readonly AcceptedCreate[];
  /** The creates refused by the `createsPerSecond` limit. */
  refusedCreates(): number;
  /** The webhook calls made so far (projector tasks created with a `webhookEndpoint`). */
  webhookDeliveries(): readonly WebhookDelivery[];
  /** Connections currently open (to check that clients do not leak sockets). */
  openConnections(): number;
  /** Stops listening and closes every connection, idle or not. */
  close(): Promise<void>;
}

export async function startConversionSimulator(options: SimulatorOptions): Promise<ConversionSimulator> {
  const state = createState(options);
  const sockets = new Set<Socket>();
  const server = createServer(state, sockets);
  const address = await listen(server, options.port ?? 0, options.host ?? "127.0.0.1");
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  if (state.settings.serveFiles) state.filesBase = `http://${host}:${address.port}${FILES_PATH}`;
  const { now } = state.settings;
  let closing: Promise<void> | undefined;

  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    setFault: (fault) => state.faults.set(fault),
    clearFaults: () => state.faults.clear(),
    tasks() {
      const at = now();
      return [...state.tasks.values()].map((task) => ({
        ...task,
        state: taskProgress(task, at),
        endsAt: taskEndsAt(task),
      }));
    },
    forgetTasks: () => state.tasks.clear(),
    requests: () => [...state.recorded],
    creates: () => [...state.creates],
    refusedCreates: () => state.createLimit.refused(),
    webhookDeliveries: () => [...state.webhooks.deliveries],
    openConnections: () => sockets.size,
    close() {
      closing ??= new Promise<void>((resolve) => {
        // Wake handlers sleeping in a "slow" fault; they see a destroyed response and stop.
        state.faults.wakeAll();
        state.webhooks.close();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

/** The HTTP server, answering through the route table and counting its open connections in `sockets`. */
function createServer(state: SimulatorState, sockets: Set<Socket>): http.Server {
  const logger = state.settings.logger;
  const server = http.createServer((req, res) => {
    handleRequest(state, SIMULATOR_ROUTES, req, res).catch((err: unknown) => {
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
  return server;
}

function listen(server: http.Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve(server.address() as AddressInfo);
    });
  });
}
