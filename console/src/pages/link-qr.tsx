/**
 * A link's QR code in the console: a download button for the list, and a panel for a link's
 * page (a preview, colours, size, SVG or PNG). The image comes from the admin API, which needs
 * the console's credential, so it is fetched as a blob and offered through an object URL
 * rather than linked to directly.
 */
import { useEffect, useState } from 'preact/hooks';
import type { ServiceClient } from '../../../clients/typescript/src/index.ts';
import { ErrorNote, saveBlob as save } from '../ui.tsx';

interface QrOptions {
  format: 'png' | 'svg';
  size: number;
  fg?: string;
  bg?: string;
}

async function fetchQr(api: ServiceClient, collectionId: string, linkId: string, o: QrOptions): Promise<Blob> {
  const image = await api.GET('/admin/collection/{collectionId}/links/{linkId}/qr', {
    params: { path: { collectionId, linkId }, query: o },
    parseAs: 'blob',
  });
  return image as unknown as Blob;
}

/** The link whose code is drawn (its `code` names the downloaded file). */
interface QrProps {
  api: ServiceClient;
  collectionId: string;
  linkId: string;
  code: string;
}

/** "QR" in a row of the list: downloads the link's code as a 512 px PNG. */
export function QrButton({ api, collectionId, linkId, code }: QrProps) {
  const [error, setError] = useState<unknown>();
  const download = async () => {
    setError(undefined);
    try {
      save(await fetchQr(api, collectionId, linkId, { format: 'png', size: 512 }), `qr-${code}.png`);
    } catch (err) {
      setError(err);
    }
  };
  return (
    <>
      <button type="button" class="copy" onClick={download} aria-label={`Download the QR code of ${code}`}>
        QR
      </button>
      <ErrorNote error={error} doing="make the QR code" />
    </>
  );
}

/** The QR panel of a link's page: a live preview and downloads in either format. */
export function QrPanel({ api, collectionId, linkId, code }: QrProps) {
  const [fg, setFg] = useState('#000000');
  const [bg, setBg] = useState('#ffffff');
  const [size, setSize] = useState(256);
  const [preview, setPreview] = useState<string>();
  const [error, setError] = useState<unknown>();
  const colours = { fg: fg.slice(1), bg: bg.slice(1) };
  useEffect(() => {
    let url: string | undefined;
    let gone = false;
    fetchQr(api, collectionId, linkId, { format: 'svg', size, ...colours })
      .then((blob) => {
        if (gone) return;
        url = URL.createObjectURL(blob);
        setPreview(url);
        setError(undefined);
      })
      .catch((err) => !gone && setError(err));
    return () => {
      gone = true;
      if (url) URL.revokeObjectURL(url);
    };
  }, [api, collectionId, linkId, fg, bg, size]);
  const download = async (format: 'png' | 'svg') => {
    setError(undefined);
    try {
      save(await fetchQr(api, collectionId, linkId, { format, size, ...colours }), `qr-${code}.${format}`);
    } catch (err) {
      setError(err);
    }
  };
  return (
    <section aria-labelledby="qr-title">
      <h2 id="qr-title">QR code</h2>
      <p class="meta">
        A scan opens the short address with <code>?qr=1</code>, so its clicks count with trigger <code>qr</code>.
      </p>
      <form class="inline" onSubmit={(e) => e.preventDefault()}>
        <label>
          Colour
          <input name="fg" type="color" value={fg} onInput={(e) => setFg(e.currentTarget.value)} />
        </label>
        <label>
          Background
          <input name="bg" type="color" value={bg} onInput={(e) => setBg(e.currentTarget.value)} />
        </label>
        <label>
          Size (px)
          <select name="size" value={String(size)} onChange={(e) => setSize(Number(e.currentTarget.value))}>
            {[128, 256, 512, 1024, 2048].map((s) => (
              <option key={s} value={String(s)}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <button type="button" onClick={() => download('png')}>
          Download PNG
        </button>
        <button type="button" onClick={() => download('svg')}>
          Download SVG
        </button>
      </form>
      <ErrorNote error={error} doing="make the QR code" />
      {preview ? <img class="qr" src={preview} alt={`QR code of ${code}`} width={192} height={192} /> : null}
    </section>
  );
}
