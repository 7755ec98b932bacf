/**
 * HTTP tasks: jobs that make one signed HTTP request (`task: "http"`, enqueued like any job).
 * - secret: per collection, signs every request (Standard Webhooks); read and rotated by admins.
 * - the SSRF rule and WEBHOOK_ALLOW_PRIVATE_NETWORKS are the webhooks module's.
 * See http-tasks.service.ts and docs/jobs.md ("HTTP jobs").
 */
import { defineModule, EVERY_ROLE, noSettings } from '../../platform/module.ts';
import { OutboundHttp } from '../../platform/outbound-http.ts';
import { webhooksModule } from '../webhooks/index.ts';
import { httpTasksRoutes } from './http-tasks.routes.ts';
import { HTTP_TASK_LIMITS } from './http-tasks.schema.ts';
import { HTTP_TASK, HttpTasksService } from './http-tasks.service.ts';

export { HTTP_TASK, HttpTasksService };

export const httpTasksModule = defineModule({
  name: 'httpTasks',
  needs: [webhooksModule],
  settings: noSettings,
  tables: { owns: ['http_task_secrets'], reads: ['collections'] },
  create: ({ db }, _settings, deps) => {
    const { allowPrivateNetworks, secretGraceSeconds } = deps.webhooks.settings;
    const http = new OutboundHttp({
      allowPrivateNetworks,
      maxTimeoutMs: HTTP_TASK_LIMITS.maxTimeoutMs,
      excerptBytes: HTTP_TASK_LIMITS.excerptBytes,
    });
    return new HttpTasksService(db, http, { allowPrivateNetworks, secretGraceSeconds });
  },
  routes: httpTasksRoutes,
  tasks: (service) => [service.task()],
  // Every process closes the client's connections.
  background: (service) => [{ roles: EVERY_ROLE, start: () => undefined, stop: () => service.close() }],
});
