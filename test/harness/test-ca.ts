/**
 * A throw-away certificate authority for the Redis TLS tests, made with the
 * openssl CLI in a temporary directory: its CA certificate, and certificates
 * it signs for the names a test chooses (subjectAltName), so a test can give
 * a server a certificate for the right name, for another name, or for one
 * name that several servers share.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The paths of a certificate and of its private key (PEM). */
export interface CertificateFiles {
  readonly cert: string;
  readonly key: string;
}

export interface TestCa {
  /** The CA certificate's path (PEM), what REDIS_TLS_CA and the servers' `tls-ca-cert-file` name. */
  readonly caFile: string;
  /** Signs a certificate `name`.pem (key `name`-key.pem) for `san`, e.g. `IP:127.0.0.1,DNS:localhost`. */
  issue(name: string, san: string): CertificateFiles;
}

/** A new CA, valid two days (the name says so: nothing outside a test trusts it). */
export function makeTestCa(): TestCa {
  const dir = mkdtempSync(join(tmpdir(), "bl-test-ca-"));
  const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  openssl(
    ..."req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=boardline-test-ca".split(" "),
    ...["-keyout", "ca-key.pem", "-out", "ca.pem"],
  );
  return {
    caFile: join(dir, "ca.pem"),
    issue(name, san) {
      writeFileSync(join(dir, `${name}.ext`), `subjectAltName=${san}\n`);
      openssl(
        ..."req -newkey rsa:2048 -nodes".split(" "),
        "-keyout",
        `${name}-key.pem`,
        "-subj",
        `/CN=${name}`,
        "-out",
        `${name}.csr`,
      );
      openssl(
        ..."x509 -req -days 2 -CA ca.pem -CAkey ca-key.pem -CAcreateserial".split(" "),
        ...["-in", `${name}.csr`, "-out", `${name}.pem`, "-extfile", `${name}.ext`],
      );
      return { cert: join(dir, `${name}.pem`), key: join(dir, `${name}-key.pem`) };
    },
  };
}
