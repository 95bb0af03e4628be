/**
 * Demo mode (`npm start` with no configuration): seeds a project whose
 * whiteboard talks to the bundled conversion simulator, a channel with a host
 * and an attendee passphrase — through ChannelAdminService's domain, as the
 * CLI and the RPCs do — and prints a ready-to-paste curl per route, first the
 * one an integrator's backend makes first: creating a channel.
 */
import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import {
  CreateChannelRequestSchema,
  SetWhiteboardSettingsRequestSchema,
} from "../../gen/channel/v1/channel_admin_pb.js";
import { ChannelAdmin } from "../services/channel/admin.js";
import { generatePassphrase } from "../services/channel/passphrases.js";
import { WhiteboardSettingsAdmin } from "../services/channel/whiteboard-settings.js";
import { retryLockMs, SafeRetries } from "../services/idempotency/safe-retries.js";
import { ALL_SCOPES, type Store } from "../services/ports.js";

export interface DemoSeed {
  readonly project: string;
  readonly channel: string;
  readonly hostPassphrase: string;
  readonly attendeePassphrase: string;
  readonly accessKey: string;
  readonly secretKey: string;
}

export function demoSeed(): DemoSeed {
  const word = () => randomBytes(6).toString("base64url");
  return {
    project: "demo-project",
    channel: "demo-channel",
    // The domain's generator: what CreateChannel makes when passphrases are left out.
    hostPassphrase: generatePassphrase(),
    attendeePassphrase: generatePassphrase(),
    accessKey: `demo-ak-${word()}`,
    secretKey: randomBytes(24).toString("base64url"),
  };
}

/** Seeds through CreateChannel and SetWhiteboardSettings' functions, as the operator (`sub` "demo"). */
export async function seedDemo(store: Store, seed: DemoSeed): Promise<void> {
  const caller = { project: seed.project, subject: "demo", scopes: new Set(ALL_SCOPES) };
  const channels = new ChannelAdmin(store, new SafeRetries(store.idempotency, retryLockMs(0, 1000)));
  await channels.createChannel(
    caller,
    create(CreateChannelRequestSchema, {
      channelId: seed.channel,
      hostPassphrase: seed.hostPassphrase,
      attendeePassphrase: seed.attendeePassphrase,
    }),
  );
  await new WhiteboardSettingsAdmin(store).setSettings(
    caller,
    create(SetWhiteboardSettingsRequestSchema, {
      region: "us-sv",
      credential: { case: "accessKeyPair", value: { accessKey: seed.accessKey, secretKey: seed.secretKey } },
    }),
  );
}

/** The demo's tokens, each for its caller: a user, the telephone gateway, the product's backend. */
export interface DemoTokens {
  /** A user of the project: no scope. */
  readonly user: string;
  /** The telephone gateway (scope `pstn.gateway`). */
  readonly gateway: string;
  /** The product's backend (scope `channels.admin`). */
  readonly admin: string;
}

/** The channel the banner's CreateChannel example creates (the seeded one exists already). */
export const DEMO_NEW_CHANNEL = "meeting-4711";

/**
 * The banner: a command per route, each with the token of the caller that makes that call, and (when the
 * telephone-gateway simulator runs) where to watch and moderate its callers.
 */
export function demoBanner(url: string, seed: DemoSeed, tokens: DemoTokens, phoneGateway = false): string {
  const token = tokens.user;
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const curl = (path: string, body: object, bearer = token) =>
    [
      `curl -sS -X POST ${url}${path}`,
      `  -H ${q(`Authorization: Bearer ${bearer}`)}`,
      "  -H 'Content-Type: application/json'",
      `  -d ${q(JSON.stringify(body))}`,
    ].join(" \\\n");
  return [
    "",
    `boardline demo is listening on ${url}`,
    `  project ${seed.project}, channel ${seed.channel}`,
    `  host passphrase ${seed.hostPassphrase}, attendee passphrase ${seed.attendeePassphrase}`,
    "  in-memory store, conversion simulator on loopback, random JWT secret (tokens die with the process)",
    `  API reference: ${url}/docs (paste the token below into Authorize to try the routes)`,
    "",
    "Create a channel and get its passphrases, as your backend does (a channels.admin token):",
    curl("/v1/channels", { channel_id: DEMO_NEW_CHANNEL }, tokens.admin),
    "",
    "Mute a telephone participant:",
    curl("/v1/channel/pstn/mute", { uid: "pstn-1001", passphrase: seed.hostPassphrase, mute: true }),
    "",
    "Convert a document for the whiteboard:",
    curl("/v1/whiteboard/fileconvert", {
      resource_url: "https://example.com/deck.pptx",
      passphrase: seed.attendeePassphrase,
      conversion_type: "static",
      conversion_scale: 1.5,
    }),
    "",
    "Watch it reach Finished with its pages (TASK = the task_uuid it answered; the simulator takes about 3 s):",
    [`curl -sS -N ${url}/v1/whiteboard/fileconvert/TASK/watch`, `  -H ${q(`Authorization: Bearer ${token}`)}`].join(
      " \\\n",
    ),
    "or over gRPC:",
    `npx buf curl --protocol grpc --http2-prior-knowledge -H ${q(`Authorization: Bearer ${token}`)} \\\n  -d '{"task_uuid":"TASK"}' ${url}/whiteboard.v1.WhiteboardService/WatchConversion`,
    "",
    "Watch the channel's mute events as the telephone gateway does (a pstn.gateway token), then run the mute curl",
    "above in another terminal: the event arrives here, its cursor resumes a watch (Ctrl-C stops):",
    `npx buf curl --protocol grpc --http2-prior-knowledge -H ${q(`Authorization: Bearer ${tokens.gateway}`)} \\\n  -d ${q(JSON.stringify({ channel_ids: [seed.channel] }))} ${url}/channel.v1.PstnService/WatchPstnEvents`,
    "or as server-sent events (resume with -H 'Last-Event-ID: <the last id:>'):",
    [
      `curl -sS -N -X POST ${url}/v1/channel/pstn/events:watch`,
      `  -H ${q(`Authorization: Bearer ${tokens.gateway}`)}`,
      "  -H 'Content-Type: application/json'",
      `  -d ${q(JSON.stringify({ channel_ids: [seed.channel] }))}`,
    ].join(" \\\n"),
    "",
    "Unmute over gRPC, with reflection (buf from node_modules):",
    `npx buf curl --protocol grpc --http2-prior-knowledge -H ${q(`Authorization: Bearer ${token}`)} \\\n  -d ${q(JSON.stringify({ uid: "pstn-1001", passphrase: seed.hostPassphrase, mute: false }))} \\\n  ${url}/channel.v1.PstnService/Mute`,
    "",
    ...(phoneGateway
      ? [
          `Simulated telephone callers come and go on ${seed.channel} (DEMO_PHONE_GATEWAY_MS=0 turns them off);`,
          "moderate them live in the browser panel, examples/browser/panel.html (examples/browser/README.md).",
          "",
        ]
      : []),
    "The example callers in examples/ (Go, Python, browser) read these; paste them into their terminal:",
    ...Object.entries(exampleVariables(url, seed, tokens)).map(([name, value]) => `export ${name}=${q(value)}`),
    "",
  ].join("\n");
}

/** What the example callers in examples/ read to find and call a boardline (examples/README.md). */
export function exampleVariables(url: string, seed: DemoSeed, tokens: DemoTokens) {
  return {
    BOARDLINE_URL: url,
    BOARDLINE_TOKEN: tokens.user,
    BOARDLINE_GATEWAY_TOKEN: tokens.gateway,
    BOARDLINE_CHANNEL: seed.channel,
    BOARDLINE_HOST_PASSPHRASE: seed.hostPassphrase,
    BOARDLINE_ATTENDEE_PASSPHRASE: seed.attendeePassphrase,
  };
}
