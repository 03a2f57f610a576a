// Which sanitizer a test binary is built with, the same under GCC (__SANITIZE_*__) and Clang
// (__has_feature): a test whose check cannot hold under one (an address-space limit, a signal the
// sanitizer handles itself) says so and checks what it can instead (docs/sanitizers.md).
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define AKV_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define AKV_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(AKV_ASAN)
#define AKV_ASAN 1
#endif
#if __has_feature(thread_sanitizer) && !defined(AKV_TSAN)
#define AKV_TSAN 1
#endif
#endif
