/**
 * The phone line in memory: the steps of the Redis line scripts
 * (src/store/redis/line-scripts.ts), in the same order, on the same keys and
 * fields of the in-memory key space. Each call runs synchronously, so it is
 * atomic as a script is. The sweep's list is the same sorted set; with no
 * other instance, a channel found empty simply leaves it.
 */
import type {
  LineCall,
  LineLimits,
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
import type { ChannelRef } from "../../services/ports.js";
import { muteFlag } from "../schema/channel-records.js";
import type { KeySchema } from "../schema/keys.js";
import { participantState, sequenceKey } from "../schema/line-records.js";
import type { MemoryKeyspace } from "./keyspace.js";
import { LineSession } from "./line-session.js";

export class MemoryPhoneLine implements PhoneLine {
  constructor(
    private readonly data: MemoryKeyspace,
    private readonly keys: KeySchema,
    private readonly guard: () => void,
    private readonly limits: LineLimits,
    private readonly publish: (ref: ChannelRef, eventId: string) => void,
  ) {}

  async report(report: LineReport): Promise<ReportAnswer> {
    const s = this.open(report);
    const { uid } = report;
    const seq = sequenceKey(report.sequence);
    const c = report.change;
    if (c.kind === "join") this.note(report);
    const r = s.record(uid);
    const answer = (outcome: LineOutcome, wrote = false): ReportAnswer => {
      if (wrote) s.finish();
      return {
        outcome,
        participant: participantState(uid, s.hash("mute").get(uid), s.hash("meta").get(uid), s.record(uid)),
      };
    };
    if (r !== undefined && seq === r.seq) return answer("duplicate");
    if (r !== undefined && seq < r.seq) return answer("stale");
    const on = r?.on === 1;
    if (c.kind === "join") {
      if (on) {
        s.save(uid, { ...r, seq });
        s.lease(uid);
        return answer("unchanged", true);
      }
      return s.join(uid, seq, c.callerId, c.joinedAt) ? answer("applied", true) : answer("line_full");
    }
    if (!on) {
      if (c.kind !== "leave") return answer("not_on_line");
      // Remembered, so a join the gateway sent before this leave stays late.
      s.save(uid, { on: 0, seq, caller: r?.caller ?? "", joined: r?.joined ?? 0, hand: 0 });
      return answer("unchanged", true);
    }
    if (c.kind === "leave") {
      s.leave(uid, { ...r, seq }, "reported");
      return answer("applied", true);
    }
    if (c.kind === "keypad_mute") {
      const muted = s.flag(uid) === "1";
      if (!c.mute && muted && !s.policy().allowSelfUnmute && s.setter(uid) !== "self") {
        s.lease(uid);
        return answer("refused", true);
      }
      s.save(uid, { ...r, seq });
      s.lease(uid);
      if (c.mute === muted) return answer("unchanged", true);
      s.setMute(uid, muteFlag(c.mute), "self");
      return answer("applied", true);
    }
    s.lease(uid);
    if (c.kind === "hand" && r.hand !== (c.raised ? 1 : 0)) {
      s.save(uid, { ...r, seq, hand: c.raised ? 1 : 0, hand_at: report.at });
      s.emit({ kind: "hand", uid, mute: s.flag(uid), hand: muteFlag(c.raised), setter: "self" });
      return answer("applied", true);
    }
    s.save(uid, { ...r, seq });
    return answer("unchanged", true);
  }

  async sync(sync: LineSync): Promise<{ joined: number; left: number }> {
    const s = this.open(sync);
    this.note(sync);
    const seq = sequenceKey(sync.sequence);
    const listed = new Set<string>();
    let joined = 0;
    let left = 0;
    for (const m of sync.members) {
      listed.add(m.uid);
      const r = s.record(m.uid);
      if (r?.on === 1) s.lease(m.uid);
      else if ((r === undefined || r.seq < seq) && s.join(m.uid, seq, m.callerId, m.joinedAt)) joined++;
    }
    for (const uid of s.onLine()) {
      if (listed.has(uid)) continue;
      const r = s.record(uid);
      if (r === undefined || r.on === 0) s.endLease(uid);
      else if (r.seq < seq) {
        s.leave(uid, { ...r, seq }, "sync");
        left++;
      }
    }
    s.finish();
    return { joined, left };
  }

  async muteAll(call: MuteAllCall): Promise<MuteAllAnswer> {
    const s = this.open(call);
    const want = muteFlag(call.mute);
    const except = new Set(call.except);
    if (call.muteOnJoin !== undefined) s.setPolicy({ ...s.policy(), muteOnJoin: call.muteOnJoin });
    let changed = 0;
    let unchanged = 0;
    for (const uid of s.onLine()) {
      if (except.has(uid) || (s.flag(uid) === want && (want === "0" || s.setter(uid) === "host"))) unchanged++;
      else {
        s.setMute(uid, want, "host", true);
        changed++;
      }
    }
    const eventId = s.emit({ kind: "mute_all", uid: "", mute: want, changed: String(changed) });
    s.finish();
    return { changed, unchanged, policy: s.policy(), eventId };
  }

  async setPolicy(call: PolicyCall): Promise<LinePolicy> {
    const s = this.open(call);
    const was = s.policy();
    s.setPolicy({
      muteOnJoin: call.muteOnJoin ?? was.muteOnJoin,
      allowSelfUnmute: call.allowSelfUnmute ?? was.allowSelfUnmute,
    });
    if (s.lastId !== undefined) s.finish();
    return s.policy();
  }

  async lowerHands(call: LowerHandsCall): Promise<number> {
    const s = this.open(call);
    let lowered = 0;
    for (const uid of call.uids.length > 0 ? call.uids : s.onLine()) {
      const r = s.record(uid);
      if (r?.on !== 1 || r.hand !== 1) continue;
      s.save(uid, { ...r, hand: 0, hand_at: call.at });
      s.emit({ kind: "hand", uid, mute: s.flag(uid), hand: "0", setter: "host" });
      lowered++;
    }
    if (lowered > 0) s.finish();
    return lowered;
  }

  async expireLeases(channels: number): Promise<{ channels: number; left: number }> {
    this.guard();
    const due = this.data.writableSortedSet(this.keys.pstnLeasesDue());
    const now = this.data.now();
    let left = 0;
    const taken = [...due].filter(([, at]) => at <= now).slice(0, channels);
    for (const [member] of taken) {
      const [project, channel] = JSON.parse(member) as [string, string];
      const s = this.open({ project, channel, by: "", at: now });
      const expired = [...s.leases()].filter(([, at]) => at <= now).slice(0, this.limits.maxLine);
      for (const [uid] of expired) {
        const r = s.record(uid);
        if (r?.on === 1) s.leave(uid, r, "lease");
        else s.endLease(uid);
      }
      if (expired.length > 0) s.finish();
      left += expired.length;
      const next = Math.min(...s.leases().values());
      if (Number.isFinite(next)) due.set(member, next);
      else due.delete(member);
    }
    return { channels: taken.length, left };
  }

  private note(call: LineCall): void {
    const due = this.data.writableSortedSet(this.keys.pstnLeasesDue());
    const member = JSON.stringify([call.project, call.channel]);
    const at = this.data.now() + this.limits.leaseMs;
    due.set(member, Math.min(due.get(member) ?? at, at));
  }

  private open(call: LineCall): LineSession {
    this.guard();
    return new LineSession(this.data, this.keys, call, this.limits, this.publish);
  }
}
