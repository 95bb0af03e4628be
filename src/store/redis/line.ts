/**
 * The phone line on Redis: each command is one script on the channel's hash
 * tag (line-scripts.ts), written through `RedisCalls.write` like a mute, so
 * REDIS_MIN_REPLICAS holds for it too. Joins and syncs first note the channel
 * in the sweep's list, which the lease sweep (`expireLeases`) walks.
 */
import type {
  LineCall,
  LineChange,
  LineOutcome,
  LinePolicy,
  LineReport,
  LineSync,
  LowerHandsCall,
  MuteAllAnswer,
  MuteAllCall,
  PhoneLine,
  PolicyCall,
  ReportAnswer,
} from "../../services/pstn/line-ports.js";
import type { LineLimits } from "../../services/pstn/line-ports.js";
import { muteFlag } from "../schema/channel-records.js";
import { type KeySchema, MUTE_EVENTS_MAXLEN } from "../schema/keys.js";
import { parseLineRecord, participantState, sequenceKey } from "../schema/line-records.js";
import type { RedisCalls } from "./calls.js";
import type { RedisClient } from "./connection.js";
import { perConnection } from "./cluster-connections.js";
import { defineLineScripts, type LineArgs, type LineKeys } from "./line-scripts.js";
import { defineLineSweepScripts } from "./line-sweep-scripts.js";

const scriptsOn = perConnection(defineLineScripts);
const sweepScriptsOn = perConnection(defineLineSweepScripts);

/** How long a sweep holds the channels it took before another instance may take them. */
const SWEEP_CLAIM_MS = 30_000;

export class RedisPhoneLine implements PhoneLine {
  constructor(
    private readonly calls: RedisCalls,
    private readonly keys: KeySchema,
    private readonly limits: LineLimits,
  ) {}

  async report(report: LineReport): Promise<ReportAnswer> {
    const change = report.change;
    if (change.kind === "join") await this.note(report);
    const { value, joinedAt } = scriptValues(change);
    const [outcome, flag, meta, line] = await this.run(report, "reportLine", (c, keys, args) =>
      scriptsOn(c).blLineReport(
        ...keys,
        ...args,
        report.uid,
        sequenceKey(report.sequence),
        change.kind,
        value,
        joinedAt,
      ),
    );
    return {
      outcome: outcome as LineOutcome,
      participant: participantState(
        report.uid,
        flag || undefined,
        meta || undefined,
        parseLineRecord(line || undefined),
      ),
    };
  }

  async sync(sync: LineSync): Promise<{ joined: number; left: number }> {
    await this.note(sync);
    const members = sync.members.flatMap((m) => [m.uid, m.callerId, String(m.joinedAt)]);
    const [joined, left] = await this.run(sync, "syncLine", (c, keys, args) =>
      scriptsOn(c).blLineSync(...keys, ...args, sequenceKey(sync.sequence), ...members),
    );
    return { joined, left };
  }

  async muteAll(call: MuteAllCall): Promise<MuteAllAnswer> {
    const moj = call.muteOnJoin === undefined ? "" : muteFlag(call.muteOnJoin);
    const [changed, unchanged, m, a, eventId] = await this.run(call, "muteAll", (c, keys, args) =>
      scriptsOn(c).blLineMuteAll(...keys, ...args, muteFlag(call.mute), moj, ...call.except),
    );
    return { changed, unchanged, policy: { muteOnJoin: m === 1, allowSelfUnmute: a === 1 }, eventId };
  }

  async setPolicy(call: PolicyCall): Promise<LinePolicy> {
    const flagOf = (v: boolean | undefined) => (v === undefined ? "" : muteFlag(v));
    const [m, a] = await this.run(call, "setPstnPolicy", (c, keys, args) =>
      scriptsOn(c).blLinePolicy(...keys, ...args, flagOf(call.muteOnJoin), flagOf(call.allowSelfUnmute)),
    );
    return { muteOnJoin: m === 1, allowSelfUnmute: a === 1 };
  }

  lowerHands(call: LowerHandsCall): Promise<number> {
    return this.run(call, "lowerHands", (c, keys, args) =>
      scriptsOn(c).blLineLowerHands(...keys, ...args, ...call.uids),
    );
  }

  async expireLeases(channels: number): Promise<{ channels: number; left: number }> {
    const due = this.keys.pstnLeasesDue();
    const notes = this.keys.pstnLeaseNotes();
    const taken = await this.calls.write("takeDueLines", due, (c) =>
      sweepScriptsOn(c).blTakeDueLines(due, notes, String(channels), String(SWEEP_CLAIM_MS)),
    );
    let left = 0;
    const sweeps: Promise<void>[] = [];
    for (let i = 0; i + 1 < taken.length; i += 2) {
      const member = taken[i] as string;
      const seen = taken[i + 1] as string;
      const channel = channelOfMember(member);
      if (channel === undefined) continue;
      sweeps.push(
        (async () => {
          const call = { ...channel, by: "", at: Date.now() };
          const [n, next] = await this.run(call, "expireLeases", (c, keys, args) =>
            sweepScriptsOn(c).blLineExpire(...keys, ...args, String(this.limits.maxLine)),
          );
          left += n;
          await this.calls.write("rescheduleLine", due, (c) =>
            sweepScriptsOn(c).blRescheduleLine(due, notes, member, seen, next, String(this.limits.leaseMs)),
          );
        })(),
      );
    }
    await Promise.all(sweeps);
    return { channels: sweeps.length, left };
  }

  /** The channel goes on the sweep's list (or stays, due by the new lease's end at the latest). */
  private note(call: LineCall): Promise<number> {
    const due = this.keys.pstnLeasesDue();
    const member = JSON.stringify([call.project, call.channel]);
    return this.calls.write("noteLine", due, (c) =>
      sweepScriptsOn(c).blNoteLine(due, this.keys.pstnLeaseNotes(), member, String(Date.now() + this.limits.leaseMs)),
    );
  }

  private run<T>(
    call: LineCall,
    operation: string,
    script: (c: RedisClient, keys: LineKeys, args: LineArgs) => Promise<T>,
  ): Promise<T> {
    const k = this.keys.channelKeys(call.project, call.channel);
    const keys: LineKeys = [k.mute, k.meta, k.events, k.notify, k.record, k.line, k.leases, k.policy];
    const args: LineArgs = [
      call.by,
      String(call.at),
      String(MUTE_EVENTS_MAXLEN),
      call.expireAt === undefined ? "" : String(call.expireAt),
      String(this.limits.leaseMs),
      String(this.limits.maxLine),
    ];
    return this.calls.write(operation, k.mute, (c) => script(c, keys, args));
  }
}

/** The report script's value (caller id, or the flag) and joined-at arguments of a change. */
function scriptValues(change: LineChange): { value: string; joinedAt: string } {
  switch (change.kind) {
    case "join":
      return { value: change.callerId, joinedAt: String(change.joinedAt) };
    case "keypad_mute":
      return { value: muteFlag(change.mute), joinedAt: "" };
    case "hand":
      return { value: muteFlag(change.raised), joinedAt: "" };
    default:
      return { value: "", joinedAt: "" };
  }
}

/** The channel a member of the sweep's list names, or undefined for one another writer got wrong. */
function channelOfMember(member: string): { project: string; channel: string } | undefined {
  try {
    const parsed: unknown = JSON.parse(member);
    if (Array.isArray(parsed) && parsed.length === 2 && typeof parsed[0] === "string" && typeof parsed[1] === "string")
      return { project: parsed[0], channel: parsed[1] };
  } catch {
    // fall through: not ours
  }
  return undefined;
}
