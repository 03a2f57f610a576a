# The Python venv with Hugging Face tokenizers and transformers, no torch (scripts/crosscheck-tokenizer,
# scripts/crosscheck-tokenizer-ties). Source this file, then:
#
#   venv="$(tokenizer_venv NAME)" || exit 2      # prints the venv folder; NAME prefixes errors
#
# Folder: ${AKV_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/akv/venv}/tokenizer (scripts/lib/pinned-venv.sh),
# made once and kept; new pins make it anew.
. "$(dirname "${BASH_SOURCE[0]}")/pinned-venv.sh"

TOKENIZER_PINS=(tokenizers==0.23.3 transformers==5.24.0 jinja2==3.1.6 gguf==0.19.0 numpy==2.4.6)

tokenizer_venv() {
  pinned_venv tokenizer "$1" "${TOKENIZER_PINS[@]}"
}
