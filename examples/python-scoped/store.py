"""The object store: boto3 against the S3 endpoint the harness hands over, with every failure
mapped to a typed refusal (SPEC.md SC-8.1, SC-8.3). Only a throttle is retried (HTTP 503, S3's
SlowDown: three attempts in all, SC-8.4); anything else the harness injects is reported, not
hidden (PROTOCOL.md, "What the harness provides")."""

import time

import boto3
import botocore.config
import botocore.exceptions

from layout import Refused

# SC-5.5, SC-6.3: DeleteObjects takes at most 1,000 keys.
DELETE_BATCH = 1000
# The only time this program stamps on an object: the harness's clock, so an age-only lifecycle
# rule (SC-7.3) run by the harness sees the simulated write time, not the server's.
WRITTEN_AT = "tidemark-written-at-ms"
STAMP = "content-sha256"  # SC-4.2: a file and its text both carry the file's hash
# SC-8.4: attempts at a request the store answers with 503 before the operation fails.
ATTEMPTS = 3


def _throttled(err):
    if not isinstance(err, botocore.exceptions.ClientError):
        return False
    return err.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 503


def _send(call, **args):
    """One S3 request, sent again while the store answers 503 (SC-8.4); botocore's own retries
    are off, so nothing else is ever retried."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return call(**args)
        except botocore.exceptions.ClientError as e:
            if attempt == ATTEMPTS or not _throttled(e):
                raise
            time.sleep(0.01 * 2 ** attempt)  # backoff is not time a scenario sees


def _refusal(err, action):
    if isinstance(err, botocore.exceptions.ClientError):
        code = err.response.get("Error", {}).get("Code", "")
        if code == "NoSuchBucket":
            return Refused("no_such_bucket", f"{action}: the bucket does not exist")
        return Refused("storage_unavailable", f"{action}: the object store answered {code or 'an error'}")
    return Refused("storage_unavailable", f"{action}: the object store is unreachable ({type(err).__name__})")


def _missing(err):
    if not isinstance(err, botocore.exceptions.ClientError):
        return False
    error = err.response.get("Error", {})
    return error.get("Code") in ("NoSuchKey", "404", "NotFound")


class Store:
    def __init__(self, s3):
        self.bucket = s3["bucket"]
        self.client = boto3.session.Session().client(
            "s3",
            endpoint_url=s3["endpoint_url"],
            region_name=s3["region"],
            aws_access_key_id=s3["access_key_id"],
            aws_secret_access_key=s3["secret_access_key"],
            config=botocore.config.Config(
                s3={"addressing_style": "path"},  # the endpoint is an IP address
                retries={"total_max_attempts": 1},  # throttles are retried by _send, nothing else
                connect_timeout=2,
                read_timeout=5,
                # Checksums only where S3 requires them: an S3-compatible server need not
                # know the SDK's newest trailers.
                request_checksum_calculation="when_required",
                response_checksum_validation="when_required",
            ),
        )

    def put(self, key, body, now_ms, digest):
        try:
            _send(self.client.put_object, Bucket=self.bucket, Key=key, Body=body,
                  Metadata={WRITTEN_AT: str(now_ms), STAMP: digest})
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
            raise _refusal(e, "storing a file") from e

    def head(self, key):
        """The object's stamp (SC-4.2), or None when there is no such object."""
        try:
            got = _send(self.client.head_object, Bucket=self.bucket, Key=key)
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
            if _missing(e):
                return None
            raise _refusal(e, "looking a file up") from e
        return got.get("Metadata", {}).get(STAMP, "")

    def get(self, key):
        """(bytes, stamp), or None when there is no such object."""
        try:
            got = _send(self.client.get_object, Bucket=self.bucket, Key=key)
            return got["Body"].read(), got.get("Metadata", {}).get(STAMP, "")
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
            if _missing(e):
                return None
            raise _refusal(e, "reading a file") from e

    def delete(self, key):
        try:
            _send(self.client.delete_object, Bucket=self.bucket, Key=key)
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
            raise _refusal(e, "deleting a file") from e

    def keys(self, prefix, limit=None):
        """Every key under `prefix` (a raw S3 prefix: callers pass a folder ending in `/`)."""
        return [key for key, _ in self.objects(prefix, limit)]

    def objects(self, prefix, limit=None):
        """(key, size in bytes) of every object under `prefix`, in the store's (byte) order."""
        found, token = [], None
        try:
            while True:
                args = {"Bucket": self.bucket, "Prefix": prefix}
                if token:
                    args["ContinuationToken"] = token
                if limit:
                    args["MaxKeys"] = limit
                page = _send(self.client.list_objects_v2, **args)
                found.extend((item["Key"], item["Size"]) for item in page.get("Contents", []))
                token = page.get("NextContinuationToken")
                if not page.get("IsTruncated") or not token or (limit and len(found) >= limit):
                    return found
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
            raise _refusal(e, "listing files") from e

    def delete_batch(self, keys):
        """DeleteObjects on at most 1,000 keys; returns the keys the store refused (a refusal
        raised means the whole batch failed)."""
        assert len(keys) <= DELETE_BATCH
        try:
            got = _send(self.client.delete_objects, Bucket=self.bucket,
                        Delete={"Objects": [{"Key": k} for k in keys], "Quiet": True})
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
            raise _refusal(e, "deleting files") from e
        return {err["Key"] for err in got.get("Errors", [])}

    def put_lifecycle(self, rules):
        try:
            _send(self.client.put_bucket_lifecycle_configuration,
                  Bucket=self.bucket, LifecycleConfiguration={"Rules": rules})
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
            raise _refusal(e, "putting the lifecycle configuration") from e


def delete_many(store, keys):
    """DeleteObjects over any number of keys, at most 1,000 a request however many sessions or
    obligations they belong to (SC-5.5, SL-1.2). Returns the keys not deleted: those the store
    refused, and every key of a request that failed whole."""
    refused = set()
    for start in range(0, len(keys), DELETE_BATCH):
        batch = keys[start:start + DELETE_BATCH]
        try:
            refused.update(store.delete_batch(batch))
        except Refused:
            refused.update(batch)
    return refused
