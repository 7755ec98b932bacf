/**
 * Writes a small MaxMind DB (.mmdb) file, so the GeoIP path is tested with a real database
 * file read by the real reader. MaxMind's own test databases cannot be fetched here, and the
 * npm package that bundles GeoLite2 fails `npm install` without a MaxMind licence key.
 *
 * Format: MaxMind DB File Format Specification 2.0 (https://maxmind.github.io/MaxMind-DB/):
 * a binary search tree over the address bits (IPv4 only here, 24-bit records), 16 zero bytes,
 * the data section, then "\xAB\xCD\xEFMaxMind.com" and the metadata map. Only what a City
 * record needs is encoded: maps, UTF-8 strings and unsigned integers, each under 29 bytes.
 */
import { writeFileSync } from 'node:fs';

type Value = string | number | Value[] | { [key: string]: Value };

/** A control byte (and, for extended types, the type byte) for `type` and `size` < 29. */
function control(type: number, size: number): Buffer {
  if (size >= 29) throw new Error('mmdb test writer: values of 29 bytes or more are not supported');
  return type <= 7 ? Buffer.from([(type << 5) | size]) : Buffer.from([size, type - 7]);
}

function encode(v: Value): Buffer {
  if (typeof v === 'string') {
    const bytes = Buffer.from(v, 'utf8');
    return Buffer.concat([control(2, bytes.length), bytes]);
  }
  if (typeof v === 'number') {
    const bytes: number[] = [];
    for (let n = v; n > 0; n = Math.floor(n / 256)) bytes.unshift(n % 256);
    return Buffer.concat([control(6, bytes.length), Buffer.from(bytes)]); // uint32
  }
  if (Array.isArray(v)) return Buffer.concat([control(11, v.length), ...v.map(encode)]);
  const keys = Object.keys(v);
  return Buffer.concat([control(7, keys.length), ...keys.flatMap((k) => [encode(k), encode(v[k])])]);
}

interface TreeNode {
  /** Child per bit: another node, a data offset (number), or nothing. */
  next: [TreeNode | number | undefined, TreeNode | number | undefined];
}

/** Writes `networks` (IPv4 CIDR → record) to `path`. */
export function writeMmdb(path: string, networks: Record<string, Value>): void {
  const root: TreeNode = { next: [undefined, undefined] };
  const chunks: Buffer[] = [];
  let dataSize = 0;
  for (const [cidr, record] of Object.entries(networks)) {
    const [address, bits] = cidr.split('/');
    const prefix = Number(bits);
    const ip = address.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);
    const bit = (i: number) => Math.floor(ip / 2 ** (31 - i)) % 2;
    let node = root;
    for (let i = 0; i < prefix - 1; i++) {
      const child = node.next[bit(i)];
      if (typeof child === 'number') throw new Error(`mmdb test writer: ${cidr} is inside another network`);
      if (child === undefined) {
        const created: TreeNode = { next: [undefined, undefined] };
        node.next[bit(i)] = created;
        node = created;
      } else {
        node = child;
      }
    }
    node.next[bit(prefix - 1)] = dataSize;
    const encoded = encode(record);
    chunks.push(encoded);
    dataSize += encoded.length;
  }
  const nodes: TreeNode[] = [];
  const number = (n: TreeNode) => {
    nodes.push(n);
    for (const child of n.next) if (typeof child === 'object') number(child);
  };
  number(root);
  const index = new Map(nodes.map((n, i) => [n, i]));
  const nodeCount = nodes.length;
  const tree = Buffer.alloc(nodeCount * 6);
  nodes.forEach((n, i) => {
    n.next.forEach((child, side) => {
      const record =
        child === undefined ? nodeCount : typeof child === 'number' ? nodeCount + 16 + child : index.get(child)!;
      tree.writeUIntBE(record, i * 6 + side * 3, 3);
    });
  });
  const metadata = encode({
    node_count: nodeCount,
    record_size: 24,
    ip_version: 4,
    database_type: 'GeoIP2-City-Test',
    languages: ['en'],
    binary_format_major_version: 2,
    binary_format_minor_version: 0,
    build_epoch: Math.floor(Date.now() / 1000),
    description: { en: 'test' },
  });
  writeFileSync(
    path,
    Buffer.concat([tree, Buffer.alloc(16), ...chunks, Buffer.from('ABCDEF4D61784D696E642E636F6D', 'hex'), metadata]),
  );
}
