/** The Actions suite's own process (see runActionsInChild in actions.ts): argv = the request as JSON, the file to write results to. */
import { writeFileSync } from 'node:fs';
import { runActionsSuites, type ActionsRequest } from './actions.js';

const [request, outFile] = process.argv.slice(2);
if (!request || !outFile) throw new Error('usage: actions-child.ts <request JSON> <results file>');
const results = await runActionsSuites(JSON.parse(request) as ActionsRequest, (s) => process.stderr.write(`${s}\n`));
writeFileSync(outFile, JSON.stringify(results));
// Nothing is left to wait for; a lingering handle (a keep-alive socket) must not hold the bench.
process.exit(0);
