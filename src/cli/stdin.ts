/**
 * Secrets piped to the CLI (`--secret-key-stdin`, `--sdk-token-stdin`), so they
 * stay out of shell history.
 */

/** All of stdin, without the trailing newline. */
export async function readStdin(what: string): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write(`boardline: reading the ${what} from stdin (end with Ctrl-D)\n`);
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\r?\n$/, "");
}
