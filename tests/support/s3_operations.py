"""What an S3 request is, from its method and path-style target alone: the fault proxy counts
requests by it, whichever client (boto3, pyarrow's AWS SDK) sent them."""

from __future__ import annotations

__all__ = ["s3_operation", "VERBS"]

#: the verbs :func:`s3_operation` returns, in the order the bench prints them
VERBS = ("GET", "PUT", "HEAD", "LIST", "DELETE", "POST")


def s3_operation(method: str, target: str, copy_source: bool = False) -> tuple[str, str]:
    """(verb, operation) of a path-style S3 request: verb is the HTTP method, except that a GET
    of a bucket (a listing) is ``LIST``; operation is S3's name for it (GetObject,
    ListObjectsV2, DeleteObjects, CopyObject, UploadPart, ...). ``copy_source``: the request
    carries ``x-amz-copy-source`` (a PUT that copies, as a rename does)."""
    path, _, query = target.partition("?")
    params = {p.partition("=")[0] for p in query.split("&") if p}
    has_key = "/" in path.strip("/")
    method = method.upper()
    if method == "GET":
        if not has_key:
            if "uploads" in params:
                return "LIST", "ListMultipartUploads"
            return "LIST", "ListObjectsV2" if "list-type" in params else "ListObjects"
        return "GET", "ListParts" if "uploadId" in params else "GetObject"
    if method == "HEAD":
        return "HEAD", "HeadObject" if has_key else "HeadBucket"
    if method == "PUT":
        if not has_key:
            return "PUT", "CreateBucket"
        if "partNumber" in params:
            return "PUT", "UploadPartCopy" if copy_source else "UploadPart"
        return "PUT", "CopyObject" if copy_source else "PutObject"
    if method == "DELETE":
        if "uploadId" in params:
            return "DELETE", "AbortMultipartUpload"
        return "DELETE", "DeleteObject" if has_key else "DeleteBucket"
    if method == "POST":
        if "delete" in params:
            return "POST", "DeleteObjects"
        if "uploads" in params:
            return "POST", "CreateMultipartUpload"
        if "uploadId" in params:
            return "POST", "CompleteMultipartUpload"
        return "POST", "Post"
    return method, method
