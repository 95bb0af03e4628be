/**
 * ListChannels' page token: opaque to callers, `v1.` + base64url of the last
 * channel id listed. The version prefix lets a later format be told apart; the
 * id alone is enough, because the store lists in id order after an id (so a
 * page never repeats or skips a channel that existed throughout, whatever is
 * created or deleted between pages). A token names nothing secret: used in
 * another project it only says where to continue.
 */
import { Failure } from "../failure.js";

const PREFIX = "v1.";

export function pageToken(lastChannel: string): string {
  return `${PREFIX}${Buffer.from(lastChannel, "utf8").toString("base64url")}`;
}

/** The channel id to list after; undefined for the first page. `invalid` for anything not made by `pageToken`. */
export function afterOf(token: string): string | undefined {
  if (token === "") return undefined;
  const body = token.startsWith(PREFIX) ? token.slice(PREFIX.length) : "";
  const after = /^[A-Za-z0-9_-]+$/.test(body) ? Buffer.from(body, "base64url").toString("utf8") : "";
  if (after === "" || pageToken(after) !== token) {
    throw new Failure("invalid", { detail: "page_token: not a next_page_token of ListChannels" });
  }
  return after;
}
