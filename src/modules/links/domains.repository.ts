/** SQL of link domains (migration 0600): registrations, verification, their codes' claims. */
import sql from 'sql-template-tag';
import type { Queryable } from '../../db/index.ts';

export interface DomainRow {
  domain: string;
  collection_id: string;
  token: string;
  verified_at: Date | null;
  checked_at: Date | null;
  check_error: string | null;
  created_at: Date;
}

const COLUMNS = sql`domain, collection_id, token, verified_at, checked_at, check_error, created_at`;

/**
 * Registers a domain for the collection unless someone holds it (then undefined). Another
 * collection's registration that was never verified and is older than `staleAfterMs` is taken
 * over: an unproven claim must not keep the domain's real owner out for ever.
 */
export async function insertDomain(
  db: Queryable,
  collectionId: string,
  domain: string,
  token: string,
  staleAfterMs: number,
): Promise<DomainRow | undefined> {
  const { rows } = await db.query<DomainRow>(sql`
    INSERT INTO link_domains (domain, collection_id, token) VALUES (${domain}, ${collectionId}, ${token})
    ON CONFLICT (domain) DO UPDATE SET collection_id = EXCLUDED.collection_id, token = EXCLUDED.token,
      created_at = now(), checked_at = NULL, check_error = NULL
    WHERE link_domains.verified_at IS NULL AND link_domains.collection_id <> EXCLUDED.collection_id
      AND link_domains.created_at < now() - make_interval(secs => ${staleAfterMs / 1000})
    RETURNING ${COLUMNS}`);
  return rows[0];
}

/** Who holds a domain, if anyone (to tell "yours already" from "another collection's"). */
export async function domainHolder(db: Queryable, domain: string): Promise<string | undefined> {
  const { rows } = await db.query<{ collection_id: string }>(
    sql`SELECT collection_id FROM link_domains WHERE domain = ${domain}`,
  );
  return rows[0]?.collection_id;
}

export async function countDomains(db: Queryable, collectionId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    sql`SELECT count(*)::int AS n FROM link_domains WHERE collection_id = ${collectionId}`,
  );
  return rows[0].n;
}

export async function findDomain(
  db: Queryable,
  collectionId: string,
  domain: string,
  forUpdate = false,
): Promise<DomainRow | undefined> {
  const { rows } = await db.query<DomainRow>(sql`
    SELECT ${COLUMNS} FROM link_domains WHERE collection_id = ${collectionId} AND domain = ${domain}
    ${forUpdate ? sql`FOR UPDATE` : sql``}`);
  return rows[0];
}

export async function listDomains(db: Queryable, collectionId: string): Promise<DomainRow[]> {
  const { rows } = await db.query<DomainRow>(sql`
    SELECT ${COLUMNS} FROM link_domains WHERE collection_id = ${collectionId} ORDER BY created_at, domain`);
  return rows;
}

/** Records a verification attempt: verified (error null) or why not (a verified domain stays so). */
export async function recordCheck(
  db: Queryable,
  collectionId: string,
  domain: string,
  error: string | null,
): Promise<DomainRow | undefined> {
  const { rows } = await db.query<DomainRow>(sql`
    UPDATE link_domains SET checked_at = now(), check_error = ${error},
      verified_at = CASE WHEN ${error}::text IS NULL THEN coalesce(verified_at, now()) ELSE verified_at END
    WHERE collection_id = ${collectionId} AND domain = ${domain}
    RETURNING ${COLUMNS}`);
  return rows[0];
}

export async function deleteDomain(db: Queryable, collectionId: string, domain: string): Promise<boolean> {
  const { rows } = await db.query(
    sql`DELETE FROM link_domains WHERE collection_id = ${collectionId} AND domain = ${domain} RETURNING domain`,
  );
  return rows.length > 0;
}

/** How many live links of the collection are on the domain (deleting it is refused while any are). */
export async function liveLinksOn(db: Queryable, collectionId: string, domain: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(sql`
    SELECT count(*)::int AS n FROM links
    WHERE collection_id = ${collectionId} AND domain = ${domain} AND deleted_at IS NULL`);
  return rows[0].n;
}

/** Whether the host is a verified domain of any collection (the redirect's question). */
export async function isVerifiedDomain(db: Queryable, domain: string): Promise<boolean> {
  const { rows } = await db.query(sql`SELECT 1 FROM link_domains WHERE domain = ${domain} AND verified_at IS NOT NULL`);
  return rows.length > 0;
}

/**
 * Claims a custom domain's code for the collection, as `claimCode` does for the own domain:
 * true when it is now, or already was, this collection's; false when another collection has
 * ever held it on that domain.
 */
export async function claimDomainCode(
  db: Queryable,
  collectionId: string,
  domain: string,
  code: string,
): Promise<boolean> {
  const { rows } = await db.query(sql`
    INSERT INTO link_domain_codes (domain, code, collection_id) VALUES (${domain}, ${code}, ${collectionId})
    ON CONFLICT (domain, code) DO UPDATE SET code = EXCLUDED.code
      WHERE link_domain_codes.collection_id = EXCLUDED.collection_id
    RETURNING collection_id`);
  return rows.length > 0;
}
