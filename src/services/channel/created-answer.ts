/**
 * CreateChannel's answer, and how it is kept for retries with an
 * Idempotency-Key: as JSON, sealed (sealed-answer.ts), because it holds the
 * passphrases.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { CreateChannelResponseSchema } from "../../../gen/channel/v1/channel_admin_pb.js";
import type { IdempotencyScope } from "../idempotency/ports.js";
import { openAnswer, sealAnswer } from "../idempotency/sealed-answer.js";

/** A created channel, as answered (and kept). */
export interface Created {
  readonly channel: string;
  readonly host: string;
  /** Empty for a host-only channel. */
  readonly attendee: string;
  readonly expireAt: number | undefined;
}

const PURPOSE = "channel.v1.ChannelAdminService/CreateChannel";

export function createdMessage(c: Created): MessageInitShape<typeof CreateChannelResponseSchema> {
  return {
    channelId: c.channel,
    hostPassphrase: c.host,
    attendeePassphrase: c.attendee,
    ...(c.expireAt === undefined ? {} : { expireTime: timestampFromMs(c.expireAt) }),
  };
}

/** The `encode`/`decode` pair of a KeyedCall (safe-retries.ts) for `scope`. */
export function keptCreated(scope: IdempotencyScope): {
  encode(answer: Created): string;
  decode(text: string): Created | undefined;
} {
  return {
    encode: (answer) => sealAnswer(scope, PURPOSE, JSON.stringify(answer)),
    decode(text) {
      const opened = openAnswer(scope, PURPOSE, text);
      if (opened === undefined) return undefined;
      try {
        const k = JSON.parse(opened) as Partial<Record<keyof Created, unknown>>;
        if (typeof k.channel !== "string" || typeof k.host !== "string" || typeof k.attendee !== "string") {
          return undefined;
        }
        return {
          channel: k.channel,
          host: k.host,
          attendee: k.attendee,
          expireAt: typeof k.expireAt === "number" ? k.expireAt : undefined,
        };
      } catch {
        return undefined;
      }
    },
  };
}
