/**
 * `boardline token mint`: HS256 test tokens the server accepts, signed with
 * the server's JWT_SECRET. Needs no Redis.
 */
import type { Command } from "commander";
import { mintToken } from "../auth/jwt.js";
import { loadTokenSettings } from "../config/index.js";
import { checkProjectId } from "../store/schema/keys.js";
import { checkId, parseDuration, usage } from "./arguments.js";
import { CliFailure, configOrFail } from "./cli-failure.js";
import { jsonOption, print } from "./terminal.js";

const TOKEN_SUBJECT = "operator";

interface MintOptions {
  project: string;
  subject: string;
  ttl: number;
  scope: string[];
  json?: boolean;
}

export function addTokenCommands(program: Command): void {
  const token = program.command("token").description("mint JWTs for testing");
  token
    .command("mint")
    .description("mint an HS256 JWT with JWT_SECRET that the server accepts, and print only the token")
    .requiredOption(
      "--project <project>",
      "the project the token acts for (claim JWT_PROJECT_CLAIM, default project_id)",
    )
    .option("--subject <subject>", "the token's sub (recorded as `by` in mute events)", TOKEN_SUBJECT)
    .option("--ttl <duration>", "lifetime: 90s, 15m, 1h, 7d (at most 366d)", parseDuration, 3600)
    .option(
      "--scope <scope>",
      "grant a scope (repeatable, or space-separated), e.g. pstn.gateway; claim JWT_SCOPE_CLAIM, default scope",
      (value: string, previous: string[]) => [...previous, ...value.split(" ").filter((s) => s !== "")],
      [] as string[],
    )
    .addOption(jsonOption())
    .addHelpText(
      "after",
      "\nReads JWT_SECRET (at least 32 bytes; the same secret as the server), and JWT_PROJECT_CLAIM,\n" +
        "JWT_SCOPE_CLAIM, JWT_ISSUER, JWT_AUDIENCE and JWT_TYPES (its typ is the first) so the token passes\n" +
        "the server's checks. Needs no Redis.\n" +
        "\nExample:\n" +
        "  $ TOKEN=$(boardline token mint --project acme --ttl 15m)\n" +
        '  $ curl -H "Authorization: Bearer $TOKEN" …\n' +
        "  $ GATEWAY=$(boardline token mint --project acme --subject pstn-gateway --scope pstn.gateway)",
    )
    .action(mint);
}

async function mint(o: MintOptions, cmd: Command): Promise<void> {
  if (o.project.trim() === "") usage(cmd, "--project must not be empty");
  // The server refuses a token whose project the key schema cannot hold: do not mint one.
  checkId(cmd, checkProjectId(o.project));
  if (o.subject.trim() === "") usage(cmd, "--subject must not be empty");
  const settings = configOrFail(() => loadTokenSettings());
  if (settings.secret === undefined) {
    throw new CliFailure("JWT_SECRET is not set: token mint signs with the server's HS256 secret (at least 32 bytes)");
  }
  const jwt = await mintToken({
    secret: settings.secret,
    project: o.project,
    subject: o.subject,
    ttlSeconds: o.ttl,
    projectClaim: settings.projectClaim,
    scopes: o.scope,
    scopeClaim: settings.scopeClaim,
    ...(settings.issuer === undefined ? {} : { issuer: settings.issuer }),
    ...(settings.audience === undefined ? {} : { audience: settings.audience }),
    ...(settings.types === undefined ? {} : { typ: settings.types[0] }),
  });
  const expiresAt = new Date((Math.floor(Date.now() / 1000) + o.ttl) * 1000).toISOString();
  const described = { token: jwt, project: o.project, subject: o.subject, scopes: o.scope, expires_at: expiresAt };
  print(o.json === true, described, jwt);
}
