// The JSON Schemas of the messages, as boardline's JSON routes read and write
// them: proto field names (what the routes answer; requests may use the
// lowerCamelCase JSON names too), 64-bit integers as decimal strings,
// Timestamps as RFC 3339 strings, `bytes` as base64. A request schema's
// `required` lists what the protovalidate rules require; a response schema's
// lists what boardline always writes (fields without explicit presence, lists
// and maps, as `alwaysEmitImplicit` does).

import { type DescEnum, type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { getComments } from "@bufbuild/protoplugin";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import type { FieldRules } from "../../gen/buf/validate/validate_pb.js";
import { fieldRules, messageNotes, oneofRequired, ruleKeywords, type Schema } from "./rules.js";

export type Use = "request" | "response";

/** Well-known types with a JSON form of their own. The others stop the generator until someone needs them. */
const WELL_KNOWN: Readonly<Record<string, Schema>> = {
  "google.protobuf.Timestamp": { type: "string", format: "date-time", description: "RFC 3339, in UTC (`Z`)." },
  "google.protobuf.Duration": { type: "string", pattern: "^-?[0-9]+(\\.[0-9]{1,9})?s$", examples: ["1.5s"] },
};

/** The components/schemas of the document: every message reached from an operation, by its full name. */
export class Schemas {
  readonly components: Record<string, Schema> = {};
  private readonly uses = new Map<string, Use>();

  /** A `$ref` to the message's schema, adding it (and the messages it holds) on first use. */
  ref(message: DescMessage, use: Use): Schema {
    const seen = this.uses.get(message.typeName);
    if (seen !== undefined && seen !== use) {
      throw new Error(`${message.typeName} is both a request and a response: give each its own schema`);
    }
    if (seen === undefined) {
      this.uses.set(message.typeName, use);
      this.components[message.typeName] = this.message(message, use);
    }
    return { $ref: `#/components/schemas/${message.typeName}` };
  }

  /** The schema of one field (also a path parameter's). */
  field(f: DescField, use: Use): Schema {
    const where = `${f.parent.typeName}.${f.name}`;
    const rules = use === "request" ? fieldRules(f) : undefined;
    const { keywords, notes } = ruleKeywords(rules, where);
    let schema: Schema;
    switch (f.fieldKind) {
      case "scalar":
        schema = { ...scalarSchema(f.scalar, finite(rules?.type)), ...keywords };
        break;
      case "enum":
        schema = { ...enumSchema(f.enum), ...keywords };
        break;
      case "message":
        if (rules?.type.case !== undefined) throw new Error(`${where}: ${rules.type.case} rules are not supported yet`);
        schema = this.messageField(f.message, use);
        break;
      case "list": {
        const items = ruleKeywords(rules?.type.case === "repeated" ? rules.type.value.items : undefined, `${where}[]`);
        const item = this.element(
          f.listKind === "message" ? f.message : f.listKind === "enum" ? f.enum : f.scalar,
          use,
        );
        schema = { type: "array", items: { ...item, ...items.keywords }, ...keywords };
        notes.push(...items.notes.map((n) => `Each item: ${n}`));
        break;
      }
      case "map": {
        const values = ruleKeywords(rules?.type.case === "map" ? rules.type.value.values : undefined, `${where}{}`);
        const value = this.element(f.mapKind === "message" ? f.message : f.mapKind === "enum" ? f.enum : f.scalar, use);
        schema = { type: "object", additionalProperties: { ...value, ...values.keywords }, ...keywords };
        notes.push(...values.notes.map((n) => `Each value: ${n}`));
        break;
      }
    }
    if (use === "request" && rules?.required === true && f.fieldKind !== "list" && f.fieldKind !== "map") {
      Object.assign(schema, nonZero(f, schema));
    }
    const description = [comment(f), ...notes].filter((s) => s !== "").join("\n\n");
    return description === "" ? schema : { ...schema, description };
  }

  private message(message: DescMessage, use: Use): Schema {
    const properties: Record<string, Schema> = {};
    const required: string[] = [];
    for (const f of message.fields) {
      properties[f.name] = this.field(f, use);
      if (use === "request" ? fieldRules(f)?.required === true : alwaysWritten(f)) required.push(f.name);
    }
    const oneofs = message.oneofs.map((o) => {
      const members = o.fields.map((f) => ({ required: [f.name] }));
      const exactlyOne = use === "request" && oneofRequired(o);
      const names = o.fields.map((f) => `\`${f.name}\``).join(", ");
      const text = `${exactlyOne ? "Exactly" : "At most"} one of ${names} (oneof \`${o.name}\`)`;
      const note = [`${text}.`, comment(o)].filter((t) => t !== "").join(" ");
      return { note, schema: { oneOf: exactlyOne ? members : [...members, { not: { anyOf: members } }] } };
    });
    const description = [
      comment(message),
      ...oneofs.map((o) => o.note),
      ...(use === "request" ? messageNotes(message) : []),
    ]
      .filter((s) => s !== "")
      .join("\n\n");
    return {
      type: "object",
      ...(description === "" ? {} : { description }),
      properties,
      ...(required.length === 0 ? {} : { required }),
      ...(oneofs.length === 0 ? {} : { allOf: oneofs.map((o) => o.schema) }),
    };
  }

  private messageField(message: DescMessage, use: Use): Schema {
    const known = WELL_KNOWN[message.typeName];
    if (known !== undefined) return { ...known };
    if (message.file.name.startsWith("google/protobuf/")) {
      throw new Error(`${message.typeName}: its JSON form is not described yet (add it to WELL_KNOWN)`);
    }
    return this.ref(message, use);
  }

  private element(of: DescMessage | DescEnum | ScalarType, use: Use): Schema {
    if (typeof of === "number") return scalarSchema(of, false);
    return of.kind === "enum" ? enumSchema(of) : this.messageField(of, use);
  }
}

function scalarSchema(scalar: ScalarType, finite: boolean): Schema {
  switch (scalar) {
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT: {
      const n = { type: "number", format: scalar === ScalarType.DOUBLE ? "double" : "float" };
      return finite ? n : { oneOf: [n, { type: "string", enum: ["NaN", "Infinity", "-Infinity"] }] };
    }
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { type: "integer", format: "int32" };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", minimum: 0, maximum: 4294967295 };
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return { type: "string", format: "int64", pattern: "^-?[0-9]+$" };
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return { type: "string", pattern: "^[0-9]+$" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
  }
}

/** Whether float or double rules say `finite` (no "NaN"/"Infinity" strings). */
function finite(type: FieldRules["type"] | undefined): boolean {
  return (type?.case === "double" || type?.case === "float") && type.value.finite;
}

function enumSchema(e: DescEnum): Schema {
  const description = comment(e);
  return { type: "string", enum: e.values.map((v) => v.name), ...(description === "" ? {} : { description }) };
}

/**
 * protovalidate's `required` on a field without explicit presence means "not
 * the zero value" (an absent key reads as the zero value).
 */
function nonZero(f: DescField, schema: Schema): Schema {
  if (f.presence !== FeatureSet_FieldPresence.IMPLICIT || f.oneof !== undefined) return {};
  if (f.fieldKind === "enum") return { not: { const: f.enum.values[0]?.name } };
  if (f.fieldKind !== "scalar") return {};
  if ("enum" in schema || "const" in schema) return {}; // already excludes the zero value, or says what it is
  if (f.scalar === ScalarType.STRING || f.scalar === ScalarType.BYTES) {
    return { minLength: Math.max(1, (schema.minLength as number | undefined) ?? 0) };
  }
  if (f.scalar === ScalarType.BOOL) return { const: true };
  return { not: { const: 0 } };
}

/** What boardline always writes in an answer: fields without explicit presence, outside a oneof; lists; maps. */
function alwaysWritten(f: DescField): boolean {
  if (f.fieldKind === "list" || f.fieldKind === "map") return true;
  if (f.fieldKind === "message" || f.oneof !== undefined) return false;
  return f.presence === FeatureSet_FieldPresence.IMPLICIT;
}

/**
 * The leading comment of a declaration, without buf lint directives (a
 * sentence that introduced them ends with a full stop instead of its colon).
 */
export function comment(desc: Parameters<typeof getComments>[0]): string {
  const lines = (getComments(desc).leading ?? "")
    .split("\n")
    .map((l) => (l.startsWith(" ") ? l.slice(1) : l).trimEnd());
  const kept = lines.filter((l) => !l.startsWith("buf:lint:ignore"));
  const text = kept.join("\n").trim();
  return kept.length < lines.length && text.endsWith(":") ? `${text.slice(0, -1)}.` : text;
}
