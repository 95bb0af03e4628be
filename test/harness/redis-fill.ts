/**
 * Grows a test redis-server's append-only file to a realistic size, fast: many
 * small mute-like writes (a hash field and a stream entry each, as boardline
 * writes them) under a key prefix of the caller's own, sent as raw RESP in large
 * pipelined batches on one socket. Many small commands are what makes Redis
 * take its time loading the file after a restart (a few large values would load
 * almost at once).
 */
import { once } from "node:events";
import { createConnection, type Socket } from "node:net";

const HOST = "127.0.0.1";
/** Writes (two commands each) per pipelined batch. */
const BATCH = 4000;

export interface FillResult {
  /** How many mute-like writes were sent (each an HSET and an XADD). */
  readonly writes: number;
  /** How many bytes of commands were sent (about what the AOF grew by). */
  readonly bytes: number;
}

/** Sends mute-like writes under `prefix` until about `bytes` of commands went out. */
export async function fillWithMuteWrites(port: number, prefix: string, bytes: number): Promise<FillResult> {
  const socket = createConnection({ host: HOST, port });
  await once(socket, "connect");
  const replies = new ReplyReader(socket);
  try {
    let writes = 0;
    let sent = 0;
    while (sent < bytes) {
      const batch = muteWrites(prefix, writes, BATCH);
      writes += BATCH;
      sent += batch.length;
      socket.write(batch);
      await replies.through(`batch-${writes}`);
    }
    return { writes, bytes: sent };
  } finally {
    socket.destroy();
  }
}

function muteWrites(prefix: string, from: number, count: number): Buffer {
  let text = "";
  for (let i = from; i < from + count; i++) {
    const channel = `${prefix}chan:{fill/c${i % 64}}`;
    const mute = i % 2 === 0 ? "1" : "0";
    text += resp("HSET", `${channel}:pstn-mute`, `uid-${i}`, mute);
    text += resp("XADD", `${channel}:pstn-events`, "*", "uid", `uid-${i}`, "mute", mute, "sub", "filler");
  }
  return Buffer.from(text, "utf8");
}

function resp(...args: string[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("")}`;
}

/**
 * Waits for the replies of everything sent so far by sending an ECHO of a
 * marker and reading until its reply; any error reply fails the fill.
 */
class ReplyReader {
  /** The end of what came so far (starts as a line end, so a first error reply is seen too). */
  private tail = "\n";
  private failure: string | undefined;
  private waiting: { marker: string; resolve: () => void; reject: (e: Error) => void } | undefined;

  constructor(private readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => this.onData(chunk.toString("latin1")));
    socket.on("error", (e) => this.waiting?.reject(e));
  }

  through(marker: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiting = { marker: `\r\n${marker}\r\n`, resolve, reject };
      this.socket.write(resp("ECHO", marker));
    });
  }

  private onData(text: string): void {
    const seen = this.tail + text;
    // Replies here are integers (:), bulk strings ($…) and their contents;
    // a line starting with "-" is an error.
    const error = /\n-([^\r]*)/.exec(seen);
    if (error && this.failure === undefined) this.failure = error[1];
    this.tail = seen.slice(-64);
    const waiting = this.waiting;
    if (!waiting || !seen.endsWith(waiting.marker)) return;
    this.waiting = undefined;
    if (this.failure === undefined) waiting.resolve();
    else waiting.reject(new Error(`Redis refused a fill write: ${this.failure}`));
  }
}
