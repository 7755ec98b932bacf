/**
 * `npm install`'s last step (the root `prepare` script): builds
 * - the typed client's dist/ (clients/typescript), so that the package can be installed from
 *   this folder by code outside the repository (the service and its tests read its sources);
 * - the console (console/ → console/dist, Vite), which the service serves at /console, so that
 *   `npm install && npm start` gives a working console with no further step.
 *
 * An install without dev dependencies (`--omit=dev`, a production image) has neither
 * TypeScript nor Vite: it skips what it cannot build instead of failing the install. The
 * service then answers /console with a page saying how to build it.
 */
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const require = createRequire(import.meta.url);

function tool(specifier: string): string | undefined {
  try {
    return require.resolve(specifier);
  } catch {
    return undefined;
  }
}

const tsc = tool('typescript/bin/tsc');
if (tsc) {
  execFileSync(process.execPath, [tsc, '-p', resolve(root, 'clients/typescript/tsconfig.json')], { stdio: 'inherit' });
} else {
  console.log('prepare: TypeScript is not installed (no dev dependencies); the client is not built');
}

// Vite's own API rather than its command: its package does not export the command's file.
let vite: typeof import('vite') | undefined;
try {
  vite = await import('vite');
} catch {
  vite = undefined;
}
if (vite) {
  await vite.build({ configFile: resolve(root, 'console/vite.config.ts'), logLevel: 'warn' });
  console.log('prepare: the console is built (console/dist), served at /console');
} else {
  console.log('prepare: Vite is not installed (no dev dependencies); the console is not built and /console says so');
}
