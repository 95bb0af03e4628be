/**
 * What deploy/compose.yaml and its deploy/compose/ files must agree on, as a list of problems
 * (empty: none): the services, boardline's environment as boardline itself reads it, the
 * Sentinels' group and port, HAProxy's servers, protocol and health check, the stop timings, and
 * the non-root rule, and what Prometheus scrapes and which rules it reads. compose.test.ts runs it
 * on the files and on broken copies.
 */
import { parse } from "yaml";
import type { Config } from "../../src/config/index.js";
import { readsVariable, SECRET_VARIABLES } from "../../src/config/secret-variables.js";
import type { VariableName } from "../../src/config/variables.js";
import type { KubeObject } from "./kustomize.js";
import { configOf } from "./manifest-checks.js";

export const SERVICES = [
  "boardline-1",
  "boardline-2",
  "haproxy",
  "prometheus",
  "redis-primary",
  "redis-replica",
  "sentinel-1",
  "sentinel-2",
  "sentinel-3",
];

/** The files the stack is made of, as text (haproxy.cfg, sentinel.conf) or parsed (compose.yaml). */
export interface Stack {
  readonly compose: KubeObject;
  readonly haproxyCfg: string;
  readonly sentinelConf: string;
  readonly prometheusYml: string;
}

/** Compose's interpolation of `${VAR}`, `${VAR:-default}` and `${VAR:?error}` from `env`. */
export function interpolate(text: string, env: Record<string, string>): string {
  return text.replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_, name: string, op?: string, arg?: string) => {
    const value = env[name];
    if (value !== undefined && value !== "") return value;
    if (op === "?") throw new Error(`${name}: ${arg}`);
    return op === "-" ? (arg ?? "") : "";
  });
}

/**
 * Where a service's secrets are inside it (`/run/secrets/<target>`, the target being the
 * secret's name unless it says otherwise) and the host files they come from, interpolated from `env`.
 */
export function serviceSecrets(stack: Stack, service: string, env: Record<string, string>): Map<string, string> {
  const found = new Map<string, string>();
  for (const entry of stack.compose.services[service]?.secrets ?? []) {
    const source = typeof entry === "string" ? entry : entry.source;
    const target = typeof entry === "string" ? entry : (entry.target ?? entry.source);
    const file = stack.compose.secrets?.[source]?.file;
    if (typeof file !== "string") throw new Error(`${service}: secret ${source} has no file`);
    found.set(target.startsWith("/") ? target : `/run/secrets/${target}`, interpolate(file, env));
  }
  return found;
}

/**
 * A boardline replica's environment, interpolated from `env`, with each `NAME_FILE` that names
 * one of its secrets pointing at the host file compose binds there (an absolute path in `env`), so
 * boardline reads what the replica would.
 */
export function replicaEnv(stack: Stack, service: string, env: Record<string, string>): Record<string, string> {
  const raw = stack.compose.services[service]?.environment ?? {};
  const secrets = serviceSecrets(stack, service, env);
  return Object.fromEntries(
    Object.entries(raw).map(([k, v]) => {
      const value = interpolate(String(v), env);
      return [k, (k.endsWith("_FILE") && secrets.get(value)) || value];
    }),
  );
}

const seconds = (d: string | undefined) => {
  const m = /^(\d+)s$/.exec(d ?? "");
  return m === null ? Number.NaN : Number(m[1]);
};

export function composeProblems(stack: Stack, env: Record<string, string>): string[] {
  const found: string[] = [];
  const check = (ok: boolean, problem: string) => {
    if (!ok) found.push(problem);
  };
  const services = stack.compose.services ?? {};
  check(JSON.stringify(Object.keys(services).sort()) === JSON.stringify(SERVICES), `services must be ${SERVICES}`);
  for (const [name, s] of Object.entries<KubeObject>(services)) {
    check(
      /^\$\{[A-Z]+_IMAGE:-[^}]+\}$/.test(s.image ?? ""),
      `${name}: image must be overridable, by a …_IMAGE variable with a default`,
    );
  }
  const replicas = Object.keys(services).filter((n) => n.startsWith("boardline-"));
  const config = configOf(replicaEnv(stack, "boardline-1", env));
  if (typeof config === "string") return [...found, `boardline refuses the replicas' configuration: ${config}`];
  for (const name of replicas) {
    const s = services[name];
    const unknown = Object.keys(s.environment ?? {}).filter((v) => !readsVariable(v));
    check(unknown.length === 0, `${name}: variables boardline does not read: ${unknown}`);
    const secrets = serviceSecrets(stack, name, env);
    const unmounted = Object.entries<string>(s.environment ?? {}).filter(
      ([k, v]) => k.endsWith("_FILE") && v.startsWith("/run/secrets/") && !secrets.has(v),
    );
    check(unmounted.length === 0, `${name}: no secret mounted at ${unmounted.map(([, v]) => v)}`);
    check(
      Object.keys(s.environment ?? {}).every((k) => !SECRET_VARIABLES.includes(k as VariableName)),
      `${name}: secrets belong in files (NAME_FILE), not in the environment`,
    );
    check(s.user === "10001" && s.read_only === true, `${name}: must run as user 10001 on a read-only root`);
    check(JSON.stringify(s.cap_drop) === '["ALL"]', `${name}: must drop ALL capabilities`);
    // HAProxy is the way in; the metrics port (/metrics) stays on the compose network.
    check(s.ports === undefined, `${name}: must publish no port (HAProxy publishes the public one)`);
    const needS = (config.shutdownDelayMs + config.shutdownGraceMs + config.redisCommandTimeoutMs + 2000) / 1000;
    check(seconds(s.stop_grace_period) >= needS, `${name}: stop_grace_period ${s.stop_grace_period} < ${needS} s`);
  }
  found.push(...sentinelProblems(stack, config), ...haproxyProblems(stack, config, replicas));
  found.push(...lockedRedisProblems(stack, config), ...prometheusProblems(stack, config, replicas));
  return found;
}

/** Where compose.yaml's Prometheus finds the alert rules, from deploy/: deploy/monitoring/alerts.yaml. */
export const ALERT_RULES_FROM_DEPLOY = "./monitoring/alerts.yaml";

/**
 * The host path (relative to deploy/, as compose.yaml's volumes are) that `path` inside the
 * service comes from, through its bind mounts; undefined when none covers it.
 */
export function hostPath(service: KubeObject, path: string): string | undefined {
  for (const volume of (service.volumes ?? []) as string[]) {
    const [from, to] = volume.split(":") as [string, string | undefined];
    if (to === undefined || !from.startsWith(".")) continue;
    if (path === to) return from;
    if (path.startsWith(`${to}/`)) return `${from}${path.slice(to.length)}`;
  }
  return undefined;
}

/** A Prometheus file glob (`*`, `?`, `[...]`) as a regular expression of one path. */
function globRegExp(glob: string): RegExp {
  const body = glob
    .replace(/[.+^${}()|\\]/g, "\\$&")
    .replace(/\*/g, "[^/]*")
    .replace(/\?/g, "[^/]");
  return new RegExp(`^${body}$`);
}

/** Prometheus: scrapes each replica's metrics port, reads the alert rules, and is reached from loopback only. */
function prometheusProblems(stack: Stack, config: Config, replicas: string[]): string[] {
  const found: string[] = [];
  const check = (ok: boolean, problem: string) => {
    if (!ok) found.push(problem);
  };
  const service = stack.compose.services?.prometheus;
  if (service === undefined) return ["no prometheus service"];
  const args = (service.command ?? []) as string[];
  const configFile = args.find((a) => a.startsWith("--config.file="))?.slice("--config.file=".length);
  check(
    configFile !== undefined && hostPath(service, configFile) === "./compose/prometheus.yml",
    "prometheus must read compose/prometheus.yml (--config.file, mounted)",
  );
  const prom = parse(stack.prometheusYml) as KubeObject;
  const jobs = (prom.scrape_configs ?? []) as KubeObject[];
  const targets = jobs.flatMap((j) =>
    (j.static_configs ?? []).flatMap((c: KubeObject) =>
      (c.targets ?? []).map((t: string) => `${t}${j.metrics_path ?? "/metrics"}`),
    ),
  );
  const want = replicas.map((r) => `${r}:${config.metricsPort}/metrics`);
  check(
    JSON.stringify([...targets].sort()) === JSON.stringify(want.sort()),
    `prometheus must scrape ${want.join(" and ")}, scrapes ${targets.join(", ") || "nothing"}`,
  );
  const rules = ((prom.rule_files ?? []) as string[]).map((r) => hostPath(service, r));
  check(
    rules.some((r) => r !== undefined && globRegExp(r).test(ALERT_RULES_FROM_DEPLOY)),
    `prometheus must read the alert rules, ${ALERT_RULES_FROM_DEPLOY} (rule_files, mounted)`,
  );
  check(
    ((service.ports ?? []) as string[]).every((p) => p.startsWith("127.0.0.1:")),
    "prometheus: publish on loopback only (it has no authentication)",
  );
  return found;
}

/** The command a service runs, as one line (a list, or a shell's script). */
function commandLine(service: KubeObject | undefined): string {
  const command = service?.command;
  return Array.isArray(command) ? command.join(" ") : String(command ?? "");
}

/**
 * Redis locked: the primary and the replica require the password (and give it to each other), the
 * Sentinels require it and give it to Redis and to each other, every one of them reads it from the
 * same secret, and boardline gives it to both.
 */
function lockedRedisProblems(stack: Stack, config: Config): string[] {
  const found: string[] = [];
  const services = stack.compose.services ?? {};
  const readsPassword = (name: string) =>
    (services[name]?.secrets ?? []).includes("redis_password") &&
    commandLine(services[name]).includes("/run/secrets/redis_password");
  for (const name of ["redis-primary", "redis-replica"]) {
    const line = commandLine(services[name]);
    if (!readsPassword(name) || !/--requirepass\b/.test(line) || !/--masterauth\b/.test(line)) {
      found.push(`${name}: must require the password (requirepass, masterauth) from the redis_password secret`);
    }
    if (/--protected-mode\W+no\b/.test(line)) found.push(`${name}: must not turn protected mode off`);
  }
  for (const name of Object.keys(services).filter((n) => n.startsWith("sentinel-"))) {
    const line = commandLine(services[name]);
    if (!readsPassword(name) || !/requirepass/.test(line) || !/sentinel auth-pass boardline/.test(line)) {
      found.push(`${name}: must require the password and give it to Redis (auth-pass) from the redis_password secret`);
    }
  }
  if (
    config.redis?.mode === "sentinel" &&
    (config.redis.sentinelPassword === undefined || config.redis.password === undefined)
  ) {
    found.push(
      "boardline must give the password to Redis (REDIS_URL_FILE) and to the Sentinels (REDIS_SENTINEL_PASSWORD_FILE)",
    );
  }
  return found;
}

function sentinelProblems(stack: Stack, config: Config): string[] {
  const found: string[] = [];
  const redis = config.redis;
  if (redis?.mode !== "sentinel") return ["boardline must find Redis through the Sentinels"];
  const port = Number(/^port (\d+)$/m.exec(stack.sentinelConf)?.[1]);
  const monitor = /^sentinel monitor (\S+) (\S+) (\d+) (\d+)$/m.exec(stack.sentinelConf);
  const sentinels = redis.sentinels.map((s) => `${s.host}:${s.port}`).sort();
  const expected = Object.keys(stack.compose.services)
    .filter((n) => n.startsWith("sentinel-"))
    .map((n) => `${n}:${port}`);
  if (JSON.stringify(sentinels) !== JSON.stringify(expected)) found.push(`REDIS_SENTINELS must be ${expected}`);
  if (monitor?.[1] !== redis.masterName)
    found.push(`REDIS_SENTINEL_NAME ${redis.masterName} is not the monitored group`);
  if (monitor?.[2] !== "redis-primary" || monitor[3] !== "6379")
    found.push("the Sentinels must monitor redis-primary:6379");
  return found;
}

function haproxyProblems(stack: Stack, config: Config, replicas: string[]): string[] {
  const cfg = stack.haproxyCfg;
  const found: string[] = [];
  const check = (ok: boolean, problem: string) => {
    if (!ok) found.push(problem);
  };
  const servers = [...cfg.matchAll(/^\s*server (\S+) (\S+):(\d+)/gm)].map((m) => `${m[2]}:${m[3]}`);
  check(
    JSON.stringify(servers) === JSON.stringify(replicas.map((r) => `${r}:${config.port}`)),
    `haproxy's servers must be the replicas on PORT ${config.port}: ${servers}`,
  );
  const defaults = /^\s*default-server (.*)$/m.exec(cfg)?.[1] ?? "";
  check(/\bproto h2\b/.test(defaults), "haproxy must speak h2 to the replicas (proto h2)");
  const healthPort = config.metricsPort ?? config.port;
  check(
    new RegExp(`^\\s*http-check connect port ${healthPort} proto h1$`, "m").test(cfg),
    `haproxy must check over HTTP/1.1 on port ${healthPort}`,
  );
  check(/^\s*http-check send meth GET uri \/readyz .*hdr host \S+/m.test(cfg), "haproxy must GET /readyz with a Host");
  check(/^\s*option http-no-delay$/m.test(cfg), "haproxy needs option http-no-delay for HTTP/1.1 clients");
  const inter = Number(/\binter (\d+)s\b/.exec(defaults)?.[1]);
  const fall = Number(/\bfall (\d+)\b/.exec(defaults)?.[1]);
  check(
    (inter * fall + inter) * 1000 <= config.shutdownDelayMs,
    `inter × fall + inter (${inter * fall + inter} s) must fit in SHUTDOWN_DELAY_MS`,
  );
  const bind = /^\s*bind :(\d+)$/m.exec(cfg)?.[1];
  const haproxy = stack.compose.services.haproxy ?? {};
  check(
    (haproxy.ports ?? []).some((p: string) => String(p).endsWith(`:${bind}`)),
    `the haproxy service must publish its bind port ${bind}`,
  );
  check(
    haproxy.stop_signal === "SIGUSR1" && /^\s*hard-stop-after \d+s$/m.test(cfg),
    "haproxy (PID 1 ignores SIGTERM) must stop on SIGUSR1 with hard-stop-after",
  );
  return found;
}
