/**
 * The typed client: openapi-fetch over the generated `paths`, with the base URL and the
 * credential set once. A call answers the 2xx body, typed from the route's schema; any answer
 * of 400 or more is thrown as a ServiceError.
 *
 *   const api = createClient({ baseUrl: 'http://localhost:3000', apiKey: process.env.API_KEY });
 *   const link = await api.POST('/admin/collection/{collectionId}/links', {
 *     params: { path: { collectionId: 'acme' } },
 *     body: { url: 'https://example.com/hello' },
 *   });
 */
import createFetchClient, {
  type ClientPathsWithMethod,
  type Client as FetchClient,
  type FetchResponse,
  type MaybeOptionalInit,
} from 'openapi-fetch';
import { serviceErrorFrom } from './errors.ts';
import type { paths } from './schema.ts';

export type HttpMethod = 'get' | 'put' | 'post' | 'delete' | 'patch';
type MediaType = `${string}/${string}`;

// The two helpers below are openapi-fetch's own (not exported by it): they make the second
// argument required exactly when the operation has a required parameter or body.
type Empty = Record<never, never>;
type RequiredKeysOfHelper<T> = { [K in keyof T]: Empty extends Pick<T, K> ? never : K }[keyof T];
type RequiredKeysOf<T> = RequiredKeysOfHelper<T> extends undefined ? never : RequiredKeysOfHelper<T>;
type InitParam<Init> =
  RequiredKeysOf<Init> extends never ? [(Init & { [key: string]: unknown })?] : [Init & { [key: string]: unknown }];

/** The paths that have an operation for `method`. */
export type PathsWith<M extends HttpMethod> = ClientPathsWithMethod<FetchClient<paths>, M>;

/** What the operation's options look like (`params`, `body`, and fetch options such as `signal`). */
export type CallOptions<M extends HttpMethod, P extends PathsWith<M>> = MaybeOptionalInit<paths[P], M>;

/**
 * The 2xx body of an operation (`undefined` for one that answers none, e.g. the 302 of
 * `GET /l/{code}`). openapi-fetch's `data` also allows `undefined`, for its error branch;
 * here an error is thrown instead, so a returned body is always there.
 */
type Data<M extends HttpMethod, P extends PathsWith<M>, Init> = Exclude<
  FetchResponse<paths[P][M] & Record<string | number, unknown>, Init, MediaType>['data'],
  undefined
>;
export type ResponseBody<M extends HttpMethod, P extends PathsWith<M>, Init = Empty> = [Data<M, P, Init>] extends [
  never,
]
  ? undefined
  : Data<M, P, Init>;

export type Call<M extends HttpMethod> = <P extends PathsWith<M>, Init extends CallOptions<M, P>>(
  path: P,
  ...init: InitParam<Init>
) => Promise<ResponseBody<M, P, Init>>;

export interface ClientOptions {
  /** Where the service is, with its BASE_PATH if it has one: `https://api.example.com/api/v1`. */
  baseUrl: string;
  /** A collection's admin API key, or the super admin key. */
  apiKey?: string;
  /**
   * How `apiKey` is sent: `authorization` (`Authorization: Bearer <key>`, the default) or
   * `x-api-key` (`X-API-Key: <key>`). The service reads both the same way.
   */
  apiKeyHeader?: 'authorization' | 'x-api-key';
  /** A user token (from `POST /admin/collection/{id}/user-tokens`), sent as `Authorization: Bearer`. */
  userToken?: string;
  /** Sent with every call, after the credential (so a header given here wins). */
  headers?: Record<string, string>;
  /** A fetch of your own (tests, proxies, retries); defaults to the global fetch. */
  fetch?: (input: Request) => Promise<Response>;
}

export interface ServiceClient {
  GET: Call<'get'>;
  POST: Call<'post'>;
  PUT: Call<'put'>;
  PATCH: Call<'patch'>;
  DELETE: Call<'delete'>;
  /**
   * The openapi-fetch client underneath, with the same base URL and credential. It throws
   * nothing for an answer: it gives `{data, error, response}`. For when the headers matter,
   * e.g. the `Location` of `GET /l/{code}` with `redirect: 'manual'`.
   */
  raw: FetchClient<paths>;
}

function credentialHeaders(options: ClientOptions): Record<string, string> {
  if (options.apiKey && options.userToken) {
    throw new TypeError('createClient: give apiKey or userToken, not both (the service reads one credential)');
  }
  if (options.userToken) return { authorization: `Bearer ${options.userToken}` };
  if (options.apiKey) {
    return options.apiKeyHeader === 'x-api-key'
      ? { 'x-api-key': options.apiKey }
      : { authorization: `Bearer ${options.apiKey}` };
  }
  return {};
}

export function createClient(options: ClientOptions): ServiceClient {
  if (!options?.baseUrl) throw new TypeError('createClient: baseUrl is required');
  const raw = createFetchClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { ...credentialHeaders(options), ...options.headers },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const call =
    (method: Uppercase<HttpMethod>) =>
    async (path: string, init?: Record<string, unknown>): Promise<unknown> => {
      // openapi-fetch has read the body already: `data` on 2xx, `error` (JSON, else text) otherwise.
      const request = raw.request as (m: string, p: string, i?: unknown) => Promise<FetchResult>;
      const { data, error, response } = await request(method, path, init);
      if (response.status >= 400) throw serviceErrorFrom(response, error, `${method} ${path}`);
      return data;
    };
  return {
    GET: call('GET') as Call<'get'>,
    POST: call('POST') as Call<'post'>,
    PUT: call('PUT') as Call<'put'>,
    PATCH: call('PATCH') as Call<'patch'>,
    DELETE: call('DELETE') as Call<'delete'>,
    raw,
  };
}

interface FetchResult {
  data?: unknown;
  error?: unknown;
  response: Response;
}
