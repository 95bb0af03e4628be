/**
 * Runs the conversion simulator on its own, for manual use:
 *
 *   SIM_PORT=8090 SIM_SDK_TOKEN=… node dist/src/demo/simulator/main.js
 *
 * Without SIM_SDK_TOKEN a random key pair is made up and a signed writer token
 * printed, since the simulator is useless without one. (It is a simulator-only
 * credential; a token passed in is never echoed.) Optional: SIM_HOST (default
 * 127.0.0.1), SIM_PROGRESS_MS (default 500), SIM_CREATES_PER_SECOND (conversions
 * started a second per project, over which a create gets the backend's "too many
 * tasks" answer; default 1, as the real backend's; 0 for no limit).
 *
 * It serves the projector and the legacy API; a resource whose URL path
 * contains `fail` ends in Fail, one whose path contains `slow` takes minutes.
 */
import { randomBytes } from "node:crypto";
import { createLogger } from "../../log.js";
import { createSdkToken } from "../../netless/sdk-token.js";
import { startConversionSimulator } from "./index.js";

function intFromEnv(name: string, fallback: number, min: number, max: number): number {
  const text = process.env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    console.error(`${name} must be an integer from ${min} to ${max}`);
    process.exit(2);
  }
  return value;
}

const port = intFromEnv("SIM_PORT", 0, 0, 65535);
const progressMs = intFromEnv("SIM_PROGRESS_MS", 500, 1, 3_600_000);
const createsPerSecond = intFromEnv("SIM_CREATES_PER_SECOND", 1, 0, 1_000_000);
const host = process.env.SIM_HOST || "127.0.0.1";
const givenToken = process.env.SIM_SDK_TOKEN || undefined;
const key = { accessKey: `sim-${randomBytes(6).toString("hex")}`, secretKey: randomBytes(24).toString("base64url") };

const simulator = await startConversionSimulator({
  host,
  port,
  progressMs,
  createsPerSecond: createsPerSecond === 0 ? Number.POSITIVE_INFINITY : createsPerSecond,
  credentials: givenToken === undefined ? { keys: [key] } : { sdkTokens: [givenToken] },
  logger: createLogger(process.env.LOG_LEVEL || "info", process.stderr),
});

console.log(`conversion simulator listening on ${simulator.url}`);
if (givenToken === undefined) {
  const token = createSdkToken({ ...key, role: "writer" });
  console.log(`simulator-only SDK token (writer, no expiry): ${token}`);
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    void simulator.close().then(() => process.exit(0));
  });
}
