/**
 * Console: the admin console's pages, served by the service itself at `/console` under
 * BASE_PATH. The console is a single-page app in `console/` (Preact, uPlot), built by Vite
 * into `console/dist` by `npm install`; it calls the API with the typed client, as any
 * client would, so this module serves files and holds no rules of its own.
 * - page: `index.html` for `/console` and every path under it, with BASE_PATH written in at
 *   run time (`<base href>`, meta `console-api-base`); never cached; CSP: this origin only.
 * - assets: `/console/assets/…`, hashed file names, cached for a year (immutable).
 * - not built: `/console` answers 503 with a page saying how to build it (an install without
 *   dev dependencies has no bundler); the rest of the service runs as usual.
 */
import { defineModule } from '../../platform/module.ts';
import { consoleAssets, consoleRoutes } from './console.routes.ts';
import { ConsoleService } from './console.service.ts';
import { consoleSettings } from './console.settings.ts';

export { CONSOLE_CSP } from './console.routes.ts';
export { ConsoleService, withBase } from './console.service.ts';
export { type ConsoleSettings, consoleSettings } from './console.settings.ts';

export const consoleModule = defineModule({
  name: 'console',
  needs: [],
  settings: consoleSettings,
  tables: { owns: [] },
  create: (_platform, settings) => new ConsoleService(settings),
  routes: consoleRoutes,
  plugin: consoleAssets,
});
