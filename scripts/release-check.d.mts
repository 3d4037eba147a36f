// Types of scripts/release-check.mjs, for the tests (test/release/release-check.test.ts).

export interface ParsedVersion {
  version: string;
  major: number;
  prerelease: boolean;
}

export interface ReleaseCheck {
  problems: string[];
  version: string | null;
  major: string | null;
  prerelease: boolean | null;
  notes: string | null;
}

export interface ReleaseCheckOptions {
  tag: string | null;
  notes: string | null;
  outputs: string | null;
  root: string;
}

export const VERSION_COPIES: { path: string; constant: string }[];

export function parseVersion(text: string): ParsedVersion | null;
export function parseTag(tag: string): ParsedVersion | null;
export function majorTag(parsed: ParsedVersion): string | null;
export function changelogSection(changelog: string, version: string): { heading: string; body: string } | null;
export function checkRelease(input: {
  tag: string;
  packageJson: string | null;
  changelog: string | null;
  copies?: { path: string; constant: string; text: string | null }[];
}): ReleaseCheck;
export function parseArgs(argv: string[]): ReleaseCheckOptions | { error: string[] };
export function main(argv: string[], io?: { stdout?: { write(text: string): unknown }; stderr?: { write(text: string): unknown } }): number;
