import { guard } from '../../platform/auth.ts';
import { defineRoute } from '../../platform/routes.ts';
import { SuccessBody } from '../../platform/schemas.ts';
import * as S from './schedules.schema.ts';
import type { SchedulesService } from './schedules.service.ts';

const tags = ['schedules'];
const base = '/admin/collection/:collectionId/schedules';

export const schedulesRoutes = (service: SchedulesService) => [
  defineRoute({
    method: 'POST',
    url: base,
    operationId: 'schedules_createSchedule',
    tags,
    summary: `Create a schedule: a job of a task enqueued on every tick of a cron (at most ${S.SCHEDULE_LIMITS.perCollection} per collection); the task and payload are checked as an enqueue is`,
    guard: guard.admin,
    params: S.CollectionParams,
    body: S.CreateScheduleRequest,
    response: S.Schedule,
    status: 201,
    conflict: 'A schedule of this name exists in the collection',
    handler: ({ scope, body }) => service.create(scope.collectionId, body),
  }),
  defineRoute({
    method: 'GET',
    url: base,
    operationId: 'schedules_listSchedules',
    tags,
    summary: 'The collection’s schedules, by name, each with its next tick and its last run',
    guard: guard.admin,
    params: S.CollectionParams,
    response: S.ScheduleList,
    handler: ({ scope }) => service.list(scope.collectionId),
  }),
  defineRoute({
    method: 'GET',
    url: `${base}/:scheduleId`,
    operationId: 'schedules_getSchedule',
    tags,
    summary: 'Get a schedule',
    guard: guard.admin,
    params: S.ScheduleParams,
    response: S.Schedule,
    handler: ({ scope }) => service.get(scope.collectionId, scope.scheduleId),
  }),
  defineRoute({
    method: 'PATCH',
    url: `${base}/:scheduleId`,
    operationId: 'schedules_updateSchedule',
    tags,
    summary: 'Change any fields of a schedule; checked as a new one is, its next tick counted again from now',
    guard: guard.admin,
    params: S.ScheduleParams,
    body: S.UpdateScheduleRequest,
    response: S.Schedule,
    conflict: 'Another schedule of the collection has this name',
    handler: ({ scope, body }) => service.update(scope.collectionId, scope.scheduleId, body),
  }),
  defineRoute({
    method: 'DELETE',
    url: `${base}/:scheduleId`,
    operationId: 'schedules_deleteSchedule',
    tags,
    summary: 'Delete a schedule (the jobs it enqueued stay)',
    guard: guard.admin,
    params: S.ScheduleParams,
    response: SuccessBody,
    handler: async ({ scope }) => {
      await service.remove(scope.collectionId, scope.scheduleId);
      return { success: true };
    },
  }),
  defineRoute({
    method: 'POST',
    url: `${base}/:scheduleId/run`,
    operationId: 'schedules_runSchedule',
    tags,
    summary: 'Enqueue the schedule’s job now (202), as a tick would; its next tick stays where it is',
    guard: guard.admin,
    params: S.ScheduleParams,
    response: S.ScheduleRun,
    status: 202,
    emptyBody: true,
    handler: ({ scope }) => service.runNow(scope.collectionId, scope.scheduleId),
  }),
];
