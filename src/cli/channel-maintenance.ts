/**
 * `boardline channel doctor|reindex`: operator maintenance of the channel
 * index over the store's own functions (not RPCs; they SCAN). `doctor`
 * repairs what interrupted channel writes left; `reindex` indexes the
 * channels written before the index or by other writers, in throttled,
 * resumable steps, safe while serving.
 */
import type { Command } from "commander";
import { checkProjectId } from "../store/schema/keys.js";
import { checkId } from "./arguments.js";
import { jsonOption, print, table } from "./terminal.js";
import { withStore } from "./redis-session.js";
import { passOptions, resumablePass } from "./resumable-pass.js";

export function addChannelMaintenance(channel: Command): void {
  channel
    .command("doctor")
    .description("find and repair what interrupted channel writes left (index entries, records, passphrases)")
    .option("--project <project>", "only this project (default: every project)")
    .addOption(jsonOption())
    .addHelpText(
      "after",
      "\nSCANs the key space; writes younger than a minute are taken to be under way and left alone.\n" +
        "Exits 0 whether or not it found anything: every finding is printed with its repair.",
    )
    .action(doctor);
  passOptions(
    channel
      .command("reindex")
      .description("index the channels written before the channel index or by other writers (resumable)"),
  )
    .addHelpText(
      "after",
      "\nRun it once after upgrading: channels written before the index then appear in Get, List, Rotate and\n" +
        "Delete. Safe while serving. It prints the cursor to resume from on stderr as it goes; stopped\n" +
        "(Ctrl-C), run it again with --from <that cursor>.",
    )
    .action(reindex);
}

async function doctor(o: { project?: string; json?: boolean }, cmd: Command): Promise<void> {
  if (o.project !== undefined) checkId(cmd, checkProjectId(o.project));
  const report = await withStore((store) => store.channelDoctor(o.project));
  const findings = report.findings.map((f) => ({
    problem: f.problem,
    project: f.project,
    channel: f.channel,
    repair: f.repair,
  }));
  print(
    o.json === true,
    {
      ...(o.project === undefined ? {} : { project: o.project }),
      channels_checked: report.channelsChecked,
      passphrases_checked: report.passphrasesChecked,
      findings,
    },
    [
      `checked ${report.channelsChecked} channel${report.channelsChecked === 1 ? "" : "s"} and ${report.passphrasesChecked} passphrase${report.passphrasesChecked === 1 ? "" : "s"}: ${findings.length === 0 ? "nothing to repair" : `${findings.length} repaired`}`,
      ...table(findings.map((f) => [f.problem, `${f.project}/${f.channel}`, f.repair])),
    ].join("\n"),
  );
}

async function reindex(o: { batch: number; pauseMs: number; from?: string; json?: boolean }): Promise<void> {
  const total = await withStore(async (store) => {
    let scanned = 0;
    let indexed = 0;
    let rekeyed = 0;
    let olderKey = 0;
    await resumablePass(
      o,
      (options) => store.reindexChannels(options),
      (step) => {
        scanned += step.scanned;
        indexed += step.indexed;
        rekeyed += step.rekeyed;
        olderKey += step.olderKey;
        return `${scanned} passphrases read, ${indexed} indexed, ${rekeyed} moved to the current key`;
      },
    );
    return { scanned, indexed, rekeyed, olderKey };
  });
  print(
    o.json === true,
    {
      scanned: total.scanned,
      indexed: total.indexed,
      rekeyed: total.rekeyed,
      under_older_keys: total.olderKey,
      complete: true,
    },
    `reindex complete: ${total.scanned} passphrase records read, ${total.indexed} indexed, ${total.rekeyed} moved to the current passphrase key, ${total.olderKey} still under an older one`,
  );
}
