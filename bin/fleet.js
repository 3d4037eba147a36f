#!/usr/bin/env node
// The published CLI: the committed bundle, so `npx fleet` needs no TypeScript tooling.
await import('../dist/cli/index.js');
