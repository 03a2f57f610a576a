// The machine's memory bandwidth, measured in the same run as the figures it is set against
// (docs/performance.md): STREAM's triad (McCalpin, "Memory Bandwidth and Machine Balance in
// Current High Performance Computers", IEEE TCCA Newsletter 1995) and a read-only sweep, on
// `threads` threads, over arrays far larger than the last-level cache.
#pragma once
#include <cstddef>

namespace akv::bench {

struct Bandwidth {
  double triad_gbs = 0;  // a[i] = b[i] + s * c[i] on doubles, counted as STREAM counts: 24 bytes a
                         // element (two reads, one write; the write-allocate read not counted)
  double read_gbs = 0;   // sum of a[i] over one array: 8 bytes a element, reads only (decode's pattern)
  size_t array_bytes = 0;
};

/// Best of `runs` passes of each kernel, `threads` threads each taking a contiguous slice of
/// every array (first touched by its own thread). Arrays of `array_mib` MiB each, three for the
/// triad: choose them at least 4x the last-level cache (STREAM's rule).
Bandwidth memory_bandwidth(int threads, size_t array_mib = 256, int runs = 5);

}  // namespace akv::bench
