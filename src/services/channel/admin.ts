/**
 * ChannelAdminService's channel calls (create, get, list, rotate, delete),
 * transport-free: the caller is authenticated and the request validated by
 * then (the operator CLI calls these too, with a caller of its own, so the
 * checks that matter are made here again). Every call needs `channels.admin`
 * and acts only within the caller's project: another project's channel is
 * simply not in the project's index, so it answers like an unknown one.
 * Failures are `Failure`s; the error table gives them their status.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate, timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  type ChannelSchema,
  type CreateChannelRequest,
  CreateChannelRequestSchema,
  type CreateChannelResponseSchema,
  type DeleteChannelRequest,
  type DeleteChannelResponseSchema,
  type GetChannelRequest,
  type GetChannelResponseSchema,
  type ListChannelsRequest,
  type ListChannelsResponseSchema,
  PassphraseRole as RoleEnum,
  type RotatePassphraseRequest,
  type RotatePassphraseResponseSchema,
} from "../../../gen/channel/v1/channel_admin_pb.js";
import { Failure } from "../failure.js";
import { parseIdempotencyKey } from "../idempotency/key.js";
import { fingerprintOf, type SafeRetries } from "../idempotency/safe-retries.js";
import type { Caller } from "../ports.js";
import type { PstnSnapshot } from "../pstn/snapshot.js";
import { audit, requireAdmin } from "./admin-rights.js";
import { type Created, createdMessage, keptCreated } from "./created-answer.js";
import { afterOf, pageToken } from "./page-token.js";
import { chosenOrGenerated } from "./passphrases.js";
import type { ChannelDirectory, ChannelInfo, PassphraseRole } from "./ports.js";

type CreateAnswer = MessageInitShape<typeof CreateChannelResponseSchema>;
type ChannelMessage = MessageInitShape<typeof ChannelSchema>;

/** What the channel calls need of the store (`Store` has all of it). */
export interface ChannelAdminStore {
  readonly channels: ChannelDirectory;
  getPstnSnapshot(project: string, channel: string): Promise<PstnSnapshot>;
}

export interface ChannelAdminSettings {
  /** The lifetime of a channel created without `expire_time` (CHANNEL_DEFAULT_TTL_HOURS); undefined: none. */
  readonly defaultTtlMs?: number | undefined;
}

export const DEFAULT_PAGE_SIZE = 100;

const NOT_FOUND = "no channel of this project has that id";
/** Names no channel: which channel a passphrase opens, of whichever project, is nobody else's business. */
const PASSPHRASE_TAKEN =
  "the chosen passphrase cannot be used: choose another (or leave it out to get a generated one)";

export class ChannelAdmin {
  constructor(
    private readonly store: ChannelAdminStore,
    /** CreateChannel calls sent with an Idempotency-Key. */
    private readonly retries: SafeRetries,
    private readonly settings: ChannelAdminSettings = {},
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Creates the channel. With `idempotencyKey` (the raw header or metadata
   * value) a retry of the same request gets the first answer, passphrases
   * included: that is the answer a lost response should have brought. It is
   * kept sealed under the key (sealed-answer.ts), never in clear.
   */
  async createChannel(caller: Caller, req: CreateChannelRequest, idempotencyKey?: string): Promise<CreateAnswer> {
    requireAdmin(caller);
    if (idempotencyKey === undefined) return createdMessage(await this.create(caller, req, () => {}));
    const scope = { project: caller.project, subject: caller.subject, key: parseIdempotencyKey(idempotencyKey) };
    const created = await this.retries.run({
      scope,
      fingerprint: fingerprintOf(CreateChannelRequestSchema, req),
      work: (creating) => this.create(caller, req, creating),
      ...keptCreated(scope),
    });
    return createdMessage(created);
  }

  private async create(caller: Caller, req: CreateChannelRequest, creating: () => void): Promise<Created> {
    if (req.hostOnly && req.attendeePassphrase !== undefined) {
      throw new Failure("invalid", { detail: "attendee_passphrase: must be left out with host_only" });
    }
    const now = this.now();
    const expireAt = this.expiry(req, now);
    const host = chosenOrGenerated("host_passphrase", req.hostPassphrase);
    const attendee = req.hostOnly ? undefined : chosenOrGenerated("attendee_passphrase", req.attendeePassphrase);
    if (attendee === host)
      throw new Failure("invalid", { detail: "attendee_passphrase: must differ from host_passphrase" });
    const passphrases: { role: PassphraseRole; passphrase: string }[] = [{ role: "host", passphrase: host }];
    if (attendee !== undefined) passphrases.push({ role: "attendee", passphrase: attendee });
    creating();
    const outcome = await this.store.channels.create({
      project: caller.project,
      channel: req.channelId,
      passphrases,
      createdBy: caller.subject,
      createdAt: now,
      expireAt,
    });
    if (outcome.kind === "exists") {
      throw new Failure("already_exists", { detail: `the project already has a channel ${req.channelId}` });
    }
    if (outcome.kind === "passphrase_taken") {
      throw new Failure("failed_precondition", { detail: `${outcome.role}_passphrase: ${PASSPHRASE_TAKEN}` });
    }
    const roles = passphrases.map((p) => p.role).join(",");
    await audit(this.store.channels, caller, now, { action: "channel.create", channel: req.channelId, detail: roles });
    return { channel: req.channelId, host, attendee: attendee ?? "", expireAt };
  }

  /** `expire_time` (in the future), else the default lifetime, else none. */
  private expiry(req: CreateChannelRequest, now: number): number | undefined {
    if (req.expireTime !== undefined) {
      const at = timestampDate(req.expireTime).getTime();
      if (!(at > now)) throw new Failure("invalid", { detail: "expire_time: must be in the future" });
      return at;
    }
    const ttl = this.settings.defaultTtlMs;
    return ttl === undefined ? undefined : now + ttl;
  }

  async getChannel(caller: Caller, req: GetChannelRequest): Promise<MessageInitShape<typeof GetChannelResponseSchema>> {
    requireAdmin(caller);
    const info = await this.live(caller, req.channelId);
    const [snapshot, whiteboardEventId] = await Promise.all([
      this.store.getPstnSnapshot(caller.project, req.channelId),
      this.store.channels.newestWhiteboardEventId(caller.project, req.channelId),
    ]);
    return {
      channel: channelMessage(info),
      participantsWithMuteState: snapshot.participants.length,
      newestPstnEventId: snapshot.asOfEventId,
      newestWhiteboardEventId: whiteboardEventId,
    };
  }

  async listChannels(
    caller: Caller,
    req: ListChannelsRequest,
  ): Promise<MessageInitShape<typeof ListChannelsResponseSchema>> {
    requireAdmin(caller);
    if (req.pageSize < 0 || req.pageSize > 1000) throw new Failure("invalid", { detail: "page_size: 0 to 1000" });
    const after = afterOf(req.pageToken);
    const page = await this.store.channels.list(caller.project, req.pageSize || DEFAULT_PAGE_SIZE, after);
    const now = this.now();
    return {
      // A channel past its expiry no longer works; its keys are on their way out.
      channels: page.channels.filter((c) => !expired(c, now)).map(channelMessage),
      nextPageToken: page.next === undefined ? "" : pageToken(page.next),
    };
  }

  async rotatePassphrase(
    caller: Caller,
    req: RotatePassphraseRequest,
  ): Promise<MessageInitShape<typeof RotatePassphraseResponseSchema>> {
    requireAdmin(caller);
    const role = roleOf(req.role);
    const passphrase = chosenOrGenerated("passphrase", req.passphrase);
    const info = await this.live(caller, req.channelId);
    if (!info.roles.includes(role)) {
      throw new Failure("failed_precondition", { detail: `the channel has no ${role} passphrase to rotate` });
    }
    const outcome = await this.store.channels.rotate(caller.project, req.channelId, role, passphrase);
    if (outcome.kind === "unknown") throw new Failure("not_found", { detail: NOT_FOUND });
    if (outcome.kind === "passphrase_taken") {
      throw new Failure("failed_precondition", { detail: `passphrase: ${PASSPHRASE_TAKEN}` });
    }
    await audit(this.store.channels, caller, this.now(), {
      action: "channel.rotate",
      channel: req.channelId,
      detail: role,
    });
    return { channelId: req.channelId, role: req.role, passphrase };
  }

  async deleteChannel(
    caller: Caller,
    req: DeleteChannelRequest,
  ): Promise<MessageInitShape<typeof DeleteChannelResponseSchema>> {
    requireAdmin(caller);
    if (!(await this.store.channels.remove(caller.project, req.channelId))) {
      throw new Failure("not_found", { detail: NOT_FOUND });
    }
    await audit(this.store.channels, caller, this.now(), { action: "channel.delete", channel: req.channelId });
    return {};
  }

  /** The project's channel, unless unknown or expired (`not_found` either way). */
  private async live(caller: Caller, channel: string): Promise<ChannelInfo> {
    const info = await this.store.channels.get(caller.project, channel);
    if (info === undefined || expired(info, this.now())) throw new Failure("not_found", { detail: NOT_FOUND });
    return info;
  }
}

function expired(info: ChannelInfo, now: number): boolean {
  return info.expireAt !== undefined && info.expireAt <= now;
}

function roleOf(role: RoleEnum): PassphraseRole {
  if (role === RoleEnum.HOST) return "host";
  if (role === RoleEnum.ATTENDEE) return "attendee";
  throw new Failure("invalid", { detail: "role: must be PASSPHRASE_ROLE_HOST or PASSPHRASE_ROLE_ATTENDEE" });
}

function channelMessage(info: ChannelInfo): ChannelMessage {
  return {
    channelId: info.channel,
    createdBy: info.createdBy ?? "",
    roles: info.roles.map((r) => (r === "host" ? RoleEnum.HOST : RoleEnum.ATTENDEE)),
    ...(info.createdAt === undefined ? {} : { createTime: timestampFromMs(info.createdAt) }),
    ...(info.expireAt === undefined ? {} : { expireTime: timestampFromMs(info.expireAt) }),
  };
}
