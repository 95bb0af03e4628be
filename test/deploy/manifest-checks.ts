/**
 * What a rendering of deploy/kubernetes/ must keep, as a list of problems (empty: none), so the
 * test can show both that the manifests pass and that a broken copy fails: the probes, the drain
 * arithmetic, the non-root rule, the Service's h2c port, resources sized from the bench, Redis's
 * passwords read from the mounted Secret, and environment variables that boardline reads and
 * accepts together (its own loadConfig decides).
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Config, ConfigError, loadConfig } from "../../src/config/index.js";
import { fileVariable, readsVariable, SECRET_VARIABLES } from "../../src/config/secret-variables.js";
import type { VariableName } from "../../src/config/variables.js";
import type { KubeObject } from "./kustomize.js";

/** At least the highest peak RSS under load and the RSS of one open gRPC watch that docs/performance.md reports. */
export const PEAK_RSS_BYTES = 155e6;
export const WATCH_RSS_BYTES = 60e3;
/** After the grace: QUIT to Redis (≤ REDIS_COMMAND_TIMEOUT_MS) and the last spans' export (≤ 2 s, otel-sdk.ts). */
const SPAN_FLUSH_MS = 2_000;

export function only(objects: KubeObject[], kind: string): KubeObject {
  const found = objects.filter((o) => o.kind === kind);
  if (found.length !== 1) throw new Error(`${found.length} ${kind} objects, expected 1`);
  return found[0] as KubeObject;
}

/** Where the pod mounts a Secret as files: the mount path, and the Secret's name. */
export function secretMounts(objects: KubeObject[]): { path: string; secretName: string }[] {
  const pod = only(objects, "Deployment").spec.template.spec;
  return (pod.containers[0].volumeMounts ?? []).flatMap((m: KubeObject) => {
    const volume = (pod.volumes ?? []).find((v: KubeObject) => v.name === m.name);
    return volume?.secret === undefined ? [] : [{ path: m.mountPath, secretName: volume.secret.secretName }];
  });
}

/**
 * The environment a pod gets from the rendered ConfigMap and the given Secret data: through
 * envFrom, or as files where the Secret is mounted. Those files are written to a directory of
 * this machine, and a `NAME_FILE` variable pointing into the mount points there instead, so
 * boardline reads what the pod would (a key the Secret lacks is a file that is not there).
 */
export function podEnvironment(objects: KubeObject[], secret: Record<string, string>): Record<string, string> {
  const container = only(objects, "Deployment").spec.template.spec.containers[0];
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? []) {
    if (from.configMapRef !== undefined) {
      const cm = objects.find((o) => o.kind === "ConfigMap" && o.metadata.name === from.configMapRef.name);
      if (cm === undefined) throw new Error(`envFrom names ConfigMap ${from.configMapRef.name}, which is not rendered`);
      Object.assign(env, cm.data);
    }
    if (from.secretRef !== undefined) Object.assign(env, secret);
  }
  for (const e of container.env ?? []) if (typeof e.value === "string") env[e.name] = e.value;
  for (const { path } of secretMounts(objects)) {
    const dir = mkdtempSync(join(tmpdir(), "boardline-pod-secret-"));
    for (const [key, value] of Object.entries(secret)) writeFileSync(join(dir, key), value);
    for (const [name, value] of Object.entries(env)) {
      if (name.endsWith("_FILE") && value.startsWith(`${path}/`)) env[name] = join(dir, value.slice(path.length + 1));
    }
  }
  return env;
}

/** Every variable name the pod is given that boardline does not read. */
export function unknownVariables(objects: KubeObject[], secret: Record<string, string>): string[] {
  const container = only(objects, "Deployment").spec.template.spec.containers[0];
  const names = [
    ...Object.keys(podEnvironment(objects, secret)),
    ...(container.env ?? []).map((e: KubeObject) => e.name),
  ];
  return names.filter((n) => !readsVariable(n));
}

/** boardline's own reading of the pod's environment: a ConfigError is a problem. */
export function configOf(env: Record<string, string>): Config | string {
  try {
    return loadConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) return e.message;
    throw e;
  }
}

export function problems(objects: KubeObject[], config: Config): string[] {
  const deployment = only(objects, "Deployment");
  const pod = deployment.spec.template.spec;
  const container = pod.containers[0];
  const found: string[] = [];
  const check = (ok: boolean, problem: string) => {
    if (!ok) found.push(problem);
  };
  const portNamed = (port: string | number) =>
    typeof port === "number" ? port : container.ports?.find((p: KubeObject) => p.name === port)?.containerPort;

  // Probes: on the port where /healthz and /readyz are (METRICS_PORT when set).
  const healthPort = config.metricsPort ?? config.port;
  for (const [probe, path] of [
    ["startupProbe", "/readyz"],
    ["readinessProbe", "/readyz"],
    ["livenessProbe", "/healthz"],
  ] as const) {
    const get = container[probe]?.httpGet;
    check(get?.path === path, `${probe} must GET ${path}`);
    check(get !== undefined && portNamed(get.port) === healthPort, `${probe} must use port ${healthPort}`);
  }

  // Drain: the kubelet's countdown covers preStop, the delay, the grace, Redis's QUIT and the span flush.
  const preStopMs = (container.lifecycle?.preStop?.sleep?.seconds ?? 0) * 1000;
  check(container.lifecycle?.preStop?.exec === undefined, "preStop exec needs a shell, which the image has not");
  const needMs =
    preStopMs + config.shutdownDelayMs + config.shutdownGraceMs + config.redisCommandTimeoutMs + SPAN_FLUSH_MS;
  const graceS = pod.terminationGracePeriodSeconds;
  check(
    typeof graceS === "number" && graceS * 1000 >= needMs,
    `terminationGracePeriodSeconds ${graceS} < ${needMs / 1000} s (preStop ${preStopMs} + SHUTDOWN_DELAY_MS ${config.shutdownDelayMs} + SHUTDOWN_GRACE_MS ${config.shutdownGraceMs} + REDIS_COMMAND_TIMEOUT_MS ${config.redisCommandTimeoutMs} + ${SPAN_FLUSH_MS} ms)`,
  );

  // Non-root, read-only, nothing more than it needs.
  const sc = container.securityContext ?? {};
  const uid = sc.runAsUser ?? pod.securityContext?.runAsUser;
  check((sc.runAsNonRoot ?? pod.securityContext?.runAsNonRoot) === true, "runAsNonRoot must be true");
  check(uid === 10001, `runAsUser must be 10001 (the image's user), is ${uid}`);
  check(sc.readOnlyRootFilesystem === true, "readOnlyRootFilesystem must be true");
  check(sc.allowPrivilegeEscalation === false, "allowPrivilegeEscalation must be false");
  check(sc.privileged !== true, "privileged must not be true");
  check(
    JSON.stringify(sc.capabilities?.drop) === '["ALL"]' && sc.capabilities?.add === undefined,
    "capabilities: drop ALL, add none",
  );
  const seccomp = sc.seccompProfile?.type ?? pod.securityContext?.seccompProfile?.type;
  check(seccomp === "RuntimeDefault", "seccompProfile must be RuntimeDefault");

  found.push(...spreadProblems(objects, config), ...resourceProblems(container, config));
  found.push(...redisAuthProblems(objects, config));
  return found;
}

/**
 * Redis locked, its secrets in files: no secret variable is in the ConfigMap (the pods' environment,
 * readable by whoever reads ConfigMaps), and boardline logs in to every Redis server it talks to with
 * a password read from the mounted Secret: the master or nodes through REDIS_URL_FILE, and with
 * Sentinel the Sentinels through REDIS_SENTINEL_PASSWORD_FILE.
 */
function redisAuthProblems(objects: KubeObject[], config: Config): string[] {
  const found: string[] = [];
  const env = (only(objects, "ConfigMap").data ?? {}) as Record<string, string>;
  const [mount] = secretMounts(objects);
  for (const name of SECRET_VARIABLES.filter((n) => env[n] !== undefined)) {
    found.push(`${name} belongs in the Secret, read through ${fileVariable(name)}, not in the ConfigMap`);
  }
  const fromSecret = (name: VariableName) =>
    mount !== undefined && env[fileVariable(name)]?.startsWith(`${mount.path}/`);
  const redis = config.redis;
  const password = redis?.mode === "single" ? new URL(redis.url).password : redis?.password;
  if (!password || !fromSecret("REDIS_URL")) {
    found.push("boardline must log in to Redis with the password of REDIS_URL, read from the Secret (REDIS_URL_FILE)");
  }
  if (redis?.mode === "sentinel" && (!redis.sentinelPassword || !fromSecret("REDIS_SENTINEL_PASSWORD"))) {
    found.push(
      "boardline must log in to the Sentinels with their password, read from the Secret (REDIS_SENTINEL_PASSWORD_FILE)",
    );
  }
  return found;
}

/** Replicas, spread, selectors, the h2c Service, the metrics annotations, the PDB and the HPA. */
function spreadProblems(objects: KubeObject[], config: Config): string[] {
  const deployment = only(objects, "Deployment");
  const container = deployment.spec.template.spec.containers[0];
  const labels = deployment.spec.template.metadata.labels ?? {};
  const selects = (selector: Record<string, string> | undefined) =>
    selector !== undefined &&
    Object.keys(selector).length > 0 &&
    Object.entries(selector).every(([k, v]) => labels[k] === v);
  const found: string[] = [];
  const check = (ok: boolean, problem: string) => {
    if (!ok) found.push(problem);
  };
  check(deployment.spec.replicas === 3, "the Deployment must run 3 replicas");
  const keys = (deployment.spec.template.spec.topologySpreadConstraints ?? []).map((t: KubeObject) => t.topologyKey);
  check(keys.includes("topology.kubernetes.io/zone"), "no topology spread over zones");
  check(keys.includes("kubernetes.io/hostname"), "no topology spread over nodes");
  check(selects(deployment.spec.selector.matchLabels), "the Deployment's selector must select its pods");

  const service = only(objects, "Service");
  check(selects(service.spec.selector), "the Service must select the pods");
  const targetOf = (p: KubeObject) =>
    typeof p.targetPort === "number"
      ? p.targetPort
      : container.ports?.find((c: KubeObject) => c.name === p.targetPort)?.containerPort;
  const h2c = (service.spec.ports ?? []).filter((p: KubeObject) => p.appProtocol === "kubernetes.io/h2c");
  check(
    h2c.length === 1 && targetOf(h2c[0]) === config.port,
    `the Service needs one port with appProtocol kubernetes.io/h2c onto PORT ${config.port}`,
  );
  // /metrics is where the configuration puts it: METRICS_PORT, or PORT with METRICS_ON_PUBLIC_PORT=true.
  const metricsPort = config.metricsPort ?? config.port;
  const annotations = deployment.spec.template.metadata.annotations ?? {};
  check(
    annotations["prometheus.io/scrape"] === "true" &&
      annotations["prometheus.io/port"] === String(metricsPort) &&
      annotations["prometheus.io/path"] === "/metrics",
    `the pods must be annotated for scraping /metrics on port ${metricsPort}`,
  );
  const metricsTargets = (service.spec.ports ?? []).filter((p: KubeObject) => p.name === "metrics").map(targetOf);
  check(
    metricsTargets.every((port: unknown) => port === metricsPort),
    `the Service's metrics port must lead to /metrics on port ${metricsPort}, not ${metricsTargets}`,
  );

  const pdb = only(objects, "PodDisruptionBudget");
  check(selects(pdb.spec.selector?.matchLabels), "the PodDisruptionBudget must select the pods");
  const hpa = only(objects, "HorizontalPodAutoscaler");
  check(hpa.apiVersion === "autoscaling/v2", "the HorizontalPodAutoscaler must be autoscaling/v2");
  check(
    hpa.spec.scaleTargetRef.kind === "Deployment" && hpa.spec.scaleTargetRef.name === deployment.metadata.name,
    "the HorizontalPodAutoscaler must scale the Deployment",
  );
  check(
    (hpa.spec.metrics ?? []).some((m: KubeObject) => m.type === "Resource" && m.resource?.name === "cpu"),
    "the HorizontalPodAutoscaler must scale on CPU",
  );
  check(hpa.spec.minReplicas >= 2, "the HorizontalPodAutoscaler must keep at least 2 replicas");
  found.push(...networkPolicyProblems(objects, deployment));
  return found;
}

/** Egress a pod needs: DNS (53), Redis and its Sentinels (6379, 26379), HTTPS to the conversion backend (443). */
const ALLOWED_EGRESS_PORTS = new Set([53, 6379, 26379, 443]);

/**
 * The NetworkPolicy: it selects boardline's pods and restricts both directions; in, the public port
 * from anywhere and the metrics port only from the monitoring namespace; out, only the ports above.
 */
function networkPolicyProblems(objects: KubeObject[], deployment: KubeObject): string[] {
  const policy = only(objects, "NetworkPolicy").spec;
  const found: string[] = [];
  const labels = deployment.spec.template.metadata.labels ?? {};
  const selector = policy.podSelector?.matchLabels ?? {};
  if (Object.keys(selector).length === 0 || !Object.entries(selector).every(([k, v]) => labels[k] === v)) {
    found.push("the NetworkPolicy must select boardline's pods");
  }
  const types = policy.policyTypes ?? [];
  if (!types.includes("Ingress") || !types.includes("Egress")) {
    found.push("the NetworkPolicy must restrict both Ingress and Egress");
  }
  const portsOf = (rule: KubeObject): unknown[] => (rule.ports ?? []).map((p: KubeObject) => p.port);
  const ingress: KubeObject[] = policy.ingress ?? [];
  const metrics = ingress.find((r) => portsOf(r).includes("metrics"));
  const from: KubeObject[] = metrics?.from ?? [];
  const fromMonitoring =
    from.length > 0 &&
    from.every((f) => f.namespaceSelector?.matchLabels?.["kubernetes.io/metadata.name"] === "monitoring");
  if (!fromMonitoring) found.push("the NetworkPolicy must let only the monitoring namespace reach the metrics port");
  const admitted = ingress.every((r) => {
    const ports = portsOf(r);
    return ports.length > 0 && ports.every((p) => p === "http" || (p === "metrics" && r === metrics));
  });
  if (!admitted) found.push("the NetworkPolicy may admit only the public port and, from monitoring, the metrics port");
  for (const rule of policy.egress ?? []) {
    const ports = portsOf(rule);
    const wide = ports.length === 0 ? ["any port"] : ports.filter((p) => !ALLOWED_EGRESS_PORTS.has(Number(p)));
    const to = rule.to === undefined ? "anywhere" : "its peers";
    for (const port of wide) {
      found.push(
        `the NetworkPolicy may let out only DNS, Redis and HTTPS (${typeof port === "string" ? port : `port ${port}`} to ${to})`,
      );
    }
  }
  return found;
}

/** Requests and limits: memory for the bench's peak, and for MAX_WATCHES gRPC watches under the limit. */
function resourceProblems(container: KubeObject, config: Config): string[] {
  const { requests = {}, limits = {} } = container.resources ?? {};
  const found: string[] = [];
  const need = PEAK_RSS_BYTES + config.maxWatches * WATCH_RSS_BYTES;
  if (!(bytes(requests.memory) >= PEAK_RSS_BYTES))
    found.push(`memory request ${requests.memory} < the bench's peak RSS`);
  if (!(bytes(limits.memory) >= need)) {
    found.push(`memory limit ${limits.memory} < peak RSS + MAX_WATCHES (${config.maxWatches}) × ${WATCH_RSS_BYTES} B`);
  }
  if (!(cpu(requests.cpu) > 0 && cpu(limits.cpu) >= Math.max(1, cpu(requests.cpu)))) {
    found.push("cpu: a request, and a limit of at least one core (the event loop's) and the request");
  }
  return found;
}

const SUFFIX: Record<string, number> = { "": 1, k: 1e3, M: 1e6, G: 1e9, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30 };

/** A Kubernetes memory quantity in bytes (NaN if absent or not understood). */
export function bytes(q: string | number | undefined): number {
  const m = /^(\d+(?:\.\d+)?)(k|M|G|Ki|Mi|Gi)?$/.exec(String(q ?? ""));
  return m === null ? Number.NaN : Number(m[1]) * (SUFFIX[m[2] ?? ""] ?? Number.NaN);
}

/** A Kubernetes CPU quantity in cores (NaN if absent or not understood). */
export function cpu(q: string | number | undefined): number {
  const m = /^(\d+(?:\.\d+)?)(m)?$/.exec(String(q ?? ""));
  return m === null ? Number.NaN : Number(m[1]) / (m[2] === "m" ? 1000 : 1);
}

/** kubectl apply keeps the whole object in an annotation, which may hold at most 256 KiB. */
const LAST_APPLIED_LIMIT_BYTES = 256 * 1024;

/**
 * What a rendering with the monitoring component must keep: a PodMonitor in the Deployment's
 * namespace that selects its pods and scrapes /metrics on the metrics port, and one ConfigMap
 * labelled for Grafana's dashboard sidecar holding `dashboards` (file name → JSON text), small
 * enough for kubectl apply.
 */
export function monitoringProblems(
  objects: KubeObject[],
  config: Config,
  dashboards: Record<string, string>,
): string[] {
  const template = only(objects, "Deployment").spec.template;
  const container = template.spec.containers[0];
  const monitor = only(objects, "PodMonitor");
  const found: string[] = [];
  const check = (ok: boolean, problem: string) => {
    if (!ok) found.push(problem);
  };
  check(
    monitor.metadata.namespace === only(objects, "Deployment").metadata.namespace,
    "the PodMonitor must be in the Deployment's namespace",
  );
  const selector = Object.entries((monitor.spec.selector?.matchLabels ?? {}) as Record<string, string>);
  check(
    selector.length > 0 && selector.every(([k, v]) => template.metadata.labels?.[k] === v),
    "the PodMonitor must select boardline's pods",
  );
  const endpoints = (monitor.spec.podMetricsEndpoints ?? []) as KubeObject[];
  const portOf = (e: KubeObject) =>
    e.portNumber ?? container.ports?.find((p: KubeObject) => p.name === e.port)?.containerPort;
  check(
    endpoints.length === 1 &&
      (endpoints[0]?.path ?? "/metrics") === "/metrics" &&
      portOf(endpoints[0] as KubeObject) === config.metricsPort,
    `the PodMonitor must scrape /metrics on the metrics port, ${config.metricsPort}`,
  );
  const boards = objects.filter((o) => o.kind === "ConfigMap" && o.metadata.labels?.grafana_dashboard === "1");
  check(boards.length === 1, 'one ConfigMap labelled grafana_dashboard: "1" must hold the dashboards');
  check(
    JSON.stringify(boards[0]?.data) === JSON.stringify(dashboards),
    "the dashboards ConfigMap must hold deploy/monitoring/dashboards/ as generated (npm run dashboards)",
  );
  const size = Buffer.byteLength(JSON.stringify(boards[0] ?? {}));
  check(size < LAST_APPLIED_LIMIT_BYTES, `the dashboards ConfigMap is ${size} bytes, too big for kubectl apply`);
  return found;
}
