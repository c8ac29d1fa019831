import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';

/** One file of the portal's bundle, read once: its bytes, and gzipped when that is smaller (text). */
export interface BundleFile {
  readonly body: Buffer;
  readonly gzipped: Buffer | undefined;
  readonly contentType: string;
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};
const COMPRESSIBLE = /^(text\/|application\/(json|manifest\+json)|image\/svg\+xml)/;

/** At most this many files, of at most this many bytes in all: a bundle is a handful of files held in memory. */
const MAX_FILES = 500;
const MAX_TOTAL_BYTES = 32 * 1024 * 1024;

/**
 * The built portal (`npm run build` writes `dist/portal-app/`), read whole when
 * the app starts: index.html and its hashed assets, keyed by their path
 * relative to the directory with `/` separators. Undefined when the directory
 * has no index.html. Symbolic links and dot files are not served.
 */
export function readBundle(directory: string): Map<string, BundleFile> | undefined {
  try {
    if (!statSync(path.join(directory, 'index.html')).isFile()) return undefined;
  } catch {
    return undefined;
  }
  const files = new Map<string, BundleFile>();
  let total = 0;
  const walk = (relative: string) => {
    for (const entry of readdirSync(path.join(directory, relative), { withFileTypes: true })) {
      if (entry.name.startsWith('.')) continue;
      const name = relative === '' ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory()) walk(name);
      else if (entry.isFile()) {
        const body = readFileSync(path.join(directory, name));
        total += body.length;
        if (files.size >= MAX_FILES || total > MAX_TOTAL_BYTES) throw new Error(`the portal bundle at ${directory} is larger than ${MAX_FILES} files or ${MAX_TOTAL_BYTES} bytes`);
        files.set(name, fileOf(name, body));
      }
    }
  };
  walk('');
  return files;
}

function fileOf(name: string, body: Buffer): BundleFile {
  const contentType = CONTENT_TYPES[path.extname(name).toLowerCase()] ?? 'application/octet-stream';
  const compressed = COMPRESSIBLE.test(contentType) && body.length > 512 ? gzipSync(body, { level: 9 }) : undefined;
  return { body, contentType, gzipped: compressed && compressed.length < body.length ? compressed : undefined };
}
