/**
 * `boardline mute show`: a channel's PSTN mute state per uid and its last
 * mute events.
 */
import type { Command } from "commander";
import type { MuteEvent } from "../services/ports.js";
import { MAX_EVENTS, parseEvents } from "./arguments.js";
import { formatTime, jsonOption, print, table } from "./output.js";
import { withStore } from "./redis-session.js";

export function addMuteCommands(program: Command): void {
  const mute = program.command("mute").description("inspect PSTN mute state");
  mute
    .command("show")
    .description("show a channel's mute state per uid and its last mute events (newest first)")
    .argument("<project>", "project id")
    .argument("<channel>", "channel id")
    .option("--events <n>", `how many events to show (1 to ${MAX_EVENTS})`, parseEvents, 20)
    .addOption(jsonOption())
    .action(showMute);
}

async function showMute(project: string, channelId: string, o: { events: number; json?: boolean }): Promise<void> {
  const [state, events] = await withStore((store) =>
    Promise.all([store.getMuteState(project, channelId), store.getMuteEvents(project, channelId, o.events)]),
  );
  const uids = Object.keys(state).sort();
  print(
    o.json === true,
    {
      project,
      channel: channelId,
      mute: Object.fromEntries(uids.map((uid) => [uid, state[uid]])),
      events: events.map((e) => ({ id: e.id, uid: e.uid, mute: e.mute, by: e.by, at: formatTime(e.at) })),
    },
    muteLines(project, channelId, uids, state, events).join("\n"),
  );
}

function muteLines(
  project: string,
  channelId: string,
  uids: string[],
  state: Readonly<Record<string, boolean>>,
  events: readonly MuteEvent[],
): string[] {
  const lines = [`PSTN mute state of channel ${channelId} in project ${project}:`];
  if (uids.length === 0) lines.push("  (no uid has a mute state)");
  else lines.push(...table(uids.map((uid) => [uid, state[uid] ? "muted" : "unmuted"])));
  lines.push(`Last ${events.length} event${events.length === 1 ? "" : "s"} (newest first):`);
  if (events.length === 0) lines.push("  (none)");
  else lines.push(...table(events.map((e) => [formatTime(e.at), e.uid, e.mute ? "muted" : "unmuted", `by ${e.by}`])));
  return lines;
}
