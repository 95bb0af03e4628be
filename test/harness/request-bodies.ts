/**
 * Valid JSON bodies of the two routes for the seeded world (the host
 * passphrase of project A), with any field replaced or, set to undefined, left out.
 */
import type { World } from "./boardline.js";

/** Whose world the body is for (a started boardline is one). */
export interface WorldOf {
  readonly world: Pick<World, "hostPassphrase">;
}

export function muteBody(at: WorldOf, over: Record<string, unknown> = {}): Record<string, unknown> {
  return { uid: "u-1", passphrase: at.world.hostPassphrase, mute: true, ...over };
}

export function convertBody(at: WorldOf, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    resource_url: "https://docs.example.com/deck.pptx",
    passphrase: at.world.hostPassphrase,
    conversion_type: "static",
    ...over,
  };
}
