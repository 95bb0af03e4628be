/**
 * `boardline channel create|delete`: a channel's passphrase records
 * (docs/architecture.md, "Redis schema").
 */
import { randomBytes } from "node:crypto";
import { type Command, Option } from "commander";
import { checkChannelId, checkProjectId } from "../store/schema/keys.js";
import { checkId, usage } from "./arguments.js";
import { CliFailure } from "./cli-failure.js";
import { jsonOption, print } from "./terminal.js";
import { withStore } from "./redis-session.js";

interface CreateOptions {
  hostPassphrase?: string;
  attendeePassphrase?: string;
  generate?: boolean;
  json?: boolean;
}

interface Generated {
  host_passphrase?: string;
  attendee_passphrase?: string;
}

export function addChannelCommands(program: Command): void {
  const channel = program
    .command("channel")
    .description("create or delete a channel's passphrase records")
    .addHelpText(
      "after",
      "\nA passphrase opens one channel of one project. The host passphrase can mute PSTN participants;\n" +
        "both host and attendee passphrases can convert files. Only the sha256 of a passphrase is stored.",
    );
  addCreate(channel);
  addDelete(channel);
}

function addCreate(channel: Command): void {
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
    .action(createChannel);
}

async function createChannel(project: string, channelId: string, o: CreateOptions, cmd: Command): Promise<void> {
  checkId(cmd, checkProjectId(project) ?? checkChannelId(channelId));
  const { host, attendee, generated } = choosePassphrases(o, cmd);
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
  if (generated.attendee_passphrase !== undefined) lines.push(`attendee passphrase: ${generated.attendee_passphrase}`);
  if (Object.keys(generated).length > 0) lines.push("(generated passphrases are shown only this once)");
  print(o.json === true, { project, channel: channelId, roles, ...generated }, lines.join("\n"));
}

/** The passphrases given, plus generated ones for the roles not given when --generate is set. */
function choosePassphrases(
  o: CreateOptions,
  cmd: Command,
): { host: string; attendee: string | undefined; generated: Generated } {
  const generated: Generated = {};
  let host = o.hostPassphrase;
  if (host === undefined) {
    if (!o.generate) usage(cmd, "--host-passphrase is required (or --generate to make one)");
    host = generated.host_passphrase = generatePassphrase();
  }
  let attendee = o.attendeePassphrase;
  if (attendee === undefined && o.generate) attendee = generated.attendee_passphrase = generatePassphrase();
  if (host === "" || attendee === "") usage(cmd, "a passphrase must not be empty");
  return { host, attendee, generated };
}

function addDelete(channel: Command): void {
  channel
    .command("delete")
    .description("delete a channel: its passphrase records, its mute state and its mute events")
    .argument("<project>", "project id")
    .argument("<channel>", "channel id")
    .option("--if-exists", "succeed when there is nothing to delete")
    .addOption(jsonOption())
    .addHelpText("after", "\nExits 1 when the channel has no records at all, unless --if-exists is given.")
    .action(deleteChannel);
}

async function deleteChannel(
  project: string,
  channelId: string,
  o: { ifExists?: boolean; json?: boolean },
): Promise<void> {
  const deleted = await withStore((store) => store.deleteChannel(project, channelId));
  if (deleted === 0 && !o.ifExists) {
    throw new CliFailure(`channel ${channelId} of project ${project} not found (nothing deleted)`);
  }
  print(
    o.json === true,
    { project, channel: channelId, deleted_keys: deleted },
    `channel ${channelId} of project ${project} deleted (${deleted} key${deleted === 1 ? "" : "s"})`,
  );
}

/** A strong passphrase for `channel create --generate` that is easy to read out: 24 characters from 32 (120 bits), no look-alikes. */
export function generatePassphrase(): string {
  const alphabet = "abcdefghijkmnpqrstuvwxyz23456789";
  const chars = [...randomBytes(24)].map((b) => alphabet[b & 31]);
  return [0, 4, 8, 12, 16, 20].map((i) => chars.slice(i, i + 4).join("")).join("-");
}
