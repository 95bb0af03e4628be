/**
 * A CLIENT span per Redis command sent inside a traced call, from ioredis's
 * own `ioredis:command` tracing channel (node:diagnostics_channel). ioredis
 * publishes there from the point where it writes a command to a connection
 * — a single node's, a Sentinel master's or each Cluster node's alike — and
 * skips the channel while nobody subscribes, so with tracing off the hook
 * costs nothing. No import hooks, no patching.
 *
 * A span records the command's name (`EVALSHA`, `HGETALL`…), the key count of
 * a script, the database and the server address; never the keys or the
 * arguments (a script's arguments are values: uids, callers, task states).
 * Commands outside a call (the conversion follower, the watch reader, the
 * connection's own INFO) are not traced.
 */
import { tracingChannel } from "node:diagnostics_channel";
import { type Attributes, context, type Span, SpanKind, SpanStatusCode, type Tracer, trace } from "@opentelemetry/api";

/** What ioredis publishes for a command (ioredis `CommandTraceContext`). */
interface CommandMessage {
  readonly command?: unknown;
  readonly args?: unknown;
  readonly database?: unknown;
  readonly serverAddress?: unknown;
  readonly serverPort?: unknown;
  readonly error?: unknown;
}

const SCRIPT_COMMANDS = new Set(["EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"]);

/** Subscribes; the function it returns unsubscribes. */
export function traceRedisCommands(tracer: Tracer): () => void {
  const channel = tracingChannel<unknown, CommandMessage>("ioredis:command");
  const spans = new WeakMap<object, Span>();
  const finish = (message: CommandMessage, failed: boolean) => {
    const span = spans.get(message);
    if (span === undefined) return;
    spans.delete(message);
    if (failed) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: errorName(message.error) });
      span.setAttribute("error.type", errorName(message.error));
    }
    span.end();
  };
  const handlers = {
    start(message: CommandMessage) {
      const parent = trace.getSpan(context.active());
      if (parent === undefined || !parent.isRecording()) return; // not inside a live call
      const name = String(message.command ?? "command").toUpperCase();
      spans.set(message, tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes: attributesOf(name, message) }));
    },
    end() {},
    asyncStart() {},
    asyncEnd(message: CommandMessage) {
      finish(message, false);
    },
    error(message: CommandMessage) {
      finish(message, true);
    },
  };
  channel.subscribe(handlers);
  return () => channel.unsubscribe(handlers);
}

function attributesOf(name: string, message: CommandMessage): Attributes {
  const attributes: Attributes = { "db.system.name": "redis", "db.operation.name": name };
  if (typeof message.database === "number") attributes["db.namespace"] = String(message.database);
  if (typeof message.serverAddress === "string") attributes["server.address"] = message.serverAddress;
  if (typeof message.serverPort === "number") attributes["server.port"] = message.serverPort;
  if (SCRIPT_COMMANDS.has(name) && Array.isArray(message.args)) {
    // EVALSHA sha numkeys key… arg…: the key count, not the keys or the values.
    const keys = Number(message.args[1]);
    if (Number.isInteger(keys)) attributes["boardline.redis.key_count"] = keys;
  }
  return attributes;
}

/** An error's class (`ReplyError`, `Error`…), never its text, which may quote a command's arguments. */
function errorName(error: unknown): string {
  return error instanceof Error ? error.name : "error";
}
