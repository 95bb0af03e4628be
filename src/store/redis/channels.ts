/**
 * The Redis store's raw channel-directory operations. Not written yet: every
 * call fails as `internal` until the Redis commits of issue 20 land; the
 * in-memory store (src/store/memory/channels.ts) has them.
 */
import { Failure } from "../../services/failure.js";
import type { ChannelPrimitives } from "../channel-primitives.js";
import type { KeySchema } from "../schema/keys.js";
import type { RedisCalls } from "./calls.js";
import type { RedisClient } from "./connection.js";
import type { ScriptCommands } from "./scripts.js";

const notYet = async (): Promise<never> => {
  throw new Failure("internal", { detail: "the Redis channel directory is not implemented yet" });
};

export class RedisChannels implements ChannelPrimitives {
  constructor(
    readonly calls: RedisCalls,
    readonly keys: KeySchema,
    readonly scriptsOn: (client: RedisClient) => ScriptCommands,
  ) {}
  writeRecord = notYet;
  dropRecordFields = notYet;
  readRecord = notYet;
  index = notYet;
  unindex = notYet;
  indexPage = notYet;
  claimPassphrase = notYet;
  releasePassphrase = notYet;
  readPassphrase = notYet;
  removeChannelData = notYet;
  appendAdminEvent = notYet;
  readWhiteboardRecord = notYet;
  scan = notYet;
}
