/**
 * A loopback TCP proxy in front of a server that can hold new connections.
 * Open (the default), each connection is forwarded at once. While held, new
 * connections are accepted but not forwarded: what the client writes waits in
 * the proxy until `release()` forwards every held connection and opens the
 * proxy again. A test uses it to choose the moment a reconnecting client's
 * first commands reach the server, or cuts every connection as a network
 * failure would. When either side closes, so does the other.
 */
import { once } from "node:events";
import { createConnection, createServer, type Socket } from "node:net";

const HOST = "127.0.0.1";

export interface GatedProxy {
  /** `redis://127.0.0.1:<port>`: the proxy, as a Redis URL. */
  readonly url: string;
  readonly port: number;
  /** From now on, accept new connections but do not forward them yet. */
  hold(): void;
  /** Forward every held connection, and every new one from now on. */
  release(): void;
  /** Drops every open connection, both sides, and goes on accepting new ones: a network cut. */
  cut(): void;
  /** Stops accepting and drops every connection. */
  close(): Promise<void>;
}

export async function startGatedProxy(targetPort: number): Promise<GatedProxy> {
  const sockets = new Set<Socket>();
  let held: Socket[] | undefined;
  const forward = (client: Socket) => {
    if (client.destroyed) return;
    const upstream = createConnection({ host: HOST, port: targetPort });
    track(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
    };
    for (const side of [client, upstream]) side.once("close", drop).on("error", drop);
    upstream.once("connect", () => {
      client.pipe(upstream);
      upstream.pipe(client);
    });
  };
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  };
  const server = createServer((client) => {
    track(client);
    client.on("error", () => client.destroy());
    if (held) held.push(client);
    else forward(client);
  });
  server.listen(0, HOST);
  await once(server, "listening");
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no TCP address");
  return {
    url: `redis://${HOST}:${address.port}`,
    port: address.port,
    hold() {
      held ??= [];
    },
    release() {
      const waiting = held ?? [];
      held = undefined;
      for (const client of waiting) forward(client);
    },
    cut() {
      for (const socket of sockets) socket.destroy();
    },
    async close() {
      const closed = new Promise((resolve) => server.close(resolve));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
