#!/usr/bin/env node
/**
 * The operator CLI (`npx boardline …`): writes the documented Redis records
 * (DESIGN §4) through the same store the server uses, and mints test tokens.
 *
 * Redis comes from the server's variables (REDIS_URL, or REDIS_CLUSTER_NODES /
 * REDIS_SENTINELS + REDIS_SENTINEL_NAME, REDIS_KEY_PREFIX); there is no
 * in-memory mode. Exit codes: 0 success, 1 failure (one line on stderr),
 * 2 usage error.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { Writable } from "node:stream";
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { pino } from "pino";
import { mintToken } from "./auth/jwt.js";
import { ConfigError, loadRedisSettings, loadTokenSettings, type RedisConfig } from "./config/index.js";
import { isFailure } from "./services/failure.js";
import { REGIONS, type Region, type WhiteboardCredentials } from "./services/ports.js";
import { checkChannelId, checkProjectId } from "./store/keys.js";
import { createRedisStore, type RedisStore } from "./store/redis-store.js";

/** A failure to report as one line on stderr, exit code 1. */
class CliFailure extends Error {}

const CONNECT_TIMEOUT_MS = 3000;
const MAX_EVENTS = 10_000;
const MAX_TTL_SECONDS = 366 * 24 * 3600;
const TOKEN_SUBJECT = "operator";

// --- output ---

function print(json: boolean, data: unknown, human: string): void {
  process.stdout.write(json ? `${JSON.stringify(data)}\n` : `${human}\n`);
}

// --- Redis ---

/** Opens the store from the environment, runs `work`, and always closes it. */
async function withStore<T>(work: (store: RedisStore) => Promise<T>): Promise<T> {
  const settings = configOrFail(() => loadRedisSettings());
  if (settings.redis === undefined) {
    throw new CliFailure(
      "no Redis configured: set REDIS_URL (or REDIS_CLUSTER_NODES, or REDIS_SENTINELS with REDIS_SENTINEL_NAME); the CLI has no in-memory mode",
    );
  }
  const where = describeRedis(settings.redis);
  const trouble = new LastConnectionError();
  const store = createRedisStore(settings.redis, {
    keyPrefix: settings.keyPrefix,
    logger: pino({ level: "warn" }, trouble),
    commandTimeoutMs: settings.commandTimeoutMs,
  });
  try {
    try {
      await store.waitUntilReady(CONNECT_TIMEOUT_MS);
    } catch (e) {
      const why = trouble.message ?? causeMessage(e);
      throw new CliFailure(`cannot reach Redis at ${where}${why === undefined ? "" : `: ${why}`}`);
    }
    return await work(store);
  } catch (e) {
    if (isFailure(e) && e.kind === "unavailable") {
      throw new CliFailure(`Redis at ${where} failed: ${trouble.message ?? causeMessage(e) ?? "unavailable"}`);
    }
    throw e;
  } finally {
    await store.close();
  }
}

/** Keeps the message of the last error the store logged (the reason Redis is unreachable). */
class LastConnectionError extends Writable {
  message: string | undefined;
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    try {
      const line = JSON.parse(chunk.toString("utf8")) as { err?: { message?: unknown } };
      if (typeof line.err?.message === "string" && line.err.message !== "") this.message = line.err.message;
    } catch {
      // not a JSON line: nothing to keep
    }
    done();
  }
}

/** Where Redis is, without credentials. */
function describeRedis(redis: RedisConfig): string {
  const nodes = (list: readonly { host: string; port: number }[]) =>
    list.map(({ host, port }) => `${host.includes(":") ? `[${host}]` : host}:${port}`).join(",");
  switch (redis.mode) {
    case "single": {
      const u = new URL(redis.url);
      return `${u.protocol}//${u.host}${u.pathname.length > 1 ? u.pathname : ""}`;
    }
    case "cluster":
      return `cluster ${nodes(redis.nodes)}`;
    case "sentinel":
      return `sentinel master ${redis.masterName} via ${nodes(redis.sentinels)}`;
  }
}

function configOrFail<T>(load: () => T): T {
  try {
    return load();
  } catch (e) {
    if (e instanceof ConfigError) throw new CliFailure(`invalid configuration: ${e.message}`);
    throw e;
  }
}

function causeMessage(e: unknown): string | undefined {
  const cause = e instanceof Error ? (e.cause ?? e) : e;
  return cause instanceof Error && cause.message !== "" ? cause.message : undefined;
}

// --- argument parsing ---

/** Thrown from our own checks; reported like commander's usage errors (exit 2). */
function usage(command: Command, message: string): never {
  command.error(`error: ${message}`, { exitCode: 2, code: "boardline.usage" });
}

function checkId(command: Command, problem: string | undefined): void {
  if (problem !== undefined) usage(command, problem);
}

function parseEvents(raw: string): number {
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_EVENTS) {
    throw new InvalidArgumentError(`expected a whole number from 1 to ${MAX_EVENTS}.`);
  }
  return Number(raw);
}

/** `90`, `90s`, `15m`, `1h`, `7d` → seconds. */
function parseDuration(raw: string): number {
  const m = /^(\d+)([smhd]?)$/.exec(raw.trim());
  const unit = { "": 1, s: 1, m: 60, h: 3600, d: 86_400 }[m?.[2] ?? ""] ?? 1;
  const seconds = m === null ? Number.NaN : Number(m[1]) * unit;
  if (!(seconds >= 1 && seconds <= MAX_TTL_SECONDS)) {
    throw new InvalidArgumentError("expected a duration like 90s, 15m, 1h or 7d (at least 1s, at most 366d).");
  }
  return seconds;
}

/** A strong passphrase that is easy to read out: 24 characters from 32 (120 bits), no look-alikes. */
function generatePassphrase(): string {
  const alphabet = "abcdefghijkmnpqrstuvwxyz23456789";
  const chars = [...randomBytes(24)].map((b) => alphabet[b & 31]);
  return [0, 4, 8, 12, 16, 20].map((i) => chars.slice(i, i + 4).join("")).join("-");
}

/** All of stdin, without the trailing newline. */
async function readStdin(what: string): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write(`boardline: reading the ${what} from stdin (end with Ctrl-D)\n`);
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\r?\n$/, "");
}

function formatTime(ms: number): string {
  return Number.isFinite(ms) ? new Date(ms).toISOString() : String(ms);
}

function table(rows: string[][]): string[] {
  const widths = rows.reduce<number[]>((w, row) => row.map((cell, i) => Math.max(w[i] ?? 0, cell.length)), []);
  return rows.map(
    (row) => `  ${row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join("  ")}`,
  );
}

// --- commands ---

const jsonOption = () => new Option("--json", "print the result as one JSON object");

function channelCommands(program: Command): void {
  const channel = program
    .command("channel")
    .description("create or delete a channel's passphrase records")
    .addHelpText(
      "after",
      "\nA passphrase opens one channel of one project. The host passphrase can mute PSTN participants;\n" +
        "both host and attendee passphrases can convert files. Only the sha256 of a passphrase is stored.",
    );

  channel
    .command("create")
    .description(
      "create a channel, or replace its passphrases: afterwards exactly the given passphrases open it " +
        "(its mute state and events are kept)",
    )
    .argument("<project>", "project id")
    .argument("<channel>", "channel id")
    .addOption(
      new Option("--host-passphrase <passphrase>", "host passphrase (mute and fileconvert)").env(
        "BOARDLINE_HOST_PASSPHRASE",
      ),
    )
    .addOption(
      new Option("--attendee-passphrase <passphrase>", "attendee passphrase (fileconvert only); none when absent").env(
        "BOARDLINE_ATTENDEE_PASSPHRASE",
      ),
    )
    .option("--generate", "generate strong random passphrases for the roles not given, and print them once")
    .addOption(jsonOption())
    .addHelpText(
      "after",
      "\nExamples:\n" +
        "  $ boardline channel create acme weekly-sync --generate\n" +
        "  $ BOARDLINE_HOST_PASSPHRASE=… boardline channel create acme weekly-sync\n" +
        "\nPassphrases given on the command line end up in shell history: prefer --generate or the\n" +
        "environment variables. A passphrase that already opens another channel is refused.",
    )
    .action(
      async (
        project: string,
        channelId: string,
        o: { hostPassphrase?: string; attendeePassphrase?: string; generate?: boolean; json?: boolean },
        cmd: Command,
      ) => {
        checkId(cmd, checkProjectId(project) ?? checkChannelId(channelId));
        const generated: { host_passphrase?: string; attendee_passphrase?: string } = {};
        let host = o.hostPassphrase;
        if (host === undefined) {
          if (!o.generate) usage(cmd, "--host-passphrase is required (or --generate to make one)");
          host = generated.host_passphrase = generatePassphrase();
        }
        let attendee = o.attendeePassphrase;
        if (attendee === undefined && o.generate) attendee = generated.attendee_passphrase = generatePassphrase();
        if (host === "" || attendee === "") usage(cmd, "a passphrase must not be empty");
        await withStore((store) =>
          store.createChannel({
            project,
            channel: channelId,
            hostPassphrase: host,
            ...(attendee === undefined ? {} : { attendeePassphrase: attendee }),
          }),
        );
        const roles = attendee === undefined ? ["host"] : ["host", "attendee"];
        const lines = [
          `channel ${channelId} of project ${project}: ${roles.join(" and ")} passphrase${roles.length > 1 ? "s" : ""} set`,
        ];
        if (generated.host_passphrase !== undefined) lines.push(`host passphrase: ${generated.host_passphrase}`);
        if (generated.attendee_passphrase !== undefined)
          lines.push(`attendee passphrase: ${generated.attendee_passphrase}`);
        if (Object.keys(generated).length > 0) lines.push("(generated passphrases are shown only this once)");
        print(o.json === true, { project, channel: channelId, roles, ...generated }, lines.join("\n"));
      },
    );

  channel
    .command("delete")
    .description("delete a channel: its passphrase records, its mute state and its mute events")
    .argument("<project>", "project id")
    .argument("<channel>", "channel id")
    .option("--if-exists", "succeed when there is nothing to delete")
    .addOption(jsonOption())
    .addHelpText("after", "\nExits 1 when the channel has no records at all, unless --if-exists is given.")
    .action(async (project: string, channelId: string, o: { ifExists?: boolean; json?: boolean }) => {
      const deleted = await withStore((store) => store.deleteChannel(project, channelId));
      if (deleted === 0 && !o.ifExists)
        throw new CliFailure(`channel ${channelId} of project ${project} not found (nothing deleted)`);
      print(
        o.json === true,
        { project, channel: channelId, deleted_keys: deleted },
        `channel ${channelId} of project ${project} deleted (${deleted} key${deleted === 1 ? "" : "s"})`,
      );
    });
}

function whiteboardCommands(program: Command): void {
  const whiteboard = program
    .command("whiteboard")
    .description("set, show or clear a project's whiteboard (file conversion) settings");

  whiteboard
    .command("set")
    .description("set the project's region and Netless credentials (an SDK token, or an access key + secret key pair)")
    .argument("<project>", "project id")
    .addOption(new Option("--region <region>", "Netless data-center region").choices(REGIONS).makeOptionMandatory())
    .addOption(new Option("--sdk-token <token>", "Netless SDK token (writer or admin role)").env("BOARDLINE_SDK_TOKEN"))
    .option("--sdk-token-stdin", "read the SDK token from stdin")
    .addOption(
      new Option("--access-key <ak>", "Netless access key (boardline signs its own SDK tokens)").env(
        "BOARDLINE_ACCESS_KEY",
      ),
    )
    .addOption(new Option("--secret-key <sk>", "Netless secret key, with --access-key").env("BOARDLINE_SECRET_KEY"))
    .option("--secret-key-stdin", "read the secret key from stdin")
    .addOption(jsonOption())
    .addHelpText(
      "after",
      "\nGive either an SDK token or an access key and secret key. Secrets need not appear in shell\n" +
        "history: pass them in BOARDLINE_SDK_TOKEN / BOARDLINE_SECRET_KEY, or pipe them with\n" +
        "--sdk-token-stdin / --secret-key-stdin. Setting replaces the previous credentials.\n" +
        "\nExamples:\n" +
        "  $ boardline whiteboard set acme --region us-sv --access-key AK123 --secret-key-stdin < sk.txt\n" +
        "  $ BOARDLINE_SDK_TOKEN=NETLESSSDK_… boardline whiteboard set acme --region sg",
    )
    .action(
      async (
        project: string,
        o: {
          region: Region;
          sdkToken?: string;
          sdkTokenStdin?: boolean;
          accessKey?: string;
          secretKey?: string;
          secretKeyStdin?: boolean;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        checkId(cmd, checkProjectId(project));
        const wantsToken = o.sdkToken !== undefined || o.sdkTokenStdin === true;
        const wantsKeys = o.accessKey !== undefined || o.secretKey !== undefined || o.secretKeyStdin === true;
        if (wantsToken && wantsKeys) {
          usage(
            cmd,
            "give either an SDK token or an access key and secret key, not both (check BOARDLINE_* variables too)",
          );
        }
        if (!wantsToken && !wantsKeys)
          usage(cmd, "credentials are required: --sdk-token, or --access-key with --secret-key");
        if (o.sdkToken !== undefined && o.sdkTokenStdin) usage(cmd, "--sdk-token and --sdk-token-stdin are exclusive");
        if (o.secretKey !== undefined && o.secretKeyStdin)
          usage(cmd, "--secret-key and --secret-key-stdin are exclusive");
        let credentials: WhiteboardCredentials;
        if (wantsToken) {
          const sdkToken = o.sdkTokenStdin ? await readStdin("SDK token") : (o.sdkToken ?? "");
          if (sdkToken.trim() === "") usage(cmd, "the SDK token is empty");
          credentials = { sdkToken: sdkToken.trim() };
        } else {
          if (o.accessKey === undefined || o.accessKey.trim() === "")
            usage(cmd, "--access-key is required with a secret key");
          const secretKey = o.secretKeyStdin ? await readStdin("secret key") : o.secretKey;
          if (secretKey === undefined) usage(cmd, "--secret-key (or --secret-key-stdin) is required with --access-key");
          if (secretKey.trim() === "") usage(cmd, "the secret key is empty");
          credentials = { accessKey: o.accessKey.trim(), secretKey: secretKey.trim() };
        }
        await withStore((store) => store.setWhiteboard(project, { region: o.region, credentials }));
        const kind = "sdkToken" in credentials ? "sdk_token" : "access_key";
        print(
          o.json === true,
          {
            project,
            region: o.region,
            credentials: kind,
            ...("accessKey" in credentials ? { access_key: credentials.accessKey } : {}),
          },
          `whiteboard of project ${project} set: region ${o.region}, ${
            "accessKey" in credentials ? `access key ${credentials.accessKey} (secret key stored)` : "SDK token stored"
          }`,
        );
      },
    );

  whiteboard
    .command("show")
    .description("show the project's whiteboard region and credential kind (secrets are never printed)")
    .argument("<project>", "project id")
    .addOption(jsonOption())
    .addHelpText(
      "after",
      "\nExits 1 when the project has no usable whiteboard settings (fileconvert then answers 403).",
    )
    .action(async (project: string, o: { json?: boolean }) => {
      const settings = await withStore((store) => store.getWhiteboard(project));
      if (settings === undefined) throw new CliFailure(`project ${project} has no usable whiteboard settings`);
      const c = settings.credentials;
      print(
        o.json === true,
        {
          project,
          region: settings.region,
          credentials: "sdkToken" in c ? "sdk_token" : "access_key",
          ...("accessKey" in c ? { access_key: c.accessKey } : {}),
        },
        `whiteboard of project ${project}: region ${settings.region}, ${"accessKey" in c ? `access key ${c.accessKey}` : "SDK token"}`,
      );
    });

  whiteboard
    .command("clear")
    .description("remove the project's whiteboard settings: fileconvert answers 403 for the project afterwards")
    .argument("<project>", "project id")
    .addOption(jsonOption())
    .action(async (project: string, o: { json?: boolean }) => {
      await withStore((store) => store.clearWhiteboard(project));
      print(o.json === true, { project, cleared: true }, `whiteboard settings of project ${project} removed`);
    });
}

function tokenCommands(program: Command): void {
  const token = program.command("token").description("mint JWTs for testing");
  token
    .command("mint")
    .description("mint an HS256 JWT with JWT_SECRET that the server accepts, and print only the token")
    .requiredOption(
      "--project <project>",
      "the project the token acts for (claim JWT_PROJECT_CLAIM, default project_id)",
    )
    .option("--subject <subject>", "the token's sub (recorded as `by` in mute events)", TOKEN_SUBJECT)
    .option("--ttl <duration>", "lifetime: 90s, 15m, 1h, 7d (at most 366d)", parseDuration, 3600)
    .addOption(jsonOption())
    .addHelpText(
      "after",
      "\nReads JWT_SECRET (at least 32 bytes; the same secret as the server), and JWT_PROJECT_CLAIM,\n" +
        "JWT_ISSUER and JWT_AUDIENCE so the token passes the server's checks. Needs no Redis.\n" +
        "\nExample:\n" +
        "  $ TOKEN=$(boardline token mint --project acme --ttl 15m)\n" +
        '  $ curl -H "Authorization: Bearer $TOKEN" …',
    )
    .action(async (o: { project: string; subject: string; ttl: number; json?: boolean }, cmd: Command) => {
      if (o.project.trim() === "") usage(cmd, "--project must not be empty");
      if (o.subject.trim() === "") usage(cmd, "--subject must not be empty");
      const settings = configOrFail(() => loadTokenSettings());
      if (settings.secret === undefined) {
        throw new CliFailure(
          "JWT_SECRET is not set: token mint signs with the server's HS256 secret (at least 32 bytes)",
        );
      }
      const jwt = await mintToken({
        secret: settings.secret,
        project: o.project,
        subject: o.subject,
        ttlSeconds: o.ttl,
        projectClaim: settings.projectClaim,
        ...(settings.issuer === undefined ? {} : { issuer: settings.issuer }),
        ...(settings.audience === undefined ? {} : { audience: settings.audience }),
      });
      const expiresAt = new Date((Math.floor(Date.now() / 1000) + o.ttl) * 1000).toISOString();
      print(o.json === true, { token: jwt, project: o.project, subject: o.subject, expires_at: expiresAt }, jwt);
    });
}

function muteCommands(program: Command): void {
  const mute = program.command("mute").description("inspect PSTN mute state");
  mute
    .command("show")
    .description("show a channel's mute state per uid and its last mute events (newest first)")
    .argument("<project>", "project id")
    .argument("<channel>", "channel id")
    .option("--events <n>", `how many events to show (1 to ${MAX_EVENTS})`, parseEvents, 20)
    .addOption(jsonOption())
    .action(async (project: string, channelId: string, o: { events: number; json?: boolean }) => {
      const [state, events] = await withStore((store) =>
        Promise.all([store.getMuteState(project, channelId), store.getMuteEvents(project, channelId, o.events)]),
      );
      const uids = Object.keys(state).sort();
      const lines = [`PSTN mute state of channel ${channelId} in project ${project}:`];
      if (uids.length === 0) lines.push("  (no uid has a mute state)");
      else lines.push(...table(uids.map((uid) => [uid, state[uid] ? "muted" : "unmuted"])));
      lines.push(`Last ${events.length} event${events.length === 1 ? "" : "s"} (newest first):`);
      if (events.length === 0) lines.push("  (none)");
      else
        lines.push(...table(events.map((e) => [formatTime(e.at), e.uid, e.mute ? "muted" : "unmuted", `by ${e.by}`])));
      print(
        o.json === true,
        {
          project,
          channel: channelId,
          mute: Object.fromEntries(uids.map((uid) => [uid, state[uid]])),
          events: events.map((e) => ({ id: e.id, uid: e.uid, mute: e.mute, by: e.by, at: formatTime(e.at) })),
        },
        lines.join("\n"),
      );
    });
}

function conversionCommands(program: Command): void {
  const conversion = program.command("conversion").description("inspect recorded file-conversion tasks");
  conversion
    .command("show")
    .description("show the record of a conversion task (records expire after 7 days)")
    .argument("<uuid>", "the task uuid fileconvert answered")
    .addOption(jsonOption())
    .action(async (uuid: string, o: { json?: boolean }) => {
      const task = await withStore((store) => store.getConversion(uuid));
      if (task === undefined)
        throw new CliFailure(`no record of conversion task ${uuid} (unknown, or expired after 7 days)`);
      print(
        o.json === true,
        {
          task_uuid: task.uuid,
          project: task.project,
          channel: task.channel,
          type: task.type,
          status: task.status,
          created_at: formatTime(task.createdAt),
          by: task.by,
        },
        [
          `conversion task ${task.uuid}`,
          ...table([
            ["project", task.project],
            ["channel", task.channel],
            ["type", task.type],
            ["status", `${task.status} (when requested)`],
            ["created", formatTime(task.createdAt)],
            ["by", task.by],
          ]),
        ].join("\n"),
      );
    });
}

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
      version?: unknown;
    };
    return typeof pkg.version === "string" ? pkg.version : "unknown";
  } catch {
    return "unknown";
  }
}

function buildProgram(): Command {
  const program = new Command("boardline")
    .description("boardline operator CLI: writes the Redis records the boardline server reads, and mints test tokens.")
    .version(version(), "-V, --version", "print the version")
    .exitOverride()
    .configureOutput({ outputError: (str, write) => write(`boardline: ${str.trimEnd()} (see --help)\n`) })
    .addHelpText(
      "after",
      "\nEnvironment (the same variables as the server):\n" +
        "  REDIS_URL              redis://[user:password@]host[:port][/db] or rediss:// (TLS)\n" +
        "  REDIS_CLUSTER_NODES    host:port,… of a Redis Cluster (credentials and TLS from REDIS_URL)\n" +
        "  REDIS_SENTINELS        host:port,… of Redis Sentinels, with REDIS_SENTINEL_NAME\n" +
        "  REDIS_KEY_PREFIX       key prefix (default bl:)\n" +
        "  JWT_SECRET             HS256 secret for token mint (at least 32 bytes)\n" +
        "  JWT_PROJECT_CLAIM, JWT_ISSUER, JWT_AUDIENCE   claims token mint sets, as the server checks them\n" +
        "There is no in-memory mode: every command but token mint needs Redis.\n" +
        "\nExit codes: 0 success, 1 failure (one line on stderr), 2 usage error.",
    );
  channelCommands(program);
  whiteboardCommands(program);
  tokenCommands(program);
  muteCommands(program);
  conversionCommands(program);
  return program;
}

/** Runs the CLI; resolves to the exit code. */
async function run(argv: readonly string[]): Promise<number> {
  try {
    await buildProgram().parseAsync([...argv]);
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) {
      // --help, --version and `help` exit 0; a bare `boardline` or `boardline channel` prints help and is a usage error.
      return e.exitCode === 0 ? 0 : 2;
    }
    process.stderr.write(`boardline: ${describeFailure(e)}\n`);
    return 1;
  }
}

function describeFailure(e: unknown): string {
  if (e instanceof CliFailure) return e.message;
  if (isFailure(e)) return e.detail ?? `${e.kind}${causeMessage(e) === undefined ? "" : `: ${causeMessage(e)}`}`;
  return (e instanceof Error ? e.message : String(e)).split("\n")[0] ?? "failed";
}

void run(process.argv).then((code) => {
  process.exitCode = code;
  if (code !== 0) {
    // After a failure the Redis client may still be winding down a connection
    // attempt (ioredis keeps timers of a refused connection): exit once stderr is out.
    process.stderr.write("", () => process.exit(code));
    return;
  }
  // Everything was closed; should a stray handle remain, do not hang the operator's shell.
  setTimeout(() => process.exit(code), 2000).unref();
});
