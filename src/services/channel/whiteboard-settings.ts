/**
 * ChannelAdminService's whiteboard calls: set, get and clear the project's
 * Netless region, credentials and conversion QPS. Transport-free, `channels.admin` only, the
 * caller's project only. The secrets are write-only: what comes back is the
 * store's `WhiteboardInfo`, which has no field that could hold one.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  type ClearWhiteboardSettingsResponseSchema,
  type GetWhiteboardSettingsResponseSchema,
  type SetWhiteboardSettingsRequest,
  type SetWhiteboardSettingsResponseSchema,
  WhiteboardCredentialKind,
  type WhiteboardSettingsInfoSchema,
} from "../../../gen/channel/v1/channel_admin_pb.js";
import { Failure } from "../failure.js";
import {
  type Caller,
  DEFAULT_CONVERSION_QPS,
  MAX_CONVERSION_QPS,
  REGIONS,
  type Region,
  type WhiteboardCredentials,
  type WhiteboardSettings,
} from "../ports.js";
import { audit, requireAdmin } from "./admin-rights.js";
import type { ChannelDirectory, WhiteboardInfo } from "./ports.js";

type InfoMessage = MessageInitShape<typeof WhiteboardSettingsInfoSchema>;

export class WhiteboardSettingsAdmin {
  constructor(
    private readonly store: { readonly channels: ChannelDirectory },
    private readonly now: () => number = Date.now,
  ) {}

  async setSettings(
    caller: Caller,
    req: SetWhiteboardSettingsRequest,
  ): Promise<MessageInitShape<typeof SetWhiteboardSettingsResponseSchema>> {
    requireAdmin(caller);
    const region = regionOf(req.region);
    const credentials = credentialsOf(req);
    const conversionQps = conversionQpsOf(req.conversionQps);
    const kind = "sdkToken" in credentials ? "sdk_token" : "access_key";
    const at = this.now();
    // Left out, the QPS is not kept from before: Set replaces the settings, so it is the default plan again.
    const settings: WhiteboardSettings =
      conversionQps === undefined ? { region, credentials } : { region, credentials, conversionQps };
    await this.store.channels.setWhiteboard(caller.project, settings, caller.subject, at);
    await audit(this.store.channels, caller, at, { action: "whiteboard.set", detail: `${region} ${kind}` });
    return {
      settings: infoMessage({
        region,
        credential: kind,
        conversionQps: conversionQps ?? DEFAULT_CONVERSION_QPS,
        updatedAt: at,
        updatedBy: caller.subject,
      }),
    };
  }

  async getSettings(caller: Caller): Promise<MessageInitShape<typeof GetWhiteboardSettingsResponseSchema>> {
    requireAdmin(caller);
    const info = await this.store.channels.whiteboardInfo(caller.project);
    if (info === undefined) {
      throw new Failure("not_found", { detail: "the whiteboard is not set up for this project" });
    }
    return { settings: infoMessage(info) };
  }

  async clearSettings(caller: Caller): Promise<MessageInitShape<typeof ClearWhiteboardSettingsResponseSchema>> {
    requireAdmin(caller);
    await this.store.channels.clearWhiteboard(caller.project);
    await audit(this.store.channels, caller, this.now(), { action: "whiteboard.clear" });
    return {};
  }
}

function regionOf(region: string): Region {
  const found = REGIONS.find((r) => r === region);
  if (found === undefined) throw new Failure("invalid", { detail: `region: must be one of ${REGIONS.join(", ")}` });
  return found;
}

/** The request's one credential, trimmed (as the CLI always did); empty ones are `invalid`, naming the field. */
function credentialsOf(req: SetWhiteboardSettingsRequest): WhiteboardCredentials {
  const c = req.credential;
  if (c.case === "sdkToken") return { sdkToken: nonEmpty("sdk_token", c.value) };
  if (c.case === "accessKeyPair") {
    return {
      accessKey: nonEmpty("access_key_pair.access_key", c.value.accessKey),
      secretKey: nonEmpty("access_key_pair.secret_key", c.value.secretKey),
    };
  }
  throw new Failure("invalid", { detail: "credential: exactly one of sdk_token, access_key_pair is required" });
}

/** The request's conversion QPS, checked as the contract does for callers that skip its validation. */
function conversionQpsOf(qps: number | undefined): number | undefined {
  if (qps === undefined || (qps >= 1 && qps <= MAX_CONVERSION_QPS)) return qps;
  throw new Failure("invalid", { detail: `conversion_qps: must be from 1 to ${MAX_CONVERSION_QPS}` });
}

function nonEmpty(field: string, value: string): string {
  const trimmed = value.trim();
  if (trimmed === "") throw new Failure("invalid", { detail: `${field}: must not be empty` });
  return trimmed;
}

function infoMessage(info: WhiteboardInfo): InfoMessage {
  return {
    region: info.region,
    credential:
      info.credential === "sdk_token" ? WhiteboardCredentialKind.SDK_TOKEN : WhiteboardCredentialKind.ACCESS_KEY,
    conversionQps: info.conversionQps,
    updatedBy: info.updatedBy ?? "",
    ...(info.updatedAt === undefined ? {} : { updateTime: timestampFromMs(info.updatedAt) }),
  };
}
