// Fails when dist/ is not what `npm run build` makes from the committed sources.
import { execFileSync } from 'node:child_process';

execFileSync('npm', ['run', '-s', 'build'], { stdio: 'inherit' });
const diff = execFileSync('git', ['status', '--porcelain', '--', 'dist'], { encoding: 'utf8' });
if (diff.trim()) {
  process.stderr.write(`dist/ is stale: run \`npm run build\` and commit the result.\n${diff}`);
  execFileSync('git', ['--no-pager', 'diff', '--stat', '--', 'dist'], { stdio: 'inherit' });
  process.exit(1);
}
process.stdout.write('dist/ is up to date.\n');
