/**
 * The one wall around connect-es internals. Everything boardline uses from
 * connect-es's `protocol*` subpaths — which connect-es documents as private
 * ("does not follow semantic versioning; use an exact version") — or that
 * relies on connect-es behaviour it does not promise, is imported or stated
 * here and nowhere else. package.json pins `@connectrpc/connect` and
 * `@connectrpc/connect-node` to exact versions, and
 * test/server/rpc/connect-internals.test.ts has one test per assumption below,
 * so an upgrade that breaks one fails a test with its name.
 *
 * Assumptions:
 * 1. The gRPC status trailer helper (`setTrailerStatus`) and
 *    the gRPC-Web trailer frame helpers (`trailerFlag`, `trailerParse`,
 *    `trailerSerialize`, `encodeEnvelope`) keep their shapes.
 * 2. The Connect protocol's error body helpers (`errorFromJson`, `errorFromJsonBytes`,
 *    `errorToJsonBytes`, `codeToHttpStatus`) keep their shapes.
 * 3. A request message that is not valid protobuf is answered INTERNAL with a
 *    message starting "parse binary" (`isUndecodableMessageError`).
 * 4. A request message over `readMaxBytes` is answered RESOURCE_EXHAUSTED with
 *    a message saying "larger than configured readMaxBytes"
 *    (`isOversizeMessageError`).
 * 5. A method's `jsonOptions.textDecoder` (typed only on connect-es's JSON
 *    serialization, not on the router options) decodes every JSON request body
 *    before connect-es parses it, and a ConnectError it throws reaches the
 *    client as it is (`withJsonBodyCheck`).
 * 6. A compressed request message that does not decompress is answered
 *    INTERNAL or INVALID_ARGUMENT "decompression failed", and one whose
 *    compressed flag is set with no encoding agreed INTERNAL "received
 *    compressed envelope, but do not know how to decompress"
 *    (`isUndecompressableMessageError`).
 */
import type { JsonReadOptions, JsonWriteOptions } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";

export {
  createAsyncIterable,
  encodeEnvelope,
  readAllBytes,
  type UniversalHandler,
  type UniversalServerResponse,
} from "@connectrpc/connect/protocol";
export {
  codeToHttpStatus,
  errorFromJson,
  errorFromJsonBytes,
  errorToJsonBytes,
} from "@connectrpc/connect/protocol-connect";
export { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
export { trailerFlag, trailerParse, trailerSerialize } from "@connectrpc/connect/protocol-grpc-web";

/** Assumption 3: connect-es's own answer to a request message that is not valid protobuf. */
export function isUndecodableMessageError(code: Code, message: string): boolean {
  return code === Code.Internal && message.startsWith("parse binary");
}

/** Assumption 4: connect-es's own answer to a request message over `readMaxBytes`. */
export function isOversizeMessageError(code: Code, message: string): boolean {
  return code === Code.ResourceExhausted && message.includes("larger than configured readMaxBytes");
}

/** Assumption 6: connect-es's own answer to a compressed request message it cannot decompress. */
export function isUndecompressableMessageError(code: Code, message: string): boolean {
  if (code !== Code.Internal && code !== Code.InvalidArgument) return false;
  return message === "decompression failed" || message.startsWith("received compressed envelope, but do not know");
}

type JsonOptions = Partial<JsonReadOptions & JsonWriteOptions>;

/**
 * Assumption 5: per-method JSON options whose text decoder first runs `check`
 * on the raw body bytes (which may throw a ConnectError for the client), then
 * decodes them as UTF-8 with `decode`.
 */
export function withJsonBodyCheck(
  options: JsonOptions,
  check: (bytes: Uint8Array) => void,
  decode: (bytes: Uint8Array) => string,
): JsonOptions {
  const textDecoder = {
    decode(bytes: Uint8Array): string {
      check(bytes);
      return decode(bytes);
    },
  };
  return { ...options, textDecoder } as JsonOptions;
}
