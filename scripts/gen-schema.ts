// Regenerates schema/*.json from the zod schemas. Run after changing src/core/fleet-file.ts or model.ts.
import { jsonSchemas } from '../src/core/json-schema.js';
import { writeFileAtomic } from '../src/util/fs.js';

for (const [name, schema] of Object.entries(jsonSchemas())) {
  await writeFileAtomic(`schema/${name}`, `${JSON.stringify(schema, null, 2)}\n`);
  process.stdout.write(`schema/${name}\n`);
}
