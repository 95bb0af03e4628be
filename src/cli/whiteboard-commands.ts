/**
 * `boardline whiteboard set|show|clear`: a project's whiteboard (file
 * conversion) settings, i.e. its Netless region, credentials and conversion
 * QPS, through
 * ChannelAdminService's domain (admin-session.ts): the same functions as
 * SetWhiteboardSettings, GetWhiteboardSettings and ClearWhiteboardSettings,
 * so each change is stamped and audited (by `cli`). Secrets are never printed.
 * `boardline whiteboard reseal` seals every record's secrets again under the
 * current SECRETS_KEYS key (after a rotation), over the store's own function.
 */
import { create } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { type Command, Option } from "commander";
import {
  GetWhiteboardSettingsResponseSchema,
  SetWhiteboardSettingsRequestSchema,
  SetWhiteboardSettingsResponseSchema,
  WhiteboardCredentialKind,
} from "../../gen/channel/v1/channel_admin_pb.js";
import {
  DEFAULT_CONVERSION_QPS,
  MAX_CONVERSION_QPS,
  REGIONS,
  type Region,
  type WhiteboardCredentials,
} from "../services/ports.js";
import { checkProjectId } from "../store/schema/keys.js";
import { request, unlessNotFound, withAdmin } from "./admin-session.js";
import { checkId, usage } from "./arguments.js";
import { CliFailure } from "./cli-failure.js";
import { withStore } from "./redis-session.js";
import { formatTime, jsonOption, print, readStdin } from "./terminal.js";
import { passOptions, resumablePass, wholeNumber } from "./resumable-pass.js";

interface SetOptions {
  region: Region;
  sdkToken?: string;
  sdkTokenStdin?: boolean;
  accessKey?: string;
  secretKey?: string;
  secretKeyStdin?: boolean;
  conversionQps?: number;
  json?: boolean;
}

export function addWhiteboardCommands(program: Command): void {
  const whiteboard = program
    .command("whiteboard")
    .description("set, show or clear a project's whiteboard (file conversion) settings");
  addSet(whiteboard);
  addShow(whiteboard);
  addClear(whiteboard);
  addReseal(whiteboard);
}

function addSet(whiteboard: Command): void {
  whiteboard
    .command("set")
    .description("set the project's region and Netless credentials (an SDK token, or an access key + secret key pair)")
    .argument("<project>", "project id")
    .addOption(new Option("--region <region>", "Netless data-center region").choices(REGIONS).makeOptionMandatory())
    .addOption(new Option("--sdk-token <token>", "Netless SDK token (writer or admin role)").env("BOARDLINE_SDK_TOKEN"))
    .option("--sdk-token-stdin", "read the SDK token from stdin")
    .addOption(
      new Option("--access-key <ak>", "Netless access key (boardline signs its own SDK tokens)").env(
        "BOARDLINE_ACCESS_KEY",
      ),
    )
    .addOption(new Option("--secret-key <sk>", "Netless secret key, with --access-key").env("BOARDLINE_SECRET_KEY"))
    .option("--secret-key-stdin", "read the secret key from stdin")
    .option(
      "--conversion-qps <n>",
      `conversion requests per second the project's Netless plan allows (default ${DEFAULT_CONVERSION_QPS})`,
      wholeNumber(1, MAX_CONVERSION_QPS),
    )
    .addOption(jsonOption())
    .addHelpText(
      "after",
      "\nGive either an SDK token or an access key and secret key. Secrets need not appear in shell\n" +
        "history: pass them in BOARDLINE_SDK_TOKEN / BOARDLINE_SECRET_KEY, or pipe them with\n" +
        "--sdk-token-stdin / --secret-key-stdin. Setting replaces the previous settings: left out,\n" +
        `--conversion-qps is ${DEFAULT_CONVERSION_QPS} again (Netless's default plan).\n` +
        "\nExamples:\n" +
        "  $ boardline whiteboard set acme --region us-sv --access-key AK123 --secret-key-stdin < sk.txt\n" +
        "  $ BOARDLINE_SDK_TOKEN=NETLESSSDK_… boardline whiteboard set acme --region sg --conversion-qps 5",
    )
    .action(setWhiteboard);
}

async function setWhiteboard(project: string, o: SetOptions, cmd: Command): Promise<void> {
  checkId(cmd, checkProjectId(project));
  const credentials = await readCredentials(o, cmd);
  const req = request(cmd, SetWhiteboardSettingsRequestSchema, {
    region: o.region,
    credential:
      "sdkToken" in credentials
        ? { case: "sdkToken", value: credentials.sdkToken }
        : { case: "accessKeyPair", value: { accessKey: credentials.accessKey, secretKey: credentials.secretKey } },
    ...(o.conversionQps === undefined ? {} : { conversionQps: o.conversionQps }),
  });
  const set = await withAdmin(cmd, project, (a) => a.whiteboard.setSettings(a.caller, req));
  const qps = create(SetWhiteboardSettingsResponseSchema, set).settings?.conversionQps ?? DEFAULT_CONVERSION_QPS;
  print(
    o.json === true,
    { project, region: o.region, ...credentialsKind(credentials), conversion_qps: qps },
    `whiteboard of project ${project} set: region ${o.region}, ${
      "accessKey" in credentials ? `access key ${credentials.accessKey} (secret key stored)` : "SDK token stored"
    }, conversion QPS ${qps}`,
  );
}

/** Either an SDK token or an access key and secret key, from the options, the environment or stdin. */
async function readCredentials(o: SetOptions, cmd: Command): Promise<WhiteboardCredentials> {
  const wantsToken = o.sdkToken !== undefined || o.sdkTokenStdin === true;
  const wantsKeys = o.accessKey !== undefined || o.secretKey !== undefined || o.secretKeyStdin === true;
  if (wantsToken && wantsKeys) {
    usage(cmd, "give either an SDK token or an access key and secret key, not both (check BOARDLINE_* variables too)");
  }
  if (!wantsToken && !wantsKeys) usage(cmd, "credentials are required: --sdk-token, or --access-key with --secret-key");
  if (o.sdkToken !== undefined && o.sdkTokenStdin) usage(cmd, "--sdk-token and --sdk-token-stdin are exclusive");
  if (o.secretKey !== undefined && o.secretKeyStdin) usage(cmd, "--secret-key and --secret-key-stdin are exclusive");
  if (wantsToken) {
    const sdkToken = o.sdkTokenStdin ? await readStdin("SDK token") : (o.sdkToken ?? "");
    if (sdkToken.trim() === "") usage(cmd, "the SDK token is empty");
    return { sdkToken: sdkToken.trim() };
  }
  if (o.accessKey === undefined || o.accessKey.trim() === "") usage(cmd, "--access-key is required with a secret key");
  const secretKey = o.secretKeyStdin ? await readStdin("secret key") : o.secretKey;
  if (secretKey === undefined) usage(cmd, "--secret-key (or --secret-key-stdin) is required with --access-key");
  if (secretKey.trim() === "") usage(cmd, "the secret key is empty");
  return { accessKey: o.accessKey.trim(), secretKey: secretKey.trim() };
}

/** The JSON fields naming the kind of credentials (and the access key, which is not a secret). */
function credentialsKind(c: WhiteboardCredentials): { credentials: string; access_key?: string } {
  return {
    credentials: "sdkToken" in c ? "sdk_token" : "access_key",
    ...("accessKey" in c ? { access_key: c.accessKey } : {}),
  };
}

function addShow(whiteboard: Command): void {
  whiteboard
    .command("show")
    .description("show the project's whiteboard region, credential kind and conversion QPS (secrets are never printed)")
    .argument("<project>", "project id")
    .addOption(jsonOption())
    .addHelpText(
      "after",
      "\nExits 1 when the project has no usable whiteboard settings (fileconvert then answers 403).",
    )
    .action(showWhiteboard);
}

async function showWhiteboard(project: string, o: { json?: boolean }, cmd: Command): Promise<void> {
  checkId(cmd, checkProjectId(project));
  const got = await withAdmin(cmd, project, (a) => unlessNotFound(() => a.whiteboard.getSettings(a.caller)));
  const settings = got === undefined ? undefined : create(GetWhiteboardSettingsResponseSchema, got).settings;
  if (settings === undefined) throw new CliFailure(`project ${project} has no usable whiteboard settings`);
  const kind = settings.credential === WhiteboardCredentialKind.SDK_TOKEN ? "sdk_token" : "access_key";
  const at = settings.updateTime === undefined ? null : formatTime(timestampMs(settings.updateTime));
  const by = settings.updatedBy === "" ? null : settings.updatedBy;
  print(
    o.json === true,
    {
      project,
      region: settings.region,
      credentials: kind,
      conversion_qps: settings.conversionQps,
      updated_at: at,
      updated_by: by,
    },
    `whiteboard of project ${project}: region ${settings.region}, ${kind === "sdk_token" ? "SDK token" : "access key pair"}` +
      `, conversion QPS ${settings.conversionQps}` +
      (at === null ? "" : `, set ${at}${by === null ? "" : ` by ${by}`}`),
  );
}

function addClear(whiteboard: Command): void {
  whiteboard
    .command("clear")
    .description("remove the project's whiteboard settings: fileconvert answers 403 for the project afterwards")
    .argument("<project>", "project id")
    .addOption(jsonOption())
    .action(clearWhiteboard);
}

async function clearWhiteboard(project: string, o: { json?: boolean }, cmd: Command): Promise<void> {
  checkId(cmd, checkProjectId(project));
  await withAdmin(cmd, project, (a) => a.whiteboard.clearSettings(a.caller));
  print(o.json === true, { project, cleared: true }, `whiteboard settings of project ${project} removed`);
}

function addReseal(whiteboard: Command): void {
  passOptions(
    whiteboard
      .command("reseal")
      .description("seal every project's Netless secrets again under the current SECRETS_KEYS key (resumable)"),
  )
    .addHelpText(
      "after",
      "\nRun it with the same SECRETS_KEYS as the servers, after putting a new key first: it rewrites\n" +
        "the records still in clear (written before secrets were sealed) or under an older key, so\n" +
        "the older key can then be dropped. Records already under the current key are left alone, so\n" +
        "running it again is harmless; a record changed while the pass is at it is left to its writer.\n" +
        "Safe while serving. It prints the cursor to resume from on stderr as it goes; stopped (Ctrl-C),\n" +
        "run it again with --from <that cursor>. Exits 1 when a record's key is missing from SECRETS_KEYS.",
    )
    .action(reseal);
}

async function reseal(o: { batch: number; pauseMs: number; from?: string; json?: boolean }): Promise<void> {
  const total = await withStore(async (store) => {
    let scanned = 0;
    let resealed = 0;
    let changed = 0;
    const unreadable: string[] = [];
    await resumablePass(
      o,
      (options) => store.resealWhiteboards(options),
      (step) => {
        scanned += step.scanned;
        resealed += step.resealed;
        changed += step.changed;
        unreadable.push(...step.unreadable);
        return `${scanned} whiteboard records read, ${resealed} resealed`;
      },
    );
    return { scanned, resealed, changed, unreadable };
  });
  print(
    o.json === true,
    {
      scanned: total.scanned,
      resealed: total.resealed,
      changed: total.changed,
      unreadable: total.unreadable,
      complete: true,
    },
    `reseal complete: ${total.scanned} whiteboard records read, ${total.resealed} resealed under the current key` +
      (total.changed === 0 ? "" : `, ${total.changed} changed meanwhile (sealed by their writer)`) +
      (total.unreadable.length === 0 ? "" : `, ${total.unreadable.length} unreadable`),
  );
  if (total.unreadable.length > 0) {
    throw new CliFailure(
      `the secrets of project${total.unreadable.length === 1 ? "" : "s"} ${total.unreadable.join(", ")} do not open: ` +
        "their key is missing from SECRETS_KEYS (or they were altered); they were left as they are",
    );
  }
}
