#!/bin/sh
# workerd with V8 flags, for Miniflare (MINIFLARE_WORKERD_PATH, set by use-v8-flags.ts): the
# config Miniflare writes on stdin gets SHARDGATE_WORKERD_V8_FLAGS (config-v8-flags.mjs), then
# this process becomes workerd (exec: the pid Miniflare holds and stops is workerd's own, and
# descriptor 3, its control pipe, passes through untouched).
set -e
config=$(mktemp "${TMPDIR:-/tmp}/workerd-config.XXXXXX")
binary=$("${SHARDGATE_NODE:-node}" "$(dirname "$0")/config-v8-flags.mjs" "$config") || { rm -f "$config"; exit 1; }
exec 0<"$config"
rm -f "$config"
exec "$binary" "$@"
