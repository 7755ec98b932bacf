/**
 * Interaction types: their CRUD, and the lookups the other parts make of them (the type an
 * event is written for, a type's permissions for a public read, the types a query includes).
 */
import type { Db } from '../../db/index.ts';
import { badRequest, conflict, notFound } from '../../platform/errors.ts';
import { isObject, paging } from '../../platform/schemas.ts';
import { checkTypeData } from './interactions.effect-rules.ts';
import { checkPermissions, enabled } from './interactions.permissions.ts';
import type {
  CreateInteractionTypeBody,
  InteractionPermissions,
  InteractionTypeRecord,
  ListTypesQuery,
  UpdateInteractionTypeBody,
} from './interactions.schema.ts';
import * as repo from './interactions.types.repository.ts';

export type { TypeRow } from './interactions.types.repository.ts';

export function toTypeRecord(r: repo.TypeRow): InteractionTypeRecord {
  const rec: InteractionTypeRecord = {
    id: r.id,
    collectionId: r.collection_id,
    appId: r.app_id,
    permissions: r.permissions,
    data: r.data,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
  // Presentation fields (display, scopes, interactionType, effects) are stored inside `data`
  // and shown at the top level when present (docs/interactions.md, Types).
  if (isObject(r.data.display)) rec.display = r.data.display;
  if (isObject(r.data.scopes)) rec.scopes = r.data.scopes;
  if (typeof r.data.interactionType === 'string') rec.interactionType = r.data.interactionType;
  if (Array.isArray(r.data.effects)) rec.effects = r.data.effects.filter(isObject);
  return rec;
}

/**
 * A PATCH of an open section (permissions, data) at its top level: a key given replaces that
 * key whole, `null` removes it (permissions: back to its default), keys left out stay.
 */
function mergeKeys<T extends object>(stored: T, patch: { [K in keyof T]?: T[K] | null }): T {
  // fromEntries keeps even odd names (`__proto__` is refused by the body parser) own fields.
  const kept = Object.entries(stored).filter(([key]) => !Object.hasOwn(patch, key));
  const given = Object.entries(patch).filter(([, value]) => value !== null);
  return Object.fromEntries([...kept, ...given]) as T;
}

export class InteractionTypes {
  constructor(private readonly db: Db) {}

  async createType(collectionId: string, body: CreateInteractionTypeBody): Promise<InteractionTypeRecord> {
    const permissions = body.permissions ?? {};
    checkPermissions(permissions);
    checkTypeData(body.data);
    const row = await repo.insertType(this.db, collectionId, {
      id: body.id,
      appId: body.appId,
      permissions,
      data: body.data ?? {},
    });
    if (!row) throw conflict(`An interaction type with id "${body.id}" already exists`);
    return toTypeRecord(row);
  }

  async listTypes(collectionId: string, q: ListTypesQuery, publicOnly: boolean) {
    const { limit, offset } = paging(q, 100);
    const rows = await repo.listTypes(this.db, collectionId, {
      appId: q.appId,
      limit,
      offset,
      enabledOnly: publicOnly,
    });
    return { items: rows.map(toTypeRecord), limit, offset };
  }

  async getType(collectionId: string, id: string, publicOnly: boolean): Promise<InteractionTypeRecord> {
    const row = await repo.findType(this.db, collectionId, id);
    if (!row || (publicOnly && !enabled(row.permissions))) throw notFound('Interaction type');
    return toTypeRecord(row);
  }

  /**
   * permissions and data merge key by key into the stored ones, so a PATCH of one key leaves
   * the others as they were (`data.display` without losing `data.effects`). Read, merge, check
   * and write run in one transaction holding the row's lock: concurrent PATCHes of different
   * keys all land, and the window checked is the one stored.
   */
  async updateType(collectionId: string, id: string, body: UpdateInteractionTypeBody): Promise<InteractionTypeRecord> {
    return this.db.transaction(async (tx) => {
      const stored = await repo.findType(tx, collectionId, id, { forUpdate: true });
      if (!stored) throw notFound('Interaction type');
      let permissions: InteractionPermissions | undefined;
      if (body.permissions !== undefined) {
        permissions = mergeKeys(stored.permissions, body.permissions);
        // Only the origins sent are checked: entries stored earlier under other rules stay.
        checkPermissions({ ...permissions, allowedOrigins: body.permissions.allowedOrigins });
      }
      // Only the keys sent are checked: effects or milestones stored earlier stay as they are.
      checkTypeData(body.data);
      const data = body.data === undefined ? undefined : mergeKeys(stored.data, body.data);
      const row = await repo.updateType(tx, collectionId, id, { appId: body.appId, permissions, data });
      if (!row) throw notFound('Interaction type');
      return toTypeRecord(row);
    });
  }

  /** Events of a removed type are kept (history); new ones for its id are refused. */
  async removeType(collectionId: string, id: string): Promise<{ success: boolean; id: string }> {
    if (!(await repo.deleteType(this.db, collectionId, id))) throw notFound('Interaction type');
    return { success: true, id };
  }

  /** The type an event is written for; an unknown type or another appId is the body's mistake (400). */
  async forEvent(collectionId: string, interactionId: string, appId?: string): Promise<repo.TypeRow> {
    const type = await repo.findType(this.db, collectionId, interactionId);
    if (!type) throw badRequest(`Interaction type "${interactionId}" is not defined in this collection`);
    if (appId !== undefined && appId !== type.app_id) {
      throw badRequest(`appId "${appId}" does not match the interaction type's appId "${type.app_id}"`);
    }
    return type;
  }

  /** A stored type, enabled or not (a public read judges its permissions itself). */
  find(collectionId: string, id: string): Promise<repo.TypeRow | undefined> {
    return repo.findType(this.db, collectionId, id);
  }

  /** These types as records, by id; a removed one is absent. */
  async recordsById(collectionId: string, ids: string[]): Promise<Map<string, InteractionTypeRecord>> {
    const types = await repo.findTypes(this.db, collectionId, [...new Set(ids)]);
    return new Map(types.map((t) => [t.id, toTypeRecord(t)]));
  }
}
