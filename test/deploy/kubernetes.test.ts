/**
 * deploy/kubernetes/, offline: the base and each overlay are rendered (kustomize.ts, the subset
 * of kustomize they use), every object is validated against the Kubernetes API's JSON schemas
 * (kubernetes-models), and the properties a later edit must not quietly drop are checked
 * (manifest-checks.ts): probes, drain arithmetic, non-root, the h2c Service, resources, Redis's
 * passwords (the Sentinels' too) read from the mounted Secret, and a configuration boardline itself
 * accepts. Each check is shown to fail on a broken copy too. Each is rendered again with the
 * monitoring component (components/monitoring: a PodMonitor, the Grafana dashboards' ConfigMap, and
 * the alert rules' PrometheusRule of deploy/monitoring/alerts.yaml), checked the same way.
 */
import { execFileSync } from "node:child_process";
import { isDeepStrictEqual } from "node:util";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
import { describe, expect, it } from "vitest";
import { type KubeObject, readKustomization, readYamlDocuments, renderKustomization } from "./kustomize.js";
import { SECRET_VARIABLES } from "../../src/config/secret-variables.js";
import type { Config } from "../../src/config/index.js";
import {
  configOf,
  monitoringProblems,
  only,
  podEnvironment,
  problems,
  secretMounts,
  unknownVariables,
} from "./manifest-checks.js";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, relative } from "node:path";
import { OVERVIEW_JSON } from "../../tools/dashboards.js";
import { ALERT_RULES, PROMETHEUS_RULE, renderPrometheusRule } from "../../tools/monitoring-manifests.js";

const ROOT = fileURLToPath(new URL("../../deploy/kubernetes/", import.meta.url));
const KUSTOMIZATIONS = ["base", "overlays/sentinel", "overlays/cluster"];
const [EXAMPLE_SECRET] = readYamlDocuments(`${ROOT}base/secret.example.yaml`) as [KubeObject];
/** Keys as `openssl rand -base64 32` makes them. */
const KEYS = {
  PASSPHRASE_KEYS: Buffer.alloc(32, 1).toString("base64"),
  SECRETS_KEYS: Buffer.alloc(32, 2).toString("base64"),
};
/** The example Secret with the changes an operator must make: a JWT_SECRET of 32 bytes or more, and real keys. */
const SECRET = { ...EXAMPLE_SECRET.stringData, JWT_SECRET: "x".repeat(48), ...KEYS } as Record<string, string>;

/** kubernetes-models' class for each apiVersion and kind the manifests use. */
const MODELS: Record<string, () => Promise<unknown>> = {
  "apps/v1 Deployment": () => import("kubernetes-models/apps/v1/Deployment"),
  "v1 Service": () => import("kubernetes-models/v1/Service"),
  "v1 ConfigMap": () => import("kubernetes-models/v1/ConfigMap"),
  "v1 Secret": () => import("kubernetes-models/v1/Secret"),
  "policy/v1 PodDisruptionBudget": () => import("kubernetes-models/policy/v1/PodDisruptionBudget"),
  "autoscaling/v2 HorizontalPodAutoscaler": () => import("kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler"),
  "networking.k8s.io/v1 NetworkPolicy": () => import("kubernetes-models/networking.k8s.io/v1/NetworkPolicy"),
  "monitoring.coreos.com/v1 PodMonitor": () =>
    import("@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor"),
  "monitoring.coreos.com/v1 PrometheusRule": () =>
    import("@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule"),
};

/** Validates one object against the schema of its apiVersion and kind; throws the schema's errors. */
async function validate(o: KubeObject): Promise<void> {
  const load = MODELS[`${o.apiVersion} ${o.kind}`];
  if (load === undefined) throw new Error(`no schema known here for ${o.apiVersion} ${o.kind}`);
  const Model = ((await load()) as Record<string, new (o: KubeObject) => { validate(): void }>)[o.kind];
  if (Model === undefined) throw new Error(`kubernetes-models has no ${o.kind}`);
  new Model(o).validate();
}

const copy = (objects: KubeObject[]): KubeObject[] => structuredClone(objects);
/** The example Secret's keys that only one kustomization reads: the Sentinels' password, the Sentinel overlay. */
const ONE_OVERLAYS_KEYS: Record<string, string> = { REDIS_SENTINEL_PASSWORD: "overlays/sentinel" };

function configFor(objects: KubeObject[]) {
  const config = configOf(podEnvironment(objects, SECRET));
  if (typeof config === "string") throw new Error(`boardline refuses the configuration: ${config}`);
  return config;
}

function hasKubectl(): boolean {
  try {
    execFileSync("kubectl", ["version", "--client"], { stdio: "ignore", timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

describe.each(KUSTOMIZATIONS)("deploy/kubernetes/%s", (dir) => {
  const objects = renderKustomization(`${ROOT}${dir}`);

  it("renders a Deployment, a Service, a PodDisruptionBudget, an HPA, a NetworkPolicy and a ConfigMap, each valid against the Kubernetes API schemas", async () => {
    expect(objects.map((o) => o.kind).sort()).toEqual([
      "ConfigMap",
      "Deployment",
      "HorizontalPodAutoscaler",
      "NetworkPolicy",
      "PodDisruptionBudget",
      "Service",
    ]);
    for (const o of objects) await validate(o);
  });

  it("gives the pods only variables of boardline's configuration table, in a combination boardline accepts", () => {
    expect(unknownVariables(objects, SECRET)).toEqual([]);
    const config = configFor(objects);
    expect(config.production).toBe(true);
    expect(config.redis).toBeDefined();
  });

  it("keeps the probes, the drain arithmetic, the non-root rule, the h2c Service and the bench's resources", () => {
    expect(problems(objects, configFor(objects))).toEqual([]);
  });

  it("mounts its Secret, by the name of secret.example.yaml, as files, which it does not apply itself", () => {
    const container = only(objects, "Deployment").spec.template.spec.containers[0];
    expect(container.envFrom.filter((f: KubeObject) => f.secretRef !== undefined)).toEqual([]);
    expect(secretMounts(objects).map((m) => m.secretName)).toEqual([EXAMPLE_SECRET.metadata.name]);
    expect(objects.some((o) => o.kind === "Secret")).toBe(false);
  });

  it("reads each key of the example Secret it needs, a secret variable, from its file, and no file the Secret lacks", () => {
    const [mount] = secretMounts(objects);
    const env = only(objects, "ConfigMap").data as Record<string, string>;
    const all = Object.keys(EXAMPLE_SECRET.stringData);
    const keys = all.filter((k) => ONE_OVERLAYS_KEYS[k] === undefined || ONE_OVERLAYS_KEYS[k] === dir).sort();
    const files = Object.entries(env).filter(([name]) => name.endsWith("_FILE") && name !== "JWT_JWKS_FILE");
    expect(all.every((key) => (SECRET_VARIABLES as readonly string[]).includes(key))).toBe(true);
    expect(Object.fromEntries(files)).toEqual(
      Object.fromEntries(keys.map((k) => [`${k}_FILE`, `${mount?.path}/${k}`])),
    );
  });
});

describe("deploy/kubernetes, the parts around the renderings", () => {
  const base = renderKustomization(`${ROOT}base`);

  it("an overlay sets the image; the base's image is `boardline`", () => {
    const image = (objects: KubeObject[]) => only(objects, "Deployment").spec.template.spec.containers[0].image;
    expect(image(base)).toBe("boardline:latest");
    expect(image(renderKustomization(`${ROOT}overlays/sentinel`))).toBe("registry.example.com/boardline:1.0.0");
  });

  it("the example Secret is valid, names only boardline's variables, and fails closed: unchanged, boardline refuses to start", async () => {
    await validate(EXAMPLE_SECRET);
    expect(readKustomization(`${ROOT}base`).resources).not.toContain("secret.example.yaml");
    expect(unknownVariables(base, EXAMPLE_SECRET.stringData)).toEqual([]);
    const example = EXAMPLE_SECRET.stringData as Record<string, string>;
    expect(configOf(podEnvironment(base, example))).toMatch(/^JWT_SECRET .*32 bytes/);
    const jwt = { JWT_SECRET: SECRET.JWT_SECRET as string };
    expect(configOf(podEnvironment(base, { ...example, ...jwt }))).toMatch(/^PASSPHRASE_KEYS .*32 bytes/);
    const passphraseKeys = { PASSPHRASE_KEYS: KEYS.PASSPHRASE_KEYS };
    expect(configOf(podEnvironment(base, { ...example, ...jwt, ...passphraseKeys }))).toMatch(
      /^SECRETS_KEYS .*32 bytes/,
    );
    expect(typeof configOf(podEnvironment(base, SECRET))).toBe("object");
  });

  it("the schemas refuse a broken object", async () => {
    const broken = only(copy(base), "Deployment");
    broken.spec.replicas = "3";
    broken.spec.template.spec.containers[0].ports[0].containerPort = "http";
    await expect(validate(broken)).rejects.toThrow(/replicas must be integer.*containerPort must be integer/);
  });

  it("each check fails on a copy that breaks it", () => {
    const config = configFor(base);
    const broken = (edit: (pod: KubeObject, objects: KubeObject[]) => void) => {
      const objects = copy(base);
      edit(only(objects, "Deployment").spec.template.spec, objects);
      return problems(objects, config);
    };
    expect(broken((pod) => delete pod.containers[0].readinessProbe)).toEqual([
      "readinessProbe must GET /readyz",
      "readinessProbe must use port 9090",
    ]);
    expect(broken((pod) => (pod.containers[0].livenessProbe.httpGet.port = "http"))).toEqual([
      "livenessProbe must use port 9090",
    ]);
    expect(broken((pod) => (pod.terminationGracePeriodSeconds = 17))[0]).toMatch(
      /^terminationGracePeriodSeconds 17 < 18 s/,
    );
    expect(broken((pod) => (pod.containers[0].lifecycle = { preStop: { sleep: { seconds: 5 } } }))[0]).toMatch(
      /^terminationGracePeriodSeconds 20 < 23 s/,
    );
    expect(broken((pod) => delete pod.containers[0].securityContext.readOnlyRootFilesystem)).toEqual([
      "readOnlyRootFilesystem must be true",
    ]);
    expect(broken((pod) => (pod.containers[0].securityContext.capabilities = { drop: ["NET_RAW"] }))).toEqual([
      "capabilities: drop ALL, add none",
    ]);
    expect(broken((pod) => (pod.containers[0].securityContext.runAsUser = 0))).toEqual([
      "runAsUser must be 10001 (the image's user), is 0",
    ]);
    expect(broken((pod) => (pod.containers[0].resources.limits.memory = "256Mi"))[0]).toMatch(
      /^memory limit 256Mi < peak RSS/,
    );
    expect(broken((_, objects) => delete only(objects, "Service").spec.ports[0].appProtocol)[0]).toMatch(
      /appProtocol kubernetes.io\/h2c/,
    );
    expect(
      broken((_, objects) => (only(objects, "HorizontalPodAutoscaler").spec.metrics[0].resource.name = "memory")),
    ).toEqual(["the HorizontalPodAutoscaler must scale on CPU"]);
    const policy = (objects: KubeObject[]) => only(objects, "NetworkPolicy").spec;
    expect(broken((_, objects) => (policy(objects).podSelector = {}))).toEqual([
      "the NetworkPolicy must select boardline's pods",
    ]);
    expect(broken((_, objects) => delete policy(objects).ingress[1].from)).toEqual([
      "the NetworkPolicy must let only the monitoring namespace reach the metrics port",
    ]);
    expect(broken((_, objects) => policy(objects).ingress.push({}))).toEqual([
      "the NetworkPolicy may admit only the public port and, from monitoring, the metrics port",
    ]);
    expect(broken((_, objects) => policy(objects).egress.push({ ports: [{ port: 22 }] }))).toEqual([
      "the NetworkPolicy may let out only DNS, Redis and HTTPS (port 22 to anywhere)",
    ]);
    expect(broken((_, objects) => (policy(objects).policyTypes = ["Ingress"]))).toEqual([
      "the NetworkPolicy must restrict both Ingress and Egress",
    ]);
    expect(
      broken(
        (_, objects) => (only(objects, "Deployment").spec.template.metadata.annotations["prometheus.io/port"] = "8080"),
      ),
    ).toEqual(["the pods must be annotated for scraping /metrics on port 9090"]);
    const metricsOfService = (objects: KubeObject[]) =>
      only(objects, "Service").spec.ports.find((p: KubeObject) => p.name === "metrics");
    expect(broken((_, objects) => (metricsOfService(objects).targetPort = "http"))).toEqual([
      "the Service's metrics port must lead to /metrics on port 9090, not 8080",
    ]);
  });

  it("a variable boardline does not read, or a value it refuses, is caught", () => {
    const objects = copy(base);
    only(objects, "ConfigMap").data.SHUTDOWN_DELAY = "5000";
    expect(unknownVariables(objects, SECRET)).toEqual(["SHUTDOWN_DELAY"]);
    only(objects, "ConfigMap").data.SHUTDOWN_GRACE_MS = "ten seconds";
    expect(configOf(podEnvironment(objects, SECRET))).toMatch(/^SHUTDOWN_GRACE_MS/);
    const both = copy(base);
    only(both, "ConfigMap").data.METRICS_ON_PUBLIC_PORT = "true";
    expect(configOf(podEnvironment(both, SECRET))).toMatch(/^METRICS_PORT must not be set with METRICS_ON_PUBLIC_PORT/);
  });

  it("a Redis whose password is not read from the Secret, or a Sentinel overlay without the Sentinels', is caught", () => {
    const sentinel = renderKustomization(`${ROOT}overlays/sentinel`);
    const broken = (objects: KubeObject[], edit: (env: Record<string, string>) => void) => {
      const edited = copy(objects);
      edit(only(edited, "ConfigMap").data);
      return problems(edited, configFor(edited));
    };
    const sentinelProblem =
      "boardline must log in to the Sentinels with their password, read from the Secret (REDIS_SENTINEL_PASSWORD_FILE)";
    expect(broken(sentinel, (env) => delete env.REDIS_SENTINEL_PASSWORD_FILE)).toEqual([sentinelProblem]);
    expect(
      broken(sentinel, (env) => {
        delete env.REDIS_SENTINEL_PASSWORD_FILE;
        env.REDIS_SENTINEL_PASSWORD = "in-the-config-map";
      }),
    ).toEqual([
      "REDIS_SENTINEL_PASSWORD belongs in the Secret, read through REDIS_SENTINEL_PASSWORD_FILE, not in the ConfigMap",
      sentinelProblem,
    ]);
    const { REDIS_SENTINEL_PASSWORD: _, ...lacking } = SECRET;
    expect(configOf(podEnvironment(sentinel, lacking))).toMatch(
      /^REDIS_SENTINEL_PASSWORD_FILE cannot be read \(ENOENT/,
    );
    const cluster = renderKustomization(`${ROOT}overlays/cluster`);
    expect(
      broken(cluster, (env) => {
        delete env.REDIS_URL_FILE;
        env.REDIS_URL = "redis://redis-cluster.redis:6379";
      }),
    ).toEqual([
      "REDIS_URL belongs in the Secret, read through REDIS_URL_FILE, not in the ConfigMap",
      "boardline must log in to Redis with the password of REDIS_URL, read from the Secret (REDIS_URL_FILE)",
    ]);
    const unlocked = { ...SECRET, REDIS_URL: "redis://redis-master.redis:6379" };
    expect(problems(base, configOf(podEnvironment(base, unlocked)) as Config)).toEqual([
      "boardline must log in to Redis with the password of REDIS_URL, read from the Secret (REDIS_URL_FILE)",
    ]);
  });

  it("a Secret not mounted where the NAME_FILE variables point, or lacking a key, is caught", () => {
    const unmounted = copy(base);
    delete only(unmounted, "Deployment").spec.template.spec.containers[0].volumeMounts;
    expect(configOf(podEnvironment(unmounted, SECRET))).toMatch(/^REDIS_URL_FILE cannot be read \(ENOENT/);
    const { SECRETS_KEYS: _, ...lacking } = SECRET;
    expect(configOf(podEnvironment(base, lacking))).toMatch(/^SECRETS_KEYS_FILE cannot be read \(ENOENT/);
  });

  // kubectl is no dependency of the suite (Debian's kubernetes-client is 1.20, older than these
  // manifests): where one is installed, its rendering must be ours, object for object.
  it.runIf(hasKubectl())(
    "the renderer agrees with `kubectl kustomize`, with and without the monitoring component",
    () => {
      const dirs = [...KUSTOMIZATIONS.map((d) => `${ROOT}${d}`), ...KUSTOMIZATIONS.map(monitoredKustomization)];
      for (const dir of dirs) {
        const args = ["kustomize", "--load-restrictor", "LoadRestrictionsNone", dir];
        const out = execFileSync("kubectl", args, { encoding: "utf8", timeout: 30_000 });
        const theirs = parseAllDocuments(out).map((d) => d.toJS() as KubeObject);
        const key = (o: KubeObject) => `${o.kind}/${o.metadata.name}`;
        const ours = new Map(renderKustomization(dir).map((o) => [key(o), o]));
        expect(theirs.map(key).sort()).toEqual([...ours.keys()].sort());
        for (const o of theirs) expect(isDeepStrictEqual(ours.get(key(o)), o), `${dir}: ${key(o)}`).toBe(true);
      }
    },
  );
});

/** The repository's root, where the generated files' paths start. */
const REPO = fileURLToPath(new URL("../../", import.meta.url));
const COMPONENT = "components/monitoring";
/** What the dashboards ConfigMap must hold: the committed dashboards, under boardline- names. */
const DASHBOARDS = { [`boardline-${basename(OVERVIEW_JSON)}`]: readFileSync(join(REPO, OVERVIEW_JSON), "utf8") };

/**
 * `dir` with the monitoring component, as an overlay adds it: its own kustomization with a
 * `components:` entry, written elsewhere with its paths made relative to there (a kustomization
 * that merely wrapped `dir` would not give the component's objects `dir`'s namespace).
 */
function withMonitoring(dir: string): KubeObject[] {
  return renderKustomization(monitoredKustomization(dir));
}

/** The folder of `withMonitoring`'s kustomization (for `kubectl kustomize`, which must be let read outside it). */
function monitoredKustomization(dir: string): string {
  const at = mkdtempSync(join(tmpdir(), "boardline-kustomization-"));
  const from = (path: string) => relative(at, join(ROOT, dir, path));
  const k = structuredClone(readKustomization(`${ROOT}${dir}`));
  k.resources = (k.resources ?? []).map(from);
  for (const g of k.configMapGenerator ?? []) if (g.envs !== undefined) g.envs = g.envs.map(from);
  k.components = [...(k.components ?? []), relative(at, `${ROOT}${COMPONENT}`)];
  writeFileSync(join(at, "kustomization.yaml"), JSON.stringify(k));
  return at;
}

describe.each(KUSTOMIZATIONS)(`deploy/kubernetes/%s with ${COMPONENT}`, (dir) => {
  const objects = withMonitoring(dir);

  it("adds a PodMonitor and the dashboards' ConfigMap (and the alerts' PrometheusRule), each valid against its schema", async () => {
    const without = renderKustomization(`${ROOT}${dir}`).map((o) => o.kind);
    const added = ["ConfigMap", "PodMonitor", "PrometheusRule"];
    expect(objects.map((o) => o.kind).sort()).toEqual([...without, ...added].sort());
    for (const o of objects) await validate(o);
  });

  it("scrapes each pod's metrics port and gives Grafana's sidecar the committed dashboards", () => {
    const app = objects.filter((o) => !(o.kind === "ConfigMap" && o.metadata.labels?.grafana_dashboard === "1"));
    expect(monitoringProblems(objects, configFor(app), DASHBOARDS)).toEqual([]);
  });
});

describe(`deploy/kubernetes/${COMPONENT}, the parts around the renderings`, () => {
  const objects = withMonitoring("base");
  const app = objects.filter((o) => !(o.kind === "ConfigMap" && o.metadata.labels?.grafana_dashboard === "1"));
  const config = configFor(app);

  it("each check fails on a copy that breaks it", () => {
    const broken = (edit: (objects: KubeObject[]) => void) => {
      const edited = copy(objects);
      edit(edited);
      return monitoringProblems(edited, config, DASHBOARDS);
    };
    const monitor = (o: KubeObject[]) => only(o, "PodMonitor");
    const boards = (o: KubeObject[]) => o.find((c) => c.metadata.labels?.grafana_dashboard === "1") as KubeObject;
    expect(broken((o) => (monitor(o).spec.selector.matchLabels = { app: "other" }))).toEqual([
      "the PodMonitor must select boardline's pods",
    ]);
    expect(broken((o) => (monitor(o).spec.podMetricsEndpoints[0].port = "http"))).toEqual([
      "the PodMonitor must scrape /metrics on the metrics port, 9090",
    ]);
    expect(broken((o) => (monitor(o).metadata.namespace = "monitoring"))).toEqual([
      "the PodMonitor must be in the Deployment's namespace",
    ]);
    expect(broken((o) => delete boards(o).metadata.labels.grafana_dashboard)).toEqual([
      'one ConfigMap labelled grafana_dashboard: "1" must hold the dashboards',
      "the dashboards ConfigMap must hold deploy/monitoring/dashboards/ as generated (npm run dashboards)",
    ]);
    expect(broken((o) => (boards(o).data["boardline-overview.json"] = "{}"))).toEqual([
      "the dashboards ConfigMap must hold deploy/monitoring/dashboards/ as generated (npm run dashboards)",
    ]);
  });

  it("the schemas refuse a broken PodMonitor", async () => {
    const broken = only(copy(objects), "PodMonitor");
    broken.spec.podMetricsEndpoints = "metrics";
    await expect(validate(broken)).rejects.toThrow(/podMetricsEndpoints must be array/);
  });

  it("makes a PrometheusRule of a Prometheus rules file, and refuses anything else", async () => {
    const rules = "groups:\n  - name: boardline\n    rules:\n      - alert: X\n        expr: vector(1)\n";
    const [rule] = parseAllDocuments(renderPrometheusRule(rules)).map((d) => d.toJS() as KubeObject);
    await validate(rule as KubeObject);
    expect(rule?.spec.groups).toEqual([{ name: "boardline", rules: [{ alert: "X", expr: "vector(1)" }] }]);
    expect(() => renderPrometheusRule("rules: []\n")).toThrow(/groups/);
  });

  it(`wraps ${ALERT_RULES} as a PrometheusRule, listed and up to date (else: npm run dashboards)`, () => {
    const committed = readFileSync(join(REPO, PROMETHEUS_RULE), "utf8");
    expect(committed).toBe(renderPrometheusRule(readFileSync(join(REPO, ALERT_RULES), "utf8")));
    expect(readKustomization(`${ROOT}${COMPONENT}`).resources).toContain(basename(PROMETHEUS_RULE));
  });
});
