/**
 * The demo's telephone-gateway simulator: callers dial into the demo channel,
 * stay present, press keys, raise hands and hang up (and new ones dial in),
 * and the line follows what the host decides, all through boardline's public
 * API. One loop makes every report in turn, so reports never overtake each
 * other; the watch runs beside it. A failed step is dropped and the loop
 * backs off; the next sync tells boardline the whole roster again, so a slow
 * or restarted boardline only delays the demo.
 */
import { backOffMs, pause } from "./back-off.js";
import { watchLine } from "./event-watch.js";
import { LineCalls } from "./line-calls.js";
import { nextMove, seededRandom } from "./next-move.js";
import { type GatewaySettings, gatewaySettings, type PhoneGatewayOptions } from "./options.js";
import { fillLine, playMove, syncLine } from "./play-move.js";
import { Roster } from "./roster.js";

export interface PhoneGateway {
  /** The gateway's view of its callers (for tests). */
  readonly roster: Roster;
  /** Stops the loop and the watch and closes the connection; callers stay until their lease runs out. */
  close(): Promise<void>;
}

export function startPhoneGateway(options: PhoneGatewayOptions): PhoneGateway {
  const settings = gatewaySettings(options);
  const stopping = new AbortController();
  const calls = new LineCalls(settings, stopping.signal);
  const roster = new Roster();
  let tick = 0;
  const loop = runLoop(calls, roster, settings, stopping.signal, () => tick++);
  const watch = watchLine(calls, { roster, tick: () => tick }, settings, stopping.signal);
  settings.logger.info(
    { channel: settings.channel, callers: settings.callers, periodMs: settings.periodMs },
    "phone gateway simulator: callers dial into the demo channel",
  );
  return {
    roster,
    async close() {
      stopping.abort();
      await Promise.allSettled([loop, watch]);
      calls.close();
    },
  };
}

async function runLoop(
  calls: LineCalls,
  roster: Roster,
  settings: GatewaySettings,
  signal: AbortSignal,
  nextTick: () => number,
): Promise<void> {
  const random = seededRandom(settings.seed);
  let syncAt = Date.now() + settings.presenceMs;
  let failures = 0;
  while (!signal.aborted) {
    const tick = nextTick();
    try {
      await fillLine(calls, roster, settings.callers, tick);
      if (Date.now() >= syncAt) {
        await syncLine(calls, roster);
        syncAt = Date.now() + settings.presenceMs;
      } else {
        await playMove(calls, roster, nextMove(roster, tick, random), tick);
      }
      failures = 0;
    } catch (err) {
      if (signal.aborted) return;
      settings.logger.debug({ err, failures }, "phone gateway: a report failed; backing off");
      failures++;
      // Whatever boardline missed, the next sync tells it again.
      syncAt = 0;
    }
    // The jitter draws from Math.random, so a failure does not change the moves the seed plays.
    const waitMs =
      failures === 0
        ? settings.periodMs
        : Math.max(settings.periodMs, backOffMs(failures - 1, settings.backOffMs, settings.maxBackOffMs, Math.random));
    await pause(waitMs, signal);
  }
}
