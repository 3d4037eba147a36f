/**
 * The credentials a lane's directive was handed (LaneContext.neverInChange) leave the lane nowhere: text Fleet keeps
 * from an agent (findings, reasons, discoveries) has them scrubbed, and a change holding one is neither written to
 * the lane's patch nor pushed (a prompt-injected agent writing its key into a file).
 */
import type { LaneContext } from './context.js';
import { LaneFailure } from './failure.js';

export function scrub(text: string, secrets: readonly string[] | undefined): string {
  let out = text;
  for (const s of secrets ?? []) if (s.length >= 8) out = out.split(s).join('***');
  return out;
}

/** A change that holds a credential the directive was handed goes nowhere. */
export function refuseHeldSecrets(ctx: LaneContext, patch: string): void {
  for (const secret of ctx.neverInChange ?? []) {
    if (secret.length >= 8 && patch.includes(secret)) {
      throw new LaneFailure(
        'fence-violation',
        'the change holds one of the agent credentials the directive was given (plain or encoded); nothing was pushed and no patch was kept',
      );
    }
  }
}
