/**
 * App objects: the cases, threads and records an app keeps inside a collection.
 * - case: a matter to resolve (status, priority, assignee); soft deletable; has an audit trail.
 * - thread: a conversation; replies are appended atomically.
 * - record: a typed piece of app data, addressable by `ref`, with a schedule window.
 * - sections: `data` (all who see the object), `owner` (owner + admins), `admin` (admins).
 * - visibility: `public` (every user of the collection), `owner` (its owner), `admin` (admins).
 * - owner: the contact whose user token's contactId equals the object's `contactId`.
 * - zone: `/admin/...` (admin credential) or `/public/...` (user token) in the path.
 * - events: `case|thread|record.created|updated|deleted` and `thread.replied` (shared/events.ts),
 *   published to the webhooks outbox in the transaction of the change.
 */
import type { Db } from '../../db/index.ts';
import type { EventPublisher } from '../../platform/events.ts';
import { defineModule } from '../../platform/module.ts';
import { webhooksModule } from '../webhooks/index.ts';
import { type AppObjectsSettings, appObjectsSettings } from './app-objects.settings.ts';
import { casesRoutes } from './cases/cases.routes.ts';
import { CasesService } from './cases/cases.service.ts';
import { recordsRoutes } from './records/records.routes.ts';
import { RecordsService } from './records/records.service.ts';
import { appObjectEvents } from './shared/events.ts';
import { appObjectTasks } from './tasks.ts';
import { threadsRoutes } from './threads/threads.routes.ts';
import { ThreadsService } from './threads/threads.service.ts';

export { type AppObjectsSettings, appObjectsSettings } from './app-objects.settings.ts';
export { CasesService, RecordsService, ThreadsService };

/** The services of the three kinds, one per kind; without a publisher they publish no events. */
export class AppObjectServices {
  readonly cases: CasesService;
  readonly threads: ThreadsService;
  readonly records: RecordsService;
  constructor(db: Db, settings: AppObjectsSettings, publisher?: EventPublisher) {
    this.cases = new CasesService(db, publisher);
    this.threads = new ThreadsService(db, settings.maxReplies, publisher);
    this.records = new RecordsService(db, publisher);
  }
}

/** The routes of the three kinds, in this order: cases, threads, records. */
const appObjectsRoutes = (service: AppObjectServices) => [
  ...casesRoutes(service.cases),
  ...threadsRoutes(service.threads),
  ...recordsRoutes(service.records),
];

export const appObjectsModule = defineModule({
  name: 'appObjects',
  needs: [webhooksModule],
  settings: appObjectsSettings,
  tables: {
    owns: ['app_cases', 'app_case_history', 'app_case_counts', 'app_threads', 'app_thread_replies', 'app_records'],
    reads: ['collections'],
  },
  create: ({ db }, settings, deps) => new AppObjectServices(db, settings, deps.webhooks),
  routes: appObjectsRoutes,
  tasks: (services) => appObjectTasks(services),
  events: appObjectEvents,
});
