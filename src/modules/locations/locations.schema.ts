import { Type } from 'typebox';
import { IdParam } from '../../platform/routes.ts';
import { Closed, Nullable, OpenObject, pageQuery, ref, Timestamp } from '../../platform/schemas.ts';

const text = (maxLength: number, description?: string) => Type.String({ maxLength, description });

export const Location = Closed(
  {
    locationId: Type.String(),
    collectionId: Nullable(Type.String({ description: 'null for a global location' })),
    scope: Type.Union([Type.Literal('global'), Type.Literal('collection')]),
    name: Type.String(),
    category: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    countryName: Type.Optional(Type.String()),
    countryCode: Type.Optional(Type.String()),
    websiteUrl: Type.Optional(Type.String()),
    logoUrl: Type.Optional(Type.String()),
    phone: Type.Optional(Type.String()),
    email: Type.Optional(Type.String()),
    geofence: Type.Optional(OpenObject()),
    metadata: Type.Optional(OpenObject()),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'Location' },
);
export type Location = Type.Static<typeof Location>;

export const LocationPayload = Closed(
  {
    name: Type.String({ minLength: 1, maxLength: 300 }),
    category: Type.Optional(text(100)),
    description: Type.Optional(text(5000)),
    countryName: Type.Optional(text(100)),
    countryCode: Type.Optional(
      Type.String({ pattern: '^[A-Za-z]{2,3}$', maxLength: 3, description: 'ISO 3166 alpha-2 or alpha-3' }),
    ),
    websiteUrl: Type.Optional(Type.String({ format: 'uri', maxLength: 2000 })),
    logoUrl: Type.Optional(Type.String({ format: 'uri', maxLength: 2000 })),
    phone: Type.Optional(text(50)),
    email: Type.Optional(Type.String({ format: 'email', maxLength: 320 })),
    geofence: Type.Optional(OpenObject({ description: 'Free-form geofence, e.g. GeoJSON' })),
    metadata: Type.Optional(OpenObject()),
  },
  { $id: 'LocationPayload' },
);
export type LocationPayload = Type.Static<typeof LocationPayload>;

export const LocationSearchQuery = Closed({
  q: Type.Optional(
    Type.String({
      maxLength: 200,
      description: 'Case-insensitive match on name and description; tolerates small typos',
    }),
  ),
  category: Type.Optional(text(100)),
  countryCode: Type.Optional(text(3)),
  countryName: Type.Optional(text(100)),
  ...pageQuery(100, 20, 100_000),
  sort: Type.Optional(Type.Union([Type.Literal('name'), Type.Literal('countryCode'), Type.Literal('countryName')])),
});
export type LocationSearchQuery = Type.Static<typeof LocationSearchQuery>;

export const LocationSearchResponse = Closed(
  { items: Type.Array(ref(Location)), count: Type.Integer({ description: 'Total matches' }) },
  { $id: 'LocationSearchResponse' },
);

export { CollectionParams } from '../../platform/routes.ts';
export const LocationIdParam = IdParam(100);
