/**
 * JSON Schemas (Draft 2020-12) generated from the zod schemas, so editors can
 * autocomplete fleet files and tools can validate manifests. The committed
 * copies under schema/ are checked against these by a test.
 */
import * as z from 'zod';
import { FleetFileSchema } from './fleet-file.js';
import { LaneResult, Manifest, SCHEMA_VERSION } from './model.js';

function generate(schema: z.ZodType, title: string, io: 'input' | 'output'): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Record<string, unknown>;
  return { $schema: json.$schema, title, ...json };
}

export function jsonSchemas(): Record<string, Record<string, unknown>> {
  return {
    // A fleet file is written by people: defaults make fields optional, so describe the input side.
    'fleet-file.schema.json': generate(FleetFileSchema, 'Fleet file', 'input'),
    'fleet-status.schema.json': generate(Manifest, `Fleet manifest (fleet-status.json) ${SCHEMA_VERSION}`, 'output'),
    'lane-result.schema.json': generate(LaneResult, `Fleet lane result ${SCHEMA_VERSION}`, 'output'),
  };
}
