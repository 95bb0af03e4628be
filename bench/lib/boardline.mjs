/**
 * The parts of boardline's own code the bench calls directly, from the build (dist/): minting a JWT and
 * a Netless SDK token, the Redis store (to seed channels and projects as the server would, its whiteboard
 * secrets sealed under the SECRETS_KEYS the servers get from the same environment), the key
 * schema and the mute script (which the bare peers run to do the same work as boardline), and the
 * conversion simulator. Everything else the bench does through boardline's routes, as a client would.
 *
 * Each module is typed by its source (src/), and loaded from dist/, which `npm run build` writes
 * (bench/run.sh builds first).
 */

import { fromBuild } from "./build.mjs";

export const { mintToken } = /** @type {typeof import("../../src/auth/jwt.js")} */ (await fromBuild("src/auth/jwt.js"));
export const { createLogger } = /** @type {typeof import("../../src/log.js")} */ (await fromBuild("src/log.js"));
export const { createSdkToken } = /** @type {typeof import("../../src/netless/sdk-token.js")} */ (
  await fromBuild("src/netless/sdk-token.js")
);
export const { loadSecretsKeys } = /** @type {typeof import("../../src/config/index.js")} */ (
  await fromBuild("src/config/index.js")
);
export const { createRedisStore } = /** @type {typeof import("../../src/store/redis/store.js")} */ (
  await fromBuild("src/store/redis/store.js")
);
export const { defineScripts } = /** @type {typeof import("../../src/store/redis/scripts.js")} */ (
  await fromBuild("src/store/redis/scripts.js")
);
export const { keySchema, hashPassphrase, MUTE_EVENTS_MAXLEN } =
  /** @type {typeof import("../../src/store/schema/keys.js")} */ (await fromBuild("src/store/schema/keys.js"));
export const { muteMetaHead } = /** @type {typeof import("../../src/store/schema/channel-records.js")} */ (
  await fromBuild("src/store/schema/channel-records.js")
);
export const { passField } = /** @type {typeof import("../../src/store/schema/channel-index-records.js")} */ (
  await fromBuild("src/store/schema/channel-index-records.js")
);
export const { startConversionSimulator } = /** @type {typeof import("../../src/demo/simulator/index.js")} */ (
  await fromBuild("src/demo/simulator/index.js")
);
export const { developmentKeyRing } = /** @type {typeof import("../../src/secrets/key-ring.js")} */ (
  await fromBuild("src/secrets/key-ring.js")
);
