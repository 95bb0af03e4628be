/**
 * `boardline channel create|rotate|delete`: a channel's passphrases, through
 * ChannelAdminService's domain (admin-session.ts) — the same functions as
 * CreateChannel, RotatePassphrase and DeleteChannel, so the channel is
 * indexed, audited (by `cli`) and expires as one the API makes. `show` and
 * `list` are in channel-read-commands.ts, `doctor` and `reindex` in
 * channel-maintenance.ts.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { type Command, InvalidArgumentError, Option } from "commander";
import {
  CreateChannelRequestSchema,
  CreateChannelResponseSchema,
  DeleteChannelRequestSchema,
  PassphraseRole,
  RotatePassphraseRequestSchema,
} from "../../gen/channel/v1/channel_admin_pb.js";
import { checkChannelId, checkProjectId } from "../store/schema/keys.js";
import { notFound, request, unlessNotFound, withAdmin } from "./admin-session.js";
import { checkId, usage } from "./arguments.js";
import { addChannelMaintenance } from "./channel-maintenance.js";
import { addChannelReads } from "./channel-read-commands.js";
import { formatTime, jsonOption, print } from "./terminal.js";

interface CreateOptions {
  hostPassphrase?: string;
  attendeePassphrase?: string;
  generate?: boolean;
  expireTime?: number;
  json?: boolean;
}

export function addChannelCommands(program: Command): void {
  const channel = program
    .command("channel")
    .description("create, rotate, show, list or delete channels; doctor and reindex the channel index")
    .addHelpText(
      "after",
      "\nA passphrase opens one channel of one project. The host passphrase can mute PSTN participants;\n" +
        "both host and attendee passphrases can convert files. Only the sha256 of a passphrase is stored.\n" +
        "These commands call ChannelAdminService's functions in-process, as the operator (sub `cli`).",
    );
  addCreate(channel);
  addRotate(channel);
  addChannelReads(channel);
  addDelete(channel);
  addChannelMaintenance(channel);
}

function addCreate(channel: Command): void {
  channel
    .command("create")
    .description("create a channel (a channel id the project already has is refused)")
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
    .option(
      "--expire-time <time>",
      "when the channel stops working (ISO 8601); default: CHANNEL_DEFAULT_TTL_HOURS",
      parseTime,
    )
    .addOption(jsonOption())
    .addHelpText(
      "after",
      "\nExamples:\n" +
        "  $ boardline channel create acme weekly-sync --generate\n" +
        "  $ BOARDLINE_HOST_PASSPHRASE=… boardline channel create acme weekly-sync --expire-time 2026-12-01T18:00:00Z\n" +
        "\nChosen passphrases: 16 to 256 characters, at least two kinds of character (lower case, upper case,\n" +
        "digits, others) and 8 different ones. Passphrases given on the command line end up in shell history:\n" +
        "prefer --generate or the environment variables. A passphrase that already opens a channel is refused.\n" +
        "To replace a passphrase, use `channel rotate`.",
    )
    .action(createChannel);
}

async function createChannel(project: string, channelId: string, o: CreateOptions, cmd: Command): Promise<void> {
  checkId(cmd, checkProjectId(project) ?? checkChannelId(channelId));
  if (o.hostPassphrase === undefined && !o.generate)
    usage(cmd, "--host-passphrase is required (or --generate to make one)");
  if (o.hostPassphrase === "" || o.attendeePassphrase === "") usage(cmd, "a passphrase must not be empty");
  const hostOnly = o.attendeePassphrase === undefined && !o.generate;
  const req = request(cmd, CreateChannelRequestSchema, {
    channelId,
    hostOnly,
    ...(o.hostPassphrase === undefined ? {} : { hostPassphrase: o.hostPassphrase }),
    ...(o.attendeePassphrase === undefined ? {} : { attendeePassphrase: o.attendeePassphrase }),
    ...(o.expireTime === undefined ? {} : { expireTime: timestampFromMs(o.expireTime) }),
  });
  const created = create(
    CreateChannelResponseSchema,
    await withAdmin(cmd, project, (a) => a.channels.createChannel(a.caller, req)),
  );
  const roles = hostOnly ? ["host"] : ["host", "attendee"];
  const generated: { host_passphrase?: string; attendee_passphrase?: string } = {};
  if (o.hostPassphrase === undefined) generated.host_passphrase = created.hostPassphrase;
  if (!hostOnly && o.attendeePassphrase === undefined) generated.attendee_passphrase = created.attendeePassphrase;
  const expireAt = created.expireTime === undefined ? undefined : timestampMs(created.expireTime);
  const lines = [
    `channel ${channelId} of project ${project}: ${roles.join(" and ")} passphrase${roles.length > 1 ? "s" : ""} set` +
      (expireAt === undefined ? "" : `, expires ${formatTime(expireAt)}`),
  ];
  if (generated.host_passphrase !== undefined) lines.push(`host passphrase: ${generated.host_passphrase}`);
  if (generated.attendee_passphrase !== undefined) lines.push(`attendee passphrase: ${generated.attendee_passphrase}`);
  if (Object.keys(generated).length > 0) lines.push("(generated passphrases are shown only this once)");
  const expiry = expireAt === undefined ? {} : { expire_time: formatTime(expireAt) };
  print(o.json === true, { project, channel: channelId, roles, ...expiry, ...generated }, lines.join("\n"));
}

/** `--expire-time`: an ISO 8601 time (checked to be in the future by the domain). */
function parseTime(raw: string): number {
  const at = Date.parse(raw);
  if (!/^\d{4}-\d\d-\d\dT/.test(raw) || Number.isNaN(at)) {
    throw new InvalidArgumentError("expected an ISO 8601 time like 2026-12-01T18:00:00Z.");
  }
  return at;
}

function addRotate(channel: Command): void {
  channel
    .command("rotate")
    .description("give a role of the channel a new passphrase; the old one stops working")
    .argument("<project>", "project id")
    .argument("<channel>", "channel id")
    .addOption(new Option("--role <role>", "whose passphrase").choices(["host", "attendee"]).makeOptionMandatory())
    .addOption(new Option("--passphrase <passphrase>", "the new passphrase (chosen)").env("BOARDLINE_PASSPHRASE"))
    .option("--generate", "generate the new passphrase and print it once (the default without --passphrase)")
    .addOption(jsonOption())
    .addHelpText(
      "after",
      "\nThe old passphrase stops opening the channel on every instance within PASSPHRASE_CACHE_MS.\n" +
        "\nExample:\n  $ boardline channel rotate acme weekly-sync --role attendee --generate",
    )
    .action(rotatePassphrase);
}

async function rotatePassphrase(
  project: string,
  channelId: string,
  o: { role: "host" | "attendee"; passphrase?: string; generate?: boolean; json?: boolean },
  cmd: Command,
): Promise<void> {
  checkId(cmd, checkProjectId(project) ?? checkChannelId(channelId));
  if (o.passphrase !== undefined && o.generate) usage(cmd, "--passphrase and --generate are exclusive");
  if (o.passphrase === "") usage(cmd, "a passphrase must not be empty");
  const req = request(cmd, RotatePassphraseRequestSchema, {
    channelId,
    role: o.role === "host" ? PassphraseRole.HOST : PassphraseRole.ATTENDEE,
    ...(o.passphrase === undefined ? {} : { passphrase: o.passphrase }),
  });
  const rotated = await withAdmin(cmd, project, (a) =>
    unlessNotFound(() => a.channels.rotatePassphrase(a.caller, req)),
  );
  if (rotated === undefined) throw notFound(project, channelId, "nothing rotated");
  const generated = o.passphrase === undefined ? { passphrase: rotated.passphrase ?? "" } : {};
  const lines = [`channel ${channelId} of project ${project}: new ${o.role} passphrase set`];
  if (generated.passphrase !== undefined) {
    lines.push(`${o.role} passphrase: ${generated.passphrase}`, "(a generated passphrase is shown only this once)");
  }
  print(o.json === true, { project, channel: channelId, role: o.role, ...generated }, lines.join("\n"));
}

function addDelete(channel: Command): void {
  channel
    .command("delete")
    .description("delete a channel: its passphrases, its mute state, its mute and whiteboard events")
    .argument("<project>", "project id")
    .argument("<channel>", "channel id")
    .option("--if-exists", "succeed when there is nothing to delete")
    .addOption(jsonOption())
    .addHelpText(
      "after",
      "\nExits 1 when the project has no such channel, unless --if-exists is given. A channel written before\n" +
        "the channel index (or by another writer) is found once `boardline channel reindex` has run.",
    )
    .action(deleteChannel);
}

async function deleteChannel(
  project: string,
  channelId: string,
  o: { ifExists?: boolean; json?: boolean },
  cmd: Command,
): Promise<void> {
  checkId(cmd, checkProjectId(project) ?? checkChannelId(channelId));
  const req = request(cmd, DeleteChannelRequestSchema, { channelId });
  const deleted = await withAdmin(cmd, project, (a) => unlessNotFound(() => a.channels.deleteChannel(a.caller, req)));
  if (deleted === undefined && !o.ifExists) throw notFound(project, channelId, "nothing deleted");
  print(
    o.json === true,
    { project, channel: channelId, deleted: deleted !== undefined },
    deleted === undefined
      ? `channel ${channelId} of project ${project} not found (nothing to delete)`
      : `channel ${channelId} of project ${project} deleted`,
  );
}
