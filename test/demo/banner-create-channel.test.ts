/**
 * The demo banner's first example, the call an integrator's backend makes first: creating a channel
 * with a `channels.admin` token. Pasted as printed into bash, it answers the new channel and its
 * passphrases, and the channel is there afterwards.
 */
import type { ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ensureBuilt } from "../harness/build-dist.js";
import { paste, startDemo } from "./demo-process.js";

/** A generated passphrase: seven groups of four from the domain's alphabet. */
const GENERATED = /^[a-km-np-z2-9]{4}(?:-[a-km-np-z2-9]{4}){6}$/;

/** The printed command that follows the line `title`: its first line and its `\` continuation lines. */
function commandAfter(banner: string, title: string): string {
  const lines = banner.split("\n");
  const at = lines.findIndex((l) => l.startsWith(title));
  const parts: string[] = [];
  for (let i = at + 1; at >= 0 && i < lines.length; i++) {
    parts.push(lines[i] ?? "");
    if (!(lines[i] ?? "").endsWith("\\")) break;
  }
  return parts.join("\n");
}

describe("the demo banner's channels.admin example", () => {
  let proc: ChildProcess;
  let banner = "";

  beforeAll(async () => {
    await ensureBuilt();
    ({ proc, banner } = await startDemo());
  }, 150_000);

  afterAll(() => {
    if (proc.exitCode === null) proc.kill("SIGKILL");
  });

  test("comes first, and creates a channel that answers with its passphrases", async () => {
    const title = "Create a channel and get its passphrases";
    const examples = banner.split("\n").filter((l) => /^[A-Z].*:$/.test(l));
    expect(examples[0]).toMatch(new RegExp(`^${title}`));
    const command = commandAfter(banner, title);
    expect(command).toMatch(/^curl -sS -X POST http:\/\/127\.0\.0\.1:\d+\/v1\/channels \\$/m);

    const [body, status] = (await paste(`${command} -w '\\n%{http_code}'`)).split("\n");
    expect(status).toBe("200");
    const created = JSON.parse(body ?? "") as Record<string, unknown>;
    expect(created).toMatchObject({ channel_id: "meeting-4711" });
    expect(created.host_passphrase).toMatch(GENERATED);
    expect(created.attendee_passphrase).toMatch(GENERATED);
    expect(created.host_passphrase).not.toBe(created.attendee_passphrase);

    // The same token reads it back: the channel is there, with both roles.
    const url = /http:\/\/127\.0\.0\.1:\d+/.exec(command)?.[0] ?? "";
    const token = /Authorization: Bearer ([^']+)'/.exec(command)?.[1] ?? "";
    const res = await fetch(`${url}/v1/channels/meeting-4711`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    const read = (await res.json()) as { channel?: { channel_id?: string; roles?: string[] } };
    expect(read.channel?.channel_id).toBe("meeting-4711");
    expect(read.channel?.roles).toEqual(["PASSPHRASE_ROLE_HOST", "PASSPHRASE_ROLE_ATTENDEE"]);
  });

  test("its token is the backend's: the user's token may not create channels", async () => {
    const userCurl = commandAfter(banner, "Mute a telephone participant");
    const userToken = /Authorization: Bearer ([^']+)'/.exec(userCurl)?.[1] ?? "";
    const adminToken = /Authorization: Bearer ([^']+)'/.exec(commandAfter(banner, "Create a channel"))?.[1] ?? "";
    expect(adminToken).not.toBe(userToken);
    const url = /http:\/\/127\.0\.0\.1:\d+/.exec(userCurl)?.[0] ?? "";
    const res = await fetch(`${url}/v1/channels`, {
      method: "POST",
      headers: { authorization: `Bearer ${userToken}`, "content-type": "application/json" },
      body: JSON.stringify({ channel_id: "meeting-4712" }),
    });
    expect(res.status).toBe(403);
  });
});
