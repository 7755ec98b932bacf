/** Shapes of a collection's link domains (domains.routes.ts). */
import { Type } from 'typebox';
import { inCollection } from '../../platform/routes.ts';
import { Closed, Nullable, Timestamp } from '../../platform/schemas.ts';

/** A host name as DNS bounds it: 253 characters (names given in Unicode are stored as punycode). */
export const DOMAIN_MAX = 253;

const DomainName = Type.String({
  minLength: 1,
  maxLength: DOMAIN_MAX,
  description:
    'A host name such as `go.example.com`: no scheme, port or path; stored lower-case (Unicode names as punycode)',
});

export const DomainParams = inCollection({ domain: Type.String({ minLength: 1, maxLength: DOMAIN_MAX }) });

export const CreateDomainBody = Closed({ domain: DomainName }, { $id: 'CreateLinkDomainBody' });
export type CreateDomainBody = Type.Static<typeof CreateDomainBody>;

export const VerifyDomainBody = Closed(
  {
    method: Type.Optional(
      Type.Union([Type.Literal('dns'), Type.Literal('http'), Type.Literal('any')], {
        default: 'any',
        description: 'Which proof to look for: the DNS TXT record, the HTTP token, or either (DNS first)',
      }),
    ),
  },
  { $id: 'VerifyLinkDomainBody' },
);
export type VerifyDomainBody = Type.Static<typeof VerifyDomainBody>;

export const LinkDomain = Closed(
  {
    domain: Type.String(),
    verified: Type.Boolean({ description: 'Links may use the domain only once it is verified' }),
    verifiedAt: Nullable(Timestamp),
    verification: Closed(
      {
        token: Type.String({ description: 'The value the proofs carry' }),
        dns: Closed(
          {
            type: Type.Literal('TXT'),
            name: Type.String({ description: '`_platform-verify.<domain>`' }),
            value: Type.String({ description: '`platform-verify=<token>`' }),
          },
          { description: 'Proof 1: a TXT record' },
        ),
        http: Closed(
          {
            url: Type.String({ description: '`http://<domain>/.well-known/platform-verify.txt`' }),
            body: Type.String({ description: 'The token: what that address must answer with status 200' }),
          },
          { description: 'Proof 2: a file served on the domain' },
        ),
      },
      { description: 'How to prove the collection controls the domain (either proof)' },
    ),
    checkedAt: Nullable(Timestamp),
    checkError: Nullable(Type.String({ description: 'Why the last verification failed; null after a success' })),
    createdAt: Timestamp,
  },
  { $id: 'LinkDomain' },
);
export type LinkDomain = Type.Static<typeof LinkDomain>;

export const LinkDomainList = Closed({ items: Type.Array(LinkDomain) }, { $id: 'LinkDomainList' });
