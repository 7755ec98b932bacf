import { Type } from 'typebox';
import { Closed, Nullable, OPEN_OBJECT_MAX_PROPERTIES, OpenObject, ref } from '../../../platform/schemas.ts';
import { REPLIES_PAGE_DEFAULT, REPLIES_PAGE_MAX, REPLY_MAX_BYTES, THREAD_LATEST_REPLIES } from '../shared/bounds.ts';
import { THREAD } from '../shared/kinds.ts';
import {
  AUTHOR_ID,
  AUTHOR_TYPE,
  CONTACT_ID,
  commonListQuery,
  createSections,
  objectSchema,
  ReplyEntry,
  text,
  updateSections,
  Visibility,
} from '../shared/schema.ts';

export const AppThread = objectSchema('AppThread', THREAD, {
  authorType: Type.String({ description: 'Default `user` for a user’s thread, `admin` for an admin’s' }),
  replyCount: Type.Integer({ description: 'How many replies the thread holds' }),
  body: OpenObject(),
  replies: Type.Array(ref(ReplyEntry), {
    description: `The latest ${THREAD_LATEST_REPLIES} replies, oldest first (all of them while replyCount ≤ ${THREAD_LATEST_REPLIES}); the rest at …/threads/{threadId}/replies`,
  }),
  tags: Type.Array(Type.String()),
});

const Tags = Type.Array(text(100), { maxItems: 50 });

export const CreateThreadInput = Closed(
  {
    visibility: Type.Optional(Visibility),
    slug: Type.Optional(text()),
    title: Type.Optional(text(500)),
    status: Type.Optional(text(50, 'Default `open`')),
    authorId: Type.Optional(text(200, AUTHOR_ID)),
    authorType: Type.Optional(text(50, AUTHOR_TYPE)),
    productId: Type.Optional(text()),
    proofId: Type.Optional(text()),
    contactId: Type.Optional(text(200, CONTACT_ID)),
    parentType: Type.Optional(text(50)),
    parentId: Type.Optional(text()),
    body: Type.Optional(OpenObject()),
    tags: Type.Optional(Tags),
    ...createSections,
  },
  { $id: 'CreateThreadInput' },
);
export type CreateThreadInput = Type.Static<typeof CreateThreadInput>;

export const UpdateThreadInput = Closed(
  {
    body: Type.Optional(OpenObject({ description: 'Replaced whole' })),
    tags: Type.Optional(Tags),
    ...updateSections,
    title: Type.Optional(Nullable(text(500))),
    slug: Type.Optional(Nullable(text())),
    status: Type.Optional(text(50)),
    visibility: Type.Optional(Visibility),
  },
  { $id: 'UpdateThreadInput' },
);
export type UpdateThreadInput = Type.Static<typeof UpdateThreadInput>;

export const ReplyInput = Type.Object(
  {
    authorId: Type.Optional(text(200, AUTHOR_ID)),
    authorType: Type.Optional(text(50, AUTHOR_TYPE)),
  },
  {
    $id: 'ReplyInput',
    additionalProperties: true,
    maxProperties: OPEN_OBJECT_MAX_PROPERTIES,
    description: `Any further fields (text, attachments, …) are stored with the reply. The stored entry may hold at most ${REPLY_MAX_BYTES / 1024} KiB (413 beyond).`,
  },
);
export type ReplyInput = Type.Static<typeof ReplyInput> & Record<string, unknown>;

export const ThreadListQuery = Closed({
  ...commonListQuery,
  slug: Type.Optional(text()),
  authorId: Type.Optional(text()),
  parentType: Type.Optional(text(50)),
  parentId: Type.Optional(text()),
  tag: Type.Optional(text(100)),
});
export type ThreadListQuery = Type.Static<typeof ThreadListQuery>;

export const RepliesQuery = Closed({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: REPLIES_PAGE_MAX, default: REPLIES_PAGE_DEFAULT })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
  sort: Type.Optional(
    Type.Union([Type.Literal('at:asc'), Type.Literal('at:desc')], {
      description: '`at:asc` (default: oldest first, the order of the thread’s `replies`) or `at:desc`',
    }),
  ),
});
export type RepliesQuery = Type.Static<typeof RepliesQuery>;

/** A page of replies in the envelope every list answers. */
export const RepliesPage = Type.Object(
  {
    data: Type.Array(ref(ReplyEntry)),
    pagination: Type.Object({
      total: Type.Integer(),
      limit: Type.Integer(),
      offset: Type.Integer(),
      hasMore: Type.Boolean(),
    }),
  },
  { $id: 'RepliesPage' },
);
