/**
 * The work one mute request costs, with nothing around it: the two baselines
 * (`baseline-http.mjs`, `baseline-grpc.mjs`) share it so that they differ from
 * boardline only in the transport around it.
 *
 *   verify the Bearer JWT (jose jwtVerify, HS256, exp required) → HGETALL the
 *   passphrase record → project and role check → the same atomic mute script
 *   boardline runs (EVALSHA: HSET + XADD MAXLEN ~ 10000 + the meta HSET).
 *
 * No verified-token cache, no passphrase cache, no validation library, no
 * logging, no metrics. Key names and the Lua script are boardline's own
 * (imported from the build), so both sides write the same records.
 *
 * Environment: REDIS_URL, REDIS_KEY_PREFIX (default `bl:`), JWT_SECRET.
 */
import { jwtVerify } from "jose";
import { Redis } from "ioredis";
import { MUTE_EVENTS_MAXLEN, defineScripts, keySchema, muteMetaHead } from "../lib/boardline.mjs";

export class MuteError extends Error {
  /**
   * @param {number} code error.code of the JSON contract (400/401/403/500)
   * @param {string | undefined} message
   */
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

/**
 * The one Redis write of a mute, as boardline makes it: its atomic mute script
 * (EVALSHA: HSET + XADD MAXLEN ~ 10000 + the meta HSET + the SPUBLISH + the channel record's PTTL), on `redis`.
 * bench/baselines/floor.mjs (the floor plus one Redis write) makes the same write.
 * @param {import("ioredis").Redis} redis
 * @param {ReturnType<typeof keySchema>} keys
 */
export function muteWriter(redis, keys) {
  const scripts = defineScripts(redis);
  /** @param {{uid: string, mute: boolean, by: string, at: number}} change */
  return (/** @type {string} */ project, /** @type {string} */ channel, change) =>
    scripts.blSetMute(
      keys.pstnMute(project, channel),
      keys.pstnEvents(project, channel),
      keys.pstnMuteMeta(project, channel),
      keys.pstnNotify(project, channel),
      keys.channelRecord(project, channel),
      change.uid,
      change.mute ? "1" : "0",
      change.by,
      String(change.at),
      String(MUTE_EVENTS_MAXLEN),
      muteMetaHead(change),
      "", // no channel expiry
    );
}

export function createMuteHandler(env = process.env) {
  const redisUrl = env.REDIS_URL;
  if (!redisUrl) throw new Error("REDIS_URL is required");
  if (!env.JWT_SECRET) throw new Error("JWT_SECRET is required");
  const secret = new TextEncoder().encode(env.JWT_SECRET);
  const keys = keySchema(env.REDIS_KEY_PREFIX || "bl:");
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 0 });
  const writeMute = muteWriter(redis, keys);
  const verifyOptions = { algorithms: ["HS256"], requiredClaims: ["exp"] };

  /**
   * @param {string | undefined} authorization the Authorization header
   * @param {unknown} uid
   * @param {unknown} passphrase
   * @param {unknown} mute
   * @returns {Promise<{uid: string, mute: boolean}>}
   */
  async function mute(authorization, uid, passphrase, mute) {
    const token = authorization?.startsWith("Bearer ") ? authorization.slice(7) : undefined;
    if (token === undefined) throw new MuteError(401, "missing Bearer token");
    let payload;
    try {
      ({ payload } = await jwtVerify(token, secret, verifyOptions));
    } catch {
      throw new MuteError(401, "invalid token");
    }
    if (
      typeof uid !== "string" ||
      uid === "" ||
      typeof passphrase !== "string" ||
      passphrase === "" ||
      typeof mute !== "boolean"
    ) {
      throw new MuteError(400, "uid, passphrase and mute are required");
    }
    const record = await redis.hgetall(keys.passphrase(String(payload.project_id), passphrase));
    if (
      record.project === undefined ||
      record.project !== payload.project_id ||
      record.role !== "host" ||
      record.channel === undefined
    )
      throw new MuteError(403, "not the host passphrase");
    await writeMute(record.project, record.channel, { uid, mute, by: String(payload.sub), at: Date.now() });
    return { uid, mute };
  }

  return { mute, close: () => redis.quit() };
}
