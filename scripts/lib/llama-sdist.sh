# shellcheck shell=bash
# PyPI's llama-cpp-python 0.3.36 sdist (it vendors llama.cpp at commit 0c1e57098bba and its ggml
# 0.25.3), pinned by SHA-256 and kept in the cache; the one pin scripts/fetch-vocab (the vocab
# files) and scripts/fetch-engines (ggml built from it) share. Source this file, then:
#
#   sdist="$(llama_sdist LABEL)" || exit 2      # prints the path of the verified sdist
#
# Cache: ${XDG_CACHE_HOME:-$HOME/.cache}/akv/sdist. Downloaded by `pip download` when missing or
# not matching the pin; a file that does not match is never used. LABEL names the caller in
# errors: one line on stderr, "akv: LABEL: ...", exit 2.

LLAMA_SDIST_PACKAGE=llama-cpp-python
LLAMA_SDIST_VERSION=0.3.36
LLAMA_SDIST_FILE=llama_cpp_python-0.3.36.tar.gz
LLAMA_SDIST_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
LLAMA_SDIST_SIZE=76589250
# The llama.cpp commit the sdist vendors (its .git/modules/vendor/llama.cpp/HEAD).
LLAMA_SDIST_LLAMA_CPP_COMMIT=0c1e57098bba43ac29e6e3b677cdceebdd22334f

# The sdist at $1 has the pinned size and SHA-256.
llama_sdist_matches() {
  [ -f "$1" ] && [ "$(stat -c %s "$1")" = "$LLAMA_SDIST_SIZE" ] &&
    [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$LLAMA_SDIST_SHA256" ]
}

llama_sdist() {
  local label="$1"
  local dir="${XDG_CACHE_HOME:-$HOME/.cache}/akv/sdist"
  local sdist="$dir/$LLAMA_SDIST_FILE"
  if llama_sdist_matches "$sdist"; then echo "$sdist"; return 0; fi
  command -v python3 >/dev/null || { echo "akv: $label: python3 is missing; run scripts/deps" >&2; exit 2; }
  python3 -m pip --version >/dev/null 2>&1 || { echo "akv: $label: pip for python3 is missing; run scripts/deps (Debian: python3-pip)" >&2; exit 2; }
  mkdir -p "$dir" || { echo "akv: $label: cannot create $dir (set XDG_CACHE_HOME)" >&2; exit 2; }
  local tmp
  tmp="$(mktemp -d)"
  echo "akv: $label: downloading the $LLAMA_SDIST_PACKAGE==$LLAMA_SDIST_VERSION sdist from PyPI (about 77 MB)" >&2
  if ! python3 -m pip download --no-binary :all: --no-deps --disable-pip-version-check --quiet --timeout 20 \
        --retries 2 --dest "$tmp" "$LLAMA_SDIST_PACKAGE==$LLAMA_SDIST_VERSION" >"$tmp/pip.log" 2>&1; then
    rm -rf "$tmp"
    echo "akv: $label: cannot download $LLAMA_SDIST_PACKAGE==$LLAMA_SDIST_VERSION from PyPI (offline?); rerun with network, or put $LLAMA_SDIST_FILE (sha256 $LLAMA_SDIST_SHA256) in $dir" >&2
    exit 2
  fi
  if ! llama_sdist_matches "$tmp/$LLAMA_SDIST_FILE"; then
    rm -rf "$tmp"
    echo "akv: $label: $LLAMA_SDIST_FILE from PyPI does not match the pinned SHA-256 $LLAMA_SDIST_SHA256 ($LLAMA_SDIST_SIZE bytes); not used" >&2
    exit 2
  fi
  mv -f "$tmp/$LLAMA_SDIST_FILE" "$sdist"
  rm -rf "$tmp"
  echo "$sdist"
}
