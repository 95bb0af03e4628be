/**
 * Coalesces the Redis commands issued during one turn of the event loop into
 * one write to each Redis socket.
 *
 * ioredis writes every command to its socket at once: one `write` system call
 * per command, and each of them wakes Redis for that single command. Under
 * load that wake-up per command costs Redis (and the server's own CPU, when
 * they share it) more than the command itself. Holding the socket corked until
 * `setImmediate` sends everything the requests of this turn asked for in one
 * write, and Redis answers them in one read: fewer system calls on both sides,
 * so more requests per second (docs/performance.md, "Mute").
 *
 * Unlike ioredis's `enableAutoPipelining`, nothing waits for an earlier batch
 * to be answered: a command is on the wire by the end of the loop turn that
 * issued it, whatever is in flight. A lone command costs nothing extra either:
 * the check phase follows the poll phase that ran the request.
 */
import { Cluster } from "ioredis";
import type { RedisClient } from "./connection.js";

interface Corkable {
  cork(): void;
  uncork(): void;
  readonly writable: boolean;
}

export class WriteCoalescer {
  private holding = false;

  constructor(private readonly client: RedisClient) {}

  /** Holds this turn's writes to Redis until the turn ends (once per turn; later calls do nothing). */
  hold(): void {
    if (this.holding) return;
    const sockets = socketsOf(this.client);
    if (sockets.length === 0) return;
    this.holding = true;
    for (const socket of sockets) socket.cork();
    setImmediate(() => {
      this.holding = false;
      // The very sockets corked above, even if a reconnect replaced them since.
      for (const socket of sockets) socket.uncork();
    });
  }
}

/** The sockets commands can go out on now: the one connection, or every Cluster node's. */
function socketsOf(client: RedisClient): Corkable[] {
  const nodes = client instanceof Cluster ? client.nodes("all") : [client];
  const sockets: Corkable[] = [];
  for (const node of nodes) {
    const socket = node.stream as Corkable | undefined;
    if (socket?.writable) sockets.push(socket);
  }
  return sockets;
}
