/** Where the interaction routes live, and the tag they share in the OpenAPI document. */
export const ADMIN_BASE = '/admin/collection/:collectionId/interactions';
export const PUBLIC_BASE = '/public/collection/:collectionId/interactions';
export const tags = ['interactions'];
