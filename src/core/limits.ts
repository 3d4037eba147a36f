/**
 * How large a file Fleet agrees to parse. A file over its limit is refused
 * before it is read: parsing YAML costs about 100 MB of memory and 4 s per MB
 * here, so a 50 MB fleet file would exhaust the process long before any
 * problem in it was reported.
 */
const MiB = 1024 * 1024;

/** A fleet file (YAML or JSON): 1 MiB holds about 20,000 listed targets; more belong in a targets_file or discovery. */
export const MAX_FLEET_FILE_BYTES = 1 * MiB;
/** A targets_file: one target per line, about 100,000 of them. */
export const MAX_TARGETS_FILE_BYTES = 4 * MiB;
/** JSON Fleet wrote itself and reads back (a manifest, a lane result, a plan): generous, but bounded. */
export const MAX_FLEET_JSON_BYTES = 64 * MiB;

/**
 * A lane's change, as the patch Fleet writes and judges: one of 240 MiB made Fleet an 853 MB process to handle as
 * text (and it was pushed), and lanes running beside each other add up. 64 MiB is far more than anyone reviews, and leaves room for a lockfile or a
 * vendored dependency regenerated whole.
 */
export const MAX_PATCH_BYTES = 64 * MiB;

/** A lane's change whose patch is over MAX_PATCH_BYTES: the lane fails, nothing is pushed and no patch is kept. */
export class ChangeTooLarge extends Error {
  constructor(readonly bytes: number) {
    super(
      `the change's patch is ${formatBytes(bytes)}, over Fleet's limit of ${formatBytes(MAX_PATCH_BYTES)} for one lane; nothing was pushed and no patch was kept. Split the work into lanes with narrower owns:, or leave generated files out of the change`,
    );
  }
}

/** "1 MiB", "50.0 MiB", "512 bytes": sizes in messages. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < MiB) return `${(n / 1024).toFixed(n % 1024 === 0 ? 0 : 1)} KiB`;
  return `${(n / MiB).toFixed(n % MiB === 0 ? 0 : 1)} MiB`;
}
