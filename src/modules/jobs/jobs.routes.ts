import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { guard } from '../../platform/auth.ts';
import { errorResponses, ref } from '../../platform/schemas.ts';
import * as S from './jobs.schema.ts';
import type { JobsService } from './jobs.service.ts';

export const jobsRoutes: FastifyPluginAsyncTypebox<{ service: JobsService }> = async (app, { service }) => {
  app.addSchema(S.JobStatus);
  app.addSchema(S.Job);
  app.addSchema(S.JobsPage);
  app.addSchema(S.EnqueueAsyncJobRequest);
  app.addSchema(S.EnqueueAsyncJobResponse);
  const job = { 200: ref(S.Job), ...errorResponses };

  app.post(
    '/admin/collection/:collectionId/async/jobs',
    {
      onRequest: guard.admin,
      schema: {
        tags: ['async'],
        operationId: 'async_enqueueAsyncJob',
        summary: 'Enqueue a background job (202); unknown tasks are refused naming the known ones',
        params: S.CollectionParams,
        body: ref(S.EnqueueAsyncJobRequest),
        response: { 202: ref(S.EnqueueAsyncJobResponse), ...errorResponses },
      },
    },
    async (req, reply) => {
      const res = await service.submit(req.params.collectionId, req.body);
      return reply.code(202).send(res);
    },
  );

  app.get(
    '/admin/collection/:collectionId/async/jobs/:jobId',
    {
      onRequest: guard.admin,
      schema: {
        tags: ['async'],
        operationId: 'async_getAsyncJobStatus',
        summary: 'Get a job’s status (404 once retention has removed it)',
        params: S.JobParams,
        response: job,
      },
    },
    async (req) => service.get(req.params.collectionId, req.params.jobId),
  );

  app.get(
    '/admin/collection/:collectionId/jobs/:jobId',
    {
      onRequest: guard.admin,
      schema: {
        tags: ['jobs'],
        operationId: 'jobs_getJob',
        summary: 'Get a single job',
        params: S.JobParams,
        response: job,
      },
    },
    async (req) => service.get(req.params.collectionId, req.params.jobId),
  );

  app.get(
    '/admin/collection/:collectionId/jobs',
    {
      onRequest: guard.admin,
      schema: {
        tags: ['jobs'],
        operationId: 'jobs_listJobs',
        summary: 'List the collection’s visible jobs, newest first',
        params: S.CollectionParams,
        querystring: S.JobsQuery,
        response: { 200: ref(S.JobsPage), ...errorResponses },
      },
    },
    async (req) => service.list(req.params.collectionId, req.query),
  );

  app.post(
    '/admin/collection/:collectionId/jobs/:jobId/cancel',
    {
      onRequest: guard.admin,
      schema: {
        tags: ['jobs'],
        operationId: 'jobs_cancelJob',
        summary: 'Cancel a queued job (or one waiting for a retry); 409 once it runs or has finished',
        params: S.JobParams,
        response: { ...job, 409: { ...Type.Ref('ErrorBody'), description: 'The job is running or finished' } },
      },
    },
    async (req) => service.cancel(req.params.collectionId, req.params.jobId),
  );
};
