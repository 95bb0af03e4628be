/**
 * The checks a live boardline passes on every Redis deployment a test sets up
 * (an ACL user, TLS through Sentinel, …): a mute reaches an open watch of its
 * channel, and an admin call writes a channel the next one lists.
 */
import { expect, test } from "vitest";
import { adminToken, callAdmin } from "../e2e/helpers/channel-admin.js";
import { muteVia, WATCH_ROUTE } from "../e2e/helpers/pstn-watch.js";
import type { Boardline } from "./boardline.js";
import { openSse } from "./sse.js";

/** Registers the two tests against the boardline `current` answers; `tag` names the uid and channel they write. */
export function liveDeploymentTests(current: () => Boardline, tag: string): void {
  test("a mute reaches a watch of its channel", async () => {
    const bl = current();
    const sse = await openSse(`${bl.url}${WATCH_ROUTE}`, {
      token: await bl.gatewayToken(),
      body: { channel_ids: [bl.world.channel] },
    });
    expect(sse.status).toBe(200);
    await muteVia(bl, bl.world.hostPassphrase, `${tag}-uid`, true);
    expect((await sse.next())?.data).toMatchObject({ channel_id: bl.world.channel, uid: `${tag}-uid`, mute: true });
    sse.close();
  });

  test("an admin call creates a channel, and lists it", async () => {
    const bl = current();
    const token = await adminToken(bl, bl.world.project);
    const created = await callAdmin(bl, "json", "createChannel", { channel_id: `${tag}-made` }, token);
    expect(created.ok).toBe(true);
    const listed = await callAdmin(bl, "json", "listChannels", { page_size: 100 }, token);
    expect(JSON.stringify(listed)).toContain(`${tag}-made`);
  });
}
