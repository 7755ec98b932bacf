/**
 * Builds the console into console/dist, which the service's console module serves at
 * `$BASE_PATH/console` (`npm run console:build`; `npm install` runs it). Addresses in the
 * build are relative (`base: './'`): the service writes a `<base href>` into the page at run
 * time, so one build works under any BASE_PATH.
 */
import { defineConfig } from 'vite';

export default defineConfig({
  root: import.meta.dirname,
  base: './',
  // Preact's JSX runtime (the root tsconfig says the same for the type-check).
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  // The root's .env files are the service's, not the console's.
  envDir: false,
  clearScreen: false,
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // Nothing inlined as data: URLs; the page's CSP allows files of this origin only.
    assetsInlineLimit: 0,
    // Browsers that run ES2022 know modulepreload: no polyfill in the first script.
    modulePreload: { polyfill: false },
    // The service answers the build from memory (index.html) and disk (assets/), nothing else.
    copyPublicDir: false,
  },
});
