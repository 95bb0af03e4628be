/**
 * Boardline under the least Redis rights it needs: a redis-server of its own
 * whose default user is off and whose one user for boardline has exactly the
 * ACL line docs/security.md gives (for the key prefix in use). The whole store
 * contract runs as that user, and a live instance answers a mute, a watch, an
 * admin call and follows a conversion to its end under it. A command the line
 * does not allow would fail one of them (NOPERM), and ACL LOG would name it.
 * The raw reads and writes of the contract go through a second, unrestricted
 * user: they are the test's, not boardline's.
 */
import { readFileSync } from "node:fs";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { liveDeploymentTests } from "../harness/live-deployment.js";
import { eventually } from "../harness/eventually.js";
import { postJson } from "../harness/http.js";
import { type RedisServerHandle, startRedisServer } from "../harness/redis-server.js";
import { convertBody } from "../harness/request-bodies.js";
import { ROUTES } from "../harness/routes.js";
import { redisSubject, storeContract } from "../store/contract.js";

/** The line of docs/security.md for `prefix` (REDIS_KEY_PREFIX). */
function boardlineAcl(prefix: string): string[] {
  return [`~${prefix}*`, `&${prefix}*`, ...COMMANDS.split(" ")];
}

const COMMANDS =
  "-@all +ping +info +client|setname +select +quit +asking +cluster|slots +wait +multi +exec +eval +evalsha +scan " +
  "+time +type +exists +get +set +del +unlink +expire +pexpire +pexpireat +pttl +hget +hmget +hgetall +hset +hdel " +
  "+zadd +zrem +zscore +zcard +zrank +zrange +zrangebyscore +zrangebylex +zremrangebyscore +xadd +xrange +xrevrange +xinfo|stream " +
  "+spublish +ssubscribe +sunsubscribe";

const USER = { username: "boardline", password: "acl-user-password" };
const ADMIN = { username: "harness", password: "harness-password" };

let server: Promise<RedisServerHandle> | undefined;
/** The one server of this file, started on first use. */
function aclServer(): Promise<RedisServerHandle> {
  server ??= startRedisServer({
    args: [
      ...["--user", "default", "off"],
      ...["--user", ADMIN.username, "on", `>${ADMIN.password}`, "~*", "&*", "+@all"],
      ...["--user", USER.username, "on", `>${USER.password}`, ...boardlineAcl("bl:")],
    ],
    probeAuth: ADMIN,
  });
  return server;
}

const urlAs = (who: { username: string; password: string }, port: number) =>
  `redis://${who.username}:${who.password}@127.0.0.1:${port}`;

afterAll(async () => {
  if (server === undefined) return;
  const s = await server;
  const admin = new Redis(urlAs(ADMIN, s.port));
  const denied = (await admin.call("ACL", "LOG")) as unknown[];
  admin.disconnect();
  await s.stop();
  // Every refusal the whole file met: none, or the line is missing a right boardline uses.
  expect(denied).toEqual([]);
});

test("docs/security.md gives this very line", () => {
  const doc = readFileSync(new URL("../../docs/security.md", import.meta.url), "utf8");
  expect(doc).toContain(`user boardline on >… ${boardlineAcl("bl:").join(" ")}`);
});

storeContract("RedisStore as an ACL user with boardline's line", {
  approximateTrim: true,
  hasClock: false,
  async factory() {
    const { port } = await aclServer();
    return redisSubject({
      connection: { mode: "single", url: urlAs(USER, port) },
      unreachable: (p) => ({ mode: "single", url: urlAs(USER, p) }),
      client: new Redis(urlAs(ADMIN, port)),
      keyPrefix: `bl:contract-${Date.now().toString(36)}:`,
    });
  },
});

describe("a live boardline as the ACL user (REDIS_KEY_PREFIX bl:)", () => {
  let bl: Boardline;
  beforeAll(async () => {
    const url = urlAs(USER, (await aclServer()).port);
    bl = await startBoardline({ redisUrl: url, connection: { mode: "single", url }, prefix: "bl:" });
  });
  afterAll(async () => {
    await bl?.close();
  });

  liveDeploymentTests(() => bl, "acl");

  test("the conversion follower follows a task to Finished", async () => {
    const res = await postJson(bl, ROUTES.convert, convertBody(bl));
    expect(res.status).toBe(200);
    const uuid = (JSON.parse(res.text) as { task_uuid: string }).task_uuid;
    const status = async () => {
      const answer = await fetch(`${bl.url}/v1/whiteboard/fileconvert/${uuid}`, {
        headers: { authorization: `Bearer ${await bl.token()}` },
      });
      return ((await answer.json()) as { status?: string }).status;
    };
    await eventually(async () => (await status()) === "Finished", 10_000, "the task to finish");
  });
});
