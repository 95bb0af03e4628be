/**
 * The conversion-task operations of both stores, in one place: the order of
 * their steps (which is what makes them safe when a follower dies half-way)
 * lives here, over each store's raw operations on the documented keys
 * (docs/redis-schema.md): the task's record, changes stream and
 * lease (one slot, updated together by one step), the `conv-due` sorted set and
 * the channel's whiteboard-events stream (other slots, separate steps).
 */
import { Failure } from "../services/failure.js";
import type {
  ConversionChange,
  ConversionSaveOutcome,
  ConversionState,
  ConversionTaskRecord,
  DueConversion,
} from "../services/ports.js";
import {
  ANNOUNCED_FIELD,
  conversionFields,
  isTerminalStatus,
  parseConversion,
  parseConversionChange,
  whiteboardEventFields,
} from "./schema/conversion-records.js";
import type { Fields } from "./schema/channel-records.js";

/** What claiming one due task found: now leased to us, held by a live lease, or its record is gone. */
export type LeaseAttempt = "leased" | "held" | "gone";

/** What writing a state did; "gone": the record is gone (the lease was dropped, nothing written). */
export type StateWrite = ConversionSaveOutcome | "gone";

/** What each store does for the conversion operations. */
export interface ConversionPrimitives {
  /** Writes the task's record and sets its retention, in one step. */
  writeRecord(uuid: string, fields: Fields): Promise<void>;
  /** The record's raw fields; {} when missing or not a hash. */
  readRecord(uuid: string): Promise<Fields>;
  /** Puts the task into `conv-due` with score `at` (or moves it there). */
  setDue(uuid: string, at: number): Promise<void>;
  removeDue(uuid: string): Promise<void>;
  /** Scores the `uuids` still in `conv-due` `at` (ZADD XX); never adds one. */
  postponeDue(uuids: readonly string[], at: number): Promise<void>;
  /** Members of `conv-due` scored ≤ `now` with their scores, lowest score first, skipping `offset`, at most `count`. */
  dueConversions(now: number, offset: number, count: number): Promise<DueConversion[]>;
  /** In one step: "gone" unless the record is a hash; else SET lease NX PX. */
  tryLease(uuid: string, owner: string, leaseMs: number): Promise<LeaseAttempt>;
  /** PEXPIRE the lease when `owner` holds it. */
  renewLease(uuid: string, owner: string, leaseMs: number): Promise<boolean>;
  holdsLease(uuid: string, owner: string): Promise<boolean>;
  /** Deletes the lease when `owner` holds it. */
  releaseLease(uuid: string, owner: string): Promise<void>;
  /**
   * In one step, when `owner` holds the lease and the record exists: when any
   * field of `state` differs from the record, writes them and `updated_at`,
   * appends a changes entry when the status or percent differs, and refreshes
   * the retention of the record and its changes stream.
   */
  writeState(uuid: string, owner: string, state: ConversionState, at: number): Promise<StateWrite>;
  /** Sets the record's `announced` field, unless the record is gone (no stub record). */
  markAnnounced(uuid: string): Promise<void>;
  appendWhiteboardEvent(project: string, channel: string, fields: Fields): Promise<void>;
  /** Entries of the changes stream with ids after `afterId`, oldest first, at most `count`. */
  readChanges(uuid: string, afterId: string, count: number): Promise<Array<{ id: string; fields: Fields }>>;
  /** SET `conv-hook:{id}` to the uuid, expiring after the retention, in one step. */
  writeWebhook(id: string, uuid: string): Promise<void>;
  /** The uuid under `conv-hook:{id}`; undefined when missing or not a string. */
  readWebhook(id: string): Promise<string | undefined>;
  /**
   * In one step: when `uuid` is in `conv-due` scored after `at`, scores it `at`.
   * True when it is in `conv-due` (moved or not); never adds it.
   */
  advanceDue(uuid: string, at: number): Promise<boolean>;
}

/** How many due tasks one look at `conv-due` reads at least (leased ones are skipped). */
const DUE_PAGE = 50;

/** The conversion operations of `Store`, over a store's raw operations. */
export class ConversionSteps {
  constructor(private readonly raw: ConversionPrimitives) {}

  /** The record first, then `conv-due`: a due task always has a record until the record expires. */
  async recordConversion(task: ConversionTaskRecord, firstPollAt: number): Promise<void> {
    await this.raw.writeRecord(task.uuid, conversionFields(task));
    await this.raw.setDue(task.uuid, firstPollAt);
  }

  async getConversion(uuid: string): Promise<ConversionTaskRecord | undefined> {
    return parseConversion(uuid, await this.raw.readRecord(uuid));
  }

  async claimDueConversions(now: number, max: number, owner: string, leaseMs: number): Promise<DueConversion[]> {
    const claimed: DueConversion[] = [];
    let offset = 0;
    while (claimed.length < max) {
      const page = Math.max(DUE_PAGE, max - claimed.length);
      const due = await this.raw.dueConversions(now, offset, page);
      let looked = 0;
      let removed = 0;
      // Only as many at once as are still wanted, so no task is leased and then not returned.
      while (looked < due.length && claimed.length < max) {
        const batch = due.slice(looked, looked + max - claimed.length);
        looked += batch.length;
        const attempts = await Promise.all(batch.map((task) => this.raw.tryLease(task.uuid, owner, leaseMs)));
        const gone = batch.filter((_, i) => attempts[i] === "gone").map((task) => task.uuid);
        const leased = batch.filter((_, i) => attempts[i] === "leased");
        // A leased task is due again when its lease runs out (a takeover, should we die): until
        // then no other follower's look reads past it, however many tasks are in flight.
        await Promise.all([
          ...gone.map((uuid) => this.raw.removeDue(uuid)),
          this.raw.postponeDue(
            leased.map((task) => task.uuid),
            now + leaseMs,
          ),
        ]);
        removed += gone.length + leased.length;
        claimed.push(...leased);
      }
      if (due.length < page) break;
      offset += looked - removed;
    }
    return claimed;
  }

  renewConversionLease(uuid: string, owner: string, leaseMs: number): Promise<boolean> {
    return this.raw.renewLease(uuid, owner, leaseMs);
  }

  /**
   * Crash safety: a terminal state is saved before it is announced, and the task
   * leaves `conv-due` only after the announcement is marked. A follower that dies
   * in between leaves the task due (its lease runs out); the next one to poll it
   * saves the same terminal state ("unchanged"), finds it not yet marked and
   * announces it. So an end is announced at least once: a follower dying between
   * the announcement and its mark makes it twice.
   */
  async saveConversionState(
    uuid: string,
    owner: string,
    state: ConversionState,
    at: number,
    nextPollAt: number | undefined,
  ): Promise<ConversionSaveOutcome> {
    const written = await this.raw.writeState(uuid, owner, state, at);
    if (written === "not-owner") return written;
    if (written === "gone") {
      await this.raw.removeDue(uuid);
      return "not-owner";
    }
    if (nextPollAt !== undefined) await this.raw.setDue(uuid, nextPollAt);
    if (isTerminalStatus(state.status)) await this.announceEnd(uuid, state.status, at);
    await this.raw.releaseLease(uuid, owner);
    return written;
  }

  async rescheduleConversion(uuid: string, owner: string, nextPollAt: number): Promise<void> {
    if (!(await this.raw.holdsLease(uuid, owner))) return;
    // Due later first, then unleased: never due now and free at once.
    await this.raw.setDue(uuid, nextPollAt);
    await this.raw.releaseLease(uuid, owner);
  }

  async readConversionChanges(uuid: string, afterId: string, count: number): Promise<ConversionChange[]> {
    if (!/^\d{1,16}(-\d{1,16})?$/.test(afterId)) {
      throw new Failure("invalid", { detail: "afterId must be a stream id (<ms>-<seq>, or 0 for all)" });
    }
    if (!Number.isSafeInteger(count) || count < 1) {
      throw new Failure("invalid", { detail: "count must be a positive integer" });
    }
    const entries = await this.raw.readChanges(uuid, afterId, count);
    return entries.flatMap(({ id, fields }) => parseConversionChange(id, fields) ?? []);
  }

  recordWebhook(id: string, uuid: string): Promise<void> {
    return this.raw.writeWebhook(id, uuid);
  }

  webhookTask(id: string): Promise<string | undefined> {
    return this.raw.readWebhook(id);
  }

  /** Only a task still in `conv-due` moves: an ended task is never made due again. */
  wakeConversion(uuid: string, at: number): Promise<boolean> {
    return this.raw.advanceDue(uuid, at);
  }

  /** The task's end on its channel's whiteboard-events stream (once, unless a follower dies: see above). */
  async announceEnd(uuid: string, status: string, at: number): Promise<void> {
    const fields = await this.raw.readRecord(uuid);
    const task = parseConversion(uuid, fields);
    if (task !== undefined && fields[ANNOUNCED_FIELD] !== "1") {
      await this.raw.appendWhiteboardEvent(task.project, task.channel, whiteboardEventFields(task, status, at));
    }
    await this.raw.markAnnounced(uuid);
    await this.raw.removeDue(uuid);
  }
}
