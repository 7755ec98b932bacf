import { Type } from 'typebox';
import { Closed, Nullable, Page, pageQuery, ref, Slug, Timestamp } from '../../platform/schemas.ts';

export const Collection = Closed(
  { id: Type.String(), name: Type.String(), createdAt: Timestamp },
  { $id: 'Collection' },
);
export const CreateCollectionBody = Closed({
  id: Type.Optional(Slug('Your own id; generated when omitted')),
  name: Type.String({ minLength: 1, maxLength: 200 }),
});
export const CollectionList = Page(Collection);
export const PageQuery = Closed(pageQuery(500, 100));

export const ApiKey = Closed(
  {
    id: Type.String(),
    name: Type.String(),
    prefix: Type.String({ description: 'The first characters of the key, to recognise it' }),
    createdAt: Timestamp,
    revokedAt: Nullable(Timestamp),
  },
  { $id: 'ApiKey' },
);
export const CreatedApiKey = Closed({
  id: Type.String(),
  name: Type.String(),
  prefix: Type.String(),
  key: Type.String({ description: 'The secret key. Shown only in this response.' }),
  createdAt: Timestamp,
  revokedAt: Nullable(Timestamp),
});
export const CreateApiKeyBody = Closed({ name: Type.String({ minLength: 1, maxLength: 200 }) });
export const ApiKeyList = Closed({ items: Type.Array(ref(ApiKey)) });

export const IssueUserTokenBody = Closed({
  userId: Type.String({ minLength: 1, maxLength: 200 }),
  contactId: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Defaults to userId' })),
  ttlSeconds: Type.Optional(Type.Integer({ minimum: 60, description: 'Capped by USER_TOKEN_MAX_TTL_SECONDS' })),
});
export const UserToken = Closed({ token: Type.String(), expiresAt: Timestamp });
