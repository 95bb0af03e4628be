/**
 * The interfaces the business layer needs from the outside world. Adapters in
 * src/store, src/conversion and src/auth implement them; src/services uses them.
 * Adapters report trouble by throwing `Failure` (src/services/failure.ts):
 * `unavailable` for a backend that cannot be reached, `deadline_exceeded` for a
 * time-out, `internal` for anything that should never happen.
 */

/** Who is calling, taken from a verified JWT. */
export interface Caller {
  /** The project the token belongs to (claim `JWT_PROJECT_CLAIM`, default `project_id`). */
  readonly project: string;
  /** The token's `sub`. */
  readonly subject: string;
}

export interface Authenticator {
  /**
   * Verifies the value of an `Authorization` header (`Bearer <jwt>`).
   * Throws `Failure("unauthenticated")` for anything but a valid token.
   */
  authenticate(authorization: string | undefined): Promise<Caller>;
}

export type PassphraseRole = "host" | "attendee";

export interface PassphraseRecord {
  readonly project: string;
  readonly channel: string;
  readonly role: PassphraseRole;
}

export const REGIONS = ["us-sv", "sg", "in-mum", "eu", "cn-hz"] as const;
export type Region = (typeof REGIONS)[number];

export type WhiteboardCredentials =
  | { readonly sdkToken: string }
  | { readonly accessKey: string; readonly secretKey: string };

export interface WhiteboardSettings {
  readonly region: Region;
  readonly credentials: WhiteboardCredentials;
}

export interface MuteChange {
  readonly project: string;
  readonly channel: string;
  readonly uid: string;
  readonly mute: boolean;
  /** The caller's `sub`. */
  readonly by: string;
  /** Milliseconds since the epoch. */
  readonly at: number;
}

export interface MuteEvent {
  readonly id: string;
  readonly uid: string;
  readonly mute: boolean;
  readonly by: string;
  readonly at: number;
}

export type ConversionType = "static" | "dynamic";

export interface ConversionTaskRecord {
  readonly uuid: string;
  readonly project: string;
  readonly channel: string;
  readonly type: ConversionType;
  readonly status: string;
  /** Milliseconds since the epoch. */
  readonly createdAt: number;
  readonly by: string;
}

/** What the services read and write. Redis in production, in memory for the demo. */
export interface Store {
  /** The record of a passphrase, or undefined when it is unknown. */
  lookupPassphrase(passphrase: string): Promise<PassphraseRecord | undefined>;
  /**
   * The project's whiteboard settings, or undefined when the whiteboard is not
   * set up (no record, `enabled` not `1`, or no usable credentials/region).
   */
  getWhiteboard(project: string): Promise<WhiteboardSettings | undefined>;
  /** Writes the mute hash field and appends the stream entry atomically. */
  setMute(change: MuteChange): Promise<void>;
  /** Records a conversion task (expires after 7 days). */
  recordConversion(task: ConversionTaskRecord): Promise<void>;
  /**
   * Counts one wrong passphrase for a caller key; the counting window starts
   * at the first miss and lasts `windowSeconds`.
   */
  recordPassphraseMiss(callerKey: string, windowSeconds: number): Promise<void>;
  /** The caller key's misses in the current window and the seconds until the window ends. */
  passphraseMisses(callerKey: string): Promise<{ count: number; resetSeconds: number }>;
  /** Resolves when the store can serve requests; throws `Failure("unavailable")` otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Operator and test functions over the same documented records (the CLI uses these). */
export interface AdminStore extends Store {
  createChannel(input: {
    project: string;
    channel: string;
    hostPassphrase: string;
    attendeePassphrase?: string;
  }): Promise<void>;
  /**
   * Deletes the channel's passphrase records (found by scanning, so no extra index
   * key is needed), its mute hash and its event stream. Returns how many keys went.
   */
  deleteChannel(project: string, channel: string): Promise<number>;
  setWhiteboard(project: string, settings: WhiteboardSettings): Promise<void>;
  clearWhiteboard(project: string): Promise<void>;
  getMuteState(project: string, channel: string): Promise<Record<string, boolean>>;
  getMuteEvents(project: string, channel: string, count?: number): Promise<MuteEvent[]>;
  getConversion(uuid: string): Promise<ConversionTaskRecord | undefined>;
}

/** The backend's two conversion APIs; a task can only be asked about on the API that created it. */
export type ConversionApi = "projector" | "legacy";
export type ConversionStatus = "Waiting" | "Converting" | "Finished" | "Fail" | "Abort";
export const TERMINAL_CONVERSION_STATUSES: readonly ConversionStatus[] = ["Finished", "Fail", "Abort"];

/** One converted page: static pages have url/width/height; dynamic ones a preview_url (when previews exist). */
export interface ConversionPage {
  readonly page: number;
  readonly url?: string;
  readonly width?: number;
  readonly height?: number;
  readonly previewUrl?: string;
}

/** Where a task stands, in one shape for both APIs. */
export interface ConversionState {
  readonly status: ConversionStatus;
  /** 0–100. */
  readonly percent: number;
  readonly pageCount?: number;
  readonly pages: readonly ConversionPage[];
  /** Dynamic conversions: where the converted files live (`https://…/dynamicConvert`). */
  readonly prefix?: string;
  readonly failedReason?: string;
}

/** What is needed to ask the backend about a task again. */
export interface ConversionTaskRef {
  readonly uuid: string;
  readonly type: ConversionType;
  readonly api: ConversionApi;
  readonly region: Region;
  readonly credentials: WhiteboardCredentials;
}

export interface ConversionRequest {
  readonly resourceUrl: string;
  readonly type: ConversionType;
  /** Absent: the backend default (1.2) applies. */
  readonly scale?: number;
  readonly region: Region;
  readonly credentials: WhiteboardCredentials;
  /** Where the backend reports the task's progress (projector API only; ignored on legacy). */
  readonly webhookEndpoint?: string;
}

export interface ConversionTask {
  readonly uuid: string;
  readonly type: ConversionType;
  /** As the backend reports it: Waiting | Converting | Finished | Fail. */
  readonly status: string;
  /** The API the task was created on, the only one that can be asked about it. */
  readonly api: ConversionApi;
}

/** The Netless (Agora Interactive Whiteboard) file-conversion backend. */
export interface ConversionBackend {
  /**
   * Starts a conversion task. Failures: backend 5xx or connection error →
   * `unavailable`; the backend over its capacity ("too many tasks", 429) →
   * `unavailable` with `retryAfterSeconds`; time-out → `deadline_exceeded`;
   * backend 400 → `invalid`; backend 401/403 or an unreadable answer → `internal`.
   */
  createTask(request: ConversionRequest, signal?: AbortSignal): Promise<ConversionTask>;
  /**
   * The task's state now. Failures as for `createTask` (a follower retries
   * `unavailable` and `deadline_exceeded` later); a task the backend does not
   * know is no failure but the state `Fail`, failedReason "not found".
   */
  queryTask(ref: ConversionTaskRef, signal?: AbortSignal): Promise<ConversionState>;
  /** Projector: cancels at the backend and returns the state after (Abort). Legacy: `failed_precondition`. */
  cancelTask(ref: ConversionTaskRef, signal?: AbortSignal): Promise<ConversionState>;
}
