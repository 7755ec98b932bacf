/**
 * npm run bench [-- area ...]: runs every bench/<area>.bench.ts (or the named ones) in turn,
 * each in its own process so one area's servers and data never skew another's.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './lib.ts';

const wanted = process.argv.slice(2);
const files = readdirSync(join(ROOT, 'bench'))
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => wanted.length === 0 || wanted.includes(f.replace('.bench.ts', '')))
  .sort();
console.log(`# Benchmarks — ${new Date().toISOString()} — node ${process.version}`);
let failed = 0;
for (const f of files) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', f)], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) {
    failed++;
    console.error(`bench ${f} exited with ${r.status}`);
  }
}
process.exit(failed ? 1 : 0);
