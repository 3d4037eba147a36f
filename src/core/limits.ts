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

/** "1 MiB", "50.0 MiB", "512 bytes": sizes in messages. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < MiB) return `${(n / 1024).toFixed(n % 1024 === 0 ? 0 : 1)} KiB`;
  return `${(n / MiB).toFixed(n % MiB === 0 ? 0 : 1)} MiB`;
}
