/**
 * Signed blob storage speaking the subset of the Azure Blob REST protocol that
 * `@azure/storage-blob` uses behind `@actions/artifact` and `@actions/cache`:
 *  - Put Block (`PUT ?comp=block&blockid=…`) and Put Block List
 *    (`PUT ?comp=blocklist`, XML body): `BlockBlobClient.uploadStream` (artifacts);
 *  - Put Blob (`PUT`, `x-ms-blob-type: BlockBlob`): `uploadFile` under its
 *    128 MiB single-shot size (caches);
 *  - Get Blob / HEAD with `Range` / `x-ms-range`: plain downloads.
 * https://learn.microsoft.com/rest/api/storageservices/blob-service-rest-api
 *
 * Every URL carries a SAS-like query: `sp` (r = read, cw = create+write), `se`
 * (expiry, ISO 8601) and `sig`, an HMAC-SHA256 over permission, expiry and
 * path. The path is `/<account>/<container>/<blob>`, the IP-style layout the
 * SDK expects for a `127.0.0.1:PORT` host.
 */
import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto';

export const ACCOUNT = 'actionsresults';
export const CONTAINER = 'actions-results';

export interface StoredBlob {
  data: Buffer;
  contentType: string;
  /** Sent back on GET, so a raw (`skipArchive`) artifact downloads under its file name. */
  contentDisposition?: string;
  etag: string;
  lastModified: number;
}

export interface BlobReply {
  status: number;
  headers: Record<string, string>;
  body?: Buffer | string;
}

type Permission = 'r' | 'cw';

interface Slot {
  blob?: StoredBlob;
  /** Staged, not yet committed blocks (Put Block), by block id. */
  blocks: Map<string, Buffer>;
  contentDisposition?: string;
  /** A finalized artifact or cache entry: writes are refused. */
  sealed: boolean;
}

export class BlobStore {
  private readonly slots = new Map<string, Slot>();

  constructor(
    private readonly secret: string,
    private readonly now: () => number,
    private readonly origin: () => string,
  ) {}

  /** A new blob name under `prefix`, reserved so uploads to it are accepted. */
  reserve(prefix: string, extension: string, contentDisposition?: string): string {
    const name = `${prefix}/${randomUUID()}${extension}`;
    this.slots.set(name, { blocks: new Map(), sealed: false, ...(contentDisposition ? { contentDisposition } : {}) });
    return name;
  }

  /** A URL granting `permission` on the blob until `ttlSec` from now. */
  sign(name: string, permission: Permission, ttlSec: number): string {
    const url = new URL(`/${ACCOUNT}/${CONTAINER}/${name}`, this.origin());
    const se = new Date(this.now() + ttlSec * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    url.searchParams.set('sv', '2025-01-05');
    url.searchParams.set('sr', 'b');
    url.searchParams.set('sp', permission);
    url.searchParams.set('se', se);
    url.searchParams.set('sig', this.signature(permission, se, url.pathname));
    return url.toString();
  }

  get(name: string): StoredBlob | undefined {
    return this.slots.get(name)?.blob;
  }

  seal(name: string): void {
    const slot = this.slots.get(name);
    if (slot) {
      slot.sealed = true;
      slot.blocks.clear();
    }
  }

  delete(name: string): void {
    this.slots.delete(name);
  }

  /** Test hook: change a stored blob's bytes in place (to make a digest check fail). */
  mutate(name: string, change: (data: Buffer) => Buffer): void {
    const blob = this.slots.get(name)?.blob;
    if (!blob) throw new Error(`no blob ${name}`);
    blob.data = change(Buffer.from(blob.data));
  }

  handle(method: string, url: URL, headers: Record<string, string | string[] | undefined>, body: Buffer): BlobReply {
    const prefix = `/${ACCOUNT}/${CONTAINER}/`;
    if (!url.pathname.startsWith(prefix)) return azureError(400, 'InvalidUri', 'The requested URI does not represent any resource on the server.');
    const name = url.pathname.slice(prefix.length);
    const denied = this.checkSas(method, url);
    if (denied) return denied;
    const slot = this.slots.get(name);
    if (method === 'GET' || method === 'HEAD') return this.read(slot, header(headers, 'x-ms-range') ?? header(headers, 'range'), method === 'HEAD');
    if (method !== 'PUT') return azureError(405, 'UnsupportedHttpVerb', "The resource doesn't support specified Http Verb.");
    if (!slot) return azureError(404, 'ContainerNotFound', 'The specified container does not exist.');
    if (slot.sealed) return azureError(409, 'BlobAlreadyExists', 'The specified blob already exists.');
    const comp = url.searchParams.get('comp');
    if (comp === 'block') return this.putBlock(slot, url.searchParams.get('blockid'), body);
    if (comp === 'blocklist') return this.putBlockList(slot, body, headers);
    if (comp)
      return azureError(400, 'InvalidQueryParameterValue', `Value for one of the query parameters specified in the request URI is invalid: comp=${comp}`);
    if (header(headers, 'x-ms-blob-type') !== 'BlockBlob')
      return azureError(400, 'MissingRequiredHeader', "An HTTP header that's mandatory for this request is not specified: x-ms-blob-type");
    return this.commit(slot, body, headers);
  }

  private signature(permission: string, se: string, pathname: string): string {
    return createHmac('sha256', this.secret).update(`${permission}\n${se}\n${pathname}`).digest('base64');
  }

  /** Null when the SAS grants this request; else Azure's 403. */
  private checkSas(method: string, url: URL): BlobReply | null {
    const sp = url.searchParams.get('sp') ?? '';
    const se = url.searchParams.get('se') ?? '';
    const sig = Buffer.from(url.searchParams.get('sig') ?? '', 'base64');
    const expected = Buffer.from(this.signature(sp, se, url.pathname), 'base64');
    const authFailed = 'Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.';
    if (sig.length !== expected.length || !timingSafeEqual(sig, expected))
      return azureError(403, 'AuthenticationFailed', `${authFailed}\nAuthenticationErrorDetail:Signature did not match.`);
    if (!(Date.parse(se) > this.now()))
      return azureError(403, 'AuthenticationFailed', `${authFailed}\nAuthenticationErrorDetail:Signed expiry time [${se}] has to be after signed start time`);
    const needed = method === 'PUT' ? 'w' : 'r';
    if (!sp.includes(needed))
      return azureError(403, 'AuthorizationPermissionMismatch', 'This request is not authorized to perform this operation using this permission.');
    return null;
  }

  private putBlock(slot: Slot, blockId: string | null, body: Buffer): BlobReply {
    if (!blockId) return azureError(400, 'MissingRequiredQueryParameter', "A query parameter that's mandatory for this request is not specified: blockid");
    slot.blocks.set(blockId, body);
    return { status: 201, headers: { 'x-ms-request-server-encrypted': 'true', 'content-md5': md5(body) } };
  }

  private putBlockList(slot: Slot, body: Buffer, headers: Record<string, string | string[] | undefined>): BlobReply {
    const parts: Buffer[] = [];
    for (const m of body.toString('utf8').matchAll(/<(Latest|Uncommitted|Committed)>([^<]*)<\/\1>/g)) {
      const block = slot.blocks.get(m[2]!);
      if (!block) return azureError(400, 'InvalidBlockList', 'The specified block list is invalid.');
      parts.push(block);
    }
    slot.blocks.clear();
    return this.commit(slot, Buffer.concat(parts), headers);
  }

  private commit(slot: Slot, data: Buffer, headers: Record<string, string | string[] | undefined>): BlobReply {
    const t = this.now();
    slot.blob = {
      data,
      contentType: header(headers, 'x-ms-blob-content-type') ?? 'application/octet-stream',
      ...(slot.contentDisposition ? { contentDisposition: slot.contentDisposition } : {}),
      etag: `"0x${createHash('sha1').update(data).digest('hex').slice(0, 15).toUpperCase()}"`,
      lastModified: t,
    };
    return { status: 201, headers: { etag: slot.blob.etag, 'last-modified': new Date(t).toUTCString(), 'x-ms-request-server-encrypted': 'true' } };
  }

  private read(slot: Slot | undefined, range: string | undefined, headOnly: boolean): BlobReply {
    const blob = slot?.blob;
    if (!blob) return azureError(404, 'BlobNotFound', 'The specified blob does not exist.', headOnly);
    const base: Record<string, string> = {
      'content-type': blob.contentType,
      etag: blob.etag,
      'last-modified': new Date(blob.lastModified).toUTCString(),
      'accept-ranges': 'bytes',
      'x-ms-blob-type': 'BlockBlob',
      ...(blob.contentDisposition ? { 'content-disposition': blob.contentDisposition } : {}),
    };
    const total = blob.data.length;
    const r = range ? parseRange(range, total) : null;
    if (range && !r) return { status: 416, headers: { 'content-range': `bytes */${total}`, 'x-ms-error-code': 'InvalidRange' } };
    const [start, end] = r ?? [0, total - 1];
    const data = blob.data.subarray(start, end + 1);
    const headers = { ...base, 'content-length': String(data.length), ...(r ? { 'content-range': `bytes ${start}-${end}/${total}` } : {}) };
    return { status: r ? 206 : 200, headers, ...(headOnly ? {} : { body: data }) };
  }
}

/** `bytes=a-b` / `bytes=a-` as an inclusive [start, end] inside the blob, or null. */
function parseRange(range: string, total: number): [number, number] | null {
  const m = /^bytes=(\d+)-(\d*)$/.exec(range.trim());
  if (!m) return null;
  const start = Number(m[1]);
  const end = m[2] ? Math.min(Number(m[2]), total - 1) : total - 1;
  return start < total && start <= end ? [start, end] : null;
}

function azureError(status: number, code: string, message: string, headOnly = false): BlobReply {
  const xml = `<?xml version="1.0" encoding="utf-8"?><Error><Code>${code}</Code><Message>${message}\nRequestId:${randomUUID()}\nTime:${new Date().toISOString()}</Message></Error>`;
  return { status, headers: { 'content-type': 'application/xml', 'x-ms-error-code': code }, ...(headOnly ? {} : { body: xml }) };
}

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function md5(data: Buffer): string {
  return createHash('md5').update(data).digest('base64');
}
