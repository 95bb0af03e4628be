/**
 * A throw-away self-signed certificate for the TLS tests, made with the openssl CLI.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface Certificate {
  readonly cert: string;
  readonly key: string;
}

/** A self-signed P-256 certificate for localhost and 127.0.0.1, valid one day. */
export function selfSignedCertificate(): Certificate {
  const dir = mkdtempSync(join(tmpdir(), "bl-tls-"));
  try {
    const keyFile = join(dir, "key.pem");
    const certFile = join(dir, "cert.pem");
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=DNS:localhost,IP:127.0.0.1",
        "-days",
        "1",
        "-keyout",
        keyFile,
        "-out",
        certFile,
      ],
      { stdio: "ignore" },
    );
    return { cert: readFileSync(certFile, "utf8"), key: readFileSync(keyFile, "utf8") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
