/**
 * Guards of app-object routes, run in `onRequest`. The zone decides the credential: `admin`
 * needs an admin credential of the collection; `public` a user token of the collection (an
 * admin credential is served as admin). Anonymous callers are refused: app objects are
 * owned by contacts, and every app-object route requires authentication (docs/app-objects.md,
 * "Callers and zones").
 */
import type { FastifyRequest } from 'fastify';
import { type Caller, guard } from '../../../platform/auth.ts';
import { notPermitted, unauthorized } from '../../../platform/errors.ts';
import type { Actor } from './sections.ts';

export async function signedIn(req: FastifyRequest): Promise<void> {
  await guard.zone(req);
  if (req.caller.role === 'anonymous') throw unauthorized('A user token (or an admin credential) is required');
}

/** Admin-only operations: case summary, history append, record upsert, bulk writes, restore. */
export async function adminOnly(req: FastifyRequest): Promise<void> {
  await signedIn(req);
  if (req.caller.role !== 'admin') throw notPermitted('Only an admin of the collection may perform this operation');
}

/** The caller of an app-object route on its zone (signed in: its guard refused anonymous callers). */
export const actorOf = (caller: Caller, zone: string): Actor => ({
  ...(caller as Actor),
  publicZone: zone === 'public',
});
