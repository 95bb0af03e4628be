/**
 * `boardline mute show`: a channel's PSTN mute state per uid and its last
 * mute events. `boardline mute state`: the snapshot GetPstnState answers
 * (who set each state when, as of which event), read the same way.
 * `boardline mute watch`: a line per mute event as it happens, until Ctrl-C,
 * through the same watch hub the server's WatchPstnEvents uses (notifications,
 * then reads of the channel: docs/architecture.md, "Watching mute events").
 */
import type { Command } from "commander";
import { checkChannelId, checkProjectId } from "../store/schema/keys.js";
import type { MuteEvent } from "../services/ports.js";
import { participantsByUid } from "../services/pstn/snapshot.js";
import { PstnWatches } from "../services/pstn/watch-events.js";
import { PstnWatchHub } from "../services/pstn/watch-hub.js";
import { WatchSlots } from "../services/watch-slots.js";
import { checkId, MAX_EVENTS, parseEvents } from "./arguments.js";
import { formatTime, jsonOption, print, table } from "./terminal.js";
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
  mute
    .command("state")
    .description(
      "show a channel's snapshot as GetPstnState answers it: each uid's state, who set it when, as of which event",
    )
    .argument("<project>", "project id")
    .argument("<channel>", "channel id")
    .addOption(jsonOption())
    .action(showState);
  mute
    .command("watch")
    .description("print a channel's mute events as they happen, a line each, until Ctrl-C")
    .argument("<project>", "project id")
    .argument("<channel>", "channel id")
    .option("--after <event-id>", "start after this event id (default: only events from now on)", "")
    .option("--json", "print each event as one JSON object (a line each)")
    .action(watchMute);
}

async function showState(project: string, channelId: string, o: { json?: boolean }, cmd: Command): Promise<void> {
  checkId(cmd, checkProjectId(project) ?? checkChannelId(channelId));
  const snapshot = await withStore((store) => store.getPstnSnapshot(project, channelId));
  const rows = participantsByUid(snapshot).map((p) => ({
    uid: p.uid,
    mute: p.mute,
    updated_at: p.updatedAt === undefined ? null : formatTime(p.updatedAt),
    updated_by: p.updatedBy ?? null,
  }));
  const lines = [`PSTN state of channel ${channelId} in project ${project}, as of event ${snapshot.asOfEventId}:`];
  if (rows.length === 0) lines.push("  (no uid has a mute state)");
  const cells = (r: (typeof rows)[number]) => [
    r.uid,
    r.mute ? "muted" : "unmuted",
    r.updated_at ?? "-",
    `by ${r.updated_by ?? "-"}`,
  ];
  lines.push(...table(rows.map(cells)));
  print(
    o.json === true,
    { project, channel: channelId, participants: rows, as_of_event_id: snapshot.asOfEventId },
    lines.join("\n"),
  );
}

async function watchMute(
  project: string,
  channelId: string,
  o: { after: string; json?: boolean },
  cmd: Command,
): Promise<void> {
  checkId(cmd, checkProjectId(project) ?? checkChannelId(channelId));
  await withStore(async (store) => {
    const hub = new PstnWatchHub(store.pstnEvents, new WatchSlots(1));
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
    try {
      const events = await new PstnWatches(hub, 1).open(project, [channelId], o.after, stop.signal);
      if (o.json !== true) process.stderr.write(`watching channel ${channelId} of project ${project}; Ctrl-C stops\n`);
      for await (const { event } of events) {
        const { id, uid, mute, by, at } = event;
        process.stdout.write(
          o.json === true
            ? `${JSON.stringify({ id, uid, mute, by, at: formatTime(at) })}\n`
            : `${formatTime(at)}  ${uid}  ${mute ? "muted" : "unmuted"}  by ${by}  (${id})\n`,
        );
      }
    } finally {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      hub.close();
    }
  });
}

async function showMute(
  project: string,
  channelId: string,
  o: { events: number; json?: boolean },
  cmd: Command,
): Promise<void> {
  checkId(cmd, checkProjectId(project) ?? checkChannelId(channelId));
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
