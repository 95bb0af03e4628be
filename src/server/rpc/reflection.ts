/**
 * gRPC server reflection (grpc.reflection.v1 and v1alpha), so `grpcurl` and
 * `buf curl` work without local protos. The two versions have identical
 * messages; v1alpha is served by converting through the wire format.
 */
import {
  create,
  type DescFile,
  type DescMessage,
  type FileRegistry,
  fromBinary,
  type MessageShape,
  toBinary,
} from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import {
  type ServerReflectionRequest,
  ServerReflectionRequestSchema,
  type ServerReflectionResponse,
  ServerReflectionResponseSchema,
  ServerReflection as ServerReflectionV1,
} from "../../../gen/grpc/reflection/v1/reflection_pb.js";
import {
  ServerReflectionRequestSchema as AlphaRequestSchema,
  ServerReflectionResponseSchema as AlphaResponseSchema,
  ServerReflection as ServerReflectionV1alpha,
} from "../../../gen/grpc/reflection/v1alpha/reflection_pb.js";

export function registerReflection(router: ConnectRouter, registry: FileRegistry, services: readonly string[]): void {
  router.service(ServerReflectionV1, {
    async *serverReflectionInfo(requests) {
      for await (const req of requests) yield reflect(registry, services, req);
    },
  });
  router.service(ServerReflectionV1alpha, {
    async *serverReflectionInfo(requests) {
      for await (const req of requests) {
        const v1 = reflect(registry, services, convert(AlphaRequestSchema, ServerReflectionRequestSchema, req));
        yield convert(ServerReflectionResponseSchema, AlphaResponseSchema, v1);
      }
    },
  });
}

function convert<F extends DescMessage, T extends DescMessage>(
  from: F,
  to: T,
  message: MessageShape<F>,
): MessageShape<T> {
  return fromBinary(to, toBinary(from, message));
}

function reflect(
  registry: FileRegistry,
  services: readonly string[],
  req: ServerReflectionRequest,
): ServerReflectionResponse {
  const base = { validHost: req.host, originalRequest: req };
  const r = req.messageRequest;
  const notFound = (what: string) =>
    create(ServerReflectionResponseSchema, {
      ...base,
      messageResponse: { case: "errorResponse", value: { errorCode: 5, errorMessage: `${what} not found` } },
    });
  const files = (file: DescFile | undefined, what: string) =>
    file === undefined
      ? notFound(what)
      : create(ServerReflectionResponseSchema, {
          ...base,
          messageResponse: { case: "fileDescriptorResponse", value: { fileDescriptorProto: withDependencies(file) } },
        });
  switch (r.case) {
    case "listServices":
      return create(ServerReflectionResponseSchema, {
        ...base,
        messageResponse: { case: "listServicesResponse", value: { service: services.map((name) => ({ name })) } },
      });
    case "fileByFilename":
      return files(registry.getFile(r.value), `file ${r.value}`);
    case "fileContainingSymbol":
      return files(fileOfSymbol(registry, r.value), `symbol ${r.value}`);
    case "fileContainingExtension": {
      const ext = registry.getExtensionFor(
        registry.getMessage(r.value.containingType) ?? dummy,
        r.value.extensionNumber,
      );
      return files(ext?.file, `extension ${r.value.extensionNumber} of ${r.value.containingType}`);
    }
    case "allExtensionNumbersOfType": {
      const message = registry.getMessage(r.value);
      if (message === undefined) return notFound(`type ${r.value}`);
      const numbers: number[] = [];
      for (const t of registry) if (t.kind === "extension" && t.extendee.typeName === r.value) numbers.push(t.number);
      return create(ServerReflectionResponseSchema, {
        ...base,
        messageResponse: {
          case: "allExtensionNumbersResponse",
          value: { baseTypeName: r.value, extensionNumber: numbers },
        },
      });
    }
    default:
      return create(ServerReflectionResponseSchema, {
        ...base,
        messageResponse: { case: "errorResponse", value: { errorCode: 12, errorMessage: "unsupported request" } },
      });
  }
}

// getExtensionFor needs a message descriptor; an unknown one simply finds nothing.
const dummy = ServerReflectionRequestSchema;

function fileOfSymbol(registry: FileRegistry, symbol: string): DescFile | undefined {
  const direct = registry.get(symbol);
  if (direct !== undefined) return direct.file;
  // A method or an enum value: look its parent up.
  const dot = symbol.lastIndexOf(".");
  if (dot < 0) return undefined;
  const parent = registry.get(symbol.slice(0, dot));
  return parent?.file;
}

/** The file and everything it imports, each serialized once, the file first. */
function withDependencies(file: DescFile): Uint8Array[] {
  const seen = new Set<string>();
  const out: Uint8Array[] = [];
  const visit = (f: DescFile) => {
    if (seen.has(f.name)) return;
    seen.add(f.name);
    out.push(toBinary(FileDescriptorProtoSchema, f.proto));
    for (const d of f.dependencies) visit(d);
  };
  visit(file);
  return out;
}
