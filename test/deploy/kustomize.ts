/**
 * A renderer for the subset of kustomize that deploy/kubernetes/ uses, so the
 * test can render the manifests offline without a kubectl binary: `resources`
 * (YAML files, or directories holding a kustomization.yaml), `components` (directories holding a
 * kustomization.yaml of kind Component, whose resources join the including one's), `namespace`,
 * `configMapGenerator` (`envs`, `literals`, `options.labels`, `behavior:
 * merge`; the name gets kustomize's content hash and every reference to it is
 * rewritten) and `images`. Any other field of a kustomization is refused, so an
 * edit that relies on more than this fails loudly instead of rendering wrong.
 * Where a kubectl is installed, the test compares this rendering with
 * `kubectl kustomize` (same objects, field for field).
 */
import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseAllDocuments } from "yaml";

/** A Kubernetes object as parsed from YAML. */
// biome-ignore lint/suspicious/noExplicitAny: manifests are untyped YAML; the test validates them against the schemas
export type KubeObject = Record<string, any>;

const SUPPORTED = new Set([
  "apiVersion",
  "kind",
  "resources",
  "components",
  "namespace",
  "configMapGenerator",
  "images",
]);

interface Generator {
  readonly name: string;
  readonly behavior?: "create" | "merge";
  readonly envs?: readonly string[];
  readonly literals?: readonly string[];
  readonly options?: { readonly labels?: Record<string, string> };
}

interface ImageRule {
  readonly name: string;
  readonly newName?: string;
  readonly newTag?: string;
  readonly digest?: string;
}

/** Renders the kustomization in `dir`, as `kubectl kustomize <dir>` would. */
export function renderKustomization(dir: string): KubeObject[] {
  const { objects, generated } = build(dir);
  return finish(objects, generated);
}

/** Every YAML document of a file, empty documents left out. */
export function readYamlDocuments(file: string): KubeObject[] {
  const docs = parseAllDocuments(readFileSync(file, "utf8"));
  return docs.map((d) => {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors[0]?.message}`);
    return d.toJS() as KubeObject;
  });
}

/** The kustomization file of a directory, checked to use nothing but the supported fields. */
export function readKustomization(dir: string): KubeObject {
  const [k] = readYamlDocuments(join(dir, "kustomization.yaml"));
  if (k === undefined) throw new Error(`${dir}: empty kustomization.yaml`);
  const kinds: Record<string, string> = {
    Kustomization: "kustomize.config.k8s.io/v1beta1",
    Component: "kustomize.config.k8s.io/v1alpha1",
  };
  if (kinds[k.kind] !== k.apiVersion) throw new Error(`${dir}: ${k.apiVersion} ${k.kind} is not a kustomization`);
  for (const field of Object.keys(k)) {
    if (!SUPPORTED.has(field))
      throw new Error(`${dir}: kustomization field "${field}" is not supported by this renderer`);
  }
  return k;
}

/** Objects before the generated names get their hash; `generated` names the generated ConfigMaps. */
function build(dir: string): { objects: KubeObject[]; generated: Set<string> } {
  const k = readKustomization(dir);
  const objects: KubeObject[] = [];
  const generated = new Set<string>();
  const include = (path: string) => {
    const base = build(path);
    objects.push(...base.objects);
    for (const g of base.generated) generated.add(g);
  };
  for (const entry of (k.resources ?? []) as string[]) {
    const path = resolve(dir, entry);
    if (statSync(path).isDirectory()) include(path);
    else objects.push(...readYamlDocuments(path).filter((o) => o !== null));
  }
  // A component's resources join the including kustomization's before its own generators and
  // transformers (its namespace, its images) apply to them all.
  for (const entry of (k.components ?? []) as string[]) {
    const path = resolve(dir, entry);
    if (readKustomization(path).kind !== "Component") throw new Error(`${path}: components must be of kind Component`);
    include(path);
  }
  for (const g of (k.configMapGenerator ?? []) as Generator[]) generate(dir, g, objects, generated);
  if (typeof k.namespace === "string") {
    for (const o of objects) o.metadata.namespace = k.namespace;
  }
  for (const rule of (k.images ?? []) as ImageRule[]) {
    for (const o of objects) retagImages(o, rule);
  }
  return { objects, generated };
}

function generate(dir: string, g: Generator, objects: KubeObject[], generated: Set<string>): void {
  const data: Record<string, string> = {};
  for (const file of g.envs ?? []) Object.assign(data, parseEnvFile(readFileSync(join(dir, file), "utf8")));
  for (const literal of g.literals ?? []) Object.assign(data, parseEnvFile(literal));
  const existing = objects.find((o) => o.kind === "ConfigMap" && o.metadata?.name === g.name);
  if (g.behavior === "merge") {
    if (existing === undefined) throw new Error(`configMapGenerator ${g.name}: nothing to merge into`);
    existing.data = { ...existing.data, ...data };
    existing.metadata.labels = { ...existing.metadata.labels, ...g.options?.labels };
    return;
  }
  if (existing !== undefined) throw new Error(`configMapGenerator ${g.name}: already exists`);
  const metadata: KubeObject = { name: g.name };
  if (g.options?.labels !== undefined) metadata.labels = { ...g.options.labels };
  objects.push({ apiVersion: "v1", kind: "ConfigMap", metadata, data });
  generated.add(g.name);
}

/** kustomize's env-file format: `KEY=value` lines; blank lines and `#` comments skipped. */
export function parseEnvFile(text: string): Record<string, string> {
  const data: Record<string, string> = {};
  for (const raw of text.split("\n")) {
    const line = raw.replace(/^\s+/, "");
    if (line === "" || line.startsWith("#")) continue;
    const eq = line.indexOf("=");
    if (eq <= 0) throw new Error(`env line without KEY=: "${line}"`);
    data[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return data;
}

function retagImages(o: KubeObject, rule: ImageRule): void {
  const spec = o.spec?.template?.spec;
  for (const c of [...(spec?.containers ?? []), ...(spec?.initContainers ?? [])]) {
    const image = String(c.image);
    const name = image.replace(/@.*$/, "").replace(/:[^:/]*$/, "");
    if (name !== rule.name) continue;
    const tag = rule.digest !== undefined ? `@${rule.digest}` : rule.newTag !== undefined ? `:${rule.newTag}` : "";
    const kept = image.slice(name.length);
    c.image = `${rule.newName ?? name}${tag === "" ? kept : tag}`;
  }
}

/** Hash-suffixes the generated ConfigMaps' names and rewrites the Deployment's references to them. */
function finish(objects: KubeObject[], generated: Set<string>): KubeObject[] {
  const renamed = new Map<string, string>();
  for (const o of objects) {
    if (o.kind !== "ConfigMap" || !generated.has(o.metadata.name)) continue;
    const name = `${o.metadata.name}-${configMapHash(o.data ?? {})}`;
    renamed.set(o.metadata.name, name);
    o.metadata.name = name;
  }
  for (const o of objects) {
    const spec = o.spec?.template?.spec;
    if (spec === undefined) continue;
    for (const c of [...(spec.containers ?? []), ...(spec.initContainers ?? [])]) {
      for (const from of c.envFrom ?? []) rename(from.configMapRef, renamed);
      for (const e of c.env ?? []) rename(e.valueFrom?.configMapKeyRef, renamed);
    }
    for (const v of spec.volumes ?? []) rename(v.configMap, renamed);
  }
  return objects;
}

function rename(ref: { name?: string } | undefined, renamed: Map<string, string>): void {
  const to = ref?.name === undefined ? undefined : renamed.get(ref.name);
  if (ref !== undefined && to !== undefined) ref.name = to;
}

/**
 * kustomize's suffix (api/hasher): SHA-256 of the JSON of `{data, kind, name}` (Go's encoding:
 * keys sorted, `<`, `>`, `&`, U+2028 and U+2029 escaped), its first 10 hex digits with 0 1 3 a e
 * replaced by g h k m t. kustomize 5 hashes a generated ConfigMap with an empty `name` (its
 * lookup of `metadata/name` finds none at that point): the suffix depends on the data alone,
 * which `kubectl kustomize` confirms.
 */
export function configMapHash(data: Record<string, string>): string {
  const name = "";
  const sorted = Object.fromEntries(Object.entries(data).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const json = JSON.stringify({ data: sorted, kind: "ConfigMap", name }).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
  const hex = createHash("sha256").update(json).digest("hex").slice(0, 10);
  const swap: Record<string, string> = { "0": "g", "1": "h", "3": "k", a: "m", e: "t" };
  return hex.replace(/[013ae]/g, (c) => swap[c] ?? c);
}
