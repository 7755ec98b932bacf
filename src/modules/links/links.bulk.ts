/**
 * Links in bulk: the schemas of a bulk create, and the CSV a collection's links are exported as
 * (and imported from: links.import.ts reads the same columns).
 *
 * CSV columns, in this order: id, code, shortUrl, url, title, tags, expiresAt, clicks,
 * createdAt, passQuery, expiredUrl, passwordProtected, rules, variants. `tags` are joined with
 * `|`; `rules` and `variants` are JSON; empty cells are absent values. A cell a spreadsheet would
 * run as a formula (starting with = + - @ or a tab or CR) is prefixed with `'` (CSV injection).
 */
import { Type } from 'typebox';
import { csvLine as cells } from '../../platform/csv.ts';
import { Closed, ref } from '../../platform/schemas.ts';
import { CreateLinkBody, Link } from './links.schema.ts';

/** Links one bulk create takes, in one transaction. */
export const BULK_MAX = 1000;

export const BulkCreateBody = Closed(
  {
    links: Type.Array(ref(CreateLinkBody), {
      minItems: 1,
      maxItems: BULK_MAX,
      description: `1 to ${BULK_MAX} links, each as a single create takes it; all are created or none`,
    }),
  },
  { $id: 'BulkCreateLinksBody' },
);
export type BulkCreateBody = Type.Static<typeof BulkCreateBody>;

export const BulkCreateResult = Closed(
  { links: Type.Array(ref(Link), { description: 'The created links, in the order given' }) },
  { $id: 'BulkCreateLinksResult' },
);

export const ExportQuery = Closed({
  q: Type.Optional(Type.String({ maxLength: 200, description: 'Substring of the code, title or destination' })),
  tag: Type.Optional(Type.String({ maxLength: 50 })),
});
export type ExportQuery = Type.Static<typeof ExportQuery>;

export const CSV_COLUMNS = [
  'id',
  'code',
  'shortUrl',
  'url',
  'title',
  'tags',
  'expiresAt',
  'clicks',
  'createdAt',
  'passQuery',
  'expiredUrl',
  'passwordProtected',
  'rules',
  'variants',
] as const;

export const csvHeader = () => `${CSV_COLUMNS.join(',')}\r\n`;

export function csvLine(l: Link): string {
  const values: Record<(typeof CSV_COLUMNS)[number], unknown> = {
    id: l.id,
    code: l.code,
    shortUrl: l.shortUrl,
    url: l.destinationUrl,
    title: l.title,
    tags: l.tags.join('|'),
    expiresAt: l.expiresAt,
    clicks: l.clicks,
    createdAt: l.createdAt,
    passQuery: l.passQuery,
    expiredUrl: l.expiredUrl,
    passwordProtected: l.passwordProtected,
    rules: l.rules,
    variants: l.variants,
  };
  return cells(
    CSV_COLUMNS.map((c) => values[c]),
    '\r\n',
  );
}
