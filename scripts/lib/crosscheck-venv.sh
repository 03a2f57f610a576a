# The Python venv that checks akv against Hugging Face transformers (scripts/crosscheck,
# scripts/export-hf; docs/crosscheck.md). Source this file, then:
#
#   venv="$(crosscheck_venv)" || exit 2      # prints the venv folder
#
# Folder: ${AKV_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/akv/venv}/crosscheck (scripts/lib/pinned-venv.sh),
# made once and kept. New pins are installed into it in place (torch from PyPI is large).
# accelerate: transformers 5.24 refuses to load a GGUF file without it.
. "$(dirname "${BASH_SOURCE[0]}")/pinned-venv.sh"

CROSSCHECK_PINS="torch==2.15.0 transformers==5.24.0 gguf==0.19.0 numpy==2.4.6 safetensors==0.8.0 tokenizers==0.23.3 jinja2==3.1.6 accelerate==1.15.0"

crosscheck_venv() {
  # shellcheck disable=SC2086  # the pins are words
  pinned_venv crosscheck crosscheck-venv --in-place $CROSSCHECK_PINS
}
