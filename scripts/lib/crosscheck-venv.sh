# The Python venv that checks akv against Hugging Face transformers (scripts/crosscheck,
# scripts/export-hf; docs/crosscheck.md). Source this file, then:
#
#   venv="$(crosscheck_venv)" || exit 2      # prints the venv folder
#
# Folder: ${AKV_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/akv/venv}/crosscheck, made once and kept
# (torch from PyPI is large). The stamp file holds the pins: when they change, pip installs the
# new pins into the venv before use. Errors are one line on stderr, exit 2.
# accelerate: transformers 5.24 refuses to load a GGUF file without it.

CROSSCHECK_PINS="torch==2.15.0 transformers==5.24.0 gguf==0.19.0 numpy==2.4.6 safetensors==0.8.0 tokenizers==0.23.3 jinja2==3.1.6 accelerate==1.15.0"

crosscheck_venv() {
  local venv="${AKV_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/akv/venv}/crosscheck"
  local stamp="$venv/.akv-pins"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$CROSSCHECK_PINS" ]; then
    command -v python3 >/dev/null || { echo "akv: crosscheck-venv: python3 is missing; run scripts/deps" >&2; exit 2; }
    if [ ! -x "$venv/bin/python" ]; then
      mkdir -p "$(dirname "$venv")"
      python3 -m venv "$venv" >/dev/null 2>&1 ||
        { echo "akv: crosscheck-venv: python3 -m venv failed; run scripts/deps (Debian: python3-venv)" >&2; exit 2; }
    fi
    echo "akv: crosscheck-venv: installing $CROSSCHECK_PINS into $venv" >&2
    # shellcheck disable=SC2086  # the pins are words
    if ! "$venv/bin/python" -m pip install --disable-pip-version-check --quiet --timeout 20 --retries 2 \
          $CROSSCHECK_PINS >"$venv/pip.log" 2>&1; then
      echo "akv: crosscheck-venv: cannot install the pins from PyPI into $venv (offline?); rerun with network (log: $venv/pip.log)" >&2
      exit 2
    fi
    echo "$CROSSCHECK_PINS" >"$stamp"
  fi
  echo "$venv"
}
