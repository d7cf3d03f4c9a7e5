#!/usr/bin/env python3
"""A strict S3 on 127.0.0.1 for ebb's object-store tests.

s3rver (the real S3 implementation the tests also use) does not check
SigV4 signatures; this server does, by recomputing every one with
botocore's own signer (python3-botocore: S3SigV4Auth for headers,
S3SigV4QueryAuth for presigned URLs), and it holds the client to S3's
rules:

* header-signed requests carry x-amz-content-sha256, signed, equal to the
  SHA-256 of the body that arrived (or UNSIGNED-PAYLOAD, refused here
  over plain http as botocore never sends it there); x-amz-date within 15
  minutes;
* the path is signed as sent (encoded once, never normalised);
* presigned URLs: all X-Amz-* parameters, X-Amz-Expires 1..604800, not
  expired, SignedHeaders exactly "host";
* path-style (/BUCKET/KEY) and virtual-host (Host: BUCKET.HOST) addressing,
  each request logged with the style it used;
* PutObject, GetObject (Range), HeadObject, DeleteObject, ListObjectsV2
  (pages of --page-size keys, continuation tokens), multipart create /
  upload part / complete (ascending parts, matching ETags, parts but the
  last >= --min-part bytes) / abort, ListMultipartUploads (pages of
  --page-size, key and upload id markers).

With --flavour oss it is an Alibaba OSS endpoint instead: virtual-host
addressing only, and OSS V4 signatures (OSS4-HMAC-SHA256, header and
presigned) recomputed here from Alibaba's documented algorithm, apart
from ebb's C signer.

Faults on request: --faults FILE holds a JSON list of
{"op": NAME, "status": N, "code": CODE, "count": K, "applied": B}; the next
K requests of operation NAME (PutObject, UploadPart, CompleteMultipartUpload,
...) are answered with that status and an <Error> with that code (with
"applied": true, after doing what they ask, as when an answer is lost) (status 200 for
CompleteMultipartUpload: S3's late error, blanks and then <Error>). With
"key_contains": S, only requests for keys containing S count; with
"corrupt": true a GetObject is answered 200 with the object's middle byte
flipped (damage in the store or on the way); with "delay": S a request is
answered normally S seconds after it arrived. The file is rewritten as
faults are used.

Prints "PORT <n>" when it listens. Every request is appended to --log as
one JSON line: op, method, style ("path", "virtual" or "presigned-..."),
key, query, status. With --dump FILE, FILE holds what the bucket holds
after each request: {"objects": {key: size}, "uploads": {id: key}}.
"""
import argparse
import base64
import hmac
import datetime
import hashlib
import json
import os
import re
import sys
import urllib.parse
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

AUTH_RE = re.compile(r'^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/s3/aws4_request, '
                     r'SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$')
SKEW = datetime.timedelta(minutes=15)


OSS_AUTH_RE = re.compile(r'^OSS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/oss/aliyun_v4_request'
                         r'(?:,AdditionalHeaders=([a-z0-9;-]+))?,Signature=([0-9a-f]{64})$')


def oss_quote(s):
    return urllib.parse.quote(s, safe='-_.~')


def oss_signature(secret, date, region, string_to_sign):
    key = ('aliyun_v4' + secret).encode()
    for part in (date, region, 'oss', 'aliyun_v4_request'):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, string_to_sign.encode(), hashlib.sha256).hexdigest()


class Fail(Exception):
    def __init__(self, status, code, message):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def error_xml(code, message):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code>'
            '<Message>%s</Message><RequestId>fake</RequestId></Error>'
            % (code, message)).encode()


def parse_amz_date(s):
    try:
        return datetime.datetime.strptime(s, '%Y%m%dT%H%M%SZ').replace(
            tzinfo=datetime.timezone.utc)
    except (TypeError, ValueError):
        raise Fail(403, 'AccessDenied', 'bad date %r' % s)


class State:
    def __init__(self, args):
        self.args = args
        self.objects = {}   # key -> bytes
        self.etags = {}     # key -> its ETag (a multipart object's is "MD5-N")
        self.uploads = {}   # upload id -> {key, parts: {n: (bytes, MD5 digest)}}
        self.next_upload = 1


class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    # Buffered: the answer leaves when the request is done, after its log
    # line is written, so a client that reads the log after an answer
    # always finds that request in it.
    wbufsize = 1 << 16

    def log_message(self, fmt, *args):  # quiet: the test reads --log
        pass

    # ---- plumbing ----

    def send(self, status, body=b'', headers=None, head=False):
        if getattr(self, 'mute', False):
            return
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        if not head and body:
            self.wfile.write(body)

    def record(self, entry):
        st = self.server.state
        with open(st.args.log, 'a') as f:
            f.write(json.dumps(entry) + '\n')
        if st.args.dump:
            # What the bucket holds now, for tests that look from outside.
            tmp = st.args.dump + '.tmp'
            with open(tmp, 'w') as f:
                json.dump({'objects': {k: len(v) for k, v in st.objects.items()},
                           'uploads': {u: up['key'] for u, up in st.uploads.items()}}, f)
            os.replace(tmp, st.args.dump)

    def take_fault(self, op, key):
        path = self.server.state.args.faults
        if not path or not os.path.exists(path):
            return None
        with open(path) as f:
            faults = json.load(f)
        for fault in faults:
            if fault['op'] == op and fault.get('count', 1) > 0 and \
                    fault.get('key_contains', '') in (key or ''):
                fault['count'] = fault.get('count', 1) - 1
                # Replaced whole: a test reads the counts while requests run.
                with open(path + '.taken', 'w') as f:
                    json.dump(faults, f)
                os.replace(path + '.taken', path)
                return fault
        return None

    # ---- addressing and signatures ----

    def address(self):
        """(style, key or None, query) from Host and the raw path."""
        bucket = self.server.state.args.bucket
        host = self.headers.get('Host', '')
        raw_path, _, query = self.path.partition('?')
        if host.startswith(bucket + '.'):
            style, rest = 'virtual', raw_path[1:]
        elif self.server.state.args.flavour == 'oss':
            raise Fail(403, 'AccessDenied', 'OSS denies path-style requests')
        else:
            prefix = '/' + bucket
            if raw_path != prefix and not raw_path.startswith(prefix + '/'):
                raise Fail(404, 'NoSuchBucket', 'no bucket in %r' % raw_path)
            style, rest = 'path', raw_path[len(prefix) + 1:]
        key = urllib.parse.unquote(rest) if rest else None
        return style, key, raw_path, query

    def verify(self, raw_path, query, body):
        args = self.server.state.args
        if args.flavour == 'oss':
            return self.verify_oss(raw_path, query, body)
        creds = Credentials(args.access_key, args.secret_key)
        url = 'http://%s%s' % (self.headers['Host'], raw_path)
        params = urllib.parse.parse_qs(query, keep_blank_values=True)
        if 'X-Amz-Signature' in params:
            return self.verify_presigned(creds, url, query, params)
        auth = self.headers.get('Authorization')
        if auth is None:
            raise Fail(403, 'AccessDenied', 'anonymous requests are refused')
        m = AUTH_RE.match(auth)
        if not m:
            raise Fail(400, 'AuthorizationHeaderMalformed', auth)
        akid, date, region, signed, signature = m.groups()
        if akid != args.access_key:
            raise Fail(403, 'InvalidAccessKeyId', akid)
        if region != args.region:
            raise Fail(400, 'AuthorizationHeaderMalformed', 'region %s' % region)
        names = signed.split(';')
        for need in ('host', 'x-amz-date', 'x-amz-content-sha256'):
            if need not in names:
                raise Fail(400, 'InvalidRequest', '%s is not signed' % need)
        when = parse_amz_date(self.headers.get('x-amz-date'))
        if abs(datetime.datetime.now(datetime.timezone.utc) - when) > SKEW:
            raise Fail(403, 'RequestTimeTooSkewed', 'x-amz-date %s' % when)
        if date != self.headers['x-amz-date'][:8]:
            raise Fail(403, 'SignatureDoesNotMatch', 'scope date')
        sha = self.headers.get('x-amz-content-sha256')
        if sha != hashlib.sha256(body).hexdigest():
            raise Fail(400, 'XAmzContentSHA256Mismatch',
                       'x-amz-content-sha256 %r is not the body\'s' % sha)
        headers = {n: self.headers.get(n) for n in names}
        if any(v is None for v in headers.values()):
            raise Fail(400, 'InvalidRequest', 'a signed header is missing')
        req = AWSRequest(method=self.command, url=url + ('?' + query if query else ''),
                         headers=headers, data=body)
        req.context['timestamp'] = self.headers['x-amz-date']
        signer = S3SigV4Auth(creds, 's3', region)
        creq = signer.canonical_request(req)
        want = signer.signature(signer.string_to_sign(req, creq), req)
        if want != signature:
            raise Fail(403, 'SignatureDoesNotMatch', 'canonical request:\n' + creq)
        return 'header'

    def verify_presigned(self, creds, url, query, params):
        args = self.server.state.args
        need = ['X-Amz-Algorithm', 'X-Amz-Credential', 'X-Amz-Date', 'X-Amz-Expires',
                'X-Amz-SignedHeaders', 'X-Amz-Signature']
        if any(k not in params for k in need):
            raise Fail(400, 'AuthorizationQueryParametersError', 'missing X-Amz-*')
        one = {k: v[0] for k, v in params.items()}
        if one['X-Amz-Algorithm'] != 'AWS4-HMAC-SHA256':
            raise Fail(400, 'AuthorizationQueryParametersError', 'algorithm')
        akid, date, region, service, term = one['X-Amz-Credential'].split('/')
        if akid != args.access_key or service != 's3' or term != 'aws4_request':
            raise Fail(403, 'InvalidAccessKeyId', one['X-Amz-Credential'])
        expires = int(one['X-Amz-Expires'])
        if not 1 <= expires <= 604800:
            raise Fail(400, 'AuthorizationQueryParametersError',
                       'X-Amz-Expires must be between 1 and 604800 seconds')
        when = parse_amz_date(one['X-Amz-Date'])
        if datetime.datetime.now(datetime.timezone.utc) > when + datetime.timedelta(seconds=expires):
            raise Fail(403, 'AccessDenied', 'Request has expired')
        if one['X-Amz-SignedHeaders'] != 'host':
            raise Fail(400, 'AuthorizationQueryParametersError', 'only host may be signed')
        unsigned = '&'.join(p for p in query.split('&')
                            if not p.startswith('X-Amz-Signature='))
        req = AWSRequest(method=self.command, url=url + '?' + unsigned,
                         headers={'host': self.headers['Host']})
        req.context['timestamp'] = one['X-Amz-Date']
        signer = S3SigV4QueryAuth(creds, 's3', region, expires=expires)
        creq = signer.canonical_request(req)
        want = signer.signature(signer.string_to_sign(req, creq), req)
        if want != one['X-Amz-Signature']:
            raise Fail(403, 'SignatureDoesNotMatch', 'canonical request:\n' + creq)
        return 'presigned'

    def verify_oss(self, raw_path, query, body):
        """OSS V4 as Alibaba documents it (the canonical URI is always
        /BUCKET/KEY; an empty query value is written without '=')."""
        args = self.server.state.args
        pairs = [p.partition('=') for p in query.split('&') if p]
        params = {urllib.parse.unquote(k): urllib.parse.unquote(v) for k, _, v in pairs}
        presigned = 'x-oss-signature' in params
        if presigned:
            for need in ('x-oss-signature-version', 'x-oss-credential', 'x-oss-date',
                         'x-oss-expires'):
                if need not in params:
                    raise Fail(400, 'InvalidArgument', 'missing ' + need)
            if params['x-oss-signature-version'] != 'OSS4-HMAC-SHA256':
                raise Fail(400, 'InvalidArgument', 'signature version')
            akid, date, region, product, term = params['x-oss-credential'].split('/')
            if product != 'oss' or term != 'aliyun_v4_request':
                raise Fail(403, 'AccessDenied', 'credential scope')
            expires = int(params['x-oss-expires'])
            if not 1 <= expires <= 604800:
                raise Fail(400, 'InvalidArgument', 'x-oss-expires out of range')
            amz_date = params['x-oss-date']
            when = parse_amz_date(amz_date)
            if datetime.datetime.now(datetime.timezone.utc) > when + datetime.timedelta(seconds=expires):
                raise Fail(403, 'AccessDenied', 'Request has expired')
            extra = params.get('x-oss-additional-headers', '')
            signature = params['x-oss-signature']
            hashed = 'UNSIGNED-PAYLOAD'
        else:
            m = OSS_AUTH_RE.match(self.headers.get('Authorization', ''))
            if not m:
                raise Fail(403, 'AccessDenied', 'no OSS4-HMAC-SHA256 Authorization')
            akid, date, region, extra, signature = m.groups()
            extra = extra or ''
            amz_date = self.headers.get('x-oss-date')
            when = parse_amz_date(amz_date)
            if abs(datetime.datetime.now(datetime.timezone.utc) - when) > SKEW:
                raise Fail(403, 'RequestTimeTooSkewed', 'x-oss-date %s' % when)
            hashed = self.headers.get('x-oss-content-sha256')
            if hashed != 'UNSIGNED-PAYLOAD' and hashed != hashlib.sha256(body).hexdigest():
                raise Fail(400, 'InvalidArgument', 'x-oss-content-sha256')
        if akid != args.access_key:
            raise Fail(403, 'InvalidAccessKeyId', akid)
        if region != args.region or date != amz_date[:8]:
            raise Fail(403, 'SignatureDoesNotMatch', 'scope')
        extra_names = [n for n in extra.split(';') if n]
        names = sorted({n.lower() for n in self.headers.keys()
                        if n.lower().startswith('x-oss-') or n.lower() in
                        ('content-type', 'content-md5') or n.lower() in extra_names})
        canon_headers = ''.join('%s:%s\n' % (n, self.headers.get(n).strip()) for n in names)
        canon_query = '&'.join(
            oss_quote(k) + ('=' + oss_quote(v) if v else '')
            for k, v in sorted(params.items()) if k != 'x-oss-signature')
        key = urllib.parse.unquote(raw_path[1:])
        canon_uri = oss_quote('/%s/%s' % (args.bucket, key)).replace('%2F', '/')
        creq = '\n'.join([self.command, canon_uri, canon_query, canon_headers,
                          ';'.join(sorted(extra_names)), hashed])
        sts = '\n'.join(['OSS4-HMAC-SHA256', amz_date,
                         '%s/%s/oss/aliyun_v4_request' % (date, region),
                         hashlib.sha256(creq.encode()).hexdigest()])
        if oss_signature(args.secret_key, date, region, sts) != signature:
            raise Fail(403, 'SignatureDoesNotMatch', 'canonical request:\n' + creq)
        return 'presigned' if presigned else 'header'

    # ---- operations ----

    def handle_any(self):
        # Connections are served on threads of their own (a client keeps
        # idle ones open), requests one at a time.
        with self.server.lock:
            self.handle_locked()

    def handle_locked(self):
        length = int(self.headers.get('Content-Length', '0'))
        body = self.rfile.read(length) if length > 0 else b''
        entry = {'method': self.command, 'op': None}
        try:
            style, key, raw_path, query = self.address()
            params = urllib.parse.parse_qs(query, keep_blank_values=True)
            op = self.operation(key, params)
            entry.update(op=op, key=key, query=query)
            auth = self.verify(raw_path, query, body)
            entry['style'] = style if auth == 'header' else 'presigned-' + style
            fault = self.take_fault(op, key)
            if fault is not None and fault.get('delay'):
                # A slow answer: the request is done only after `delay` s,
                # and the others are served meanwhile.
                self.server.lock.release()
                try:
                    time.sleep(fault['delay'])
                finally:
                    self.server.lock.acquire()
                fault = None
            if fault is not None and fault.get('corrupt'):
                # A damaged object served as if whole: one byte flipped.
                entry['fault'] = 'corrupt'
                self.corrupt = True
                try:
                    entry['status'] = getattr(self, 'op_' + op)(key, params, body)
                finally:
                    self.corrupt = False
                return
            if fault is not None:
                status = fault['status']
                entry['fault'] = fault['code']
                if fault.get('applied'):
                    # Done, and the answer lost: what a retry then meets.
                    self.mute = True
                    try:
                        getattr(self, 'op_' + op)(key, params, body)
                    finally:
                        self.mute = False
                if op == 'CompleteMultipartUpload' and status == 200:
                    self.send(200, b'   \n  ' + error_xml(fault['code'], 'late error'))
                else:
                    self.send(status, error_xml(fault['code'], 'injected'))
                entry['status'] = status
                return
            status = getattr(self, 'op_' + op)(key, params, body)
            entry['status'] = status
        except Fail as e:
            entry.update(status=e.status, code=e.code)
            head = self.command == 'HEAD'
            self.send(e.status, b'' if head else error_xml(e.code, e.message),
                      {'Content-Type': 'application/xml'}, head=head)
        finally:
            self.record(entry)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_any

    def operation(self, key, params):
        m = self.command
        if key is None:
            if m == 'GET' and params.get('list-type') == ['2']:
                return 'ListObjectsV2'
            if m == 'GET' and 'uploads' in params:
                return 'ListMultipartUploads'
            raise Fail(405, 'MethodNotAllowed', 'bucket %s' % m)
        if m == 'PUT':
            return 'UploadPart' if 'uploadId' in params else 'PutObject'
        if m == 'POST' and 'uploads' in params:
            return 'CreateMultipartUpload'
        if m == 'POST' and 'uploadId' in params:
            return 'CompleteMultipartUpload'
        if m == 'DELETE':
            return 'AbortMultipartUpload' if 'uploadId' in params else 'DeleteObject'
        if m == 'GET':
            return 'GetObject'
        if m == 'HEAD':
            return 'HeadObject'
        raise Fail(405, 'MethodNotAllowed', m)

    def etag(self, data):
        return '"%s"' % hashlib.md5(data).hexdigest()

    def op_PutObject(self, key, params, body):
        self.server.state.objects[key] = body
        self.server.state.etags[key] = self.etag(body)
        self.send(200, headers={'ETag': self.etag(body)})
        return 200

    def op_GetObject(self, key, params, body, head=False):
        data = self.server.state.objects.get(key)
        if data is None:
            raise Fail(404, 'NoSuchKey', key)
        if getattr(self, 'corrupt', False) and data:
            data = data[:len(data) // 2] + bytes([data[len(data) // 2] ^ 0x01]) + \
                data[len(data) // 2 + 1:]
        rng = self.headers.get('Range')
        etag = self.server.state.etags[key]
        if rng is None:
            self.send(200, data, {'ETag': etag}, head=head)
            return 200
        m = re.match(r'^bytes=(\d+)-(\d*)$', rng)
        if not m:
            raise Fail(400, 'InvalidArgument', rng)
        first = int(m.group(1))
        last = int(m.group(2)) if m.group(2) else len(data) - 1
        if first >= len(data):
            raise Fail(416, 'InvalidRange', rng)
        last = min(last, len(data) - 1)
        self.send(206, data[first:last + 1],
                  {'Content-Range': 'bytes %d-%d/%d' % (first, last, len(data)),
                   'ETag': etag}, head=head)
        return 206

    def op_HeadObject(self, key, params, body):
        return self.op_GetObject(key, params, body, head=True)

    def op_DeleteObject(self, key, params, body):
        self.server.state.objects.pop(key, None)
        self.server.state.etags.pop(key, None)
        self.send(204)
        return 204

    def op_ListObjectsV2(self, key, params, body):
        st = self.server.state
        prefix = params.get('prefix', [''])[0]
        keys = sorted(k for k in st.objects if k.startswith(prefix))
        token = params.get('continuation-token', [None])[0]
        if token is not None:
            after = base64.b64decode(token).decode()
            keys = [k for k in keys if k > after]
        page, rest = keys[:st.args.page_size], keys[st.args.page_size:]
        out = ['<?xml version="1.0" encoding="UTF-8"?>',
               '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
               '<Name>%s</Name><Prefix>%s</Prefix><KeyCount>%d</KeyCount>'
               % (st.args.bucket, prefix, len(page)),
               '<IsTruncated>%s</IsTruncated>' % ('true' if rest else 'false')]
        if rest:
            out.append('<NextContinuationToken>%s</NextContinuationToken>'
                       % base64.b64encode(page[-1].encode()).decode())
        for k in page:
            out.append('<Contents><Key>%s</Key><Size>%d</Size><ETag>%s</ETag></Contents>'
                       % (k.replace('&', '&amp;').replace('<', '&lt;'),
                          len(st.objects[k]), st.etags[k]))
        out.append('</ListBucketResult>')
        self.send(200, ''.join(out).encode(), {'Content-Type': 'application/xml'})
        return 200

    def op_ListMultipartUploads(self, key, params, body):
        # S3's order: by key, then (as ids here grow with time) by upload
        # id; past key-marker, or at it past upload-id-marker.
        st = self.server.state
        prefix = params.get('prefix', [''])[0]
        key_marker = params.get('key-marker', [None])[0]
        id_marker = params.get('upload-id-marker', [None])[0]
        ups = sorted((up['key'], uid) for uid, up in st.uploads.items()
                     if up['key'].startswith(prefix))
        if key_marker is not None:
            ups = [(k, u) for k, u in ups if k > key_marker or
                   (k == key_marker and id_marker is not None and u > id_marker)]
        limit = min(int(params.get('max-uploads', ['1000'])[0]), st.args.page_size)
        page, rest = ups[:limit], ups[limit:]
        esc = lambda t: t.replace('&', '&amp;').replace('<', '&lt;')  # noqa: E731
        out = ['<?xml version="1.0" encoding="UTF-8"?>',
               '<ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
               '<Bucket>%s</Bucket><KeyMarker>%s</KeyMarker><UploadIdMarker>%s</UploadIdMarker>'
               % (st.args.bucket, esc(key_marker or ''), esc(id_marker or '')),
               '<Prefix>%s</Prefix><MaxUploads>%d</MaxUploads>' % (esc(prefix), limit),
               '<IsTruncated>%s</IsTruncated>' % ('true' if rest else 'false')]
        if rest:
            out.append('<NextKeyMarker>%s</NextKeyMarker><NextUploadIdMarker>%s'
                       '</NextUploadIdMarker>' % (esc(page[-1][0]), esc(page[-1][1])))
        for k, uid in page:
            out.append('<Upload><Key>%s</Key><UploadId>%s</UploadId>'
                       '<StorageClass>STANDARD</StorageClass>'
                       '<Initiated>2026-01-01T00:00:00.000Z</Initiated></Upload>' % (esc(k), uid))
        out.append('</ListMultipartUploadsResult>')
        self.send(200, ''.join(out).encode(), {'Content-Type': 'application/xml'})
        return 200

    def op_CreateMultipartUpload(self, key, params, body):
        st = self.server.state
        uid = 'upload-%06d' % st.next_upload
        st.next_upload += 1
        st.uploads[uid] = {'key': key, 'parts': {}}
        self.send(200, ('<InitiateMultipartUploadResult><Bucket>%s</Bucket><Key>%s</Key>'
                        '<UploadId>%s</UploadId></InitiateMultipartUploadResult>'
                        % (st.args.bucket, key, uid)).encode())
        return 200

    def upload(self, key, params):
        up = self.server.state.uploads.get(params['uploadId'][0])
        if up is None or up['key'] != key:
            raise Fail(404, 'NoSuchUpload', params['uploadId'][0])
        return up

    def op_UploadPart(self, key, params, body):
        up = self.upload(key, params)
        n = int(params['partNumber'][0])
        if not 1 <= n <= 10000:
            raise Fail(400, 'InvalidArgument', 'partNumber %d' % n)
        digest = hashlib.md5(body).digest()
        up['parts'][n] = (body, digest)
        self.send(200, headers={'ETag': '"%s"' % digest.hex()})
        return 200

    def op_CompleteMultipartUpload(self, key, params, body):
        up = self.upload(key, params)
        if self.headers.get('Content-Type') != 'application/xml':
            raise Fail(400, 'InvalidRequest', 'Content-Type must be application/xml')
        parts = re.findall(r'<Part><PartNumber>(\d+)</PartNumber><ETag>([^<]*)</ETag></Part>',
                           body.decode())
        if not parts:
            raise Fail(400, 'MalformedXML', body.decode())
        numbers = [int(n) for n, _ in parts]
        if numbers != sorted(numbers) or len(set(numbers)) != len(numbers):
            raise Fail(400, 'InvalidPartOrder', str(numbers))
        bodies, digests = [], []
        for i, (n, etag) in enumerate(parts):
            body_digest = up['parts'].get(int(n))
            if body_digest is None or '"%s"' % body_digest[1].hex() != etag.replace('&quot;', '"'):
                raise Fail(400, 'InvalidPart', 'part %s' % n)
            if i + 1 < len(parts) and len(body_digest[0]) < self.server.state.args.min_part:
                raise Fail(400, 'EntityTooSmall', 'part %s' % n)
            bodies.append(body_digest[0])
            digests.append(body_digest[1])
        # S3's multipart ETag: the MD5 of the parts' MD5s, then the count.
        etag = '"%s-%d"' % (hashlib.md5(b''.join(digests)).hexdigest(), len(parts))
        self.server.state.objects[key] = b''.join(bodies)
        self.server.state.etags[key] = etag
        del self.server.state.uploads[params['uploadId'][0]]
        self.send(200, ('<CompleteMultipartUploadResult><Key>%s</Key><ETag>%s</ETag>'
                        '</CompleteMultipartUploadResult>' % (key, etag)).encode())
        return 200

    def op_AbortMultipartUpload(self, key, params, body):
        self.upload(key, params)
        del self.server.state.uploads[params['uploadId'][0]]
        self.send(204)
        return 204


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--bucket', required=True)
    ap.add_argument('--region', default='us-east-1')
    ap.add_argument('--flavour', choices=['s3', 'oss'], default='s3')
    ap.add_argument('--access-key', required=True)
    ap.add_argument('--secret-key', required=True)
    ap.add_argument('--log', required=True)
    ap.add_argument('--faults')
    ap.add_argument('--dump', help='rewritten after each request: the objects '
                    '(key: size) and open multipart uploads (id: key) held')
    ap.add_argument('--page-size', type=int, default=1000)
    ap.add_argument('--min-part', type=int, default=5 << 20)
    args = ap.parse_args()
    server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    server.daemon_threads = True
    server.state = State(args)
    server.lock = threading.Lock()
    sys.stdout.write('PORT %d\n' % server.server_address[1])
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == '__main__':
    main()
