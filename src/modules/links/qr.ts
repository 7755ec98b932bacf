/**
 * QR codes of a link (docs/links.md, "QR codes"): SVG or PNG of the link's short address with
 * the QR marker (`?qr=1`, attribution.ts `QR_PARAM`), so that a scan is recorded as a click with
 * trigger `qr`. Drawn by the `qrcode` package; size, colours, margin, error correction and an
 * optional logo in the middle.
 *
 * The logo is never fetched from an address (that would be a request to wherever a tenant
 * points): it comes inside the request as a PNG data URI, at most LOGO_MAX_BYTES, decoded (so
 * it must be a real PNG) and at most LOGO_MAX_SIDE pixels a side. It covers a square of about a
 * fifth of the symbol's width (4 % of its area, with a quiet border): error correction Q or H
 * restores what it hides, so with a logo the level defaults to H and L or M are refused.
 */
import { PNG } from 'pngjs';
import QRCode from 'qrcode';
import { Type } from 'typebox';
import { guard } from '../../platform/auth.ts';
import { badRequest } from '../../platform/errors.ts';
import { defineRoute } from '../../platform/routes.ts';
import { Closed } from '../../platform/schemas.ts';
import { QR_PARAM } from './attribution.ts';
import { LinkParams } from './links.schema.ts';
import type { LinksService } from './links.service.ts';

export const LOGO_MAX_BYTES = 32 * 1024;
export const LOGO_MAX_SIDE = 1024;
const DATA_URI_PREFIX = 'data:image/png;base64,';
/** The logo's square, as a share of the symbol's width (the quiet margin left out). */
const LOGO_SHARE = 0.2;

const Colour = (byDefault: string, description: string) =>
  Type.String({
    pattern: '^#?([0-9A-Fa-f]{6}|[0-9A-Fa-f]{8})$',
    maxLength: 9,
    description: `${description}: RRGGBB or RRGGBBAA hex, with or without # (default ${byDefault})`,
  });

const qrOptions = {
  format: Type.Optional(
    Type.Union([Type.Literal('svg'), Type.Literal('png')], { default: 'png', description: 'Image format' }),
  ),
  size: Type.Optional(
    Type.Integer({ minimum: 64, maximum: 2048, default: 512, description: 'Width and height in pixels' }),
  ),
  fg: Type.Optional(Colour('000000', 'The modules’ colour')),
  bg: Type.Optional(Colour('ffffff', 'The background colour')),
  margin: Type.Optional(
    Type.Integer({ minimum: 0, maximum: 16, default: 4, description: 'The quiet zone around the code, in modules' }),
  ),
  level: Type.Optional(
    Type.Union([Type.Literal('L'), Type.Literal('M'), Type.Literal('Q'), Type.Literal('H')], {
      description:
        'Error correction: L 7 %, M 15 %, Q 25 %, H 30 % (default M; H with a logo, where L and M are refused)',
    }),
  ),
  logo: Type.Optional(
    Type.String({
      maxLength: DATA_URI_PREFIX.length + Math.ceil(LOGO_MAX_BYTES / 3) * 4,
      description: `A PNG as a data URI (data:image/png;base64,…), at most ${LOGO_MAX_BYTES / 1024} KiB and ${LOGO_MAX_SIDE} pixels a side, drawn in the middle. Never fetched from an address. Larger than a few KiB: send it with POST …/qr`,
    }),
  ),
};

export const QrQuery = Closed(qrOptions);
export const QrBody = Closed(qrOptions, { $id: 'LinkQrBody' });
export type QrOptions = Type.Static<typeof QrQuery>;

const hex = (c: string | undefined, byDefault: string) => `#${(c ?? byDefault).replace(/^#/, '')}`;

/** The address a QR code carries: the short address with the QR marker. */
export function qrAddress(shortUrl: string): string {
  return `${shortUrl}${shortUrl.includes('?') ? '&' : '?'}${QR_PARAM}=1`;
}

function readLogo(dataUri: string): { png: PNG; base64: string } {
  if (!dataUri.startsWith(DATA_URI_PREFIX)) {
    throw badRequest('logo must be a PNG data URI (data:image/png;base64,…)', { field: 'logo' });
  }
  const base64 = dataUri.slice(DATA_URI_PREFIX.length);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(base64)) throw badRequest('logo is not valid base64', { field: 'logo' });
  const bytes = Buffer.from(base64, 'base64');
  if (bytes.length > LOGO_MAX_BYTES) {
    throw badRequest(`logo is larger than ${LOGO_MAX_BYTES} bytes`, { field: 'logo', max: LOGO_MAX_BYTES });
  }
  let png: PNG;
  try {
    png = PNG.sync.read(bytes);
  } catch {
    throw badRequest('logo is not a readable PNG image', { field: 'logo' });
  }
  if (png.width > LOGO_MAX_SIDE || png.height > LOGO_MAX_SIDE || png.width === 0 || png.height === 0) {
    throw badRequest(`logo must be at most ${LOGO_MAX_SIDE} pixels a side`, { field: 'logo' });
  }
  return { png, base64 };
}

export interface QrImage {
  contentType: string;
  body: string | Buffer;
}

/** The QR code of `text` as the options ask. */
export async function renderQr(text: string, o: QrOptions): Promise<QrImage> {
  const logo = o.logo ? readLogo(o.logo) : undefined;
  const level = o.level ?? (logo ? 'H' : 'M');
  if (logo && (level === 'L' || level === 'M')) {
    throw badRequest('A logo hides part of the code: use error correction Q or H', { field: 'level' });
  }
  const fg = hex(o.fg, '000000');
  const bg = hex(o.bg, 'ffffff');
  if (fg.slice(0, 7).toLowerCase() === bg.slice(0, 7).toLowerCase()) {
    throw badRequest('fg and bg must differ: the code would not scan', { field: 'fg' });
  }
  const margin = o.margin ?? 4;
  const size = o.size ?? 512;
  const options = { errorCorrectionLevel: level, margin, width: size, color: { dark: fg, light: bg } } as const;
  // The symbol's width in modules, to place the logo on whole modules.
  const modules = QRCode.create(text, { errorCorrectionLevel: level }).modules.size;
  if ((o.format ?? 'png') === 'svg') {
    let svg = await QRCode.toString(text, { ...options, type: 'svg' });
    if (logo) svg = svg.replace('</svg>', `${svgLogo(modules, margin, bg, logo)}</svg>`);
    return { contentType: 'image/svg+xml; charset=utf-8', body: svg };
  }
  const png = await QRCode.toBuffer(text, { ...options, type: 'png' });
  return { contentType: 'image/png', body: logo ? pngWithLogo(png, modules, margin, bg, logo.png) : png };
}

/** The logo's square in modules: a fifth of the symbol, odd (centred on a module), plus its border. */
function logoBox(modules: number, margin: number): { at: number; side: number; pad: number } {
  let side = Math.max(3, Math.round(modules * LOGO_SHARE));
  if (side % 2 === 0) side++;
  const pad = 1;
  const at = margin + (modules - side) / 2;
  return { at, side, pad };
}

function svgLogo(modules: number, margin: number, bg: string, logo: { png: PNG; base64: string }): string {
  const { at, side, pad } = logoBox(modules, margin);
  const fit = Math.min(side / logo.png.width, side / logo.png.height);
  const w = logo.png.width * fit;
  const h = logo.png.height * fit;
  const fill =
    bg.length === 9 ? `fill="${bg.slice(0, 7)}" fill-opacity="${parseInt(bg.slice(7), 16) / 255}"` : `fill="${bg}"`;
  return (
    `<rect x="${at - pad}" y="${at - pad}" width="${side + 2 * pad}" height="${side + 2 * pad}" ${fill}/>` +
    `<image x="${at + (side - w) / 2}" y="${at + (side - h) / 2}" width="${w}" height="${h}" ` +
    `href="${DATA_URI_PREFIX}${logo.base64}" preserveAspectRatio="xMidYMid meet"/>`
  );
}

/** Draws the logo (scaled to fit, alpha blended) on its background square in the middle of the PNG. */
function pngWithLogo(qrPng: Buffer, modules: number, margin: number, bg: string, logo: PNG): Buffer {
  const img = PNG.sync.read(qrPng);
  const unit = img.width / (modules + 2 * margin);
  const { at, side, pad } = logoBox(modules, margin);
  const bgRgb = [1, 3, 5].map((i) => parseInt(bg.slice(i, i + 2), 16));
  const x0 = Math.round((at - pad) * unit);
  const x1 = Math.round((at + side + pad) * unit);
  for (let y = x0; y < x1; y++) {
    for (let x = x0; x < x1; x++) {
      const i = (y * img.width + x) * 4;
      img.data[i] = bgRgb[0];
      img.data[i + 1] = bgRgb[1];
      img.data[i + 2] = bgRgb[2];
      img.data[i + 3] = 255;
    }
  }
  const box = side * unit;
  const fit = Math.min(box / logo.width, box / logo.height);
  const w = Math.max(1, Math.round(logo.width * fit));
  const h = Math.max(1, Math.round(logo.height * fit));
  const left = Math.round(at * unit + (box - w) / 2);
  const top = Math.round(at * unit + (box - h) / 2);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      // Nearest source pixel: a logo is small, and this keeps its edges sharp.
      const sx = Math.min(logo.width - 1, Math.floor(x / fit));
      const sy = Math.min(logo.height - 1, Math.floor(y / fit));
      const s = (sy * logo.width + sx) * 4;
      const d = ((top + y) * img.width + left + x) * 4;
      const a = logo.data[s + 3] / 255;
      for (let k = 0; k < 3; k++) img.data[d + k] = Math.round(logo.data[s + k] * a + img.data[d + k] * (1 - a));
      img.data[d + 3] = 255;
    }
  }
  return PNG.sync.write(img);
}

const tags = ['links'];
const description =
  'The image encodes the link’s short address with `?qr=1`: a scan is recorded as a click with trigger `qr`. ' +
  'A logo is a PNG data URI (never an address to fetch); use POST to send one larger than a few KiB.';

async function answer(
  service: LinksService,
  collectionId: string,
  linkId: string,
  o: QrOptions,
  reply: import('fastify').FastifyReply,
) {
  const link = await service.get(collectionId, linkId);
  const image = await renderQr(qrAddress(link.shortUrl), o);
  const ext = image.contentType.startsWith('image/png') ? 'png' : 'svg';
  return (
    reply
      .type(image.contentType)
      .header('cache-control', 'private, max-age=60')
      .header('x-content-type-options', 'nosniff')
      // An SVG opened on its own runs nothing: it is ours, and may load only its data: logo.
      .header('content-security-policy', "default-src 'none'; img-src data:; style-src 'unsafe-inline'")
      .header('content-disposition', `inline; filename="${link.code}.${ext}"`)
      .send(image.body)
  );
}

export const qrRoutes = (service: LinksService) => [
  defineRoute({
    method: 'GET',
    url: '/admin/collection/:collectionId/links/:linkId/qr',
    operationId: 'links_qr',
    tags,
    summary: 'The link’s QR code, SVG or PNG (size, colours, margin, error correction, logo)',
    description,
    guard: guard.admin,
    params: LinkParams,
    query: QrQuery,
    response: Type.String({ description: 'The image: image/png or image/svg+xml' }),
    handler: ({ scope, query, reply }) => answer(service, scope.collectionId, scope.linkId, query, reply),
  }),
  defineRoute({
    method: 'POST',
    url: '/admin/collection/:collectionId/links/:linkId/qr',
    operationId: 'links_qrWithBody',
    tags,
    summary: 'The link’s QR code, with the options in a JSON body (for a logo too large for a query string)',
    description,
    guard: guard.admin,
    params: LinkParams,
    body: QrBody,
    emptyBody: true,
    response: Type.String({ description: 'The image: image/png or image/svg+xml' }),
    handler: ({ scope, body, reply }) => answer(service, scope.collectionId, scope.linkId, body, reply),
  }),
];
