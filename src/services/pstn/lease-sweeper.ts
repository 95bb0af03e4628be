/**
 * Ends the presence of telephone participants whose gateway stopped
 * reporting them: every instance sweeps now and then (`PhoneLine.expireLeases`),
 * and the store makes sure each lease ends once, however many sweep. A
 * participant not reported for PSTN_PRESENCE_TTL_SECONDS is marked left by
 * the next sweep, so within the TTL plus one sweep interval (docs/pstn-line.md).
 */
import type { PhoneLine } from "../ports.js";

/** Channels one sweep takes; a sweep that took this many goes on at once. */
const CHANNELS_PER_SWEEP = 100;

export class LeaseSweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly line: PhoneLine,
    /** How often to sweep: a fraction of the lease, so ghosts stay within the bound. */
    private readonly intervalMs: number,
    /** A sweep failed (the store is down): it is tried again at the next interval. */
    private readonly onTrouble: (error: unknown) => void,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.running ??= this.sweep().finally(() => {
        this.running = undefined;
      });
    }, this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
  }

  private async sweep(): Promise<void> {
    try {
      let taken: number;
      do {
        taken = (await this.line.expireLeases(CHANNELS_PER_SWEEP)).channels;
      } while (taken >= CHANNELS_PER_SWEEP && !this.stopped);
    } catch (e) {
      this.onTrouble(e);
    }
  }
}

const SWEEP_MIN_MS = 100;
const SWEEP_MAX_MS = 5_000;

/** The sweep interval for a lease: a quarter of it, within SWEEP_MIN_MS and SWEEP_MAX_MS. */
export function sweepIntervalMs(leaseMs: number): number {
  return Math.min(SWEEP_MAX_MS, Math.max(SWEEP_MIN_MS, Math.floor(leaseMs / 4)));
}
