/**
 * The operator's repairs of the channel indexes (`boardline channel doctor`
 * and `channel reindex`), for both stores over their primitives. They SCAN,
 * so no API path calls them.
 *
 * What the doctor does with each thing an interrupted write (src/store/channels/steps.ts)
 * can leave, once its `pending` mark is older than the grace (younger: a write
 * under way, left alone):
 * - an index member without a channel hash (an expired channel, or a create
 *   that died first): removed from the index, then the hash is read again and
 *   the member put back if a create wrote it meanwhile; else the channel's
 *   data keys that outlived it (its whiteboard-events stream) go;
 * - a hash marked `create`: the create is undone (records, data, hash, index)
 *   — its caller was never told "created", and a retry can then create it;
 * - a hash marked `delete`: the delete is finished;
 * - a hash marked `rotate`: finished when the new record is written (the old
 *   records of that role go), else the new hash is dropped;
 * - a listed passphrase hash whose record is missing or opens another
 *   channel: dropped from the hash;
 * - a hash missing from its project's index: indexed;
 * - a passphrase record its channel hash does not list (the dangerous case:
 *   it opens a channel List does not show): indexed — it may be a channel
 *   today's CLI or another writer made, and once listed it can be rotated or
 *   deleted. Only when its channel is being deleted is it released instead.
 */
import type {
  ChannelDoctorFinding,
  ChannelDoctorReport,
  PassphraseRecord,
  ReindexOptions,
  ReindexReport,
} from "../../services/ports.js";
import type { ChannelPrimitives } from "./primitives.js";
import { passphraseRecords, SCAN_BATCH, scanKeys, throttledScan } from "./scan.js";
import type { ChannelSteps } from "./steps.js";
import { type Fields, parsePassphrase, passphraseKeyId } from "../schema/channel-records.js";
import { listedPassphrases, PENDING_FIELD, parsePending, passField } from "../schema/channel-index-records.js";
import { type KeySchema, passphraseDigest } from "../schema/keys.js";

/** Longer than any write's steps take (each bounded by the command timeout). */
export const DOCTOR_GRACE_MS = 60_000;

type Finding = ChannelDoctorFinding;

export class ChannelRepair {
  private readonly p: ChannelPrimitives;

  constructor(
    private readonly steps: ChannelSteps,
    private readonly keys: KeySchema,
  ) {
    this.p = steps.primitives;
  }

  async doctor(project: string | undefined, graceMs = DOCTOR_GRACE_MS): Promise<ChannelDoctorReport> {
    const findings: Finding[] = [];
    const seen = new Set<string>();
    const projects = project === undefined ? await this.indexedProjects() : [project];
    for (const name of projects) {
      for await (const id of this.indexMembers(name)) {
        seen.add(JSON.stringify([name, id]));
        findings.push(...(await this.checkIndexed(name, id, graceMs)));
      }
    }
    for await (const key of scanKeys(this.p, this.keys.channelRecordPattern(project))) {
      const ref = this.keys.channelRecordOf(key);
      if (ref === undefined || seen.has(JSON.stringify([ref.project, ref.channel]))) continue;
      seen.add(JSON.stringify([ref.project, ref.channel]));
      findings.push(...(await this.checkUnindexed(ref.project, ref.channel, graceMs)));
    }
    let passphrasesChecked = 0;
    for await (const { sha, record } of passphraseRecords(this.p, this.keys)) {
      if (project !== undefined && record.project !== project) continue;
      passphrasesChecked++;
      const fields = await this.p.readRecord(record.project, record.channel);
      if (fields[passField(sha)] === record.role || this.steps.pendingAge(fields[PENDING_FIELD]) < graceMs) continue;
      const repair = await this.indexOrphan(sha, record, fields);
      findings.push({ problem: "unindexed_passphrase", project: record.project, channel: record.channel, repair });
    }
    return { channelsChecked: seen.size, passphrasesChecked, findings };
  }

  async reindex(options: ReindexOptions = {}): Promise<ReindexReport> {
    let scanned = 0;
    let indexed = 0;
    let rekeyed = 0;
    let olderKey = 0;
    const current = this.keys.passphraseKeys.current;
    const cursor = await throttledScan(this.p, this.keys.passphrasePattern(), options, async (key) => {
      const sha = this.keys.passphraseHashOf(key);
      const stored = sha === undefined ? {} : await this.p.readPassphrase(sha);
      const record = parsePassphrase(stored);
      if (sha === undefined || record === undefined) return;
      scanned++;
      const fields = await this.p.readRecord(record.project, record.channel);
      if (fields[passField(sha)] !== record.role) {
        await this.indexOrphan(sha, record, fields);
        indexed++;
      }
      const keyId = passphraseKeyId(stored);
      if (keyId === undefined) {
        // Written before keys: its key carries the passphrase's sha256, all the digest needs.
        if (await this.steps.rekey(record, sha, passphraseDigest(current, record.project, sha))) rekeyed++;
      } else if (keyId !== current.id) {
        olderKey++;
      }
    });
    return { scanned, indexed, rekeyed, olderKey, cursor };
  }

  /** Lists a passphrase record under its channel (hash and index), or releases it when the channel is going. */
  private async indexOrphan(sha: string, record: PassphraseRecord, fields: Fields): Promise<string> {
    const { project, channel, role } = record;
    if (parsePending(fields[PENDING_FIELD])?.operation === "delete") {
      await this.p.releasePassphrase(sha, project, channel);
      return "released (its channel is being deleted)";
    }
    const field = { [passField(sha)]: role };
    if (!(await this.p.writeRecord(project, channel, "create", field, undefined))) {
      await this.p.writeRecord(project, channel, "update", field, undefined);
    }
    await this.p.index(project, channel);
    return "indexed";
  }

  private async checkIndexed(project: string, channel: string, graceMs: number): Promise<Finding[]> {
    const fields = await this.p.readRecord(project, channel);
    if (Object.keys(fields).length > 0) return this.checkRecord(project, channel, fields, graceMs);
    await this.p.unindex(project, channel);
    // A create may have written its hash after our read: put it back then.
    if (Object.keys(await this.p.readRecord(project, channel)).length > 0) {
      await this.p.index(project, channel);
      return [];
    }
    // An expired channel: what outlived its record (its whiteboard events) goes too.
    await this.p.removeChannelData(project, channel, false);
    return [{ problem: "index_without_record", project, channel, repair: "removed from the index" }];
  }

  private async checkUnindexed(project: string, channel: string, graceMs: number): Promise<Finding[]> {
    const fields = await this.p.readRecord(project, channel);
    if (Object.keys(fields).length === 0 || this.steps.pendingAge(fields[PENDING_FIELD]) < graceMs) return [];
    const findings = await this.checkRecord(project, channel, fields, graceMs);
    if (findings.some((f) => f.problem === "interrupted_create" || f.problem === "interrupted_delete")) {
      return findings;
    }
    await this.p.index(project, channel);
    return [...findings, { problem: "record_without_index", project, channel, repair: "indexed" }];
  }

  /** A channel hash: its interrupted write finished or undone, then its listed passphrases checked. */
  private async checkRecord(project: string, channel: string, fields: Fields, graceMs: number): Promise<Finding[]> {
    if (this.steps.pendingAge(fields[PENDING_FIELD]) < graceMs) return [];
    const pending = parsePending(fields[PENDING_FIELD]);
    const listed = listedPassphrases(fields);
    if (pending?.operation === "create" || pending?.operation === "delete") {
      await this.steps.removeSteps(project, channel, listed);
      const problem = pending.operation === "create" ? "interrupted_create" : "interrupted_delete";
      return [{ problem, project, channel, repair: pending.operation === "create" ? "undone" : "finished" }];
    }
    const findings: Finding[] = [];
    let current = listed;
    if (pending !== undefined) {
      current = await this.finishRotation(project, channel, listed, pending.sha);
      findings.push({ problem: "interrupted_rotate", project, channel, repair: "finished or undone" });
    }
    const stale: string[] = [];
    for (const { sha, role } of current) {
      const record = parsePassphrase(await this.p.readPassphrase(sha));
      if (record?.project === project && record.channel === channel && record.role === role) continue;
      stale.push(passField(sha));
      findings.push({ problem: "stale_passphrase", project, channel, repair: "dropped from the channel record" });
    }
    if (stale.length > 0) await this.p.dropRecordFields(project, channel, stale);
    return findings;
  }

  /** Finishes a rotation whose new record was written, else leaves its stale new hash to the check. */
  private async finishRotation(
    project: string,
    channel: string,
    listed: ReadonlyArray<{ sha: string; role: PassphraseRecord["role"] }>,
    newSha: string | undefined,
  ): Promise<Array<{ sha: string; role: PassphraseRecord["role"] }>> {
    const fresh = listed.find((p) => p.sha === newSha);
    const record = newSha === undefined ? undefined : parsePassphrase(await this.p.readPassphrase(newSha));
    let current = [...listed];
    if (fresh !== undefined && record?.project === project && record.channel === channel) {
      const old = listed.filter((p) => p.role === fresh.role && p.sha !== fresh.sha);
      await Promise.all(old.map((o) => this.p.releasePassphrase(o.sha, project, channel)));
      await this.p.dropRecordFields(
        project,
        channel,
        old.map((o) => passField(o.sha)),
      );
      current = listed.filter((p) => !old.includes(p));
    }
    await this.p.dropRecordFields(project, channel, [PENDING_FIELD]);
    return current;
  }

  private async indexedProjects(): Promise<string[]> {
    const projects: string[] = [];
    for await (const key of scanKeys(this.p, this.keys.channelIndexPattern())) {
      const project = this.keys.channelIndexOf(key);
      if (project !== undefined) projects.push(project);
    }
    return [...new Set(projects)];
  }

  private async *indexMembers(project: string): AsyncGenerator<string> {
    let after: string | undefined;
    for (;;) {
      const ids = await this.p.indexPage(project, after, SCAN_BATCH);
      yield* ids;
      if (ids.length < SCAN_BATCH) return;
      after = ids.at(-1);
    }
  }
}
