/**
 * deploy/compose.yaml and deploy/compose/, without starting containers (deploy/compose/smoke.sh
 * does that, offline, in about two minutes: too long for the suite): the services, boardline's
 * environment as boardline reads it, the Sentinels, HAProxy's configuration (which Debian's
 * haproxy must accept), stop timings, the non-root rule, and Prometheus (what it scrapes, the
 * alert rules it reads; Debian's promtool must accept its configuration) agree. Each check also
 * fails on a broken copy.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { existsSync } from "node:fs";
import {
  ALERT_RULES_FROM_DEPLOY,
  composeProblems,
  hostPath,
  interpolate,
  replicaEnv,
  type Stack,
} from "./compose-checks.js";
import { configOf } from "./manifest-checks.js";

const DEPLOY = fileURLToPath(new URL("../../deploy/", import.meta.url));
const read = (file: string) => readFileSync(`${DEPLOY}${file}`, "utf8");
const stack = (): Stack => ({
  // Through JSON: the replicas share one YAML anchor, and a broken copy must change only one of them.
  compose: JSON.parse(JSON.stringify(parse(read("compose.yaml")))),
  haproxyCfg: read("compose/haproxy.cfg"),
  sentinelConf: read("compose/sentinel.conf"),
  prometheusYml: read("compose/prometheus.yml"),
});
/** What an operator makes before `up`: the directory of the secret files (docs/deploy.md, "Compose"). */
const SECRETS = mkdtempSync(join(tmpdir(), "boardline-compose-secrets-"));
writeFileSync(join(SECRETS, "JWT_SECRET"), `${"y".repeat(48)}\n`);
writeFileSync(join(SECRETS, "PASSPHRASE_KEYS"), `${Buffer.alloc(32, 1).toString("base64")}\n`);
writeFileSync(join(SECRETS, "SECRETS_KEYS"), `${Buffer.alloc(32, 2).toString("base64")}\n`);
const REDIS_PASSWORD = "c0ffee".repeat(8);
writeFileSync(join(SECRETS, "REDIS_PASSWORD"), `${REDIS_PASSWORD}\n`);
writeFileSync(join(SECRETS, "REDIS_URL"), `redis://:${REDIS_PASSWORD}@redis:6379\n`);
const ENV = { BOARDLINE_SECRETS: SECRETS };

describe("deploy/compose.yaml", () => {
  it("agrees with itself, with haproxy.cfg and sentinel.conf, and with boardline's configuration table", () => {
    expect(composeProblems(stack(), ENV)).toEqual([]);
    const config = configOf(replicaEnv(stack(), "boardline-2", ENV));
    expect(typeof config === "string" ? config : config.redis?.mode).toBe("sentinel");
  });

  it("needs the secret files' directory, runs the image deploy/image/build.sh tags, and the images it is given", () => {
    expect(() => replicaEnv(stack(), "boardline-1", {})).toThrow(/^BOARDLINE_SECRETS: set BOARDLINE_SECRETS/);
    // Each secret from its file: with one missing, boardline refuses to start, naming it.
    const { PASSPHRASE_KEYS_FILE: _, ...withoutKeys } = replicaEnv(stack(), "boardline-1", ENV);
    expect(configOf(withoutKeys)).toMatch(/^PASSPHRASE_KEYS is required when NODE_ENV=production/);
    // By default the image deploy/image/build.sh tags: localhost/boardline:<package.json version>.
    const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
    expect(interpolate(stack().compose.services["boardline-1"].image, {})).toBe(`localhost/boardline:${version}`);
    const image = stack().compose.services["redis-primary"].image;
    expect(interpolate(image, {})).toBe("docker.io/library/redis:7.0-bookworm");
    expect(interpolate(image, { REDIS_IMAGE: "localhost/boardline-compose-redis" })).toBe(
      "localhost/boardline-compose-redis",
    );
  });

  it("Debian's haproxy accepts haproxy.cfg", () => {
    // The replicas' names resolve only on the compose network: haproxy warns and starts them unresolved.
    const out = execFileSync("haproxy", ["-c", "-f", `${DEPLOY}compose/haproxy.cfg`], {
      encoding: "utf8",
      stdio: "pipe",
    });
    expect(out).toMatch(/Configuration file is valid/);
  });

  it("Debian's promtool accepts compose/prometheus.yml, with the files compose mounts where it mounts them", () => {
    // The container's paths, made the host's: the configuration as the mounts show it to Prometheus.
    const service = stack().compose.services.prometheus;
    const prom = parse(read("compose/prometheus.yml"));
    prom.rule_files = prom.rule_files.map((r: string) => join(DEPLOY, hostPath(service, r) as string));
    const dir = mkdtempSync(join(tmpdir(), "boardline-prometheus-"));
    writeFileSync(join(dir, "prometheus.yml"), JSON.stringify(prom));
    const out = execFileSync("promtool", ["check", "config", join(dir, "prometheus.yml")], {
      encoding: "utf8",
      stdio: "pipe",
    });
    expect(out).toMatch(/SUCCESS: .*prometheus.yml is valid prometheus config file syntax/);
    // The rules, once they are there, are loaded and checked with it.
    if (existsSync(join(DEPLOY, ALERT_RULES_FROM_DEPLOY))) expect(out).toMatch(/SUCCESS: 1 rule files found/);
  });

  it("each check fails on a copy that breaks it", () => {
    const broken = (edit: (s: Stack) => Stack) => composeProblems(edit(stack()), ENV);
    const withCfg = (from: string, to: string) => (s: Stack) => ({ ...s, haproxyCfg: s.haproxyCfg.replace(from, to) });
    expect(broken(withCfg("boardline-2:8080", "boardline-2:8081"))[0]).toMatch(
      /^haproxy's servers must be the replicas on PORT 8080/,
    );
    expect(broken(withCfg("proto h2 check", "check"))).toEqual(["haproxy must speak h2 to the replicas (proto h2)"]);
    expect(broken(withCfg("connect port 9090 proto h1", "connect port 8080"))).toEqual([
      "haproxy must check over HTTP/1.1 on port 9090",
    ]);
    expect(broken(withCfg("fall 2", "fall 5"))).toEqual(["inter × fall + inter (6 s) must fit in SHUTDOWN_DELAY_MS"]);
    expect(broken(withCfg("option http-no-delay", ""))).toEqual([
      "haproxy needs option http-no-delay for HTTP/1.1 clients",
    ]);
    expect(
      broken((s) => ({ ...s, sentinelConf: s.sentinelConf.replace("monitor boardline", "monitor mymaster") })),
    ).toEqual(["REDIS_SENTINEL_NAME boardline is not the monitored group"]);
    const edit = (f: (c: Stack["compose"]) => void) => (s: Stack) => {
      f(s.compose);
      return s;
    };
    expect(broken(edit((c) => (c.services["boardline-2"].stop_grace_period = "12s")))).toEqual([
      "boardline-2: stop_grace_period 12s < 18 s",
    ]);
    expect(broken(edit((c) => (c.services["boardline-2"].ports = ["127.0.0.1:9090:9090"])))).toEqual([
      "boardline-2: must publish no port (HAProxy publishes the public one)",
    ]);
    expect(broken(edit((c) => delete c.services["boardline-1"].read_only))).toEqual([
      "boardline-1: must run as user 10001 on a read-only root",
    ]);
    expect(broken(edit((c) => (c.services["boardline-1"].environment.REDIS_SENTINEL = "x")))).toEqual([
      "boardline-1: variables boardline does not read: REDIS_SENTINEL",
    ]);
    expect(
      broken(edit((c) => (c.services["boardline-1"].environment.REDIS_SENTINELS = "sentinel-1,sentinel-2"))),
    ).toEqual(["REDIS_SENTINELS must be sentinel-1:26379,sentinel-2:26379,sentinel-3:26379"]);
    expect(
      broken(
        edit(
          (c) => (c.services["boardline-2"].secrets = ["jwt_secret", "passphrase_keys", "redis_url", "redis_password"]),
        ),
      ),
    ).toEqual(["boardline-2: no secret mounted at /run/secrets/secrets_keys"]);
    expect(broken(edit((c) => (c.services["boardline-1"].environment.JWT_SECRET = "${JWT_SECRET}")))).toEqual([
      "boardline-1: secrets belong in files (NAME_FILE), not in the environment",
    ]);
    expect(
      broken(edit((c) => (c.services["redis-replica"].command = ["redis-server", "--protected-mode", "no"]))),
    ).toEqual([
      "redis-replica: must require the password (requirepass, masterauth) from the redis_password secret",
      "redis-replica: must not turn protected mode off",
    ]);
    expect(broken(edit((c) => delete c.services["sentinel-2"].secrets))).toEqual([
      "sentinel-2: must require the password and give it to Redis (auth-pass) from the redis_password secret",
    ]);
    expect(broken(edit((c) => delete c.services["boardline-1"].environment.REDIS_SENTINEL_PASSWORD_FILE))).toEqual([
      "boardline must give the password to Redis (REDIS_URL_FILE) and to the Sentinels (REDIS_SENTINEL_PASSWORD_FILE)",
    ]);
    expect(broken(edit((c) => delete c.services.haproxy.stop_signal))).toEqual([
      "haproxy (PID 1 ignores SIGTERM) must stop on SIGUSR1 with hard-stop-after",
    ]);
    expect(broken(edit((c) => (c.services.haproxy.image = "docker.io/library/haproxy:2.6")))).toEqual([
      "haproxy: image must be overridable, by a …_IMAGE variable with a default",
    ]);
    const withProm = (from: string, to: string) => (s: Stack) => ({
      ...s,
      prometheusYml: s.prometheusYml.replace(from, to),
    });
    expect(broken(withProm("boardline-2:9090", "boardline-2:8080"))).toEqual([
      "prometheus must scrape boardline-1:9090/metrics and boardline-2:9090/metrics, scrapes boardline-1:9090/metrics, boardline-2:8080/metrics",
    ]);
    expect(broken(withProm("/etc/boardline/monitoring/alerts.yaml", "/etc/prometheus/alerts.yaml"))).toEqual([
      "prometheus must read the alert rules, ./monitoring/alerts.yaml (rule_files, mounted)",
    ]);
    expect(broken(edit((c) => (c.services.prometheus.volumes = c.services.prometheus.volumes.slice(0, 1))))).toEqual([
      "prometheus must read the alert rules, ./monitoring/alerts.yaml (rule_files, mounted)",
    ]);
    expect(broken(edit((c) => (c.services.prometheus.command = ["--storage.tsdb.path=/prometheus"])))).toEqual([
      "prometheus must read compose/prometheus.yml (--config.file, mounted)",
    ]);
    expect(broken(edit((c) => (c.services.prometheus.ports = ["9090:9090"])))).toEqual([
      "prometheus: publish on loopback only (it has no authentication)",
    ]);
  });
});
