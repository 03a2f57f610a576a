# shellcheck shell=bash
# A Python venv with pinned packages from PyPI, for the scripts that check akv against code
# nobody here wrote (transformers, tokenizers, the openai client). Source this file, then:
#
#   venv="$(pinned_venv NAME LABEL [--in-place] PIN...)" || exit 2      # prints the venv folder
#
# Folder: ${AKV_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/akv/venv}/NAME, made once and kept. Its
# stamp .akv-pins holds the pins: when they change the venv is made anew, or with --in-place the
# new pins are installed into it (for a venv too large to fetch again, torch). LABEL names the
# caller in errors: one line on stderr, "akv: LABEL: ...", exit 2. Pin every package, the
# dependencies too, so that a later release on PyPI changes nothing.

pinned_venv() {
  local name="$1" label="$2" in_place=0
  shift 2
  if [ "${1:-}" = --in-place ]; then in_place=1; shift; fi
  local pins="$*"
  local root="${AKV_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/akv/venv}"
  local venv="$root/$name"
  local stamp="$venv/.akv-pins"
  # tokenizer-venv.sh once stamped a venv with an empty file named after the pins: take it as is.
  local old_stamp="$venv/.akv-${pins// /-}"
  if [ "$(cat "$stamp" 2>/dev/null)" = "$pins" ]; then echo "$venv"; return 0; fi
  if [ -f "$old_stamp" ] && [ -x "$venv/bin/python" ]; then echo "$venv"; return 0; fi

  command -v python3 >/dev/null || { echo "akv: $label: python3 is missing; run scripts/deps" >&2; exit 2; }
  # A folder we cannot write would otherwise fail below as a misleading "venv failed".
  if ! mkdir -p "$root" 2>/dev/null || [ ! -w "$root" ]; then
    echo "akv: $label: cannot write the venv folder $root; set AKV_VENVS to a writable folder" >&2
    exit 2
  fi
  if [ "$in_place" = 0 ]; then rm -rf "$venv"; fi
  if [ ! -x "$venv/bin/python" ]; then
    local why
    if ! why="$(python3 -m venv "$venv" 2>&1)"; then
      why="$(printf '%s\n' "$why" | grep -v '^[[:space:]]*$' | tail -n1)"
      echo "akv: $label: python3 -m venv $venv failed (${why:-no message}); run scripts/deps (Debian: python3-venv)" >&2
      exit 2
    fi
  fi
  echo "akv: $label: installing $pins into $venv" >&2
  # shellcheck disable=SC2086  # the pins are words
  if ! "$venv/bin/python" -m pip install --disable-pip-version-check --quiet --timeout 20 --retries 2 \
        $pins >"$venv/pip.log" 2>&1; then
    echo "akv: $label: cannot install $pins from PyPI into $venv (offline?); rerun with network (log: $venv/pip.log)" >&2
    exit 2
  fi
  echo "$pins" >"$stamp"
  echo "$venv"
}
