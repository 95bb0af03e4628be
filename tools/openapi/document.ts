// The OpenAPI 3.1 document of boardline's JSON routes, from the protos alone:
// the routes of the `google.api.http` annotations (read as the gateway reads
// them, src/server/json/routes.ts), the messages' schemas (schemas.ts) with
// their protovalidate rules (rules.ts), the doc comments, and the failures of
// the error table (src/server/call/error-table.ts, by status in error-docs.ts), and
// the Idempotency-Key header of the methods that honour it.

import { create, type DescMethod, type FileRegistry, toJsonString } from "@bufbuild/protobuf";
import { VARIABLES } from "../../src/config/variables.js";
import { type DocumentedJsonError, documentedJsonErrors } from "../../src/server/call/error-docs.js";
import { type HttpBinding, httpBinding, httpRuleOf } from "../../src/server/json/routes.js";
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_METHODS } from "../../src/server/call/served-methods.js";
import type { Schema } from "./rules.js";
import { comment, Schemas } from "./schemas.js";
import { IDEMPOTENCY_KEY_TEXT, INFO_DESCRIPTION, SECURITY_SCHEME, SSE_FRAMING } from "./texts.js";

export interface JsonOperation {
  readonly method: DescMethod;
  readonly binding: HttpBinding;
}

/** Every method with a `google.api.http` annotation, in file, service and method order. */
export function jsonOperations(registry: FileRegistry): JsonOperation[] {
  const files = [...registry.files].sort((a, b) => a.name.localeCompare(b.name));
  return files.flatMap((file) =>
    file.services.flatMap((service) =>
      service.methods.flatMap((method) => {
        const rule = httpRuleOf(method);
        return rule === undefined ? [] : [{ method, binding: httpBinding(method, rule) }];
      }),
    ),
  );
}

/** The whole document, as a plain object ready for `JSON.stringify`. */
export function openApiDocument(registry: FileRegistry): Schema {
  const operations = jsonOperations(registry);
  const schemas = new Schemas();
  const errors = documentedJsonErrors(VARIABLES.MAX_BODY_BYTES.default);
  const paths: Record<string, Record<string, Schema>> = {};
  for (const op of operations) {
    const item = paths[op.binding.template] ?? {};
    item[op.binding.httpMethod.toLowerCase()] = operation(op, schemas, errors);
    paths[op.binding.template] = item;
  }
  const services = [...new Set(operations.map((op) => op.method.parent))];
  return {
    openapi: "3.1.0",
    info: { title: "boardline", version: "v1", description: INFO_DESCRIPTION },
    servers: [{ url: "/", description: "the server this document was fetched from" }],
    security: [{ bearerAuth: [] }],
    tags: services.map((s) => ({ name: s.typeName, description: comment(s) })),
    paths,
    components: {
      schemas: { ...schemas.components, Error: ERROR_SCHEMA },
      responses: Object.fromEntries(errors.map((e) => [`Error${e.status}`, errorResponse(e)])),
      headers: HEADERS,
      securitySchemes: { bearerAuth: SECURITY_SCHEME },
    },
  };
}

function operation(op: JsonOperation, schemas: Schemas, errors: readonly DocumentedJsonError[]): Schema {
  const { method, binding } = op;
  const text = comment(method);
  const rpc = `\`${method.parent.typeName}/${method.name}\``;
  const parameters: Schema[] = binding.segments.flatMap((s) => {
    if ("literal" in s) return [];
    const field = method.input.fields.find((f) => f.name === s.field);
    if (field === undefined) throw new Error(`${method.parent.typeName}.${method.name}: no field ${s.field}`);
    const { description, ...schema } = schemas.field(field, "request");
    return [
      { name: s.field, in: "path", required: true, ...(description === undefined ? {} : { description }), schema },
    ];
  });
  if (isIdempotent(method)) parameters.push(IDEMPOTENCY_KEY_PARAMETER);
  return {
    operationId: `${method.parent.name}_${method.name}`,
    tags: [method.parent.typeName],
    summary: summaryOf(text),
    description: `${text}\n\nThe same call over gRPC, gRPC-Web and Connect: ${rpc}.`,
    ...(parameters.length === 0 ? {} : { parameters }),
    ...(binding.hasBody
      ? {
          requestBody: {
            required: true,
            content: { "application/json": { schema: schemas.ref(method.input, "request") } },
          },
        }
      : {}),
    responses: {
      "200": method.methodKind === "server_streaming" ? streamAnswer(method, schemas) : unaryAnswer(method, schemas),
      ...Object.fromEntries(
        errors
          .filter((e) => binding.hasBody || !e.bodyOnly)
          .map((e) => [String(e.status), { $ref: `#/components/responses/Error${e.status}` }]),
      ),
    },
  };
}

function unaryAnswer(method: DescMethod, schemas: Schemas): Schema {
  return {
    description: `The ${method.output.name}.`,
    content: { "application/json": { schema: schemas.ref(method.output, "response") } },
  };
}

/** A server-streaming method answers server-sent events, one `data:` line per message (src/server/json/event-stream.ts). */
function streamAnswer(method: DescMethod, schemas: Schemas): Schema {
  const name = method.output.typeName;
  schemas.ref(method.output, "response");
  const zero = toJsonString(method.output, create(method.output), {
    useProtoFieldName: true,
    alwaysEmitImplicit: true,
  });
  return {
    description: `A stream of server-sent events, each carrying one \`${name}\` (see its schema). ${SSE_FRAMING}`,
    content: {
      "text/event-stream": {
        schema: { type: "string", description: `Server-sent events; each \`data:\` is one \`${name}\` as JSON.` },
        example: `data: ${zero}\n\n: keep-alive\n\n`,
      },
    },
  };
}

/** Whether the method honours an Idempotency-Key (compared by name: the generator's descriptors are its own). */
function isIdempotent(method: DescMethod): boolean {
  return IDEMPOTENT_METHODS.some((m) => m.parent.typeName === method.parent.typeName && m.name === method.name);
}

const IDEMPOTENCY_KEY_PARAMETER: Schema = {
  name: IDEMPOTENCY_KEY_HEADER.replace(/(^|-)[a-z]/g, (c) => c.toUpperCase()),
  in: "header",
  required: false,
  description: IDEMPOTENCY_KEY_TEXT,
  schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x20-\\x7E]+$" },
  example: "8e03978e-40d5-43e8-bc93-6894a57f9324",
};

function errorResponse(e: DocumentedJsonError): Schema {
  const headers = Object.fromEntries(
    e.headers.map((h) => {
      const name = HEADER_NAMES[h];
      if (name === undefined) throw new Error(`error ${e.status}: the header ${h} is not described (HEADERS)`);
      return [name, { $ref: `#/components/headers/${name}` }];
    }),
  );
  const [only] = e.examples;
  const examples =
    e.examples.length === 1 && only !== undefined
      ? { example: JSON.parse(only.body) }
      : { examples: Object.fromEntries(e.examples.map((x) => [x.name, { value: JSON.parse(x.body) }])) };
  return {
    description: `\`error.code\` ${e.code}. ${e.when}`,
    ...(e.headers.length === 0 ? {} : { headers }),
    content: { "application/json": { schema: { $ref: "#/components/schemas/Error" }, ...examples } },
  };
}

const ERROR_SCHEMA: Schema = {
  type: "object",
  description: "The body of every failure on a JSON route.",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["code", "message"],
      properties: {
        code: {
          type: "integer",
          description: "The documented code: 611 for an invalid request, else the HTTP status.",
        },
        message: { type: "string", description: "What went wrong; safe to show; never a stack trace." },
      },
    },
  },
};

const HEADER_NAMES: Readonly<Record<string, string>> = {
  "www-authenticate": "WWW-Authenticate",
  "retry-after": "Retry-After",
};

const HEADERS: Readonly<Record<string, Schema>> = {
  "WWW-Authenticate": { description: 'The scheme to use: `Bearer realm="boardline"`.', schema: { type: "string" } },
  "Retry-After": { description: "Seconds to wait before trying again.", schema: { type: "integer", minimum: 1 } },
};

/**
 * The comment's first sentence as the operation's summary; a long one loses
 * its parentheses, then all but its first clause.
 */
function summaryOf(text: string): string {
  const flat = text.replace(/\s+/g, " ");
  const end = flat.indexOf(". ");
  let sentence = end < 0 ? flat.replace(/\.$/, "") : flat.slice(0, end);
  if (sentence.length > 100) sentence = sentence.replace(/ \([^()]*\)/g, "");
  if (sentence.length <= 120) return sentence;
  const clause = /[,:;]/.exec(sentence.slice(20));
  return clause === null ? sentence : sentence.slice(0, 20 + clause.index);
}
