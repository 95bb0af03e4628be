/**
 * Why no Sentinel answered, when it is their certificates. ioredis asks each
 * Sentinel on a connection of its own whose errors it drops: a Sentinel
 * certificate refused for its name (e.g. the IP address dialled is not in it)
 * ends that connection, and all the client then says is "All sentinels are
 * unreachable … Last error: Connection is closed.", which reads like a
 * Sentinel that is down. So the Sentinels' name check is Node's own, wrapped
 * to remember what it refused, and the client's next such error gets that
 * refusal as its `cause`: logged with it (pino prints causes), and the cause
 * of a start-up that waited in vain. A certificate of another CA fails inside
 * OpenSSL before any callback runs, so that case stays unexplained.
 */
import { checkServerIdentity, type ConnectionOptions as TlsOptions } from "node:tls";
import type { Redis } from "ioredis";

export interface SentinelRefusals {
  /** The Sentinels' TLS settings, with the name check that remembers. */
  readonly tls: TlsOptions;
  /** Gives `client`'s "All sentinels are unreachable" errors the refusal since the last one as `cause`. */
  explainErrorsOf(client: Redis): void;
}

/** The Sentinels' TLS settings `tls`, watched; the memory is shared by the clients duplicated from one. */
export function watchSentinelRefusals(tls: TlsOptions): SentinelRefusals {
  const check = tls.checkServerIdentity ?? checkServerIdentity;
  let refused: Error | undefined;
  return {
    tls: {
      ...tls,
      checkServerIdentity(host, cert) {
        const problem = check(host, cert);
        // An accepted Sentinel answers (or fails for a reason of its own): what was refused before is no reason now.
        refused =
          problem === undefined
            ? undefined
            : Object.assign(new Error(`a Sentinel's certificate was refused: ${problem.message}`), {
                code: (problem as NodeJS.ErrnoException).code,
              });
        return problem;
      },
    },
    explainErrorsOf(client) {
      client.prependListener("error", (err: unknown) => {
        if (refused === undefined || !(err instanceof Error) || err.cause !== undefined) return;
        if (!err.message.startsWith("All sentinels are unreachable")) return;
        err.cause = refused;
        refused = undefined;
      });
    },
  };
}
