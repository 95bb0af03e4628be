/**
 * `boardline conversion show`: the record of a file-conversion task, as
 * fileconvert wrote it (records expire after 7 days).
 */
import type { Command } from "commander";
import { CliFailure } from "./cli-failure.js";
import { formatTime, jsonOption, print, table } from "./output.js";
import { withStore } from "./redis-session.js";

export function addConversionCommands(program: Command): void {
  const conversion = program.command("conversion").description("inspect recorded file-conversion tasks");
  conversion
    .command("show")
    .description("show the record of a conversion task (records expire after 7 days)")
    .argument("<uuid>", "the task uuid fileconvert answered")
    .addOption(jsonOption())
    .action(showConversion);
}

async function showConversion(uuid: string, o: { json?: boolean }): Promise<void> {
  const task = await withStore((store) => store.getConversion(uuid));
  if (task === undefined) {
    throw new CliFailure(`no record of conversion task ${uuid} (unknown, or expired after 7 days)`);
  }
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
}
