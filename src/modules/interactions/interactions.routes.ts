/**
 * Every route of the interactions module, in the order the OpenAPI document lists them:
 * types, event writes, admin reads, then the public face.
 */
import type { Route } from '../../platform/routes.ts';
import { eventRoutes } from './interactions.events.routes.ts';
import { publicRoutes } from './interactions.public.routes.ts';
import { queryRoutes } from './interactions.queries.routes.ts';
import type { InteractionsService } from './interactions.service.ts';
import { typeRoutes } from './interactions.types.routes.ts';

export const interactionsRoutes = (service: InteractionsService): Route[] => [
  ...typeRoutes(service.types),
  ...eventRoutes(service.events),
  ...queryRoutes(service.reads),
  ...publicRoutes(service),
];
