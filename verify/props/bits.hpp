// The properties' bitwise equality is the harness's one same_bits (verify/check/same_bits.hpp).
#pragma once
#include "verify/check/same_bits.hpp"

namespace akv::prop {
using check::same_bits;
}  // namespace akv::prop
