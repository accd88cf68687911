/**
 * The bucket naming rules, shared by CreateBucket (worker/s3/buckets.ts) and the operator's
 * rebuild (worker/app/admin.ts), so that no path can make a bucket S3 would refuse: its name becomes
 * part of every shard key, and a name such as `/../etc` must never reach a backend.
 * Spec: S3 "General purpose bucket naming rules": 3-63 characters of a-z 0-9 . -, starting and
 * ending with a letter or digit, no "..", ".-" or "-." (every dot-separated label starts and
 * ends with a letter or digit), not an IPv4 address, no xn-- / sthree- prefix or -s3alias /
 * --ol-s3 suffix.
 */

export function isValidBucketName(name: string): boolean {
  return (
    /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(name) &&
    !/\.\.|\.-|-\./.test(name) &&
    !/^\d+\.\d+\.\d+\.\d+$/.test(name) &&
    !/^(xn--|sthree-)/.test(name) &&
    !/(-s3alias|--ol-s3)$/.test(name)
  );
}
