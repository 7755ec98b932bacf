/**
 * Interactions: what users do, recorded as events and counted.
 * - interaction type: a definition (id, appId, permissions, data) events refer to.
 * - permissions: who may submit (allowPublicSubmit, allowAnonymousSubmit, requireAuth,
 *   allowedOrigins, startAt/endAt), how often (uniquePerUser, uniquePerAnonId, their windows,
 *   uniqueOutcome), and who may read (allowOwnRead, allowPublicSummary, allowAuthenticatedSummary).
 * - event: one row of interaction_events; `eventId` groups versions of one logical event.
 * - append (admin, no checks) vs submit (public, every permission enforced).
 * - dedupeLatest: count only each identity's latest event per interaction.
 * - export: the `interactions.export` job task, its file streamed by the download route.
 */

export { type InteractionsConfig, interactionsConfig } from './interactions.config.ts';
export { EXPORT_TASK, exportTaskDefinition, openExport, parseExportPayload, runExport } from './interactions.export.ts';
export { interactionsRoutes } from './interactions.routes.ts';
export { InteractionsService, originAllowed, toEventRow } from './interactions.service.ts';
