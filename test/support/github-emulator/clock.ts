/**
 * The emulator's clock: real time plus an offset a test can move forward.
 *
 * Token expiry (installation tokens live one hour, GITHUB_TOKEN until its job
 * ends), JWT `iat`/`exp` checks and the secondary-limit windows read this
 * clock, so a test can jump an hour ahead instead of waiting for it. Time keeps
 * flowing at real speed between advances, so short real waits (a 300 ms
 * window) still behave as before.
 */
export class EmulatorClock {
  private offsetMs = 0;

  /** Milliseconds since the epoch, as the emulator sees it. */
  now(): number {
    return Date.now() + this.offsetMs;
  }

  /** Whole seconds since the epoch (the unit of JWT claims and `x-ratelimit-reset`). */
  nowSec(): number {
    return Math.floor(this.now() / 1000);
  }

  /** Moves the clock forward; GitHub's clock never runs backwards, so neither does this one. */
  advance(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new Error(`clock.advance takes a non-negative number of ms, not ${ms}`);
    this.offsetMs += ms;
  }

  /** GitHub's timestamp format (second precision, `Z`), at `ms` or now. */
  iso(ms: number = this.now()): string {
    return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
  }
}
