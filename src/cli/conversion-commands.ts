/**
 * `boardline conversion show`: the record of a file-conversion task as the
 * follower last saved it — status, progress and pages, and once submitted the
 * backend's uuid and how many times it was submitted (records expire
 * CONVERSION_RETENTION_DAYS after their last change). `boardline conversion
 * watch`: one line per change of that record until the task ends.
 */
import type { Command } from "commander";
import { isUuid } from "../netless/json-values.js";
import { usage } from "./arguments.js";
import { CliFailure } from "./cli-failure.js";
import { formatTime, jsonOption, print, table } from "./terminal.js";
import { withStore } from "./redis-session.js";

export function addConversionCommands(program: Command): void {
  const conversion = program.command("conversion").description("inspect recorded file-conversion tasks");
  conversion
    .command("show")
    .description("show a conversion task as boardline last saw it: status, progress, pages")
    .argument("<uuid>", "the task uuid fileconvert answered")
    .addOption(jsonOption())
    .action(showConversion);
  conversion
    .command("watch")
    .description("print a conversion task's state at every change until it ends (Finished, Fail or Abort)")
    .argument("<uuid>", "the task uuid fileconvert answered")
    .addOption(jsonOption())
    .action(watchConversion);
}

/** How often `watch` reads the record (the servers' own watches read every 250 ms). */
const WATCH_INTERVAL_MS = 250;
const TERMINAL = new Set(["Finished", "Fail", "Abort"]);

async function watchConversion(uuid: string, o: { json?: boolean }, cmd: Command): Promise<void> {
  checkUuid(cmd, uuid);
  await withStore(async (store) => {
    let seen: number | undefined;
    for (;;) {
      const task = await store.conversions.getConversion(uuid);
      if (task === undefined) throw new CliFailure(`no record of conversion task ${uuid} (unknown, or expired)`);
      if (task.updatedAt !== seen) {
        seen = task.updatedAt;
        const line = {
          task_uuid: task.uuid,
          status: task.status,
          progress_percent: task.percent,
          at: formatTime(task.updatedAt),
        };
        process.stdout.write(
          o.json === true
            ? `${JSON.stringify({ ...line, page_count: task.pageCount ?? null, failed_reason: task.failedReason ?? null })}\n`
            : `${line.at}  ${task.status}  ${task.percent} %${task.failedReason === undefined ? "" : `  (${task.failedReason})`}\n`,
        );
      }
      if (TERMINAL.has(task.status)) return;
      await new Promise((resolve) => setTimeout(resolve, WATCH_INTERVAL_MS));
    }
  });
}

async function showConversion(uuid: string, o: { json?: boolean }, cmd: Command): Promise<void> {
  checkUuid(cmd, uuid);
  const task = await withStore((store) => store.conversions.getConversion(uuid));
  if (task === undefined) {
    throw new CliFailure(`no record of conversion task ${uuid} (unknown, or expired)`);
  }
  const pages = task.pages.map((p) => ({
    page: p.page,
    ...(p.url === undefined ? {} : { url: p.url, width: p.width, height: p.height }),
    ...(p.previewUrl === undefined ? {} : { preview_url: p.previewUrl }),
  }));
  print(
    o.json === true,
    {
      task_uuid: task.uuid,
      project: task.project,
      channel: task.channel,
      type: task.type,
      api: task.api,
      status: task.status,
      progress_percent: task.percent,
      page_count: task.pageCount ?? null,
      pages,
      prefix: task.prefix ?? null,
      failed_reason: task.failedReason ?? null,
      backend_task_uuid: task.backendUuid ?? null,
      attempts: task.attempts ?? null,
      created_at: formatTime(task.createdAt),
      updated_at: formatTime(task.updatedAt),
      by: task.by,
    },
    [
      `conversion task ${task.uuid}`,
      ...table([
        ["project", task.project],
        ["channel", task.channel],
        ["type", `${task.type} (${task.api} API)`],
        ["status", `${task.status}, ${task.percent} %`],
        ...(task.failedReason === undefined ? [] : [["failed reason", task.failedReason] as [string, string]]),
        ["pages", task.pageCount === undefined ? "not known yet" : String(task.pageCount)],
        ...(task.prefix === undefined ? [] : [["prefix", task.prefix] as [string, string]]),
        ...(task.backendUuid === undefined ? [] : [["backend task", task.backendUuid] as [string, string]]),
        ...(task.attempts === undefined ? [] : [["attempts", String(task.attempts)] as [string, string]]),
        ["created", formatTime(task.createdAt)],
        ["updated", formatTime(task.updatedAt)],
        ["by", task.by],
      ]),
      ...pages.map(
        (p) =>
          `  page ${p.page}: ${p.url ?? p.preview_url ?? ""}${p.width === undefined ? "" : ` (${p.width}×${p.height})`}`,
      ),
    ].join("\n"),
  );
}

/** A task uuid is what the API accepts (`task_uuid`): anything else could only name some other key. */
function checkUuid(cmd: Command, uuid: string): void {
  if (!isUuid(uuid)) usage(cmd, "uuid must be 1 to 128 letters, digits, '-' or '_'");
}
