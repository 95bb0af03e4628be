// protovalidate rules (`buf.validate`) as JSON Schema keywords, for the OpenAPI
// document. A rule it knows becomes the keyword that says the same thing
// (`min_len` → `minLength`, `gte` → `minimum`, `in` → `enum`, …); a CEL rule
// becomes a sentence of the field's description. A rule it does not know stops
// the generator, naming the field: the document never leaves a rule out
// silently. Extend the tables when the contract uses a new rule.

import type { DescField, DescMessage, DescOneof, Message } from "@bufbuild/protobuf";
import { getOption, hasOption } from "@bufbuild/protobuf";
import { isReflectList, reflect } from "@bufbuild/protobuf/reflect";
import {
  type FieldRules,
  FieldRulesSchema,
  Ignore,
  field as fieldExtension,
  message as messageExtension,
  oneof as oneofExtension,
  type Rule,
} from "../../gen/buf/validate/validate_pb.js";

/** A JSON Schema (2020-12, as OpenAPI 3.1 uses it). */
export type Schema = { [keyword: string]: unknown };

type Keywords = Readonly<Record<string, (value: unknown) => Schema>>;

const num = (v: unknown): number => Number(v as number | bigint);
const list = (v: unknown): unknown[] => v as unknown[];
const flag = (keyword: string, value: unknown) => (v: unknown) => (v === true ? { [keyword]: value } : {});

const NUMBER: Keywords = {
  const: (v) => ({ const: num(v) }),
  lt: (v) => ({ exclusiveMaximum: num(v) }),
  lte: (v) => ({ maximum: num(v) }),
  gt: (v) => ({ exclusiveMinimum: num(v) }),
  gte: (v) => ({ minimum: num(v) }),
  in: (v) => ({ enum: list(v).map(num) }),
  not_in: (v) => ({ not: { enum: list(v).map(num) } }),
  finite: () => ({}), // the field's type says it: no "NaN"/"Infinity" strings (see schemas.ts)
  example: (v) => ({ examples: list(v).map(num) }),
};

const STRING: Keywords = {
  const: (v) => ({ const: v }),
  len: (v) => ({ minLength: num(v), maxLength: num(v) }),
  min_len: (v) => ({ minLength: num(v) }),
  max_len: (v) => ({ maxLength: num(v) }),
  pattern: (v) => ({ pattern: v }),
  in: (v) => ({ enum: list(v) }),
  not_in: (v) => ({ not: { enum: list(v) } }),
  email: flag("format", "email"),
  hostname: flag("format", "hostname"),
  ipv4: flag("format", "ipv4"),
  ipv6: flag("format", "ipv6"),
  uri: flag("format", "uri"),
  uri_ref: flag("format", "uri-reference"),
  uuid: flag("format", "uuid"),
  example: (v) => ({ examples: list(v) }),
};

/**
 * 64-bit integers are strings of digits in JSON (schemas.ts), so a bound is a
 * pattern; only the bound the contract uses, "above zero", has one.
 */
const UINT64: Keywords = {
  gt: (v) => {
    if (num(v) !== 0) throw new Error(`uint64 gt ${String(v)}: only gt 0 has a pattern`);
    return { pattern: "^0*[1-9][0-9]*$" };
  },
};

const BOOL: Keywords = { const: (v) => ({ const: v }), example: (v) => ({ examples: list(v) }) };

const REPEATED: Keywords = {
  min_items: (v) => ({ minItems: num(v) }),
  max_items: (v) => ({ maxItems: num(v) }),
  unique: flag("uniqueItems", true),
  items: () => ({}), // applied to the item schema by the caller
};

const MAP: Keywords = {
  min_pairs: (v) => ({ minProperties: num(v) }),
  max_pairs: (v) => ({ maxProperties: num(v) }),
  values: () => ({}), // applied to the value schema by the caller
};

/** Which table translates each kind of rules (`FieldRules.type`); the others are not supported yet. */
const BY_CASE: Readonly<Record<string, Keywords>> = {
  float: NUMBER,
  double: NUMBER,
  int32: NUMBER,
  uint32: NUMBER,
  sint32: NUMBER,
  fixed32: NUMBER,
  sfixed32: NUMBER,
  uint64: UINT64,
  bool: BOOL,
  string: STRING,
  repeated: REPEATED,
  map: MAP,
};

/** The rules of a field; undefined when it has none. */
export function fieldRules(field: DescField): FieldRules | undefined {
  return hasOption(field, fieldExtension) ? getOption(field, fieldExtension) : undefined;
}

/**
 * The keywords of `rules` (a field's, or a list's `items`), with the CEL rules
 * as sentences. `required` is the caller's: it means a key in a JSON object.
 */
export function ruleKeywords(rules: FieldRules | undefined, where: string): { keywords: Schema; notes: string[] } {
  if (rules === undefined) return { keywords: {}, notes: [] };
  if (rules.ignore !== Ignore.UNSPECIFIED) throw new Error(`${where}: buf.validate ignore is not supported yet`);
  const notes = celNotes(rules.cel, rules.celExpression);
  const { type } = rules;
  if (type.case === undefined) return { keywords: {}, notes };
  const table = BY_CASE[type.case];
  if (table === undefined) throw new Error(`${where}: buf.validate ${type.case} rules are not supported yet`);
  const desc = FieldRulesSchema.fields.find((f) => f.localName === type.case)?.message;
  if (desc === undefined) throw new Error(`${where}: no message for buf.validate ${type.case} rules`);
  const keywords = translate(desc, type.value, table, `${where} (${type.case} rules)`);
  const low = (keywords.minimum ?? keywords.exclusiveMinimum) as number | undefined;
  const high = (keywords.maximum ?? keywords.exclusiveMaximum) as number | undefined;
  if (low !== undefined && high !== undefined && low > high) {
    throw new Error(`${where}: an exclusive range (outside [${high}, ${low}]) is not supported yet`);
  }
  return { keywords, notes };
}

/** Whether a oneof must have one member set (`(buf.validate.oneof).required`). */
export function oneofRequired(oneof: DescOneof): boolean {
  return hasOption(oneof, oneofExtension) && getOption(oneof, oneofExtension).required;
}

/** A message's own rules: its CEL rules as sentences; `oneof` rules stop the generator. */
export function messageNotes(message: DescMessage): string[] {
  if (!hasOption(message, messageExtension)) return [];
  const rules = getOption(message, messageExtension);
  if (rules.oneof.length > 0)
    throw new Error(`${message.typeName}: buf.validate message oneof rules are not supported yet`);
  return celNotes(rules.cel, rules.celExpression);
}

function celNotes(cel: readonly Rule[], expressions: readonly string[]): string[] {
  return [
    ...cel.map((r) => `Must pass \`${r.id}\`: ${r.message !== "" ? r.message : `\`${r.expression}\``}.`),
    ...expressions.map((e) => `Must pass \`${e}\`.`),
  ];
}

/** Every rule set in `rules`, through `table`; a rule the table lacks stops the generator. */
function translate(desc: DescMessage, rules: Message, table: Keywords, where: string): Schema {
  const r = reflect(desc, rules);
  const keywords: Schema = {};
  for (const f of r.fields) {
    if (!r.isSet(f)) continue;
    const to = table[f.name];
    if (to === undefined) throw new Error(`${where}: the rule ${f.name} is not supported yet`);
    const value = r.get(f);
    Object.assign(keywords, to(isReflectList(value) ? [...value] : value));
  }
  return keywords;
}
