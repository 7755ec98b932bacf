/**
 * `npm install`'s last step (the root `prepare` script): builds the typed client's dist/
 * (clients/typescript), so that the package can be installed from this folder by code outside
 * the repository. The service and its tests read the client's sources and do not need it.
 *
 * An install without dev dependencies (`--omit=dev`, a production image) has no TypeScript
 * compiler and no use for the client: it skips the build instead of failing the install.
 */
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
let tsc: string;
try {
  tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
} catch {
  console.log('prepare: TypeScript is not installed (no dev dependencies); the client is not built');
  process.exit(0);
}
execFileSync(process.execPath, [tsc, '-p', resolve(root, 'clients/typescript/tsconfig.json')], { stdio: 'inherit' });
