// Prints a FileDescriptorProto back as .proto source text.
//
// Descriptors carry no comments or layout (unless they have source_code_info,
// which this printer ignores), so the output is a faithful but comment-free
// rendering: compiling it must yield the same descriptor. The printer is small
// and only as general as the files we feed it need, but it never drops
// anything silently: every descriptor field it does not render makes it throw.
//
// It exists to vendor proto/buf/validate/validate.proto from the descriptor that
// @bufbuild/protovalidate ships; tools/vendoring/README.md says how to run it.

import { createRegistry, getExtension, ScalarType } from "@bufbuild/protobuf";
import type { DescEnum, DescExtension, DescField, DescFile, DescMessage, Message, Registry } from "@bufbuild/protobuf";
import { protoCamelCase, reflect } from "@bufbuild/protobuf/reflect";
import type { ReflectMessage, ScalarValue } from "@bufbuild/protobuf/reflect";
import {
  DescriptorProto_ExtensionRangeSchema,
  DescriptorProto_ReservedRangeSchema,
  DescriptorProtoSchema,
  Edition,
  EnumDescriptorProto_EnumReservedRangeSchema,
  EnumDescriptorProtoSchema,
  EnumOptionsSchema,
  EnumValueDescriptorProtoSchema,
  EnumValueOptionsSchema,
  ExtensionRangeOptionsSchema,
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FieldDescriptorProtoSchema,
  FieldOptionsSchema,
  FileDescriptorProtoSchema,
  FileOptionsSchema,
  MessageOptionsSchema,
  MethodDescriptorProtoSchema,
  MethodOptionsSchema,
  OneofDescriptorProtoSchema,
  OneofOptionsSchema,
  ServiceDescriptorProtoSchema,
  ServiceOptionsSchema,
} from "@bufbuild/protobuf/wkt";
import type {
  DescriptorProto,
  EnumDescriptorProto,
  FieldDescriptorProto,
  FileDescriptorProto,
  ServiceDescriptorProto,
} from "@bufbuild/protobuf/wkt";

export interface PrintOptions {
  /** Text placed verbatim before the `syntax`/`edition` line. */
  header?: string;
}

/**
 * Render `file.proto` (a FileDescriptorProto) as .proto source. Custom
 * options are decoded with a registry of the file and its dependencies.
 */
export function descriptorToProto(file: DescFile, options: PrintOptions = {}): string {
  return new Printer(file).print(options.header ?? "");
}

const fieldMax = 536_870_911; // highest field number; `to max` in ranges
const enumMax = 2_147_483_647; // highest enum number

const scalarTypeNames = new Map<FieldDescriptorProto_Type, string>([
  [FieldDescriptorProto_Type.DOUBLE, "double"],
  [FieldDescriptorProto_Type.FLOAT, "float"],
  [FieldDescriptorProto_Type.INT64, "int64"],
  [FieldDescriptorProto_Type.UINT64, "uint64"],
  [FieldDescriptorProto_Type.INT32, "int32"],
  [FieldDescriptorProto_Type.FIXED64, "fixed64"],
  [FieldDescriptorProto_Type.FIXED32, "fixed32"],
  [FieldDescriptorProto_Type.BOOL, "bool"],
  [FieldDescriptorProto_Type.STRING, "string"],
  [FieldDescriptorProto_Type.BYTES, "bytes"],
  [FieldDescriptorProto_Type.UINT32, "uint32"],
  [FieldDescriptorProto_Type.SFIXED32, "sfixed32"],
  [FieldDescriptorProto_Type.SFIXED64, "sfixed64"],
  [FieldDescriptorProto_Type.SINT32, "sint32"],
  [FieldDescriptorProto_Type.SINT64, "sint64"],
]);

/** Throw if `msg` has a set field outside `handled`, or unknown fields. */
function assertHandled(schema: DescMessage, msg: Message, handled: readonly string[], where: string): void {
  const r = reflect(schema, msg);
  for (const field of schema.fields) {
    if (r.isSet(field) && !handled.includes(field.name)) {
      throw new Error(`${where}: ${schema.typeName}.${field.name} is not supported by descriptor-to-proto`);
    }
  }
  if ((r.getUnknown() ?? []).length > 0) {
    throw new Error(`${where}: ${schema.typeName} has unknown fields`);
  }
}

function join(scope: string, name: string): string {
  return scope === "" ? name : `${scope}.${name}`;
}

function parentScope(scope: string): string {
  const i = scope.lastIndexOf(".");
  return i < 0 ? "" : scope.slice(0, i);
}

function indent(text: string, depth = 1): string {
  const pad = "  ".repeat(depth);
  return text
    .split("\n")
    .map((l) => (l === "" ? l : pad + l))
    .join("\n");
}

function hex2(n: number): string {
  return n.toString(16).padStart(2, "0");
}

/** A double-quoted string literal, valid in .proto files and the text format. */
export function quoteString(value: string): string {
  let out = '"';
  for (const ch of value) {
    const code = ch.codePointAt(0) ?? 0;
    if (ch === "\\") out += "\\\\";
    else if (ch === '"') out += '\\"';
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (code < 0x20 || code === 0x7f) out += `\\x${hex2(code)}`;
    else out += ch;
  }
  return `${out}"`;
}

function quoteBytes(value: Uint8Array): string {
  let out = '"';
  for (const b of value) {
    if (b === 0x5c) out += "\\\\";
    else if (b === 0x22) out += '\\"';
    else if (b >= 0x20 && b < 0x7f) out += String.fromCharCode(b);
    else out += `\\x${hex2(b)}`;
  }
  return `${out}"`;
}

function scalarText(type: ScalarType, value: ScalarValue): string {
  switch (type) {
    case ScalarType.STRING:
      return quoteString(value as string);
    case ScalarType.BYTES:
      return quoteBytes(value as Uint8Array);
    case ScalarType.BOOL:
      return value ? "true" : "false";
    case ScalarType.FLOAT:
    case ScalarType.DOUBLE: {
      const n = value as number;
      if (Number.isNaN(n)) return "nan";
      if (n === Number.POSITIVE_INFINITY) return "inf";
      if (n === Number.NEGATIVE_INFINITY) return "-inf";
      if (Object.is(n, -0)) return "-0.0";
      return String(n);
    }
    default:
      return String(value);
  }
}

function enumText(desc: DescEnum, value: number): string {
  const v = desc.values.find((ev) => ev.number === value);
  if (v === undefined) throw new Error(`value ${value} is not defined in enum ${desc.typeName}`);
  return v.name;
}

/** The file and its transitive dependencies. */
function collectFiles(file: DescFile, seen = new Set<DescFile>()): DescFile[] {
  if (!seen.has(file)) {
    seen.add(file);
    for (const dep of file.dependencies) collectFiles(dep, seen);
  }
  return [...seen];
}

/** Every name that can shadow another in protobuf's scoped name lookup. */
function collectSymbols(files: readonly DescFile[]): Set<string> {
  const symbols = new Set<string>();
  const addEnum = (e: DescEnum): void => {
    symbols.add(e.typeName);
    for (const v of e.values) {
      symbols.add(join(e.typeName, v.name));
      symbols.add(join(parentScope(e.typeName), v.name)); // values are siblings of their enum
    }
  };
  const addMessage = (m: DescMessage): void => {
    symbols.add(m.typeName);
    for (const f of m.fields) symbols.add(join(m.typeName, f.name));
    for (const o of m.oneofs) symbols.add(join(m.typeName, o.name));
    for (const x of m.nestedExtensions) symbols.add(x.typeName);
    m.nestedEnums.forEach(addEnum);
    m.nestedMessages.forEach(addMessage);
  };
  for (const f of files) {
    const parts = f.proto.package === "" ? [] : f.proto.package.split(".");
    for (let i = 1; i <= parts.length; i++) symbols.add(parts.slice(0, i).join("."));
    f.messages.forEach(addMessage);
    f.enums.forEach(addEnum);
    for (const x of f.extensions) symbols.add(x.typeName);
    for (const s of f.services) {
      symbols.add(s.typeName);
      for (const m of s.methods) symbols.add(join(s.typeName, m.name));
    }
  }
  return symbols;
}

/** A regular field or an extension: both describe a value the same way. */
type FieldLike = DescField | DescExtension;

/**
 * A field's value in a uniform shape: scalars and enum numbers as is, messages
 * as ReflectMessage, lists as arrays, maps as [key, value] arrays.
 */
function fieldValue(field: DescField, r: ReflectMessage): unknown {
  switch (field.fieldKind) {
    case "list":
      return [...r.get(field)];
    case "map":
      return [...r.get(field)];
    default:
      return r.get(field);
  }
}

/** An extension's value (read from unknown fields) in the shape of fieldValue. */
function extensionValue(ext: DescExtension, msg: Message): unknown {
  const v: unknown = getExtension(msg as never, ext);
  switch (ext.fieldKind) {
    case "message":
      return reflect(ext.message, v as Message);
    case "list":
      return ext.listKind === "message" ? (v as Message[]).map((m) => reflect(ext.message, m)) : v;
    default:
      return v;
  }
}

class Printer {
  private readonly proto: FileDescriptorProto;
  private readonly registry: Registry;
  private readonly symbols: Set<string>;
  private readonly syntax: "proto2" | "proto3" | "editions";

  constructor(file: DescFile) {
    this.proto = file.proto;
    const files = collectFiles(file);
    this.registry = createRegistry(...files);
    this.symbols = collectSymbols(files);
    const syntax = this.proto.syntax === "" ? "proto2" : this.proto.syntax;
    if (syntax !== "proto2" && syntax !== "proto3" && syntax !== "editions") {
      throw new Error(`unsupported syntax ${JSON.stringify(this.proto.syntax)}`);
    }
    this.syntax = syntax;
  }

  print(header: string): string {
    const p = this.proto;
    assertHandled(
      FileDescriptorProtoSchema,
      p,
      [
        "name",
        "package",
        "dependency",
        "public_dependency",
        "message_type",
        "enum_type",
        "service",
        "extension",
        "options",
        "source_code_info", // comments only; deliberately not rendered
        "syntax",
        "edition",
      ],
      p.name,
    );
    const blocks: string[] = [];
    if (this.syntax === "editions") {
      const m = /^EDITION_(\d+)$/.exec(Edition[p.edition] ?? "");
      if (m === null) throw new Error(`unsupported edition ${p.edition}`);
      blocks.push(`edition = "${m[1]}";`);
    } else {
      blocks.push(`syntax = "${this.syntax}";`);
    }
    if (p.package !== "") blocks.push(`package ${p.package};`);
    if (p.dependency.length > 0) {
      blocks.push(
        p.dependency
          .map((d, i) => `import ${p.publicDependency.includes(i) ? "public " : ""}${quoteString(d)};`)
          .join("\n"),
      );
    }
    if (p.options !== undefined) {
      // Sorted by name like `buf format` does; the sort is stable, so repeated
      // options keep their order.
      const name = (e: string) => e.slice(0, e.indexOf(" = "));
      const entries = this.optionEntries(FileOptionsSchema, p.options, p.package);
      entries.sort((a, b) => (name(a) < name(b) ? -1 : name(a) > name(b) ? 1 : 0));
      if (entries.length > 0) blocks.push(entries.map((e) => `option ${e};`).join("\n"));
    }
    blocks.push(...this.extendBlocks(p.extension, p.package));
    for (const m of p.messageType) blocks.push(this.message(m, p.package));
    for (const e of p.enumType) blocks.push(this.enumBlock(e, p.package));
    for (const s of p.service) blocks.push(this.service(s, p.package));
    const head = header === "" ? "" : `${header.trimEnd()}\n\n`;
    return `${head}${blocks.join("\n\n")}\n`;
  }

  // --- names ---

  /** Resolve a (possibly dotted) relative name from `scope`, like protoc's first-match lookup. */
  private resolve(name: string, scope: string): string | undefined {
    const first = name.split(".")[0] ?? name;
    for (let s = scope; ; s = parentScope(s)) {
      if (this.symbols.has(join(s, first))) return join(s, name);
      if (s === "") return undefined;
    }
  }

  /** The shortest name that resolves to `fqn` from `scope`. */
  private relName(typeName: string, scope: string): string {
    const fqn = typeName.startsWith(".") ? typeName.slice(1) : typeName;
    const parts = fqn.split(".");
    for (let i = parts.length - 1; i >= 0; i--) {
      const candidate = parts.slice(i).join(".");
      if (this.resolve(candidate, scope) === fqn) return candidate;
    }
    return `.${fqn}`;
  }

  // --- options ---

  /**
   * Option assignments (`name = value`, possibly multi-line) for an options
   * message: its regular fields, then extensions found in its unknown fields.
   */
  private optionEntries(schema: DescMessage, opts: Message, scope: string): string[] {
    const r = reflect(schema, opts);
    const entries: string[] = [];
    for (const field of schema.fields) {
      if (!r.isSet(field)) continue;
      if (field.name === "uninterpreted_option") {
        throw new Error(`${scope}: uninterpreted options are not supported`);
      }
      entries.push(...this.assignments(field.name, field, fieldValue(field, r)));
    }
    const numbers = [...new Set((r.getUnknown() ?? []).map((u) => u.no))].sort((a, b) => a - b);
    for (const no of numbers) {
      const ext = this.registry.getExtensionFor(schema, no);
      if (ext === undefined) {
        throw new Error(`${scope}: option field ${no} of ${schema.typeName} is not a known extension`);
      }
      entries.push(...this.assignments(`(${this.relName(ext.typeName, scope)})`, ext, extensionValue(ext, opts)));
    }
    return entries;
  }

  /** `name = value` for one option field; message values are flattened one level. */
  private assignments(name: string, field: FieldLike, value: unknown): string[] {
    switch (field.fieldKind) {
      case "scalar":
        return [`${name} = ${scalarText(field.scalar, value as ScalarValue)}`];
      case "enum":
        return [`${name} = ${enumText(field.enum, value as number)}`];
      case "list":
        return (value as unknown[]).map((v) => `${name} = ${this.listItemText(field, v)}`);
      case "message": {
        const m = value as ReflectMessage;
        // Flatten `(ext) = {a: 1}` to `(ext).a = 1` for readability, unless the
        // value needs the aggregate form (extensions or maps inside it).
        if ((m.getUnknown() ?? []).length > 0 || m.fields.some((f) => f.fieldKind === "map" && m.isSet(f))) {
          return [`${name} = ${this.aggregate(m)}`];
        }
        const out: string[] = [];
        for (const f of m.fields) {
          if (m.isSet(f)) out.push(...this.assignments(`${name}.${f.name}`, f, fieldValue(f, m)));
        }
        return out.length > 0 ? out : [`${name} = {}`];
      }
      case "map":
        throw new Error(`map option ${name} is not supported`);
    }
  }

  private listItemText(field: FieldLike & { fieldKind: "list" }, v: unknown): string {
    switch (field.listKind) {
      case "scalar":
        return scalarText(field.scalar, v as ScalarValue);
      case "enum":
        return enumText(field.enum, v as number);
      case "message":
        return this.aggregate(v as ReflectMessage);
    }
  }

  /** A message value in protobuf text format: `{\n  a: 1\n}` or `{}`. */
  private aggregate(m: ReflectMessage): string {
    const body = this.textBody(m);
    return body.length === 0 ? "{}" : `{\n${indent(body.join("\n"))}\n}`;
  }

  private textBody(m: ReflectMessage): string[] {
    const lines: string[] = [];
    for (const f of m.fields) {
      if (m.isSet(f)) lines.push(...this.textField(f.name, f, fieldValue(f, m)));
    }
    const numbers = [...new Set((m.getUnknown() ?? []).map((u) => u.no))].sort((a, b) => a - b);
    for (const no of numbers) {
      const ext = this.registry.getExtensionFor(m.desc, no);
      if (ext === undefined) throw new Error(`unknown field ${no} in a ${m.desc.typeName} option value`);
      lines.push(...this.textField(`[${ext.typeName}]`, ext, extensionValue(ext, m.message)));
    }
    return lines;
  }

  private textField(name: string, f: FieldLike, value: unknown): string[] {
    const delimited =
      (f.fieldKind === "message" && f.delimitedEncoding) ||
      (f.fieldKind === "list" && f.listKind === "message" && f.delimitedEncoding);
    if (delimited) throw new Error(`group-encoded field ${name} is not supported`);
    switch (f.fieldKind) {
      case "scalar":
        return [`${name}: ${scalarText(f.scalar, value as ScalarValue)}`];
      case "enum":
        return [`${name}: ${enumText(f.enum, value as number)}`];
      case "message":
        return [`${name} ${this.aggregate(value as ReflectMessage)}`];
      case "list":
        return (value as unknown[]).map((v) =>
          f.listKind === "message"
            ? `${name} ${this.aggregate(v as ReflectMessage)}`
            : `${name}: ${this.listItemText(f, v)}`,
        );
      case "map":
        return (value as [unknown, unknown][]).map(([k, v]) => {
          const key = `key: ${scalarText(f.mapKey, k as ScalarValue)}`;
          let val: string;
          switch (f.mapKind) {
            case "scalar":
              val = `value: ${scalarText(f.scalar, v as ScalarValue)}`;
              break;
            case "enum":
              val = `value: ${enumText(f.enum, v as number)}`;
              break;
            case "message":
              val = `value ${this.aggregate(v as ReflectMessage)}`;
              break;
          }
          return `${name} {\n${indent(`${key}\n${val}`)}\n}`;
        });
    }
  }

  /** `option a = b;` lines, or "" when there are none. */
  private optionStatements(schema: DescMessage, opts: Message, scope: string): string {
    return this.optionEntries(schema, opts, scope)
      .map((e) => `option ${e};`)
      .join("\n");
  }

  /** ` [a = b, c = d]` for fields, enum values and extension ranges, or "". */
  private static bracket(entries: readonly string[]): string {
    if (entries.length === 0) return "";
    if (entries.length === 1) return ` [${entries[0]}]`;
    return ` [\n${entries.map((e) => indent(e)).join(",\n")}\n]`;
  }

  // --- fields ---

  private label(f: FieldDescriptorProto, where: string): string {
    if (f.label === FieldDescriptorProto_Label.REPEATED) return "repeated ";
    if (this.syntax === "proto2") {
      return f.label === FieldDescriptorProto_Label.REQUIRED ? "required " : "optional ";
    }
    if (f.label === FieldDescriptorProto_Label.REQUIRED) throw new Error(`${where}: required in ${this.syntax}`);
    return f.proto3Optional ? "optional " : "";
  }

  private fieldType(f: FieldDescriptorProto, scope: string, where: string): string {
    const scalar = scalarTypeNames.get(f.type);
    if (scalar !== undefined) return scalar;
    if (f.type === FieldDescriptorProto_Type.MESSAGE || f.type === FieldDescriptorProto_Type.ENUM) {
      if (f.typeName === "") throw new Error(`${where}: missing type_name`);
      return this.relName(f.typeName, scope);
    }
    throw new Error(`${where}: field type ${FieldDescriptorProto_Type[f.type] ?? f.type} is not supported`);
  }

  private defaultValue(f: FieldDescriptorProto): string {
    switch (f.type) {
      case FieldDescriptorProto_Type.STRING:
        return quoteString(f.defaultValue);
      case FieldDescriptorProto_Type.BYTES:
        return `"${f.defaultValue}"`; // already C-escaped in the descriptor
      default:
        return f.defaultValue; // numbers, inf/nan, true/false, enum value names
    }
  }

  /**
   * One field declaration. `scope` is the enclosing message (or package for
   * top-level extensions); `mapEntries` are the message's map entry types.
   */
  private field(
    f: FieldDescriptorProto,
    scope: string,
    ctx: { inOneof: boolean; isExtension: boolean; mapEntries: ReadonlyMap<string, DescriptorProto> },
  ): string {
    const where = join(scope, f.name);
    const handled = ["name", "number", "label", "type", "type_name", "default_value", "json_name", "options"];
    if (ctx.isExtension) handled.push("extendee");
    if (ctx.inOneof || f.proto3Optional) handled.push("oneof_index");
    if (this.syntax === "proto3") handled.push("proto3_optional");
    assertHandled(FieldDescriptorProtoSchema, f, handled, where);

    const entry = ctx.mapEntries.get(f.typeName);
    let decl: string;
    if (entry !== undefined) {
      if (f.label !== FieldDescriptorProto_Label.REPEATED || ctx.inOneof || ctx.isExtension) {
        throw new Error(`${where}: unexpected use of map entry ${f.typeName}`);
      }
      const [key, value] = entry.field;
      if (key === undefined || value === undefined || entry.field.length !== 2) {
        throw new Error(`${where}: malformed map entry`);
      }
      decl = `map<${this.fieldType(key, scope, where)}, ${this.fieldType(value, scope, where)}> ${f.name} = ${f.number}`;
    } else {
      const label = ctx.inOneof ? "" : this.label(f, where);
      decl = `${label}${this.fieldType(f, scope, where)} ${f.name} = ${f.number}`;
    }

    const entries: string[] = [];
    if (reflect(FieldDescriptorProtoSchema, f).isSet(FieldDescriptorProtoSchema.field.defaultValue)) {
      entries.push(`default = ${this.defaultValue(f)}`);
    }
    if (f.jsonName !== "" && f.jsonName !== protoCamelCase(f.name)) {
      if (ctx.isExtension) throw new Error(`${where}: extensions cannot have a custom json_name`);
      entries.push(`json_name = ${quoteString(f.jsonName)}`);
    }
    if (f.options !== undefined) entries.push(...this.optionEntries(FieldOptionsSchema, f.options, where));
    return `${decl}${Printer.bracket(entries)};`;
  }

  /** `extend X { ... }` blocks, one per run of extensions sharing an extendee. */
  private extendBlocks(exts: readonly FieldDescriptorProto[], scope: string): string[] {
    const blocks: string[] = [];
    let i = 0;
    while (i < exts.length) {
      const extendee = exts[i]?.extendee ?? "";
      if (extendee === "") throw new Error(`${scope}: extension without extendee`);
      const fields: string[] = [];
      for (; i < exts.length && exts[i]?.extendee === extendee; i++) {
        const f = exts[i] as FieldDescriptorProto;
        fields.push(this.field(f, scope, { inOneof: false, isExtension: true, mapEntries: new Map() }));
      }
      blocks.push(`extend ${this.relName(extendee, scope)} {\n${indent(fields.join("\n"))}\n}`);
    }
    return blocks;
  }

  // --- messages ---

  private message(d: DescriptorProto, scope: string): string {
    const name = join(scope, d.name);
    assertHandled(
      DescriptorProtoSchema,
      d,
      [
        "name",
        "field",
        "nested_type",
        "enum_type",
        "extension_range",
        "extension",
        "oneof_decl",
        "options",
        "reserved_range",
        "reserved_name",
      ],
      name,
    );
    const body: string[] = [];
    if (d.options !== undefined) {
      if (d.options.mapEntry) throw new Error(`${name}: map entry outside of a map field`);
      const opts = this.optionStatements(MessageOptionsSchema, d.options, name);
      if (opts !== "") body.push(opts);
    }

    // Map entry types are written implicitly by `map<K, V>` fields.
    const mapEntries = new Map<string, DescriptorProto>();
    for (const n of d.nestedType) {
      if (n.options?.mapEntry === true) {
        assertHandled(DescriptorProtoSchema, n, ["name", "field", "options"], join(name, n.name));
        assertHandled(MessageOptionsSchema, n.options, ["map_entry"], join(name, n.name));
        mapEntries.set(`.${join(name, n.name)}`, n);
      }
    }

    // Fields in declaration order; a oneof's fields must be contiguous and the
    // oneofs must appear in declaration order.
    const fieldLines: string[] = [];
    const seenOneofs: number[] = [];
    const synthetic = new Set<number>();
    for (const f of d.field) if (f.proto3Optional) synthetic.add(f.oneofIndex);
    let i = 0;
    while (i < d.field.length) {
      const f = d.field[i] as FieldDescriptorProto;
      const inOneof =
        reflect(FieldDescriptorProtoSchema, f).isSet(FieldDescriptorProtoSchema.field.oneofIndex) && !f.proto3Optional;
      if (!inOneof) {
        fieldLines.push(this.field(f, name, { inOneof: false, isExtension: false, mapEntries }));
        i++;
        continue;
      }
      const index = f.oneofIndex;
      const decl = d.oneofDecl[index];
      if (decl === undefined || seenOneofs.includes(index)) {
        throw new Error(`${name}: oneof ${index} is missing or its fields are not contiguous`);
      }
      seenOneofs.push(index);
      const where = join(name, decl.name);
      assertHandled(OneofDescriptorProtoSchema, decl, ["name", "options"], where);
      const inner: string[] = [];
      if (decl.options !== undefined) {
        const opts = this.optionStatements(OneofOptionsSchema, decl.options, where);
        if (opts !== "") inner.push(opts);
      }
      for (; i < d.field.length; i++) {
        const g = d.field[i] as FieldDescriptorProto;
        const isSet = reflect(FieldDescriptorProtoSchema, g).isSet(FieldDescriptorProtoSchema.field.oneofIndex);
        if (!isSet || g.proto3Optional || g.oneofIndex !== index) break;
        inner.push(this.field(g, name, { inOneof: true, isExtension: false, mapEntries }));
      }
      fieldLines.push(`oneof ${decl.name} {\n${indent(inner.join("\n"))}\n}`);
    }
    const real = d.oneofDecl.map((_, idx) => idx).filter((idx) => !synthetic.has(idx));
    if (real.length !== seenOneofs.length || real.some((idx, k) => seenOneofs[k] !== idx)) {
      throw new Error(`${name}: oneofs are empty or out of declaration order`);
    }
    if (fieldLines.length > 0) body.push(fieldLines.join("\n"));

    const ranges: string[] = [];
    for (const r of d.extensionRange) {
      assertHandled(DescriptorProto_ExtensionRangeSchema, r, ["start", "end", "options"], name);
      const opts = r.options ? this.optionEntries(ExtensionRangeOptionsSchema, r.options, name) : [];
      ranges.push(`extensions ${Printer.range(r.start, r.end - 1, fieldMax)}${Printer.bracket(opts)};`);
    }
    for (const r of d.reservedRange) {
      assertHandled(DescriptorProto_ReservedRangeSchema, r, ["start", "end"], name);
      ranges.push(`reserved ${Printer.range(r.start, r.end - 1, fieldMax)};`);
    }
    if (d.reservedName.length > 0) ranges.push(this.reservedNames(d.reservedName));
    if (ranges.length > 0) body.push(ranges.join("\n"));

    body.push(...this.extendBlocks(d.extension, name));
    for (const e of d.enumType) body.push(this.enumBlock(e, name));
    for (const n of d.nestedType) if (n.options?.mapEntry !== true) body.push(this.message(n, name));

    return body.length === 0 ? `message ${d.name} {}` : `message ${d.name} {\n${indent(body.join("\n\n"))}\n}`;
  }

  /** `n`, `n to m` or `n to max`; `last` is inclusive. */
  private static range(start: number, last: number, max: number): string {
    if (start === last) return String(start);
    return `${start} to ${last === max ? "max" : String(last)}`;
  }

  private reservedNames(names: readonly string[]): string {
    const list = this.syntax === "editions" ? names : names.map(quoteString);
    return `reserved ${list.join(", ")};`;
  }

  // --- enums ---

  private enumBlock(e: EnumDescriptorProto, scope: string): string {
    const name = join(scope, e.name);
    assertHandled(EnumDescriptorProtoSchema, e, ["name", "value", "options", "reserved_range", "reserved_name"], name);
    const body: string[] = [];
    if (e.options !== undefined) {
      const opts = this.optionStatements(EnumOptionsSchema, e.options, name);
      if (opts !== "") body.push(opts);
    }
    const values = e.value.map((v) => {
      const where = join(scope, v.name);
      assertHandled(EnumValueDescriptorProtoSchema, v, ["name", "number", "options"], where);
      const opts = v.options ? this.optionEntries(EnumValueOptionsSchema, v.options, where) : [];
      return `${v.name} = ${v.number}${Printer.bracket(opts)};`;
    });
    if (values.length > 0) body.push(values.join("\n"));
    const reserved: string[] = [];
    for (const r of e.reservedRange) {
      assertHandled(EnumDescriptorProto_EnumReservedRangeSchema, r, ["start", "end"], name);
      reserved.push(`reserved ${Printer.range(r.start, r.end, enumMax)};`);
    }
    if (e.reservedName.length > 0) reserved.push(this.reservedNames(e.reservedName));
    if (reserved.length > 0) body.push(reserved.join("\n"));
    return `enum ${e.name} {\n${indent(body.join("\n\n"))}\n}`;
  }

  // --- services ---

  private service(s: ServiceDescriptorProto, scope: string): string {
    const name = join(scope, s.name);
    assertHandled(ServiceDescriptorProtoSchema, s, ["name", "method", "options"], name);
    const body: string[] = [];
    if (s.options !== undefined) {
      const opts = this.optionStatements(ServiceOptionsSchema, s.options, name);
      if (opts !== "") body.push(opts);
    }
    for (const m of s.method) {
      const where = join(name, m.name);
      assertHandled(
        MethodDescriptorProtoSchema,
        m,
        ["name", "input_type", "output_type", "options", "client_streaming", "server_streaming"],
        where,
      );
      const input = `${m.clientStreaming ? "stream " : ""}${this.relName(m.inputType, where)}`;
      const output = `${m.serverStreaming ? "stream " : ""}${this.relName(m.outputType, where)}`;
      const opts = m.options ? this.optionStatements(MethodOptionsSchema, m.options, where) : "";
      const tail = opts === "" ? ";" : ` {\n${indent(opts)}\n}`;
      body.push(`rpc ${m.name}(${input}) returns (${output})${tail}`);
    }
    return body.length === 0 ? `service ${s.name} {}` : `service ${s.name} {\n${indent(body.join("\n"))}\n}`;
  }
}
