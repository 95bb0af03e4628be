/**
 * The series an attack shows in: wrong passphrases, calls the guessing limit
 * refused, and tokens refused by reason. The passphrase guard reports to it
 * (a `GuardObserver`); the call pipeline, the refused tokens.
 */
import { Counter, type Registry } from "prom-client";
import type { GuardObserver } from "../../services/passphrase-guard.js";
import { TOKEN_REFUSAL_REASONS, type TokenRefusalReason } from "../../services/token-refusal.js";
import { bind, zeroed } from "./store-metrics.js";

export class SecurityMetrics implements GuardObserver {
  private readonly misses: Counter;
  private readonly refusals: Counter;
  private readonly tokens: Record<TokenRefusalReason, Counter.Internal>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.misses = new Counter({
      name: "boardline_passphrase_misses_total",
      help: "Wrong passphrases (refused, or not enough for the call), on this instance.",
      registers,
    });
    this.refusals = new Counter({
      name: "boardline_guess_limit_refusals_total",
      help: "Calls refused (RESOURCE_EXHAUSTED / 429) because their caller had no passphrase guess left (GUESS_LIMIT).",
      registers,
    });
    const tokens = new Counter({
      name: "boardline_token_refusals_total",
      help: "Calls whose token was refused, by reason: expired, bad_signature, wrong_audience, missing_scope, malformed, other (no token, a claim missing or unusable, a `typ` not allowed, an issuer not accepted…).",
      labelNames: ["reason"],
      registers,
    });
    this.tokens = bind(TOKEN_REFUSAL_REASONS, (reason) => zeroed(tokens.labels(reason)));
  }

  onMiss(): void {
    this.misses.inc();
  }

  onRefused(): void {
    this.refusals.inc();
  }

  tokenRefused(reason: TokenRefusalReason): void {
    this.tokens[reason].inc();
  }
}
