/**
 * The request and answer fields of a link's routing (rules, variants, the query string passed
 * through, an expired link's fallback, a password), spread into the link's schemas
 * (links.schema.ts). The checks a schema cannot state (schemes, normalisation) are routing.ts's.
 */
import { type TSchema, Type } from 'typebox';
import { Closed, Nullable } from '../../platform/schemas.ts';

/** Rules one link may hold: each is checked in order on every visit of that link. */
export const RULES_MAX = 50;
export const VARIANTS_MAX = 10;
/** Values one condition may list (countries of a region, say). */
export const VALUES_MAX = 50;
/** The length of a destination, as `url`'s. */
export const URL_MAX = 2048;
export const PASSWORD_MAX = 200;

export const OS_VALUES = ['ios', 'android', 'windows', 'macos', 'linux', 'chromeos'] as const;
export const DEVICE_VALUES = ['mobile', 'tablet', 'desktop'] as const;

const literals = (values: readonly string[]) => Type.Union(values.map((v) => Type.Literal(v)));
/** One value or a short list of them (any of them matches). */
const oneOrMany = <T extends TSchema>(value: T, description: string) =>
  Type.Union([value, Type.Array(value, { minItems: 1, maxItems: VALUES_MAX })], { description });

export const RuleWhen = Closed(
  {
    os: Type.Optional(oneOrMany(literals(OS_VALUES), 'Operating system, from the user agent')),
    device: Type.Optional(oneOrMany(literals(DEVICE_VALUES), 'Device type, from the user agent')),
    country: Type.Optional(
      oneOrMany(
        Type.String({ pattern: '^[A-Za-z]{2}$', maxLength: 2 }),
        'ISO 3166-1 alpha-2 country of the visitor (GeoIP, else a trusted proxy’s header)',
      ),
    ),
    language: Type.Optional(
      oneOrMany(
        Type.String({ pattern: '^[A-Za-z]{2,3}$', maxLength: 3 }),
        'Primary language subtag of the visitor’s preferred language (Accept-Language): `en`, `de`',
      ),
    ),
  },
  { minProperties: 1, description: 'Every condition given must match; a list matches any of its values' },
);

export const Rule = Closed({
  when: RuleWhen,
  url: Type.String({
    minLength: 1,
    maxLength: URL_MAX,
    description: 'Where a matching visitor goes: http(s), or an app deep link (`myapp://…`, `intent://…`)',
  }),
});
export type Rule = Type.Static<typeof Rule>;

export const Variant = Closed({
  url: Type.String({ minLength: 1, maxLength: URL_MAX, description: 'http or https' }),
  weight: Type.Integer({ minimum: 1, maximum: 10_000, description: 'Share of visitors: weight / sum of weights' }),
});
export type Variant = Type.Static<typeof Variant>;

const Rules = Type.Array(Rule, {
  maxItems: RULES_MAX,
  description: 'Evaluated in order on each visit; the first whose `when` matches sends the visitor to its `url`',
});
const Variants = Type.Array(Variant, {
  minItems: 2,
  maxItems: VARIANTS_MAX,
  description:
    'A/B split of the visitors no rule matched, by weight, sticky per visitor; replaces `url` for them (list `url` as one of the variants to keep it in the test)',
});

/** The routing fields of a create or a change; null removes one (the default comes back). */
export const RoutingInput = {
  rules: Type.Optional(Nullable(Rules)),
  variants: Type.Optional(Nullable(Variants)),
  passQuery: Type.Optional(
    Type.Boolean({ description: 'Pass the short URL’s query string on to the destination (default true)' }),
  ),
  expiredUrl: Type.Optional(
    Nullable(
      Type.String({ minLength: 1, maxLength: URL_MAX, description: 'Where an expired link sends visitors (302)' }),
    ),
  ),
  password: Type.Optional(
    Nullable(
      Type.String({
        minLength: 1,
        maxLength: PASSWORD_MAX,
        description: 'Visitors must enter it on a small page first; stored as a hash, never answered',
      }),
    ),
  ),
};

/** The routing fields of a Link as answered. */
export const RoutingOutput = {
  rules: Nullable(Type.Array(Rule)),
  variants: Nullable(Type.Array(Variant)),
  passQuery: Type.Boolean(),
  expiredUrl: Nullable(Type.String()),
  passwordProtected: Type.Boolean(),
};
