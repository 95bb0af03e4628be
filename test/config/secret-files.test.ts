/**
 * Secrets from files: each secret row may be given as `NAME_FILE`, the path of
 * a file holding the value (as Kubernetes and Compose mount secrets). The value
 * read is the file's, less one final newline, checked as the variable's would
 * be; the server, the CLI's Redis session and its token minting all read it.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jwtVerify } from "jose";
import { afterAll, describe, expect, it } from "vitest";
import { withStore } from "../../src/cli/redis-session.js";
import { loadConfig, loadRedisSettings, loadTokenSettings } from "../../src/config/index.js";
import { fileVariable, readsVariable, SECRET_VARIABLES } from "../../src/config/secret-variables.js";
import type { VariableName } from "../../src/config/variables.js";
import { developmentKeyRing } from "../../src/secrets/key-ring.js";
import { renderConfigTable } from "../../tools/config-table.js";
import { type CliWorld, cliRunner, JWT, oneLine } from "../cli/run-cli.js";
import { eventually } from "../harness/eventually.js";
import { type MainProcess, startMainProcess } from "../harness/main-process.js";
import { deleteKeysWithPrefix, redisUrl, uniquePrefix } from "../harness/redis-url.js";
import { configError, SECRET, tempFile } from "./helpers.js";

const KEY = Buffer.alloc(32, 7).toString("base64");
const OLD_KEY = Buffer.alloc(32, 9).toString("base64");

/** For each secret row: a valid value, and what else must be set for loadConfig to read it. */
const SECRETS: Record<string, { value: string; with: Record<string, string> }> = {
  JWT_SECRET: { value: "j".repeat(40), with: {} },
  REDIS_URL: { value: "redis://:hunter2@redis.example:6379/2", with: { JWT_SECRET: SECRET } },
  CONVERSION_WEBHOOK_SECRET: {
    value: "w".repeat(40),
    with: { JWT_SECRET: SECRET, CONVERSION_WEBHOOK_BASE: "https://boardline.example.com" },
  },
  PASSPHRASE_KEYS: { value: `${KEY},${OLD_KEY}`, with: { JWT_SECRET: SECRET } },
  SECRETS_KEYS: { value: KEY, with: { JWT_SECRET: SECRET } },
  REDIS_SENTINEL_PASSWORD: {
    value: "sentinel hunter2",
    with: { JWT_SECRET: SECRET, REDIS_SENTINELS: "s", REDIS_SENTINEL_NAME: "m" },
  },
};

/** A value each secret row refuses, and a piece of why; the value must never show in the message. */
const REFUSED: Record<string, { value: string; problem: string }> = {
  JWT_SECRET: { value: "hunter2-too-short", problem: "must be at least 32 bytes" },
  REDIS_URL: { value: "http://:hunter2@redis.example", problem: "must start with redis://" },
  CONVERSION_WEBHOOK_SECRET: { value: "hunter2-too-short", problem: "must be at least 32 bytes" },
  PASSPHRASE_KEYS: { value: "hunter2!", problem: "must be base64" },
  SECRETS_KEYS: { value: "aHVudGVyMg==", problem: "must decode to at least 32 bytes" },
  REDIS_SENTINEL_PASSWORD: { value: "hunter2\nsecond line", problem: "must be one line" },
};

const names = Object.keys(SECRETS) as VariableName[];

describe("which variables are secrets", () => {
  it("are the keys, the JWT and webhook secrets, REDIS_URL (it carries the password) and the Sentinels' password", () => {
    expect([...SECRET_VARIABLES].sort()).toEqual([...names].sort());
    expect(Object.keys(REFUSED).sort()).toEqual([...names].sort());
  });

  it("each reads its `_FILE` form, which only secrets have", () => {
    for (const name of names) expect(readsVariable(fileVariable(name))).toBe(true);
    expect(readsVariable("LOG_LEVEL_FILE")).toBe(false);
    expect(readsVariable("JWT_JWKS_FILE")).toBe(true);
    // Not a secret, so not read from a file: the variable alone decides.
    expect(loadConfig({ LOG_LEVEL_FILE: tempFile("level", "debug\n") }).logLevel).toBe("info");
  });

  it("the generated table says so on their rows, and only theirs", () => {
    const rows = renderConfigTable().split("\n").slice(2);
    for (const row of rows) {
      const name = /^\| `(\w+)` \|/.exec(row)?.[1] as VariableName;
      expect(row.includes(`\`${name}_FILE\``), name).toBe(SECRET_VARIABLES.includes(name));
    }
  });
});

describe.each(names)("%s_FILE", (name) => {
  const { value, with: context } = SECRETS[name] as (typeof SECRETS)[string];
  const file = fileVariable(name);

  it("gives the same configuration as the variable itself, and not the one without it", () => {
    const fromFile = loadConfig({ ...context, [file]: tempFile(name, `${value}\n`) });
    expect(fromFile).toEqual(loadConfig({ ...context, [name]: value }));
    // Without it: demo mode, the in-memory store, the development keys, or (the webhook's) a refusal.
    const without = () => loadConfig(context);
    if (name === "CONVERSION_WEBHOOK_SECRET") expect(without).toThrow(/is required/);
    else expect(fromFile).not.toEqual(without());
  });

  it("set together with the variable stops start-up, naming both", () => {
    const e = configError({ ...context, [name]: value, [file]: tempFile(name, value) });
    expect(e.variable).toBe(name);
    expect(e.message).toBe(`${name} and ${file} are both set: set one of them`);
  });

  it("is checked as the variable is, and the message shows neither the content nor the secret", () => {
    const refused = REFUSED[name] as (typeof REFUSED)[string];
    const e = configError({ ...context, [file]: tempFile(name, `${refused.value}\n`) });
    expect(e.variable).toBe(name);
    expect(e.message).toContain(refused.problem);
    expect(e.message).toContain(`(read from ${file})`);
    expect(e.message).not.toContain("hunter2");
    expect(e.message).not.toContain(refused.value);
  });

  it("an unreadable file stops start-up with the errno code, never the content", () => {
    const missing = configError({ ...context, [file]: "/nonexistent/boardline-secret" });
    expect(missing.variable).toBe(file);
    expect(missing.message).toBe(`${file} cannot be read (ENOENT: /nonexistent/boardline-secret)`);
    const directory = mkdtempSync(join(tmpdir(), "boardline-secret-"));
    expect(configError({ ...context, [file]: directory }).message).toMatch(
      new RegExp(`^${file} cannot be read \\(EISDIR`),
    );
  });

  it("an empty file stops start-up; an empty `_FILE` counts as not set", () => {
    const empty = tempFile(name, "\n");
    expect(configError({ ...context, [file]: empty }).message).toBe(`${file} names an empty file (${empty})`);
    expect(loadConfig({ ...context, [name]: value, [file]: "" })).toEqual(loadConfig({ ...context, [name]: value }));
  });
});

describe("one final newline is not part of the value", () => {
  const secretOf = (content: string) => {
    const key = loadConfig({ JWT_SECRET_FILE: tempFile("jwt", content) }).jwt.key;
    return key?.kind === "secret" ? new TextDecoder().decode(key.secret) : undefined;
  };

  it("an untrimmed secret loses exactly one \\n or \\r\\n and keeps everything else, spaces included", () => {
    const secret = `  ${"s".repeat(32)} `;
    expect(secretOf(`${secret}\n`)).toBe(secret);
    expect(secretOf(`${secret}\r\n`)).toBe(secret);
    expect(secretOf(secret)).toBe(secret);
    expect(secretOf(`${secret}\n\n`)).toBe(`${secret}\n`);
    expect(secretOf(`${secret}\r\n\r\n`)).toBe(`${secret}\r\n`);
  });

  it("a trimmed one is trimmed as the variable is", () => {
    const url = loadConfig({
      JWT_SECRET: SECRET,
      REDIS_URL_FILE: tempFile("url", "  redis://redis.example:6379 \r\n"),
    });
    expect(url.redis).toEqual({ mode: "single", url: "redis://redis.example:6379" });
    const keys = loadConfig({ JWT_SECRET: SECRET, PASSPHRASE_KEYS_FILE: tempFile("keys", `${KEY}, ${OLD_KEY}\n`) });
    expect(keys.passphraseKeys.keys).toHaveLength(2);
  });
});

describe("the rules between variables see a value from a file as set", () => {
  it("a JWT_SECRET_FILE is a key source: with JWT_JWKS_URL it is one too many, and it ends demo mode", () => {
    const both = configError({ JWT_SECRET_FILE: tempFile("jwt", SECRET), JWT_JWKS_URL: "https://idp.example/jwks" });
    expect(both.message).toMatch(/^JWT_JWKS_URL cannot be combined with JWT_SECRET/);
    expect(loadConfig({ JWT_SECRET_FILE: tempFile("jwt", SECRET) }).demo).toBe(false);
  });

  it("production takes its keys and its Redis from files", () => {
    const config = loadConfig({
      NODE_ENV: "production",
      JWT_SECRET_FILE: tempFile("jwt", `${SECRET}\n`),
      REDIS_URL_FILE: tempFile("url", "redis://redis.example:6379\n"),
      PASSPHRASE_KEYS_FILE: tempFile("pk", `${KEY}\n`),
      SECRETS_KEYS_FILE: tempFile("sk", `${OLD_KEY}\n`),
    });
    expect(config.developmentKeys).toEqual([]);
    expect(config.passphraseKeys.current.bytes.toString("base64")).toBe(KEY);
    expect(config.secretsKeys.current.bytes.toString("base64")).toBe(OLD_KEY);
  });

  it("a webhook secret from a file must still differ from the JWT_SECRET", () => {
    const e = configError({
      JWT_SECRET: SECRET,
      CONVERSION_WEBHOOK_BASE: "https://boardline.example.com",
      CONVERSION_WEBHOOK_SECRET_FILE: tempFile("webhook", `${SECRET}\n`),
    });
    expect(e.message).toBe("CONVERSION_WEBHOOK_SECRET must not be the same as JWT_SECRET");
  });
});

describe("the CLI reads them through the same reader", () => {
  const world: CliWorld = { prefix: uniquePrefix("cli-files"), jwtSecret: "c".repeat(40) };
  const { cli, ok } = cliRunner(() => world);
  afterAll(() => deleteKeysWithPrefix(redisUrl(), world.prefix));

  it("its Redis settings and token settings", async () => {
    const url = tempFile("url", `${redisUrl()}\n`);
    expect(loadRedisSettings({ REDIS_URL_FILE: url }).redis).toEqual({ mode: "single", url: redisUrl() });
    expect(loadTokenSettings({ JWT_SECRET_FILE: tempFile("jwt", `${world.jwtSecret}\n`) }).secret).toEqual(
      new TextEncoder().encode(world.jwtSecret),
    );
    const env = { REDIS_URL_FILE: url, REDIS_KEY_PREFIX: world.prefix };
    expect(await withStore((store) => store.getMuteState("p", "c"), env)).toEqual({});
  });

  it("`boardline token mint` signs with JWT_SECRET_FILE's secret, and refuses both forms at once", async () => {
    const jwtSecretFile = tempFile("jwt", `${world.jwtSecret}\n`);
    const token = (
      await ok(["token", "mint", "--project", "acme"], {
        env: { JWT_SECRET: undefined, JWT_SECRET_FILE: jwtSecretFile },
      })
    ).trim();
    expect(token).toMatch(JWT);
    await jwtVerify(token, new TextEncoder().encode(world.jwtSecret));
    const both = await cli(["token", "mint", "--project", "acme"], { env: { JWT_SECRET_FILE: jwtSecretFile } });
    expect(both.code).not.toBe(0);
    expect(oneLine(both.stderr)).toContain("JWT_SECRET and JWT_SECRET_FILE are both set");
    expect(both.stderr).not.toContain(world.jwtSecret);
  });
});

describe("the real process in production, every secret from a file", () => {
  const prefix = uniquePrefix("secret-files");
  let main: MainProcess | undefined;
  afterAll(async () => {
    main?.proc.kill("SIGKILL");
    await deleteKeysWithPrefix(redisUrl(), prefix);
  });

  it("starts, serves and is ready", async () => {
    const dir = mkdtempSync(join(tmpdir(), "boardline-secrets-"));
    const write = (name: string, content: string) => {
      const path = join(dir, name);
      writeFileSync(path, `${content}\n`, { mode: 0o600 });
      return path;
    };
    const base64 = (purpose: string) => developmentKeyRing(purpose).current.bytes.toString("base64");
    main = await startMainProcess({
      NODE_ENV: "production",
      REDIS_KEY_PREFIX: prefix,
      LOG_LEVEL: "info",
      // The harness's development keys count as set: empty, they count as not set, so only the files give them.
      PASSPHRASE_KEYS: "",
      SECRETS_KEYS: "",
      JWT_SECRET_FILE: write("jwt", "f".repeat(48)),
      REDIS_URL_FILE: write("redis-url", redisUrl()),
      // The development keys, so the records agree with what the other tests write.
      PASSPHRASE_KEYS_FILE: write("passphrase-keys", base64("PASSPHRASE_KEYS")),
      SECRETS_KEYS_FILE: write("secrets-keys", base64("SECRETS_KEYS")),
    });
    const url = `${main.url}/readyz`;
    await eventually(async () => (await fetch(url)).status === 200, 10_000, "/readyz 200");
    expect(main.output()).not.toContain("f".repeat(48));
  });
});
