/**
 * `boardline channel show|list`: GetChannel and ListChannels, through the
 * domain (admin-session.ts). Never a passphrase: the API has none to show.
 */
import { create } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { type Command, InvalidArgumentError } from "commander";
import {
  type Channel,
  GetChannelRequestSchema,
  GetChannelResponseSchema,
  ListChannelsRequestSchema,
  ListChannelsResponseSchema,
  PassphraseRole,
} from "../../gen/channel/v1/channel_admin_pb.js";
import { checkChannelId, checkProjectId } from "../store/schema/keys.js";
import { notFound, request, unlessNotFound, withAdmin } from "./admin-session.js";
import { checkId } from "./arguments.js";
import { formatTime, jsonOption, print, table } from "./terminal.js";

export function addChannelReads(channel: Command): void {
  channel
    .command("show")
    .description("show a channel: created when and by whom, expiry, roles, mute state count, newest event ids")
    .argument("<project>", "project id")
    .argument("<channel>", "channel id")
    .addOption(jsonOption())
    .action(showChannel);
  channel
    .command("list")
    .description("list the project's channels in id order, a page at a time")
    .argument("<project>", "project id")
    .option("--page-size <n>", "channels per page, 1 to 1000", parsePageSize, 100)
    .option("--page-token <token>", "continue after the page that printed it")
    .option("--all", "follow every page to the end")
    .addOption(jsonOption())
    .addHelpText(
      "after",
      "\nChannels written before the channel index (or by another writer) are listed once\n" +
        "`boardline channel reindex` has run.",
    )
    .action(listChannels);
}

/** A channel as the CLI prints it (JSON: snake_case, times as ISO). */
function described(c: Channel): Record<string, unknown> {
  return {
    channel: c.channelId,
    created_at: c.createTime === undefined ? null : formatTime(timestampMs(c.createTime)),
    created_by: c.createdBy === "" ? null : c.createdBy,
    expire_time: c.expireTime === undefined ? null : formatTime(timestampMs(c.expireTime)),
    roles: c.roles.map((r) => (r === PassphraseRole.HOST ? "host" : "attendee")),
  };
}

async function showChannel(project: string, channelId: string, o: { json?: boolean }, cmd: Command): Promise<void> {
  checkId(cmd, checkProjectId(project) ?? checkChannelId(channelId));
  const req = request(cmd, GetChannelRequestSchema, { channelId });
  const got = await withAdmin(cmd, project, (a) => unlessNotFound(() => a.channels.getChannel(a.caller, req)));
  if (got === undefined) throw notFound(project, channelId, "nothing to show");
  const answer = create(GetChannelResponseSchema, got);
  if (answer.channel === undefined) throw notFound(project, channelId, "nothing to show");
  const c = described(answer.channel);
  const data = {
    project,
    ...c,
    participants_with_mute_state: answer.participantsWithMuteState,
    newest_pstn_event_id: answer.newestPstnEventId,
    newest_whiteboard_event_id: answer.newestWhiteboardEventId,
  };
  const text = [
    `channel ${channelId} of project ${project}`,
    ...table([
      [
        "created",
        `${String(c.created_at ?? "unknown (indexed by reindex)")}${c.created_by === null ? "" : ` by ${c.created_by}`}`,
      ],
      ["expires", String(c.expire_time ?? "never")],
      ["passphrases", (c.roles as string[]).join(", ")],
      ["mute states", String(answer.participantsWithMuteState)],
      ["newest mute event", answer.newestPstnEventId],
      ["newest whiteboard event", answer.newestWhiteboardEventId],
    ]),
  ];
  print(o.json === true, data, text.join("\n"));
}

async function listChannels(
  project: string,
  o: { pageSize: number; pageToken?: string; all?: boolean; json?: boolean },
  cmd: Command,
): Promise<void> {
  checkId(cmd, checkProjectId(project));
  const { channels, next } = await withAdmin(cmd, project, async (a) => {
    const found: Channel[] = [];
    let token = o.pageToken ?? "";
    do {
      const req = request(cmd, ListChannelsRequestSchema, { pageSize: o.pageSize, pageToken: token });
      const page = create(ListChannelsResponseSchema, await a.channels.listChannels(a.caller, req));
      found.push(...page.channels);
      token = page.nextPageToken;
    } while (o.all === true && token !== "");
    return { channels: found, next: token };
  });
  const rows = channels.map(described);
  const text = [
    ...(rows.length === 0
      ? [`project ${project} has no channels${o.pageToken === undefined ? "" : " after that token"}`]
      : []),
    ...table(
      rows.map((r) => [
        String(r.channel),
        (r.roles as string[]).join("+"),
        r.expire_time === null ? "no expiry" : `expires ${String(r.expire_time)}`,
      ]),
    ),
    ...(next === "" ? [] : [`more: --page-token ${next}`]),
  ];
  print(o.json === true, { project, channels: rows, next_page_token: next }, text.join("\n"));
}

function parsePageSize(raw: string): number {
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 1000) {
    throw new InvalidArgumentError("expected a whole number from 1 to 1000.");
  }
  return Number(raw);
}
