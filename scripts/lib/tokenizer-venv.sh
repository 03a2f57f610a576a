# The Python venv with Hugging Face tokenizers and transformers, no torch (scripts/crosscheck-tokenizer,
# scripts/crosscheck-tokenizer-ties). Source this file, then:
#
#   venv="$(tokenizer_venv NAME)" || exit 2      # prints the venv folder; NAME prefixes errors
#
# Folder: ${AKV_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/akv/venv}/tokenizer, made once and kept;
# a stamp names the pins, so new pins make it anew. Errors are one line on stderr, exit 2.

TOKENIZER_PINS=(tokenizers==0.23.3 transformers==5.24.0 jinja2==3.1.6 gguf==0.19.0 numpy==2.4.6)

tokenizer_venv() {
  local name="$1"
  local venv="${AKV_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/akv/venv}/tokenizer"
  local stamp
  stamp="$venv/.akv-$(echo "${TOKENIZER_PINS[*]}" | tr ' ' '-')"
  if [ ! -f "$stamp" ]; then
    command -v python3 >/dev/null || { echo "akv: $name: python3 is missing; run scripts/deps" >&2; exit 2; }
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    python3 -m venv "$venv" >/dev/null 2>&1 ||
      { echo "akv: $name: python3 -m venv failed; run scripts/deps (Debian: python3-venv)" >&2; exit 2; }
    echo "akv: $name: installing ${TOKENIZER_PINS[*]} into $venv" >&2
    if ! "$venv/bin/python" -m pip install --disable-pip-version-check --quiet --timeout 20 --retries 2 \
          "${TOKENIZER_PINS[@]}" >"$venv/pip.log" 2>&1; then
      echo "akv: $name: cannot install ${TOKENIZER_PINS[*]} from PyPI into $venv (offline?); rerun with network (log: $venv/pip.log)" >&2
      exit 2
    fi
    touch "$stamp"
  fi
  echo "$venv"
}
