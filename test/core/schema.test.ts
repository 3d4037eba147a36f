// The committed JSON Schemas are what the zod schemas generate, and the docs name every fleet file field.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { jsonSchemas } from '../../src/core/json-schema.js';
import { AgentSchema, FleetFileSchema, MergeSchema, PersonaSchema, ReviewSchema, TargetSchema } from '../../src/core/fleet-file.js';

describe('committed JSON Schemas', () => {
  for (const [name, schema] of Object.entries(jsonSchemas())) {
    it(`schema/${name} is up to date (run npm run schema)`, () => {
      expect(JSON.parse(readFileSync(`schema/${name}`, 'utf8'))).toEqual(schema);
    });
    it(`schema/${name} is Draft 2020-12`, () => {
      expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    });
  }
});

describe('docs/fleet-file.md', () => {
  const doc = readFileSync('docs/fleet-file.md', 'utf8');
  const sections = [
    ['top level', FleetFileSchema.shape, ''],
    ['targets', TargetSchema.shape, ''],
    ['agent', AgentSchema.shape, ''],
    ['personas', PersonaSchema.shape, ''],
    ['merge', MergeSchema.shape, 'merge.'],
    ['review', ReviewSchema.shape, 'review.'],
  ] as const;
  for (const [where, shape, prefix] of sections) {
    it(`documents every ${where} field`, () => {
      const missing = Object.keys(shape).filter((k) => k !== '$schema' && !doc.includes(`\`${prefix}${k}\``));
      expect(missing).toEqual([]);
    });
  }
});
